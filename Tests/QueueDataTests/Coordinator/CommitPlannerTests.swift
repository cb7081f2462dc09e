import Foundation
import Testing

@testable import QueueData

/// The commit planner on its own: rows in, a save request, the planned result out — no store,
/// no coordinator, no context.
@Suite("Commit planning without a store")
struct CommitPlannerTests {
    /// Owner (name) ↔ Pet (name, owner), and Tag (label, unique).
    let model: ManagedObjectModel = try! ManagedObjectModel(entities: [
        EntityDescription(
            name: "Owner", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "pets", destination: "Pet", inverse: "owner", isToMany: true)]
        ),
        EntityDescription(
            name: "Pet", attributes: [AttributeDescription(name: "name", type: .string)],
            relationships: [RelationshipDescription(name: "owner", destination: "Owner", inverse: "pets")]),
        EntityDescription(
            name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)],
            uniquenessConstraints: [["label"]]),
    ])
    let store = UUID()

    /// A planner over committed `rows` (values by entity name, keys from 1).
    func planner(_ rows: [String: [[StoredValue]]]) throws -> CommitPlanner {
        var contents = StoreContents(
            metadata: StoreMetadata(storeIdentifier: store, versionHash: model.versionHash), schema: model.entities,
            rows: [:])
        for (entityName, values) in rows {
            contents.rows[entityName] = values.enumerated().map { StoredRow(primaryKey: Int64($0 + 1), values: $1) }
            contents.metadata.nextPrimaryKeys[entityName] = Int64(values.count + 1)
        }
        let tables = try StoreCoordinator.loadTables(contents, model: model)
        return CommitPlanner(
            model: model, coordinatorIdentifier: UUID(),
            entityKeys: model.entities.enumerated().map {
                EntityKey(entityName: $1.name, storeIdentifier: store, entityIndex: $0)
            },
            tables: tables, uniquenessIndexes: try StoreCoordinator.uniquenessIndexes(of: tables, model: model))
    }

    func index(_ name: String) -> Int { model.entityIndexes[name]! }

    /// A pet named `name` whose owner is `owner` (a key, temporary or permanent), or none.
    func pet(_ name: String, owner: Int64?) -> [StoredValue] {
        [.string(name), owner.map { .integer($0) } ?? .null]
    }

    func update(
        _ entity: String, _ key: Int64, version: Int64 = 1, from snapshot: [StoredValue], set slot: Int,
        to value: StoredValue
    ) -> SaveRequest.Update {
        SaveRequest.Update(
            entityIndex: index(entity), primaryKey: key, baseVersion: version, snapshot: snapshot, changedSlots: [slot],
            changedValues: [value])
    }

    @Test("inserts take the next keys, relationships to them are translated, and the other side is repaired")
    func insertsAndInverses() throws {
        let planner = try planner(["Owner": [[.string("ann"), .data(Data())]], "Pet": [pet("old", owner: nil)]])
        var request = SaveRequest()
        // A new owner and a new pet of that owner (by temporary key), and the old pet moved to ann.
        request.inserts = [
            SaveRequest.Insert(
                entityIndex: index("Owner"), temporaryKey: Int64.min + 1, values: [.string("bob"), .data(Data())]),
            SaveRequest.Insert(
                entityIndex: index("Pet"), temporaryKey: Int64.min + 2, values: pet("rex", owner: Int64.min + 1)),
        ]
        request.updates = [update("Pet", 1, from: pet("old", owner: nil), set: 1, to: .integer(1))]
        let result = try planner.plan(request)

        let owners = try #require(result.changeSet.entities.first { $0.entityName == "Owner" })
        let pets = try #require(result.changeSet.entities.first { $0.entityName == "Pet" })
        #expect(owners.inserted.map(\.primaryKey) == [2])
        #expect(pets.inserted.map(\.primaryKey) == [2])
        #expect(pets.inserted[0].values == pet("rex", owner: 2))
        // Both owners' pets were repaired: bob's lists rex, ann's lists the old pet.
        #expect(RelationshipKeys.decode(owners.inserted[0].values[1]) == [2])
        #expect(owners.updated.map(\.primaryKey) == [1])
        #expect(RelationshipKeys.decode(owners.updated[0].values[1]) == [1])
        #expect(result.changeSet.nextPrimaryKeys == ["Owner": 3, "Pet": 3])
        #expect(result.outcome.inserted.map(\.primaryKey) == [2, 2])
        #expect(result.tables[index("Pet")].row(for: 1)?.version == 2)
        // What other contexts merge is derived from the same commit.
        let ids = result.outcome.changes
        #expect(ids.insertedObjectIDs.map { "\($0.entityName) \($0.primaryKey!)" }.sorted() == ["Owner 2", "Pet 2"])
        #expect(ids.updatedObjectIDs.map { "\($0.entityName) \($0.primaryKey!)" }.sorted() == ["Owner 1", "Pet 1"])
        #expect(ids.deletedObjectIDs.isEmpty)
        // Pure: the planner's own tables are untouched.
        #expect(planner.tables[index("Pet")].row(for: 2) == nil)
        #expect(planner.tables[index("Pet")].row(for: 1)?.version == 1)
    }

    @Test("a stale update is a conflict: .error fails it, a trump policy merges by property")
    func conflicts() throws {
        // Committed: version 2 of the pet (someone renamed it); the request saw version 1.
        var planner = try planner(["Pet": [pet("a", owner: nil)]])
        var tables = planner.tables
        tables[index("Pet")].replace(with: CommittedRow(primaryKey: 1, version: 2, values: pet("renamed", owner: nil)))
        planner = CommitPlanner(
            model: model, coordinatorIdentifier: planner.coordinatorIdentifier, entityKeys: planner.entityKeys,
            tables: tables, uniquenessIndexes: planner.uniquenessIndexes)
        var request = SaveRequest()
        request.updates = [update("Pet", 1, from: pet("a", owner: nil), set: 0, to: .string("mine"))]
        let error = #expect(throws: MergeConflictError.self) { try planner.plan(request) }
        #expect(error?.conflicts.first?.committedVersion == 2)

        request.mergePolicy = .mergeByPropertyObjectTrump
        let trumped = try planner.plan(request)
        #expect(trumped.changeSet.entities.first?.updated.first?.values == pet("mine", owner: nil))
        request.mergePolicy = .mergeByPropertyStoreTrump
        let kept = try planner.plan(request)
        #expect(kept.changeSet.entities.isEmpty, "the store's value wins: nothing to write")

        // Deleting a row another save deleted already reaches the goal: no conflict, no change.
        var deleting = SaveRequest()
        deleting.deletes = [SaveRequest.Delete(entityIndex: index("Pet"), primaryKey: 9, baseVersion: 1, snapshot: [])]
        #expect(try planner.plan(deleting).changeSet.entities.isEmpty)
    }

    @Test("an insert holding a unique value: upserted under a trump policy, refused under .error")
    func uniqueness() throws {
        let planner = try planner(["Tag": [[.string("red")], [.string("blue")]]])
        var request = SaveRequest()
        request.inserts = [
            SaveRequest.Insert(entityIndex: index("Tag"), temporaryKey: Int64.min + 1, values: [.string("blue")]),
            SaveRequest.Insert(entityIndex: index("Tag"), temporaryKey: Int64.min + 2, values: [.string("green")]),
        ]
        let error = #expect(throws: MergeConflictError.self) { try planner.plan(request) }
        #expect(error?.constraintConflicts.first?.conflictingObjectID.primaryKey == 2)

        request.mergePolicy = .mergeByPropertyObjectTrump
        let result = try planner.plan(request)
        #expect(result.outcome.upsertedInserts == [0])
        // The upserted insert reports the row it went into; the key it was given is not reused.
        #expect(result.outcome.inserted.map(\.primaryKey) == [2, 4])
        #expect(result.changeSet.entities.first?.inserted.map(\.primaryKey) == [4])
        #expect(result.changeSet.nextPrimaryKeys == ["Tag": 5])

        // Two inserts of one value in one save are upserted into each other, not two rows.
        request.inserts[0].values = [.string("green")]
        let merged = try planner.plan(request)
        #expect(merged.changeSet.entities.first?.inserted.count == 1)
    }
}
