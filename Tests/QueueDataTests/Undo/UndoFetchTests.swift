import Foundation
import Testing

@testable import QueueData

/// Fetches and counts after undo and redo: an object an undo or redo brought back or removed
/// again is fetched once, and counted as it is fetched.
@Suite("Undo and fetching")
struct UndoFetchTests {
    @Test("insert, undo, redo: the object is fetched once and counted once")
    func insertUndoRedo() throws {
        let manager = makeManager()
        defer { manager.close() }
        let context = try makeContext(manager, "undo-fetch-redo")
        context.performAndWait { context.undoManager = UndoManager() }
        context.performAndWait { context.insert(Destination.self).name = "X" }
        context.performAndWait { _ = context.undo() }
        context.performAndWait { _ = context.redo() }
        try context.performAndWait { () throws -> Void in
            #expect(try context.fetch(FetchRequest<Destination>()).count == 1)
            #expect(try context.count(for: FetchRequest<Destination>()) == 1)
            #expect(try context.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.rating)])).count == 1)
            #expect(try context.fetchObjectIDs(FetchRequest<Destination>()).count == 1)
            #expect(context.insertedObjects.count == 1)
        }
    }

    @Test("delete, undo, redo (and delete, undo, delete): count(for:) is fetch().count")
    func deleteUndoRedo() throws {
        let manager = makeManager()
        defer { manager.close() }
        let context = try makeContext(manager, "undo-fetch-delete")
        let ids = try context.performAndWait {
            let objects = (0..<5).map { index in
                let destination = context.insert(Destination.self)
                destination.name = "d\(index)"
                return destination
            }
            try context.save()
            context.undoManager = UndoManager()
            return objects.map(\.objectID)
        }
        context.performAndWait { context.delete(context.object(with: ids[0])!) }
        context.performAndWait { _ = context.undo() }
        context.performAndWait { _ = context.redo() }
        try context.performAndWait { () throws -> Void in
            #expect(try context.fetch(FetchRequest<Destination>()).count == 4)
            #expect(try context.count(for: FetchRequest<Destination>()) == 4)
        }
        context.performAndWait { context.delete(context.object(with: ids[1])!) }
        context.performAndWait { _ = context.undo() }
        context.performAndWait { context.delete(context.object(with: ids[1])!) }
        try context.performAndWait { () throws -> Void in
            #expect(try context.fetch(FetchRequest<Destination>()).count == 3)
            #expect(try context.count(for: FetchRequest<Destination>()) == 3)
            #expect(context.deletedObjects.count == 2)
        }
    }

    @Test("a child's save wins over the parent's pending deletion; deleted again, the parent counts it once")
    func childSaveOverPendingDeletion() throws {
        let manager = makeManager()
        defer { manager.close() }
        let parent = try makeContext(manager, "undo-fetch-parent")
        let ids = try parent.performAndWait {
            let objects = (0..<3).map { index in
                let destination = parent.insert(Destination.self)
                destination.name = "d\(index)"
                return destination
            }
            try parent.save()
            return objects.map(\.objectID)
        }
        let child = parent.performAndWait { parent.newChildContext() }
        let held = try child.performAndWait { try child.existingObject(with: ids[0], as: Destination.self) }
        parent.performAndWait { parent.delete(parent.object(with: ids[0])!) }
        try child.performAndWait {
            child.mergePolicy = .mergeByPropertyObjectTrump
            held.rating = 9
            try child.save()
        }
        try parent.performAndWait { () throws -> Void in
            #expect(try parent.count(for: FetchRequest<Destination>()) == 3)
            parent.delete(parent.object(with: ids[0])!)
            #expect(try parent.fetch(FetchRequest<Destination>()).count == 2)
            #expect(try parent.count(for: FetchRequest<Destination>()) == 2)
        }
        _ = held
    }

    @Test(
        "random inserts, deletes, undos, redos and saves: fetches list each object once, counts agree, a reference holds"
    )
    func randomRoundsAgainstAReference() throws {
        let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_FETCH_ROUNDS"].flatMap(Int.init) ?? 400
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        let manager = makeManager()
        defer { manager.close() }
        let context = try makeContext(manager, "undo-fetch-random")
        context.performAndWait { context.undoManager = UndoManager() }
        var next = 0
        for round in 0..<rounds {
            let operation = Int.random(in: 0..<10, using: &random)
            try context.performAndWait {
                switch operation {
                case 0...2:
                    let destination = context.insert(Destination.self)
                    destination.name = "n\(next)"
                    destination.rating = next % 5
                    next += 1
                case 3...4:
                    let live = try context.fetch(FetchRequest<Destination>())
                    if let victim = live.randomElement(using: &random) {
                        context.delete(victim)
                    }
                case 5...6:
                    _ = context.undo()
                case 7...8:
                    _ = context.redo()
                default:
                    try context.save()
                }
            }
            try context.performAndWait {
                let message = "seed \(seed), round \(round)"
                let all = try context.fetch(FetchRequest<Destination>())
                #expect(Set(all.map(ObjectIdentifier.init)).count == all.count, "\(message): fetched twice")
                #expect(try context.count(for: FetchRequest<Destination>()) == all.count, "\(message)")
                #expect(all.allSatisfy { !$0.isDeleted }, "\(message): a deleted object fetched")
                let sorted = try context.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)]))
                #expect(sorted.map(\.name) == all.map(\.name).sorted(), "\(message)")
                let matching = try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating >= 2 }))
                #expect(
                    Set(matching.map(\.objectID)) == Set(all.filter { $0.rating >= 2 }.map(\.objectID)), "\(message)")
                #expect(
                    try context.count(for: FetchRequest<Destination>(predicate: #Predicate { $0.rating >= 2 }))
                        == matching.count, "\(message)")
                // The reference: what the store holds, with this context's pending changes.
                let reader = try makeContext(manager, "undo-fetch-reader")
                let stored = try reader.performAndWait {
                    Set(try reader.fetch(FetchRequest<Destination>()).map(\.objectID))
                }
                let expected = stored.subtracting(context.deletedObjects.map(\.objectID))
                    .union(context.insertedObjects.map(\.objectID))
                #expect(Set(all.map(\.objectID)) == expected, "\(message)")
            }
        }
    }
}
