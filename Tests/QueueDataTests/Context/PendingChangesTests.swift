import Dispatch
import Foundation
import Testing

@testable import QueueData

/// The stores the lifecycle tests run on.
enum LifecycleStore: String, CaseIterable, CustomTestStringConvertible {
    case memory, journal, json
    var testDescription: String { rawValue }

    func manager(_ directory: TemporaryDirectory, model: ManagedObjectModel = testModel) -> ContextManager {
        switch self {
        case .memory: return ContextManager(delegate: TestStoreDelegate(model: model))
        case .journal: return journalManager(directory, model: model)
        case .json: return jsonManager(directory, model: model)
        }
    }
}

@Suite("A context's own changes are observable (processPendingChanges)")
struct PendingChangesTests {
    @Test(
        "each perform block reports what it inserted, updated and deleted, once, on the context's queue",
        arguments: LifecycleStore.allCases)
    func blocksReportTheirChanges(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("pending-\(store)")
        let manager = store.manager(directory)
        let context = try makeContext(manager, "own-changes")
        let recorder = ObjectsDidChangeRecorder(context)
        // Blocks entered from the test's thread: the notification is posted on the queue.
        let (a, b) = context.performAndWait {
            let a = context.insert(Destination.self)
            a.name = "A"
            a.rating = 1  // changes of an object inserted in the same block: still one insert
            let b = context.insert(Destination.self)
            b.name = "B"
            return (a.objectID, b.objectID)
        }
        #expect(recorder.removeAll() == [.init(inserted: [a, b])])

        try context.performAndWait { try context.save() }
        let (savedA, savedB) = try context.performAndWait {
            let objects = try context.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)]))
            return (objects[0].objectID, objects[1].objectID)
        }
        // Nothing changed since the last report; the save says which permanent IDs it gave.
        #expect(recorder.removeAll() == [.init(permanent: [a: savedA, b: savedB])])
        context.performAndWait {
            let a = context.object(with: savedA) as! Destination
            a.rating = 5
            a.rating = 6  // the same object again: listed once
            a.name = "A"  // the same value: no change
            let c = context.insert(Destination.self)
            context.delete(c)  // inserted and discarded in one block: not reported
        }
        #expect(recorder.removeAll() == [.init(updated: [savedA])])

        context.performAndWait {
            context.delete(context.object(with: savedB)!)
        }
        #expect(recorder.removeAll() == [.init(deleted: [savedB])])

        context.performAndWait {
            (context.object(with: savedA) as! Destination).rating = 6  // unchanged
        }
        #expect(recorder.removeAll().isEmpty)
        #expect(recorder.allOnQueue)
        manager.close()
    }

    @Test("processPendingChanges reports at once; an inserted object changed in a later event is updated")
    func explicitCall() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "explicit")
        let recorder = ObjectsDidChangeRecorder(context)
        context.performAndWait {
            let object = context.insert(Destination.self)
            context.processPendingChanges()
            #expect(recorder.removeAll() == [.init(inserted: [object.objectID])])
            object.name = "later"
            context.processPendingChanges()
            #expect(recorder.removeAll() == [.init(updated: [object.objectID])])
            context.delete(object)  // an insert reported earlier, discarded now: deleted
            context.processPendingChanges()
            #expect(recorder.removeAll() == [.init(deleted: [object.objectID])])
        }
        #expect(recorder.changes.isEmpty)
    }

    @Test("changes made on the queue outside perform blocks are reported by the next perform block or save")
    func changesOutsideBlocks() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "raw-queue")
        let recorder = ObjectsDidChangeRecorder(context)
        let id = context.queue.sync {
            let object = context.insert(Destination.self)
            object.name = "raw"
            return object.objectID
        }
        #expect(recorder.changes.isEmpty)
        context.performAndWait {}
        #expect(recorder.removeAll() == [.init(inserted: [id])])
    }

    @Test("relationship changes report both sides")
    func relationships() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: graphModel))
        let context = try makeContext(manager, "graph")
        let recorder = ObjectsDidChangeRecorder(context)
        let (explorerID, expeditionID) = try context.performAndWait {
            let explorer = context.insert(Explorer.self)
            let expedition = context.insert(Expedition.self)
            try context.save()
            return (explorer.objectID, expedition.objectID)
        }
        _ = recorder.removeAll()
        context.performAndWait {
            (context.object(with: expeditionID) as! Expedition).leader = (context.object(with: explorerID) as! Explorer)
        }
        #expect(recorder.removeAll() == [.init(updated: [explorerID, expeditionID])])
    }

    @Test("rollback reports discarded inserts as deleted and restored objects as refreshed; reset invalidates all")
    func rollbackAndReset() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "rollback")
        let ids = try seedDestinations(context, ["kept", "deleted"])
        let recorder = ObjectsDidChangeRecorder(context)
        let inserted = context.performAndWait {
            (context.object(with: ids[0]) as! Destination).rating = 9
            context.delete(context.object(with: ids[1])!)
            let object = context.insert(Destination.self)
            context.rollback()
            return object.objectID
        }
        #expect(
            recorder.removeAll() == [
                .init(inserted: [inserted], updated: [ids[0]], deleted: [ids[1]]),
                .init(deleted: [inserted], refreshed: [ids[0], ids[1]]),
            ])
        context.performAndWait {
            (context.object(with: ids[0]) as! Destination).rating = 7
            context.reset()
        }
        #expect(recorder.removeAll() == [.init(updated: [ids[0]]), .init(invalidatedAll: true)])
    }

    @Test("refresh reports the object as refreshed, or deleted when another context deleted it")
    func refresh() throws {
        let manager = makeManager()
        let context = try makeRetainingContext(manager, "refresh")
        let other = try makeContext(manager, "other")
        let ids = try seedDestinations(context, ["a", "b"])
        context.performAndWait { context.automaticallyMergesChangesFromOtherContexts = false }
        try other.performAndWait {
            other.delete(other.object(with: ids[1])!)
            try other.save()
        }
        flush(context)
        let recorder = ObjectsDidChangeRecorder(context)
        context.performAndWait {
            context.refresh(context.object(with: ids[0])!, mergeChanges: false)
            context.refresh(context.object(with: ids[1])!, mergeChanges: true)
        }
        #expect(recorder.removeAll() == [.init(refreshed: [ids[0]]), .init(deleted: [ids[1]])])
    }

    @Test("merges still report, after the context's own changes, from many queues", arguments: 0..<5)
    func mergesAfterOwnChanges(_ round: Int) throws {
        let manager = makeManager()
        let reader = try makeContext(manager, "reader")
        let writers = try (0..<4).map { try makeContext(manager, "writer \($0)") }
        let recorder = ObjectsDidChangeRecorder(reader)
        let group = DispatchGroup()
        for writer in writers {
            DispatchQueue.global().async(group: group) {
                for _ in 0..<10 {
                    try? writer.performAndWait {
                        writer.insert(Destination.self).name = "from \(writer.name)"
                        try writer.save()
                    }
                }
            }
        }
        for index in 0..<20 {
            reader.performAndWait { reader.insert(Destination.self).rating = index }
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        flush(reader)
        let changes = recorder.changes
        let merged = changes.filter { $0.inserted.contains { !$0.isTemporaryID } }
        let own = changes.filter { $0.inserted.contains(where: \.isTemporaryID) }
        #expect(merged.reduce(0) { $0 + $1.inserted.count } == 40)
        #expect(own.count == 20 && own.allSatisfy { $0.inserted.count == 1 })
        #expect(recorder.allOnQueue)
    }

    @Test("a save reports what its commit changed beyond the context's own changes: an upsert")
    func upsertReported() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: uniquenessModel))
        let context = try makeRetainingContext(manager, "upsert")
        let existing = try context.performAndWait {
            let country = context.insert(Country.self)
            country.code = "PT"
            try context.save()
            return country.objectID
        }
        let recorder = ObjectsDidChangeRecorder(context)
        let duplicate = try context.performAndWait {
            context.mergePolicy = .mergeByPropertyObjectTrump
            let duplicate = context.insert(Country.self)
            duplicate.code = "PT"
            duplicate.name = "Portugal"
            let temporaryID = duplicate.objectID
            try context.save()
            return temporaryID
        }
        #expect(
            recorder.removeAll() == [.init(inserted: [duplicate]), .init(updated: [existing], deleted: [duplicate])])
    }
}

