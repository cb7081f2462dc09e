import Dispatch
import Foundation
import Testing

@testable import QueueData

@Suite("Change streams")
struct ObservationStreamTests {
    @Test("a manager's saves from 8 queues reach a task; combined for a slow consumer, nothing lost")
    func managerSaves() async throws {
        let manager = makeManager()
        let stream = manager.changes
        let contexts = try (0..<8).map { try makeContext(manager, "saver \($0)") }
        let saved = Locked<Set<ObjectID>>([])
        DispatchQueue.concurrentPerform(iterations: contexts.count) { index in
            let context = contexts[index]
            for round in 0..<20 {
                let id = try? context.performAndWait {
                    let destination = context.insert(Destination.self)
                    destination.name = "\(index)-\(round)"
                    try context.save()
                    return destination.objectID
                }
                if let id {
                    saved.withLock { _ = $0.insert(id) }
                }
            }
        }
        let expected = saved.withLock { $0 }
        #expect(expected.count == 160)
        // The consumer starts late: everything since the stream was made is there, combined.
        let received = try await within {
            var received = Set<ObjectID>()
            var values = 0
            for await changes in stream {
                values += 1
                received.formUnion(changes.insertedObjectIDs)
                if received.count >= 160 { break }
            }
            return (received, values)
        }
        #expect(received.0 == expected)
        #expect(received.1 < 160, "a slow consumer gets saves combined")
    }

