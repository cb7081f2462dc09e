import Dispatch
import Foundation
import QueueData
import Testing

final class Fixture: ManagedObject {
    @Attribute var a: String = "a0"
    @Attribute var b: String = "b0"
    @Attribute var c: String = "c0"
}

let fixtureModel = ManagedObjectModel([Fixture.self, Item.self])

/// The stores the policies are checked on.
enum FixtureStore: String, CaseIterable, CustomTestStringConvertible {
    case inMemory, journal, jsonFile
    var testDescription: String { rawValue }

    func manager(_ directory: TemporaryDirectory) -> ContextManager {
        switch self {
        case .inMemory:
            let store = InMemoryStore()
            return makeManager(model: fixtureModel, storeType: .custom { _ in store })
        case .journal: return journalManager(directory, model: fixtureModel)
        case .jsonFile: return jsonManager(directory, model: fixtureModel)
        }
    }
}

/// What the fixture run observed.
struct FixtureRun {
    var error: (any Error)?
    var inA: [String]?
    var aIsUpdated = false
    var objectID: ObjectID?
}

@Suite("Merge policies")
struct MergePolicyTests {
    @Test("the fixture table, row by row, on every store", arguments: FixtureStore.allCases)
    func fixtureTable(_ kind: FixtureStore) throws {
        let expectations: [(MergePolicy, stored: [String], succeeds: Bool)] = [
            (.error, ["aB", "bB", "c0"], false),
            (.mergeByPropertyStoreTrump, ["aB", "bB", "cA"], true),
            (.mergeByPropertyObjectTrump, ["aB", "bA", "cA"], true),
            (.overwrite, ["a0", "bA", "cA"], true),
            (.rollback, ["aB", "bB", "c0"], true),
        ]
        for (policy, stored, succeeds) in expectations {
            let (run, state, items) = try runFixture(policy, kind)
            #expect(state == stored, "\(policy) on \(kind)")
            if succeeds {
                #expect(run.error == nil, "\(policy) on \(kind): \(String(describing: run.error))")
                #expect(run.inA == stored, "A's object reflects the stored values (\(policy) on \(kind))")
                #expect(!run.aIsUpdated, "\(policy) on \(kind)")
                #expect(items == 1, "A's other objects still save (\(policy) on \(kind))")
            } else {
                let error = try #require(run.error as? MergeConflictError, "\(policy) on \(kind)")
                let conflict = try #require(error.conflicts.first)
                #expect(error.conflicts.count == 1)
                #expect(conflict.objectID == run.objectID)
                #expect(conflict.snapshotVersion == 1 && conflict.committedVersion == 2)
                #expect(conflict.snapshotValues == ["a": .string("a0"), "b": .string("b0"), "c": .string("c0")])
                #expect(conflict.committedValues == ["a": .string("aB"), "b": .string("bB"), "c": .string("c0")])
                #expect(conflict.objectValues == ["a": .string("a0"), "b": .string("bA"), "c": .string("cA")])
                #expect(conflict.changedAttributes == ["b", "c"])
                #expect(run.inA == ["a0", "bA", "cA"], "A keeps its unsaved changes")
                #expect(run.aIsUpdated)
                #expect(items == 0, "nothing of A's save was written")
            }
        }
    }

