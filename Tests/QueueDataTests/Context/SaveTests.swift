import Foundation
import QueueData
import Testing

@Suite("Saving, rolling back, resetting and refreshing")
struct SaveTests {
    @Test("a save commits inserts, updates and deletes, and another context sees them")
    func saveCommits() throws {
        let manager = makeManager()
        let writer = try makeContext(manager, "writer")
        let ids = try seedDestinations(writer, ["A", "B", "C"])
        try writer.performAndWait {
            (writer.object(with: ids[0]) as! Destination).rating = 10
            writer.delete(writer.object(with: ids[1])!)
            writer.insert(Destination.self).name = "D"
            #expect(writer.hasChanges)
            try writer.save()
            #expect(!writer.hasChanges)
            #expect(writer.insertedObjects.isEmpty && writer.updatedObjects.isEmpty && writer.deletedObjects.isEmpty)
        }
        let reader = try makeContext(manager, "reader")
        let rows = try reader.performAndWait {
            try reader.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)])).map {
                "\($0.name)=\($0.rating)"
            }
        }
        #expect(rows == ["A=10", "C=2", "D=0"])
    }

    @Test("primary keys are never reused, even after deletes")
    func keysAreNotReused() throws {
        let context = try makeContext(makeManager(), "keys")
        let first = try seedDestinations(context, ["A", "B"])
        try context.performAndWait {
            context.delete(context.object(with: first[1])!)
            try context.save()
        }
        let next = try seedDestinations(context, ["C"])
        #expect(first.map(\.primaryKey) == [1, 2])
        #expect(next[0].primaryKey == 3)
    }

    @Test("saving without changes posts nothing")
    func emptySave() throws {
        let context = try makeContext(makeManager(), "empty")
        try seedDestinations(context, ["A"])
        let counter = NotificationCounter(name: ManagedObjectContext.didSaveNotification, object: context)
        try context.performAndWait {
            try context.save()
            let object = try context.fetch(FetchRequest<Destination>())[0]
            object.rating = 5
            object.rating = 0  // back to the committed value
            try context.save()
            #expect(!object.isUpdated)
        }
        #expect(counter.count == 0)
    }

    @Test("validation collects every failure of every object; nothing is written and changes stay")
    func validationFailures() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "validation")
        try context.performAndWait {
            let empty = context.insert(Trip.self)
            empty.days = 0
            let named = context.insert(Trip.self)
            named.title = "ok"
            let untitled = context.insert(Trip.self)
            #expect {
                try context.save()
            } throws: { error in
                guard let error = error as? ValidationError else { return false }
                let failures = Set(
                    error.failures.map { "\($0.objectID == nil ? "?" : "id").\($0.entityName).\($0.property ?? "-")" })
                return error.failures.count == 3
                    && failures == ["id.Trip.title", "id.Trip.days"]
                    && error.failures.filter { $0.objectID == empty.objectID }.count == 2
                    && error.failures.contains { $0.objectID == untitled.objectID && $0.property == "title" }
                    && "\(error)".contains("must not be empty")
            }
            #expect(context.insertedObjects.count == 3)
            #expect(empty.isInserted && named.isInserted)
            empty.title = "fixed"
            empty.days = 2
            untitled.title = "also fixed"
            try context.save()
            #expect(!empty.objectID.isTemporaryID)
        }
        let reader = try makeContext(manager, "validation-reader")
        #expect(try reader.performAndWait { try reader.count(for: FetchRequest<Trip>()) } == 3)
    }

    @Test("a failed store commit throws, keeps the context's changes, and a retry succeeds")
    func failedCommitKeepsChanges() throws {
        let store = FailingStore()
        let manager = makeManager(storeType: .custom { _ in store })
        let context = try makeContext(manager, "failing")
        let ids = try seedDestinations(context, ["A"])
        store.failNextCommits = 1
        try context.performAndWait {
            (context.object(with: ids[0]) as! Destination).rating = 42
            context.insert(Destination.self).name = "B"
            #expect {
                try context.save()
            } throws: { error in
                (error as? StoreError)?.code == .io
            }
            #expect(context.hasChanges)
            #expect(context.insertedObjects.count == 1 && context.updatedObjects.count == 1)
            #expect(context.insertedObjects.first!.objectID.isTemporaryID)
            try context.save()
        }
        #expect(store.commits.count == 2)
        let reader = try makeContext(manager, "failing-reader")
        let rows = try reader.performAndWait {
            try reader.fetch(FetchRequest<Destination>()).map { "\($0.name)=\($0.rating)" }
        }
        #expect(rows == ["A=42", "B=0"])
    }

    @Test("the change set a store receives carries permanent keys, changed attributes and full rows")
    func changeSetShape() throws {
        let store = FailingStore()
        let manager = makeManager(storeType: .custom { _ in store })
        let context = try makeContext(manager, "shape")
        let ids = try seedDestinations(context, ["A", "B"])
        try context.performAndWait {
            (context.object(with: ids[0]) as! Destination).rating = 9
            context.delete(context.object(with: ids[1])!)
            try context.save()
        }
        let first = try #require(store.commits.first?.entities.first)
        #expect(first.entityName == "Destination")
        #expect(first.inserted.map(\.primaryKey) == [1, 2])
        #expect(first.inserted[1].values == [.string("B"), .string(""), .integer(1), .null])
        #expect(store.commits[0].nextPrimaryKeys == ["Destination": 3])
        let second = try #require(store.commits.last?.entities.first)
        #expect(
            second.updated == [
                ChangeSet.RowUpdate(
                    primaryKey: 1, changedAttributes: [2], values: [.string("A"), .string(""), .integer(9), .null])
            ])
        #expect(second.deleted == [2])
        #expect(store.commits[1].nextPrimaryKeys.isEmpty)
    }

    @Test("updating an object another context deleted is a conflict; nothing is written")
    func updateOfDeletedObjectConflicts() throws {
        let manager = makeManager()
        let first = try makeContext(manager, "first")
        let second = try makeRetainingContext(manager, "second")
        let ids = try seedDestinations(first, ["A", "B"])
        second.performAndWait {
            second.automaticallyMergesChangesFromOtherContexts = false
            _ = second.object(with: ids[0])
        }
        try first.performAndWait {
            first.delete(first.object(with: ids[0])!)
            try first.save()
        }
        try second.performAndWait {
            (second.object(with: ids[0]) as! Destination).rating = 5
            second.insert(Destination.self).name = "C"
            #expect {
                try second.save()
            } throws: { error in
                (error as? MergeConflictError)?.conflicts.map(\.objectID) == [ids[0]]
                    && (error as? MergeConflictError)?.conflicts.first?.committedVersion == nil
            }
            #expect(second.hasChanges)
            let committed = try second.count(for: FetchRequest<Destination>(includesPendingChanges: false))
            #expect(committed == 1)
        }
    }

    @Test("deleting an object another context already deleted succeeds")
    func doubleDelete() throws {
        let manager = makeManager()
        let first = try makeContext(manager, "first")
        let second = try makeRetainingContext(manager, "second")
        let ids = try seedDestinations(first, ["A"])
        second.performAndWait {
            second.automaticallyMergesChangesFromOtherContexts = false
            _ = second.object(with: ids[0])
        }
        try first.performAndWait {
            first.delete(first.object(with: ids[0])!)
            try first.save()
        }
        try second.performAndWait {
            second.delete(second.object(with: ids[0])!)
            try second.save()
            #expect(!second.hasChanges)
        }
    }

    @Test("rollback discards inserts, restores deletes and committed values")
    func rollback() throws {
        let context = try makeContext(makeManager(), "rollback")
        let ids = try seedDestinations(context, ["A", "B"])
        try context.performAndWait {
            let a = context.object(with: ids[0]) as! Destination
            let b = context.object(with: ids[1]) as! Destination
            a.name = "changed"
            context.delete(b)
            let c = context.insert(Destination.self)
            context.rollback()
            #expect(!context.hasChanges)
            #expect(a.name == "A" && !a.isUpdated)
            #expect(!b.isDeleted && b.managedObjectContext === context)
            #expect(c.managedObjectContext == nil)
            #expect(try context.fetch(FetchRequest<Destination>()).map(\.name) == ["A", "B"])
            b.rating = 4  // restored objects are writable again
            try context.save()
        }
    }

    @Test("deleting an unsaved insert simply discards it")
    func deleteInsert() throws {
        let context = try makeContext(makeManager(), "delete-insert")
        try context.performAndWait {
            let object = context.insert(Destination.self)
            context.delete(object)
            #expect(!context.hasChanges)
            #expect(context.deletedObjects.isEmpty && context.insertedObjects.isEmpty)
            #expect(object.managedObjectContext == nil)
            try context.save()
            #expect(try context.count(for: FetchRequest<Destination>()) == 0)
        }
    }

    @Test("reset forgets every object; old references stay readable but leave the context")
    func reset() throws {
        let context = try makeContext(makeManager(), "reset")
        let ids = try seedDestinations(context, ["A"])
        try context.performAndWait {
            let a = context.object(with: ids[0]) as! Destination
            a.rating = 99
            context.insert(Destination.self)
            context.reset()
            #expect(context.registeredObjects.isEmpty && !context.hasChanges)
            #expect(a.managedObjectContext == nil)
            #expect(a.name == "A" && a.rating == 0)
            let fresh = try context.existingObject(with: ids[0], as: Destination.self)
            #expect(fresh !== a)
            #expect(fresh.rating == 0)
            #expect(try context.count(for: FetchRequest<Destination>()) == 1)
        }
    }

    @Test("refresh re-reads committed values, keeping or discarding local changes")
    func refresh() throws {
        let manager = makeManager()
        let first = try makeContext(manager, "first")
        let second = try makeRetainingContext(manager, "second")
        let ids = try seedDestinations(first, ["A"])
        second.performAndWait {
            second.automaticallyMergesChangesFromOtherContexts = false
            let a = second.object(with: ids[0]) as! Destination
            a.country = "local"
        }
        try first.performAndWait {
            let a = first.object(with: ids[0]) as! Destination
            a.rating = 7
            a.name = "renamed"
            try first.save()
        }
        second.performAndWait {
            let a = second.object(with: ids[0]) as! Destination
            #expect(a.rating == 0)
            second.refresh(a, mergeChanges: true)
            #expect(a.rating == 7 && a.name == "renamed" && a.country == "local")
            #expect(a.isUpdated)
            #expect(a.committedValues(forKeys: ["rating"]) == ["rating": .integer(7)])
            second.refresh(a, mergeChanges: false)
            #expect(a.country == "" && !a.isUpdated && !second.hasChanges)
        }
        try first.performAndWait {
            first.delete(first.object(with: ids[0])!)
            try first.save()
        }
        second.performAndWait {
            let a = second.object(with: ids[0])!
            second.refresh(a, mergeChanges: true)
            #expect(a.isDeleted && a.managedObjectContext == nil)
            #expect(second.object(with: ids[0]) == nil)
        }
    }
}

/// Counts notifications posted with one name by one object.
final class NotificationCounter: @unchecked Sendable {
    private let counter = AtomicCounter()
    private var token: (any NSObjectProtocol)?

    init(name: Notification.Name, object: AnyObject?) {
        let counter = self.counter
        token = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { _ in
            counter.increment()
        }
    }

    var count: Int { counter.value }

    deinit {
        if let token {
            NotificationCenter.default.removeObserver(token)
        }
    }
}