@Suite("What a context shows after merging another context's deletion of an object it holds")
struct MergedDeletionTests {
    @Test(
        "the object leaves: deleted, without a context, unregistered, not a pending deletion; other changes stay",
        arguments: LifecycleStore.allCases)
    func mergedDeletion(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("merged-deletion-\(store)")
        let manager = store.manager(directory)
        let holder = try makeContext(manager, "holder")
        let deleter = try makeContext(manager, "deleter")
        let ids = try seedDestinations(holder, ["doomed", "kept"])
        let recorder = ObjectsDidChangeRecorder(holder)
        let (doomed, kept) = holder.performAndWait {
            let doomed = holder.object(with: ids[0]) as! Destination
            let kept = holder.object(with: ids[1]) as! Destination
            doomed.rating = 99  // an unsaved change the deletion discards
            kept.rating = 7
            return (doomed, kept)
        }
        _ = recorder.removeAll()
        try deleter.performAndWait {
            deleter.delete(deleter.object(with: ids[0])!)
            try deleter.save()
        }
        flush(holder)
        try holder.performAndWait {
            #expect(doomed.isDeleted)
            #expect(doomed.managedObjectContext == nil)
            #expect(!doomed.hasChanges)
            #expect(doomed.name == "doomed", "its last values stay readable")
            #expect(!holder.registeredObjects.contains(doomed))
            #expect(holder.object(with: ids[0]) == nil)
            #expect(holder.deletedObjects.isEmpty, "nothing is left to save for it")
            #expect(holder.updatedObjects == [kept])
            #expect(holder.hasChanges)
            try holder.save()
            #expect(!holder.hasChanges)
        }
        #expect(recorder.changes.first == .init(deleted: [ids[0]]))
        let reader = try makeContext(manager, "reader")
        let stored = try reader.performAndWait {
            try reader.fetch(FetchRequest<Destination>()).map { "\($0.name) \($0.rating)" }
        }
        #expect(stored == ["kept 7"])
        manager.close()
    }

    @Test("with nothing else changed, the context has no changes after the merge")
    func nothingLeft() throws {
        let manager = makeManager()
        let holder = try makeContext(manager, "holder")
        let deleter = try makeContext(manager, "deleter")
        let ids = try seedDestinations(holder, ["doomed"])
        holder.performAndWait { (holder.object(with: ids[0]) as! Destination).rating = 3 }
        try deleter.performAndWait {
            deleter.delete(deleter.object(with: ids[0])!)
            try deleter.save()
        }
        flush(holder)
        holder.performAndWait {
            #expect(!holder.hasChanges)
            #expect(holder.updatedObjects.isEmpty && holder.deletedObjects.isEmpty)
        }
    }
}