    /// Runs the fixture and reads the store afterwards (reopened, for file stores).
    func runFixture(_ policy: MergePolicy, _ kind: FixtureStore) throws -> (FixtureRun, [String]?, Int) {
        let directory = TemporaryDirectory("fixture-\(kind)")
        let store = InMemoryStore()
        func manager() -> ContextManager {
            switch kind {
            case .inMemory: return makeManager(model: fixtureModel, storeType: .custom { _ in store })
            case .journal: return journalManager(directory, model: fixtureModel)
            case .jsonFile: return jsonManager(directory, model: fixtureModel)
            }
        }
        let first = manager()
        let setup = try first.createContext()
        let id = try setup.performAndWait {
            let object = setup.insert(Fixture.self)
            try setup.save()
            return object.objectID
        }
        let a = try makeContext(first, "A")
        let b = try makeContext(first, "B")
        let objectInA = try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            a.mergePolicy = policy
            return try a.existingObject(with: id, as: Fixture.self)
        }
        try b.performAndWait {
            let object = try b.existingObject(with: id, as: Fixture.self)
            object.a = "aB"
            object.b = "bB"
            try b.save()
        }
        var run = FixtureRun(objectID: id)
        a.performAndWait {
            objectInA.b = "bA"
            objectInA.c = "cA"
            a.insert(Item.self).sequence = 99
            do {
                try a.save()
            } catch {
                run.error = error
            }
            run.inA = objectInA.isDeleted ? nil : [objectInA.a, objectInA.b, objectInA.c]
            run.aIsUpdated = objectInA.isUpdated
        }
        first.close()
        let reader = try manager().createContext()
        let (state, items) = try reader.performAndWait {
            let object = reader.object(with: id) as? Fixture
            return (object.map { [$0.a, $0.b, $0.c] }, try reader.count(for: FetchRequest<Item>()))
        }
        return (run, state, items)
    }

    @Test("when the other side deleted the object", arguments: FixtureStore.allCases)
    func deletedElsewhere(_ kind: FixtureStore) throws {
        let expectations: [(MergePolicy, stored: [String]?, throwsConflict: Bool)] = [
            (.error, nil, true),
            (.mergeByPropertyStoreTrump, nil, false),
            (.rollback, nil, false),
            (.mergeByPropertyObjectTrump, ["a0", "bA", "c0"], false),
            (.overwrite, ["a0", "bA", "c0"], false),
        ]
        for (policy, stored, throwsConflict) in expectations {
            let directory = TemporaryDirectory("deleted-\(kind)")
            let store = InMemoryStore()
            let manager: ContextManager
            switch kind {
            case .inMemory: manager = makeManager(model: fixtureModel, storeType: .custom { _ in store })
            case .journal: manager = journalManager(directory, model: fixtureModel)
            case .jsonFile: manager = jsonManager(directory, model: fixtureModel)
            }
            let setup = try manager.createContext()
            let id = try setup.performAndWait {
                let object = setup.insert(Fixture.self)
                try setup.save()
                return object.objectID
            }
            let a = try makeContext(manager, "A")
            let b = try makeContext(manager, "B")
            let watcher = try makeContext(manager, "watcher")
            watcher.performAndWait { _ = watcher.object(with: id) }
            let objectInA = try a.performAndWait {
                a.automaticallyMergesChangesFromOtherContexts = false
                a.mergePolicy = policy
                return try a.existingObject(with: id, as: Fixture.self)
            }
            try b.performAndWait {
                b.delete(try b.existingObject(with: id, as: Fixture.self))
                try b.save()
            }
            var error: (any Error)?
            a.performAndWait {
                objectInA.b = "bA"
                do { try a.save() } catch let thrown { error = thrown }
            }
            if throwsConflict {
                let conflict = (error as? MergeConflictError)?.conflicts.first
                #expect(conflict?.committedVersion == nil && conflict?.objectID == id, "\(policy) on \(kind)")
                a.performAndWait { #expect(objectInA.isUpdated && objectInA.b == "bA") }
            } else {
                #expect(error == nil, "\(policy) on \(kind): \(String(describing: error))")
                a.performAndWait {
                    if stored == nil {
                        #expect(objectInA.isDeleted && objectInA.managedObjectContext == nil, "\(policy) on \(kind)")
                    } else {
                        #expect(!objectInA.isDeleted && objectInA.objectID == id, "\(policy) on \(kind)")
                    }
                }
            }
            flush(watcher)
            let seen = watcher.performAndWait { (watcher.object(with: id) as? Fixture).map { [$0.a, $0.b, $0.c] } }
            #expect(seen == stored, "\(policy) on \(kind): what other contexts see")
            manager.close()
        }
    }

    @Test("when this context deleted an object the other side changed", arguments: FixtureStore.allCases)
    func deletedHere(_ kind: FixtureStore) throws {
        let expectations: [(MergePolicy, stored: [String]?, throwsConflict: Bool)] = [
            (.error, ["aB", "b0", "c0"], true),
            (.mergeByPropertyStoreTrump, ["aB", "b0", "c0"], false),
            (.rollback, ["aB", "b0", "c0"], false),
            (.mergeByPropertyObjectTrump, nil, false),
            (.overwrite, nil, false),
        ]
        for (policy, stored, throwsConflict) in expectations {
            let directory = TemporaryDirectory("deleted-here-\(kind)")
            let store = InMemoryStore()
            let manager: ContextManager
            switch kind {
            case .inMemory: manager = makeManager(model: fixtureModel, storeType: .custom { _ in store })
            case .journal: manager = journalManager(directory, model: fixtureModel)
            case .jsonFile: manager = jsonManager(directory, model: fixtureModel)
            }
            let setup = try manager.createContext()
            let id = try setup.performAndWait {
                let object = setup.insert(Fixture.self)
                try setup.save()
                return object.objectID
            }
            let a = try makeContext(manager, "A")
            let b = try makeContext(manager, "B")
            let objectInA = try a.performAndWait {
                a.automaticallyMergesChangesFromOtherContexts = false
                a.mergePolicy = policy
                return try a.existingObject(with: id, as: Fixture.self)
            }
            try b.performAndWait {
                try b.existingObject(with: id, as: Fixture.self).a = "aB"
                try b.save()
            }
            var error: (any Error)?
            a.performAndWait {
                a.delete(objectInA)
                do { try a.save() } catch let thrown { error = thrown }
            }
            #expect(
                (error is MergeConflictError) == throwsConflict, "\(policy) on \(kind): \(String(describing: error))")
            if !throwsConflict {
                a.performAndWait {
                    #expect(objectInA.isDeleted == (stored == nil), "\(policy) on \(kind)")
                    if stored != nil {
                        #expect(objectInA.a == "aB" && !objectInA.hasChanges, "\(policy) on \(kind)")
                    }
                }
            }
            let reader = try manager.createContext()
            let seen = reader.performAndWait { (reader.object(with: id) as? Fixture).map { [$0.a, $0.b, $0.c] } }
            #expect(seen == stored, "\(policy) on \(kind)")
            manager.close()
        }
    }

    @Test("a custom policy resolves conflicts with its own rule")
    func customPolicy() throws {
        let (run, state, _) = try runFixture(
            .custom(named: "concatenate") { conflicts in
                conflicts.map { conflict in
                    var values = conflict.committedValues ?? conflict.snapshotValues
                    for name in conflict.changedAttributes {
                        guard case .string(let mine) = conflict.objectValues?[name] else { continue }
                        if let theirs = conflict.committedValues?[name], theirs != conflict.snapshotValues[name],
                            case .string(let text) = theirs
                        {
                            values[name] = .string("\(text)+\(mine)")
                        } else {
                            values[name] = .string(mine)
                        }
                    }
                    return .write(values)
                }
            }, .inMemory)
        #expect(run.error == nil)
        #expect(state == ["aB", "bB+bA", "cA"])
        #expect(run.inA == ["aB", "bB+bA", "cA"])
    }

    @Test("a custom policy can fail some conflicts: the save throws with those, and writes nothing")
    func customPartialFailure() throws {
        let manager = makeManager(model: fixtureModel)
        let a = try makeRetainingContext(manager, "A")
        let b = try makeContext(manager, "B")
        let ids = try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            let objects = [a.insert(Fixture.self), a.insert(Fixture.self)]
            try a.save()
            return objects.map(\.objectID)
        }
        try b.performAndWait {
            for id in ids {
                try b.existingObject(with: id, as: Fixture.self).a = "aB"
            }
            try b.save()
        }
        try a.performAndWait {
            a.mergePolicy = .custom { conflicts in
                conflicts.map { $0.objectID == ids[0] ? .fail : .keepStoreVersion }
            }
            for id in ids {
                try a.existingObject(with: id, as: Fixture.self).c = "cA"
            }
            a.insert(Item.self)
            #expect {
                try a.save()
            } throws: { error in
                (error as? MergeConflictError)?.conflicts.map(\.objectID) == [ids[0]]
            }
            #expect(a.updatedObjects.count == 2 && a.insertedObjects.count == 1)
        }
        let reader = try makeContext(manager, "reader")
        let items = try reader.performAndWait { try reader.count(for: FetchRequest<Item>()) }
        #expect(items == 0)
    }

    @Test("a custom policy that returns the wrong number of resolutions traps")
    func customPolicyMiscounted() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: fixtureModel))
            let a = try manager.createContext()
            let b = try manager.createContext()
            let id = try a.performAndWait {
                a.automaticallyMergesChangesFromOtherContexts = false
                a.retainsRegisteredObjects = true
                let object = a.insert(Fixture.self)
                try a.save()
                return object.objectID
            }
            try b.performAndWait {
                try b.existingObject(with: id, as: Fixture.self).a = "x"
                try b.save()
            }
            try a.performAndWait {
                a.mergePolicy = .custom(named: "broken") { _ in [] }
                try a.existingObject(with: id, as: Fixture.self).b = "y"
                try a.save()
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("'broken' returned 0 resolutions for 1 conflicts"))
    }

    @Test("refresh with mergeChanges re-reads committed values and keeps local changes, never conflicting")
    func refreshAvoidsConflicts() throws {
        let manager = makeManager(model: fixtureModel)
        let a = try makeRetainingContext(manager, "A")
        let b = try makeContext(manager, "B")
        let id = try a.performAndWait {
            let object = a.insert(Fixture.self)
            try a.save()
            return object.objectID
        }
        let objectInA = try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            return try a.existingObject(with: id, as: Fixture.self)
        }
        try b.performAndWait {
            try b.existingObject(with: id, as: Fixture.self).a = "aB"
            try b.save()
        }
        try a.performAndWait {
            objectInA.b = "bA"
            a.refresh(objectInA, mergeChanges: true)
            #expect(objectInA.a == "aB" && objectInA.b == "bA")
            try a.save()  // the default .error policy: no conflict left
        }
        let reader = try makeContext(manager, "reader")
        let values = try reader.performAndWait {
            let object = try reader.existingObject(with: id, as: Fixture.self)
            return [object.a, object.b, object.c]
        }
        #expect(values == ["aB", "bA", "c0"])
    }

    @Test("with automatic merging, a save based on merged values does not conflict")
    func mergedContextsDoNotConflict() throws {
        let manager = makeManager(model: fixtureModel)
        let a = try makeContext(manager, "A")
        let b = try makeContext(manager, "B")
        let id = try a.performAndWait {
            let object = a.insert(Fixture.self)
            try a.save()
            return object.objectID
        }
        b.performAndWait { _ = b.object(with: id) }
        for round in 0..<10 {
            try a.performAndWait {
                let object = try a.existingObject(with: id, as: Fixture.self)
                // B's last save was merged: A's save is based on it.
                #expect(object.b == (round == 0 ? "b0" : "b\(round - 1)"), "round \(round)")
                object.a = "a\(round)"
                #expect(throws: Never.self, "round \(round): A conflicted") { try a.save() }
            }
            flush(b)
            try b.performAndWait {
                let object = try b.existingObject(with: id, as: Fixture.self)
                #expect(object.a == "a\(round)", "round \(round): A's save was not merged into B")
                object.b = "b\(round)"
                #expect(throws: Never.self, "round \(round): B conflicted") { try b.save() }
            }
            flush(a)
        }
        // Every save went through: the store and both contexts hold the last of each.
        let reader = try makeContext(manager, "reader")
        for context in [a, b, reader] {
            try context.performAndWait {
                let object = try context.existingObject(with: id, as: Fixture.self)
                #expect([object.a, object.b, object.c] == ["a9", "b9", "c0"], "\(context.name)")
                #expect(!context.hasChanges, "\(context.name)")
            }
        }
    }
}

