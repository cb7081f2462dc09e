import Dispatch
import Foundation
import QueueData
import Testing

/// The names of the destinations `context` fetches, sorted.
private func childNames(_ context: ManagedObjectContext) throws -> [String] {
    try context.performAndWait {
        try context.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)])).map(\.name)
    }
}

/// What a fresh context of `manager` fetches: the store's destinations.
private func childStoredNames(_ manager: ContextManager) throws -> [String] {
    let reader = try makeContext(manager, "store-reader")
    return try childNames(reader)
}

@Suite("Child contexts: a scratchpad that reads through its parent and saves into it")
struct ChildContextTests {
    @Test("a child reads the parent's unsaved inserts and updates, not its pending deletions")
    func childSeesParentChanges() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let ids = try seedDestinations(parent, ["a", "b", "c"])
        let inserted = try parent.performAndWait {
            let a = try parent.existingObject(with: ids[0], as: Destination.self)
            a.rating = 10
            parent.delete(try parent.existingObject(with: ids[1]))
            let d = parent.insert(Destination.self)
            d.name = "d"
            d.rating = 7
            return d.objectID
        }
        let child = parent.performAndWait { parent.newChildContext() }.retainingRegisteredObjects()
        #expect(child.parent === parent)
        #expect(parent.parent == nil)
        #expect(try childNames(child) == ["a", "c", "d"])
        try child.performAndWait {
            let rated = try child.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating > 5 }))
            #expect(Set(rated.map(\.name)) == ["a", "d"])
            #expect(try child.count(for: FetchRequest<Destination>()) == 3)
            let d = try child.existingObject(with: inserted, as: Destination.self)
            #expect(d.name == "d" && d.rating == 7 && !d.isInserted && !d.hasChanges)
            #expect(child.object(with: ids[1]) == nil)
            #expect(throws: ContextError.self) { try child.existingObject(with: ids[1]) }
            #expect(try child.existingObject(with: ids[0], as: Destination.self).rating == 10)
        }
        // The parent's changes made after the child registered an object show after a refresh.
        parent.performAndWait { (parent.object(with: ids[2]) as! Destination).rating = 42 }
        try child.performAndWait {
            let c = try child.existingObject(with: ids[2], as: Destination.self)
            #expect(c.rating == 2)
            child.refresh(c, mergeChanges: false)
            #expect(c.rating == 42)
        }
    }

    @Test("a child's save reaches the parent, not the store; the parent's save makes it durable")
    func childSavePushesIntoParent() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let ids = try seedDestinations(parent, ["a", "b", "c"])
        let child = parent.performAndWait { parent.newChildContext() }
        try child.performAndWait {
            child.insert(Destination.self).name = "e"
            try child.existingObject(with: ids[2], as: Destination.self).name = "c2"
            child.delete(try child.existingObject(with: ids[0]))
            try child.save()
            #expect(!child.hasChanges)
        }
        parent.performAndWait {
            #expect(parent.hasChanges)
            #expect(parent.insertedObjects.map { ($0 as! Destination).name } == ["e"])
            #expect(parent.updatedObjects.map { ($0 as! Destination).name } == ["c2"])
            #expect(parent.deletedObjects.map(\.objectID) == [ids[0]])
        }
        #expect(try childStoredNames(manager) == ["a", "b", "c"])
        #expect(try childNames(parent) == ["b", "c2", "e"])
        try parent.performAndWait { try parent.save() }
        #expect(try childStoredNames(manager) == ["b", "c2", "e"])
    }

    @Test("the parent reports a push as its own changes, on its queue, when the child saves")
    func parentReportsPush() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let ids = try seedDestinations(parent, ["a", "b"])
        let recorder = ObjectsDidChangeRecorder(parent)
        let child = parent.performAndWait { parent.newChildContext() }
        let inserted = try child.performAndWait {
            let object = child.insert(Destination.self)
            try child.existingObject(with: ids[0], as: Destination.self).rating = 9
            child.delete(try child.existingObject(with: ids[1]))
            try child.save()
            return object.objectID
        }
        #expect(
            recorder.changes == [
                ObjectsDidChangeRecorder.Change(inserted: [inserted], updated: [ids[0]], deleted: [ids[1]])
            ])
        #expect(recorder.allOnQueue)
    }

    @Test("the parent's undo manager takes back a push as one group")
    func parentUndoesPush() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let ids = try seedDestinations(parent, ["a"])
        parent.performAndWait { parent.undoManager = UndoManager() }
        let child = parent.performAndWait { parent.newChildContext() }
        try child.performAndWait {
            child.insert(Destination.self).name = "new"
            try child.existingObject(with: ids[0], as: Destination.self).rating = 9
            try child.save()
        }
        let (before, after, rating) = parent.performAndWait {
            let before = parent.hasChanges
            parent.undo()
            return (before, parent.hasChanges, (parent.object(with: ids[0]) as! Destination).rating)
        }
        #expect(before && !after && rating == 0)
        #expect(try childNames(parent) == ["a"])
    }

    @Test("a child's undone deletion reaches the parent after the parent saved the deletion")
    func childUndoesDeletionTheParentSaved() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let ids = try seedDestinations(parent, ["a", "b"])
        let child = parent.performAndWait { parent.newChildContext() }
        child.performAndWait { child.undoManager = UndoManager() }
        try child.performAndWait { () throws -> Void in child.delete(try child.existingObject(with: ids[0])) }
        try child.performAndWait { try child.save() }
        try parent.performAndWait { try parent.save() }
        #expect(try childStoredNames(manager) == ["b"])
        try child.performAndWait {
            child.undo()
            try child.save()
        }
        try parent.performAndWait {
            // The object is the parent's to save again, under its ID.
            let a = try parent.existingObject(with: ids[0], as: Destination.self)
            #expect(a.isInserted && a.name == "a" && a.objectID == ids[0])
            try parent.save()
        }
        #expect(try childStoredNames(manager) == ["a", "b"])
    }

    @Test("on the journal store, what a child pushed and its parent saved is there after reopening")
    func durableAfterParentSave() throws {
        let directory = TemporaryDirectory("child-journal")
        do {
            let manager = journalManager(directory)
            let parent = try makeContext(manager, "parent")
            let child = parent.performAndWait { parent.newChildContext() }
            try child.performAndWait {
                for name in ["x", "y"] {
                    child.insert(Destination.self).name = name
                }
                try child.save()
            }
            #expect(try childStoredNames(manager) == [])
            try parent.performAndWait { try parent.save() }
            manager.close()
        }
        let reopened = journalManager(directory)
        #expect(try childStoredNames(reopened) == ["x", "y"])
        reopened.close()
    }

    @Test("a temporary ID from a child names the pushed object in the parent, and maps after its save")
    func temporaryIDsResolveInParent() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let child = parent.performAndWait { parent.newChildContext() }
        let id = try child.performAndWait {
            let trip = child.insert(Destination.self)
            trip.name = "t"
            try child.save()
            #expect(trip.objectID.isTemporaryID)
            return trip.objectID
        }
        try parent.performAndWait {
            let object = try parent.existingObject(with: id, as: Destination.self)
            #expect(object.name == "t" && object.isInserted)
            try parent.save()
            #expect(!object.objectID.isTemporaryID)
        }
        // The child still knows the object by its temporary ID; its later changes find the
        // parent's object under its permanent one.
        try child.performAndWait {
            let object = try child.existingObject(with: id, as: Destination.self)
            object.rating = 5
            try child.save()
        }
        try parent.performAndWait {
            #expect(parent.updatedObjects.map { ($0 as! Destination).rating } == [5])
            try parent.save()
        }
        let reader = try makeContext(manager, "reader")
        let ratings = try reader.performAndWait { try reader.fetch(FetchRequest<Destination>()).map(\.rating) }
        #expect(ratings == [5])
    }

    @Test("a child dropped or reset leaves no trace in its parent")
    func discardedChildLeavesNoTrace() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let ids = try seedDestinations(parent, ["a"])
        do {
            let child = parent.performAndWait { parent.newChildContext() }
            try child.performAndWait {
                child.insert(Destination.self).name = "dropped"
                try child.existingObject(with: ids[0], as: Destination.self).name = "changed"
            }
        }
        let child = parent.performAndWait { parent.newChildContext() }
        try child.performAndWait {
            child.insert(Destination.self).name = "reset"
            child.delete(try child.existingObject(with: ids[0]))
            child.reset()
            try child.save()
        }
        parent.performAndWait { #expect(!parent.hasChanges) }
        #expect(try childNames(parent) == ["a"])
        #expect(try childStoredNames(manager) == ["a"])
    }

    @Test("validation runs at the child's save; a failure pushes nothing")
    func validationFailurePushesNothing() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let child = parent.performAndWait { parent.newChildContext() }
        child.performAndWait {
            child.insert(Destination.self).name = "fine"
            child.insert(Trip.self).title = ""
            #expect(throws: ValidationError.self) { try child.save() }
            #expect(child.hasChanges)
        }
        parent.performAndWait { #expect(!parent.hasChanges) }
        try child.performAndWait {
            for case let trip as Trip in child.insertedObjects {
                trip.title = "now valid"
            }
            try child.save()
        }
        parent.performAndWait { #expect(parent.insertedObjects.count == 2) }
    }

    @Test("a grandchild's save reaches its parent, whose save reaches the grandparent")
    func nestedChildren() throws {
        let manager = makeManager()
        let root = try makeContext(manager, "root")
        let ids = try seedDestinations(root, ["a"])
        root.performAndWait { (root.object(with: ids[0]) as! Destination).rating = 3 }
        let middle = root.performAndWait { root.newChildContext() }
        let leaf = middle.performAndWait { middle.newChildContext() }
        middle.performAndWait { middle.insert(Destination.self).name = "m" }
        #expect(try childNames(leaf) == ["a", "m"])
        try leaf.performAndWait {
            let a = try leaf.existingObject(with: ids[0], as: Destination.self)
            #expect(a.rating == 3)
            a.rating = 4
            leaf.insert(Destination.self).name = "l"
            try leaf.save()
        }
        #expect(try childNames(root) == ["a"])
        try middle.performAndWait { try middle.save() }
        #expect(try childNames(root) == ["a", "l", "m"])
        try root.performAndWait { try root.save() }
        #expect(try childStoredNames(manager) == ["a", "l", "m"])
        #expect(root.performAndWait { (root.object(with: ids[0]) as! Destination).rating } == 4)
    }

    @Test("a child's asynchronous and batched fetches read through its parent too")
    func asynchronousFetchInChild() async throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        try seedDestinations(parent, ["a", "b"])
        let child = try parent.performAndWait {
            parent.insert(Destination.self).name = "c"
            let b = try parent.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "b" }))
            parent.delete(b[0])
            return parent.newChildContext()
        }
        let names = try await child.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)])) {
            $0.map(\.name)
        }
        #expect(names == ["a", "c"])
        let values = try child.performAndWait {
            try child.fetchValues(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)]), properties: ["name"])
        }
        #expect(values.map { $0["name"] } == [.string("a"), .string("c")])
    }

    @Test("a child entered from its parent's performAndWait reads and saves inline")
    func childInsideParentsBlock() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        try seedDestinations(parent, ["a"])
        let child = parent.performAndWait { parent.newChildContext() }
        try parent.performAndWait {
            parent.insert(Destination.self).name = "b"
            try child.performAndWait {
                #expect(try child.fetch(FetchRequest<Destination>()).count == 2)
                child.insert(Destination.self).name = "c"
                try child.save()
            }
            #expect(parent.insertedObjects.count == 2)
        }
    }

    @Test("after the root saves, a grandchild's object known by its temporary ID stays one object")
    func nestedTemporaryIDsAfterRootSave() throws {
        let manager = makeManager()
        let root = try makeContext(manager, "root")
        let middle = root.performAndWait { root.newChildContext() }.retainingRegisteredObjects()
        let leaf = middle.performAndWait { middle.newChildContext() }
        let id = try leaf.performAndWait {
            let object = leaf.insert(Destination.self)
            object.name = "x"
            try leaf.save()
            return object.objectID
        }
        try middle.performAndWait { try middle.save() }
        try root.performAndWait { try root.save() }
        #expect(try childNames(middle) == ["x"])  // the middle reads: it takes the permanent ID
        let held = middle.performAndWait { middle.registeredObjects.first! as! Destination }
        try leaf.performAndWait {
            try leaf.existingObject(with: id, as: Destination.self).rating = 4
            try leaf.save()
        }
        // The push found the middle's object: no second instance took its place.
        let (count, rating, same) = middle.performAndWait {
            (
                middle.registeredObjects.count, held.rating,
                middle.object(with: held.objectID) === held
            )
        }
        #expect(count == 1 && rating == 4 && same)
        try middle.performAndWait { try middle.save() }
        try root.performAndWait { try root.save() }
        let reader = try makeContext(manager, "reader")
        let rows = try reader.performAndWait {
            try reader.fetch(FetchRequest<Destination>()).map { "\($0.name):\($0.rating)" }
        }
        #expect(rows == ["x:4"])
    }

    @Test("a child on its parent's queue reads and saves inline")
    func childOnParentsQueue() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        try seedDestinations(parent, ["a"])
        try parent.performAndWait {
            let child = parent.newChildContext(for: parent.queue)
            try child.performAndWait {
                #expect(try child.fetch(FetchRequest<Destination>()).count == 1)
                child.insert(Destination.self).name = "b"
                try child.save()
            }
            #expect(parent.insertedObjects.count == 1)
        }
    }
}

@Suite("Child contexts: confinement")
struct ChildContextConfinementTests {
    @Test("a child used off its queue traps, naming it")
    func childOffItsQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let parent = try manager.createContext(for: DispatchQueue(label: "parent-queue"))
            let child = parent.performAndWait { parent.newChildContext(for: DispatchQueue(label: "child-queue")) }
            _ = child.hasChanges
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("used off its queue"))
        #expect(message.contains("'child-queue'"))
    }

    @Test("an import into a child traps: it would save to the store, bypassing the parent")
    func importIntoChildTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let parent = try manager.createContext(for: DispatchQueue(label: "parent-queue"))
            let child = parent.performAndWait { parent.newChildContext() }
            _ = try await child.importRecords(
                from: URL(fileURLWithPath: "/nonexistent.jsonl"), entityName: "Destination")
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("child context"))
    }

    @Test("making a child off the parent's queue traps")
    func newChildOffParentsQueueTraps() async {
        await #expect(processExitsWith: .failure) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let parent = try manager.createContext(for: DispatchQueue(label: "parent-queue"))
            _ = parent.newChildContext()
        }
    }
}