    @Test("saves combined for a slow consumer say where each object ends up, against a reference over random rounds")
    func combinedSavesAgainstAReference() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "combined")
        let ids = try context.performAndWait {
            let objects = (0..<6).map { index in
                let destination = context.insert(Destination.self)
                destination.name = "d\(index)"
                return destination
            }
            try context.save()
            return objects.map(\.objectID)
        }
        let coordinator = UUID()
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        for round in 0..<500 {
            // Each object exists or not at the start; each save inserts, updates, deletes or
            // leaves it, as its existence allows.
            let existedAtStart = ids.map { _ in Bool.random(using: &random) }
            var exists = existedAtStart
            var inserted = Set<ObjectID>()
            var updated = Set<ObjectID>()
            var saves: [SaveChanges] = []
            for _ in 0..<Int.random(in: 1...5, using: &random) {
                var save = (inserted: [ObjectID](), updated: [(ObjectID, CommittedRow)](), deleted: [ObjectID]())
                for (index, id) in ids.enumerated() {
                    switch (exists[index], Int.random(in: 0..<3, using: &random)) {
                    case (false, 0):
                        exists[index] = true
                        save.inserted.append(id)
                        inserted.insert(id)
                    case (true, 0):
                        exists[index] = false
                        save.deleted.append(id)
                        inserted.remove(id)
                        updated.remove(id)
                    case (true, 1):
                        save.updated.append((id, CommittedRow(primaryKey: id.rawValue, version: 1, values: [])))
                        updated.insert(id)
                    default:
                        break
                    }
                }
                saves.append(
                    SaveChanges(
                        coordinatorIdentifier: coordinator, inserted: save.inserted, updated: save.updated,
                        deleted: save.deleted))
            }
            // Combined in a random grouping: from the left, or each later pair first.
            let combined =
                Bool.random(using: &random)
                ? saves.dropFirst().reduce(saves[0]) { $0.combined(with: $1) }
                : saves.dropLast().reversed().reduce(saves[saves.count - 1]) { $1.combined(with: $0) }
            let context = "seed \(seed), round \(round)"
            let deleted = Set(ids.indices.filter { existedAtStart[$0] && !exists[$0] }.map { ids[$0] })
            #expect(combined.deletedObjectIDs == deleted, "\(context)")
            #expect(combined.insertedObjectIDs == inserted, "\(context)")
            #expect(combined.updatedObjectIDs == updated, "\(context)")
            #expect(combined.insertedObjectIDs.isDisjoint(with: combined.deletedObjectIDs), "\(context)")
        }
        manager.close()
    }

    @Test("a deletion saved and then undone and saved reaches a slow consumer as an insertion only")
    func undoneDeletionCombined() async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "undo")
        let id = try context.performAndWait {
            let destination = context.insert(Destination.self)
            try context.save()
            return destination.objectID
        }
        let stream = manager.changes
        try context.performAndWait {
            context.undoManager = UndoManager()
            context.delete(try context.existingObject(with: id))
            try context.save()
            _ = context.undo()
            try context.save()
        }
        let changes = try await within {
            let iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(changes?.insertedObjectIDs == [id])
        #expect(changes?.deletedObjectIDs == [])
        manager.close()
    }

    @Test("other managers' saves are not seen; the stream follows the manager across close and reload")
    func managerScope() async throws {
        let store = InMemoryStore()
        let manager = ContextManager(delegate: TestStoreDelegate(storeType: .custom { _ in store }))
        let other = makeManager()
        let stream = manager.changes
        let outsider = try makeContext(other, "outsider")
        try seedDestinations(outsider, ["elsewhere"])
        manager.close()
        let context = try makeContext(manager, "after reload")
        let ids = try seedDestinations(context, ["here"])
        let first = try await within {
            let iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(first?.insertedObjectIDs == Set(ids))
    }

    @Test("cancelling the iterating task ends the observation at once; nothing is delivered after")
    func cancellation() async throws {
        let manager = makeManager()
        let stream = manager.changes
        let started = Locked(false)
        let task = Task {
            var count = 0
            started.withLock { $0 = true }
            for await _ in stream {
                count += 1
            }
            return count
        }
        while !started.withLock({ $0 }) {
            await Task.yield()
        }
        task.cancel()
        let count = try await within { await task.value }
        #expect(count == 0)
        // The observer is gone: saves now reach no one (and nothing crashes).
        let context = try makeContext(manager, "after")
        try seedDestinations(context, ["unseen"])
    }

    @Test("one object's changes: its committed values after each save, then its deletion, which ends the stream")
    func objectChanges() async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "writer")
        let id = try seedDestinations(context, ["Kyoto"])[0]
        let stream = manager.changes(of: id)
        let otherID = try seedDestinations(context, ["Other"])[0]
        try context.performAndWait {
            (context.object(with: otherID) as! Destination).rating = 9  // not this object
            try context.save()
            (context.object(with: id) as! Destination).rating = 5
            try context.save()
        }
        let values = try await within { () -> [ObjectChange] in
            var values: [ObjectChange] = []
            for await change in stream {
                values.append(change)
                if values.count == 1 {
                    try context.performAndWait {
                        context.delete(context.object(with: id)!)
                        try context.save()
                    }
                }
            }
            return values
        }
        #expect(values.count == 2)
        guard case .updated(let committed) = values.first else {
            Issue.record("expected an update first, got \(values)")
            return
        }
        #expect(committed["rating"] == .integer(5))
        #expect(committed["name"] == .string("Kyoto"))
        #expect(values.last == .deleted)
    }

    @Test("a context's objectsDidChange as a stream: own changes and merges, from a task")
    func contextStream() async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "observed")
        let other = try makeContext(manager, "other")
        let stream = context.objectsDidChange
        let own = context.performAndWait { context.insert(Destination.self).objectID }
        let merged = try seedDestinations(other, ["merged"])
        let seen = try await within {
            var inserted = Set<ObjectID>()
            for await changes in stream {
                inserted.formUnion(changes.insertedObjectIDs)
                if inserted.isSuperset(of: [own] + merged) { break }
            }
            return inserted
        }
        #expect(seen.isSuperset(of: [own] + merged))
    }

    @Test("a controller's snapshots: the current one first, then the latest after changes")
    func controllerSnapshots() async throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: placeModel))
        let context = try makeContext(manager, "board")
        let controller = try context.performAndWait {
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<Place>(sortBy: [SortDescriptor(\.name)]), managedObjectContext: context)
            try controller.performFetch()
            return controller
        }
        let stream = context.performAndWait { controller.snapshots }
        let iterator = stream.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.objectIDs.isEmpty == true)
        for name in ["b", "a", "c"] {
            context.performAndWait { context.insert(Place.self).name = name }
        }
        // The three batches were sent before this call: the pending value is the latest.
        let latest = await iterator.next()
        let expected = context.performAndWait { controller.snapshot }
        #expect(latest == expected, "a slow consumer gets the latest snapshot")
        #expect(expected.objectIDs.count == 3)
        withExtendedLifetime(controller) {}
    }
}