@Suite("Custom policies under load")
struct CustomPolicyLoadTests {
    /// The "sum counters" policy of the Concurrency Rules article.
    static let sumCounters = MergePolicy.custom(named: "sum counters") { conflicts in
        conflicts.map { conflict in
            guard case .integer(let base)? = conflict.snapshotValues["value"],
                case .integer(let theirs)? = conflict.committedValues?["value"],
                case .integer(let mine)? = conflict.objectValues?["value"]
            else { return .fail }
            return .write(["value": .integer(theirs + mine - base)])
        }
    }

    @Test("the article's sum-counters policy keeps every increment of 8 queues without retrying")
    func sumCounters() throws {
        let manager = makeManager(model: stressModel)
        let setup = try manager.createContext()
        let id = try setup.performAndWait {
            let counter = setup.insert(Counter.self)
            try setup.save()
            return counter.objectID
        }
        let contexts = try (0..<8).map { try makeContext(manager, "sum-\($0)") }
        for context in contexts {
            context.performAndWait { context.mergePolicy = Self.sumCounters }
        }
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            let context = contexts[worker]
            for _ in 0..<200 {
                context.performAndWait {
                    (context.object(with: id) as! Counter).value += 1
                    do {
                        try context.save()
                    } catch {
                        Issue.record("\(error)")
                    }
                }
            }
        }
        let reader = try manager.createContext()
        #expect(try reader.performAndWait { try reader.existingObject(with: id, as: Counter.self).value } == 1_600)
    }
}
