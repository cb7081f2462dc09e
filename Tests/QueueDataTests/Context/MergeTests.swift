import Dispatch
import Foundation
import QueueData
import Testing

@Suite("Merging saves between contexts")
struct MergeTests {
    let manager = makeManager()
    let writer: ManagedObjectContext
    let reader: ManagedObjectContext

    init() throws {
        writer = try makeContext(manager, "writer")
        reader = try makeRetainingContext(manager, "reader")
    }

    @Test("a merge updates registered objects and keeps their unsaved local edits")
    func mergeKeepsLocalEdits() throws {
        let ids = try seedDestinations(writer, ["A"])
        reader.performAndWait {
            let a = reader.object(with: ids[0]) as! Destination
            a.country = "local edit"
            a.rating = 100
        }
        try writer.performAndWait {
            let a = writer.object(with: ids[0]) as! Destination
            a.name = "renamed"
            a.rating = 5
            try writer.save()
        }
        flush(reader)
        reader.performAndWait {
            let a = reader.object(with: ids[0]) as! Destination
            #expect(a.name == "renamed")
            #expect(a.country == "local edit")
            #expect(a.rating == 100)
            #expect(
                a.committedValues(forKeys: ["rating", "name"]) == ["rating": .integer(5), "name": .string("renamed")])
            #expect(a.changedValues() == ["country": .string("local edit"), "rating": .integer(100)])
        }
    }

    @Test("a merged delete removes the object from the context")
    func mergeDeletes() throws {
        let ids = try seedDestinations(writer, ["A", "B"])
        let observed = reader.performAndWait { reader.object(with: ids[1]) != nil }
        #expect(observed)
        try writer.performAndWait {
            writer.delete(writer.object(with: ids[1])!)
            try writer.save()
        }
        flush(reader)
        try reader.performAndWait {
            #expect(reader.object(with: ids[1]) == nil)
            let names = try reader.fetch(FetchRequest<Destination>()).map(\.name)
            #expect(names == ["A"])
            #expect(reader.registeredObjects.count == 1)
        }
    }

    @Test("a deleted object a context still references is marked deleted and leaves it")
    func mergedDeleteMarksObject() throws {
        let ids = try seedDestinations(writer, ["A"])
        let box = ObjectBox()
        reader.performAndWait { box.object = reader.object(with: ids[0]) }
        try writer.performAndWait {
            writer.delete(writer.object(with: ids[0])!)
            try writer.save()
        }
        flush(reader)
        reader.performAndWait {
            let object = box.object as! Destination
            #expect(object.isDeleted)
            #expect(object.managedObjectContext == nil)
            #expect(object.name == "A")
        }
    }

    @Test("objects inserted by another context become fetchable")
    func mergeInserts() throws {
        #expect(try reader.performAndWait { try reader.count(for: FetchRequest<Destination>()) } == 0)
        try seedDestinations(writer, ["A", "B"])
        let names = try reader.performAndWait { try reader.fetch(FetchRequest<Destination>()).map(\.name) }
        #expect(names == ["A", "B"])
    }

    @Test("the merge posts objectsDidChange on the context's queue with what changed")
    func objectsDidChange() async throws {
        let ids = try seedDestinations(writer, ["A", "B"])
        reader.performAndWait {
            _ = reader.object(with: ids[0])
            _ = reader.object(with: ids[1])
        }
        let received = NotificationBox()
        let observed = reader
        let token = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: observed, queue: nil
        ) { notification in
            // The observer runs on the reader's queue: touching it here must not trap.
            dispatchPrecondition(condition: .onQueue(observed.queue))
            let registered = observed.registeredObjects.count
            received.record(ObjectsDidChange(notification), registered: registered)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let newID = try writer.performAndWait {
            (writer.object(with: ids[0]) as! Destination).rating = 9
            writer.delete(writer.object(with: ids[1])!)
            let c = writer.insert(Destination.self)
            try writer.save()
            return c.objectID
        }
        flush(reader)
        let changes = try #require(received.changes.first)
        #expect(received.changes.count == 1)
        #expect(changes?.updatedObjectIDs == [ids[0]])
        #expect(changes?.deletedObjectIDs == [ids[1]])
        #expect(changes?.insertedObjectIDs == [newID])
        #expect(received.registeredCounts == [1])
    }

    @Test("contexts of two managers never merge each other's saves")
    func managersAreIsolated() throws {
        let otherManager = makeManager()
        let outsider = try makeContext(otherManager, "outsider")
        let ids = try seedDestinations(outsider, ["Outside"])
        let local = try seedDestinations(writer, ["Inside"])
        let counter = NotificationCounter(name: ManagedObjectContext.objectsDidChangeNotification, object: outsider)
        try writer.performAndWait {
            (writer.object(with: local[0]) as! Destination).rating = 1
            try writer.save()
        }
        flush(reader, outsider)
        #expect(counter.count == 0)
        let names = try outsider.performAndWait { try outsider.fetch(FetchRequest<Destination>()).map(\.name) }
        #expect(names == ["Outside"])
        #expect(ids[0].storeIdentifier != local[0].storeIdentifier)
    }

    @Test("a context does not merge its own saves (it reports its own inserts once, before the save)")
    func noSelfMerge() throws {
        let recorder = ObjectsDidChangeRecorder(writer)
        let ids = try seedDestinations(writer, ["A"])
        flush(writer)
        let changes = recorder.changes
        // Its own insert, before the save; then the permanent ID the save gave it.
        #expect(changes.count == 2)
        #expect(changes.first?.inserted.count == 1)
        #expect(changes.first?.inserted.allSatisfy(\.isTemporaryID) == true)
        #expect(changes.last.map { Set($0.permanent.values) } == Set(ids))
        #expect(!changes.contains { !$0.inserted.isDisjoint(with: ids) || !$0.updated.isDisjoint(with: ids) })
    }

    @Test("a context skips a didSave only when the context itself posted it: posted by anything else, it merges")
    func selfMergeDecidedByPoster() throws {
        let captured = NotificationBox()
        let token = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveNotification, object: writer, queue: nil
        ) { notification in
            captured.notifications.append(notification)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let ids = try seedDestinations(writer, ["A"])
        flush(writer)
        let saved = try #require(captured.notifications.first)
        let recorder = ObjectsDidChangeRecorder(writer)
        // Posted again with the writer as its object: still its own save, not merged.
        NotificationCenter.default.post(
            name: ManagedObjectContext.didSaveNotification, object: writer, userInfo: saved.userInfo)
        flush(writer)
        #expect(recorder.changes.isEmpty)
        // Posted with no object, or one that is not a context: merged like another context's save.
        for object: Any? in [nil, "not a context"] {
            NotificationCenter.default.post(
                name: ManagedObjectContext.didSaveNotification, object: object, userInfo: saved.userInfo)
        }
        flush(writer)
        #expect(recorder.changes.count == 2)
        #expect(recorder.changes.allSatisfy { $0.inserted == Set(ids) })
    }

    @Test("a released context stops observing: saves after it is gone reach no one and nothing crashes")
    func releasedContextObserverIsGone() throws {
        weak var released: ManagedObjectContext?
        let queue = DispatchQueue(label: "short-lived")
        do {
            let context = try manager.createContext(for: queue)
            released = context
            try seedDestinations(context, ["A"])
            _ = context.performAndWait { try? context.fetch(FetchRequest<Destination>()) }
        }
        // Let blocks that still hold the context (the merge of the seed save) finish.
        queue.sync {}
        flush(reader)
        #expect(released == nil)
        for index in 0..<20 {
            try seedDestinations(writer, ["after \(index)"])
        }
        let replacement = try manager.createContext(for: queue)
        let count = try replacement.performAndWait { try replacement.count(for: FetchRequest<Destination>()) }
        #expect(count == 21)
    }

    @Test("with automatic merging off nothing merges until mergeChanges(fromContextDidSave:)")
    func manualMerge() throws {
        let ids = try seedDestinations(writer, ["A"])
        reader.performAndWait {
            reader.automaticallyMergesChangesFromOtherContexts = false
            _ = reader.object(with: ids[0])
        }
        let captured = NotificationBox()
        let token = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveNotification, object: writer, queue: nil
        ) { notification in
            captured.notifications.append(notification)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try writer.performAndWait {
            (writer.object(with: ids[0]) as! Destination).rating = 3
            try writer.save()
        }
        flush(reader)
        let notification = try #require(captured.notifications.first)
        #expect(SaveChanges(notification)?.updatedObjectIDs == [ids[0]])
        reader.performAndWait {
            let a = reader.object(with: ids[0]) as! Destination
            #expect(a.rating == 0)
            reader.mergeChanges(fromContextDidSave: notification)
            #expect(a.rating == 3)
        }
    }

    @Test("merges that arrive out of order never move an object back to an older version")
    func outOfOrderMerges() throws {
        let ids = try seedDestinations(writer, ["A"])
        reader.performAndWait {
            reader.automaticallyMergesChangesFromOtherContexts = false
            _ = reader.object(with: ids[0])
        }
        let captured = NotificationBox()
        let token = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveNotification, object: writer, queue: nil
        ) { notification in
            captured.notifications.append(notification)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        for rating in 1...3 {
            try writer.performAndWait {
                (writer.object(with: ids[0]) as! Destination).rating = rating
                try writer.save()
            }
        }
        reader.performAndWait {
            let a = reader.object(with: ids[0]) as! Destination
            for notification in captured.notifications.reversed() {
                reader.mergeChanges(fromContextDidSave: notification)
                #expect(a.rating == 3)
            }
            #expect(!a.isUpdated)
        }
    }

    @Test("the main context merges on the main queue")
    func mainContextMerges() async throws {
        let main = try manager.mainContext
        #expect(try manager.mainContext === main)
        #expect(try manager.createContext(for: .main) === main)
        let ids = try seedDestinations(writer, ["A"])
        let first = try await main.perform {
            dispatchPrecondition(condition: .onQueue(.main))
            return try main.existingObject(with: ids[0], as: Destination.self).rating
        }
        #expect(first == 0)
        try writer.performAndWait {
            (writer.object(with: ids[0]) as! Destination).rating = 8
            try writer.save()
        }
        let merged = try await main.perform { (try main.existingObject(with: ids[0], as: Destination.self)).rating }
        #expect(merged == 8)
    }
}

/// Holds an object across blocks of its context's queue (tests only touch it there).
final class ObjectBox: @unchecked Sendable {
    var object: ManagedObject?
}

/// Collects notifications; appended to only on one queue at a time in these tests.
final class NotificationBox: @unchecked Sendable {
    var notifications: [Notification] = []
    var changes: [ObjectsDidChange?] = []
    var registeredCounts: [Int] = []

    func record(_ change: ObjectsDidChange?, registered: Int) {
        changes.append(change)
        registeredCounts.append(registered)
    }
}
