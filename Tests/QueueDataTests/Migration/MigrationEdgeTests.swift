import Foundation
import Testing

@testable import QueueData

@Suite("Migration edge cases")
struct MigrationEdgeTests {
    @Test(
        "a date that is not finite fails a migration to String, naming the row, and nothing is written",
        arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteDateToString(_ seconds: Double) throws {
        let old = try thingModel([AttributeDescription(name: "value", type: .date)])
        let new = try thingModel([AttributeDescription(name: "value", type: .string)])
        let store = try store(old, [["value": .date(Date(timeIntervalSinceReferenceDate: seconds))]])
        #expect {
            try inMemoryManager(store, new).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .migrationFailed, mentioning: "Row 1 of 'Thing'", "not finite", "Nothing was changed")
        }
        #expect(try store.inspect()?.metadata.versionHash == old.versionHash)
        #expect(try !inMemoryManager(store, new).migrationPlan().canMigrate)
    }

    @Test("an entity renamed to the name of an entity removed earlier never reuses that entity's keys")
    func renamedOntoRemovedName() throws {
        let x = AttributeDescription(name: "x", type: .integer64)
        let version1 = try ManagedObjectModel(entities: [
            EntityDescription(name: "A", attributes: [x]), EntityDescription(name: "B", attributes: [x]),
        ])
        let store = InMemoryStore()
        let writer = inMemoryManager(store, version1)
        let context = try writer.createContext()
        try context.performAndWait {
            context.insert(entityName: "A")
            for _ in 0..<5 { context.insert(entityName: "B") }
            try context.save()
        }
        writer.close()
        // Version 2 removes B; version 3 renames A to B.
        let version2 = try ManagedObjectModel(entities: [EntityDescription(name: "A", attributes: [x])])
        let removing = inMemoryManager(store, version2)
        try removing.loadPersistentStore()
        removing.close()
        let version3 = try ManagedObjectModel(entities: [
            EntityDescription(name: "B", attributes: [x], originalName: "A")
        ])
        let steps = [MigrationStep("insert") { rows in _ = rows.insertRow(into: "B") }]
        let manager = inMemoryManager(store, version3, steps: steps)
        #expect(try rowsByKey(manager, "B").keys.sorted() == [1, 6])
        let renamed = try manager.createContext()
        let key = try renamed.performAndWait {
            let object = renamed.insert(entityName: "B")
            try renamed.save()
            return object.objectID.primaryKey
        }
        #expect(key == 7)
    }

    @Test(
        "a date becomes ISO 8601 text in the proleptic Gregorian calendar, with expanded years, as an export writes it",
        arguments: [
            (-13_000_000_000.0, "1558-01-18T00:53:20.000Z"),
            (-30_000_000_000.25, "1019-05-04T18:39:59.750Z"),
            (-100_000_000_000.0, "-01199-02-15T14:13:20.000Z"),
            (300_000_000_000.5, "+11476-08-15T05:20:00.500Z"),
            (1_000_000_000.0, "2001-09-09T01:46:40.000Z"),
        ])
    func dateToStringText(_ secondsSince1970: Double, _ text: String) throws {
        let old = try thingModel([AttributeDescription(name: "value", type: .date)])
        let new = try thingModel([AttributeDescription(name: "value", type: .string)])
        let date = Date(timeIntervalSince1970: secondsSince1970)
        let store = try store(old, [["value": .date(date)]])
        #expect(try rowsByKey(inMemoryManager(store, new), "Thing") == [1: ["value": .string(text)]])
        #expect(ISO8601Text.date(from: Substring(text)) == date)
    }

    @Test("two dates too far out for ISO 8601 text fail the migration rather than share one text")
    func farDatesToString() throws {
        let old = try thingModel([AttributeDescription(name: "value", type: .date)])
        let new = try thingModel([AttributeDescription(name: "value", type: .string)])
        let store = try store(
            old,
            [["value": .date(Date(timeIntervalSince1970: 1e14))], ["value": .date(Date(timeIntervalSince1970: 1e15))]])
        #expect {
            try inMemoryManager(store, new).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .migrationFailed, mentioning: "of 'Thing'", "no ISO 8601 text")
        }
        #expect(try store.inspect()?.metadata.versionHash == old.versionHash)
    }

    @Test("the dry run reports rows that share the values of a newly declared constraint, which the open refuses")
    func dryRunSeesDuplicates() throws {
        let old = try thingModel([AttributeDescription(name: "value", type: .string)])
        let new = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Thing",
                attributes: [
                    AttributeDescription(name: "value", type: .string),
                    AttributeDescription(name: "added", type: .integer64, defaultValue: .integer(0)),
                ],
                uniquenessConstraints: [["value"]])
        ])
        let store = try store(old, [["value": .string("a")], ["value": .string("b")], ["value": .string("a")]])
        let plan = try inMemoryManager(store, new).migrationPlan()
        #expect(!plan.canMigrate)
        #expect(plan.problems.contains { $0.contains("Thing 1 and Thing 3 share value = \"a\"") }, "\(plan.problems)")
        #expect {
            try inMemoryManager(store, new).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .incompatibleModel, mentioning: "Thing 1 and Thing 3 share value = \"a\"")
        }
        #expect(try store.inspect()?.metadata.versionHash == old.versionHash)
        // A step that removes the duplicates: the dry run cannot run it, and does not refuse.
        let dedupe = MigrationStep("dedupe") { rows in rows.removeRows(of: "Thing") { $0.primaryKey == 3 } }
        #expect(try inMemoryManager(store, new, steps: [dedupe]).migrationPlan().canMigrate)
        #expect(try rowsByKey(inMemoryManager(store, new, steps: [dedupe]), "Thing").keys.sorted() == [1, 2])
    }
}
