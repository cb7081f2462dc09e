import Foundation
import Testing

@testable import QueueData

@Suite("Undo")
struct UndoTests {
    /// A saved sketch with two layers and a label, in an album.
    static func seed(_ context: ManagedObjectContext) throws -> (album: ObjectID, sketch: ObjectID) {
        try context.performAndWait {
            let album = context.insert(Album.self)
            album.uid = "a1"
            album.name = "Sea"
            let sketch = context.insert(Sketch.self)
            sketch.uid = "s1"
            sketch.title = "Harbour"
            sketch.album = album
            for depth in 0..<2 {
                let layer = context.insert(Layer.self)
                layer.uid = "l\(depth)"
                layer.depth = depth
                sketch.layers.append(layer)
            }
            let label = context.insert(Mark.self)
            label.uid = "t1"
            sketch.labels = [label]
            try context.save()
            return (album.objectID, sketch.objectID)
        }
    }

    @Test("off by default: nothing is recorded, and undo() does nothing")
    func offByDefault() throws {
        let manager = undoModelManager(.memory, TemporaryDirectory("undo-off"))
        let context = try makeContext(manager, "no-undo")
        let (_, sketchID) = try Self.seed(context)
        context.performAndWait {
            #expect(context.undoManager == nil)
            let sketch = context.object(with: sketchID) as! Sketch
            sketch.title = "Changed"
            #expect(context.undo() == UndoOutcome())
            #expect(sketch.title == "Changed")
        }
    }

    @Test(
        "each perform block is a group: undo and redo attribute changes, transient ones too",
        arguments: LifecycleStore.allCases)
    func attributeChanges(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-attributes-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (_, sketchID) = try Self.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            sketch.title = "Lighthouse"
            sketch.strokes = 3
            context.undoManager!.setActionName("Retitle")
        }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            sketch.isSelected = true
            sketch.strokes = 4
        }
        context.performAndWait {
            let undo = context.undoManager!
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(undo.canUndo && !undo.canRedo)
            #expect(undo.undoActionName == "")
            context.undo()
            #expect(!sketch.isSelected && sketch.strokes == 3 && sketch.title == "Lighthouse")
            #expect(undo.undoActionName == "Retitle")
            let outcome = context.undo()
            #expect(outcome.didApply && outcome.actionName == "Retitle" && outcome.deletedObjectIDs.isEmpty)
            #expect(sketch.title == "Harbour" && sketch.strokes == 0)
            #expect(!sketch.isUpdated && !context.hasChanges, "back to the committed values: nothing to save")
            #expect(!undo.canUndo && undo.canRedo && undo.redoActionName == "Retitle")
            #expect(context.undo() == UndoOutcome(), "nothing left to undo")
            context.redo()
            #expect(sketch.title == "Lighthouse" && sketch.strokes == 3 && sketch.isUpdated)
            context.redo()
            #expect(sketch.isSelected && sketch.strokes == 4)
            #expect(!undo.canRedo)
        }
        manager.close()
    }

    @Test("a new change empties the redo stack; levelsOfUndo forgets the oldest groups; removeAllActions forgets all")
    func stacks() throws {
        let manager = undoModelManager(.memory, TemporaryDirectory("undo-stacks"))
        let context = try makeContext(manager, "undo")
        let (_, sketchID) = try Self.seed(context)
        context.performAndWait {
            context.undoManager = UndoManager()
            context.undoManager!.levelsOfUndo = 2
        }
        for strokes in 1...4 {
            context.performAndWait { (context.object(with: sketchID) as! Sketch).strokes = strokes }
        }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            context.undo()
            context.undo()
            #expect(sketch.strokes == 2)
            #expect(!context.undoManager!.canUndo, "two levels only")
            #expect(context.undoManager!.canRedo)
        }
        context.performAndWait { (context.object(with: sketchID) as! Sketch).title = "New" }
        context.performAndWait {
            #expect(!context.undoManager!.canRedo, "a new change empties the redo stack")
            #expect(context.undoManager!.canUndo)
            context.undoManager!.removeAllActions()
            #expect(!context.undoManager!.canUndo && !context.undoManager!.canRedo)
            // Changes after removeAllActions in the same block are recorded.
            (context.object(with: sketchID) as! Sketch).title = "Newer"
            #expect(context.undoManager!.canUndo)
            context.undo()
            #expect((context.object(with: sketchID) as! Sketch).title == "New")
        }
    }

    @Test(
        "explicit groups span blocks; inside a block they nest in its group; without groupsByEvent they split a block")
    func grouping() throws {
        let manager = undoModelManager(.memory, TemporaryDirectory("undo-groups"))
        let context = try makeContext(manager, "undo")
        let (_, sketchID) = try Self.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        context.performAndWait {
            context.undoManager!.beginUndoGrouping()
            #expect(context.undoManager!.groupingLevel == 2, "the block's group and yours")
            (context.object(with: sketchID) as! Sketch).strokes = 1
        }
        context.performAndWait {
            (context.object(with: sketchID) as! Sketch).strokes = 2
            context.undoManager!.endUndoGrouping()
        }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            // Nested in the block's group: one undo takes both.
            context.undoManager!.beginUndoGrouping()
            sketch.title = "One"
            context.undoManager!.endUndoGrouping()
            context.undoManager!.beginUndoGrouping()
            sketch.title = "Two"
            context.undoManager!.endUndoGrouping()
        }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            context.undo()
            #expect(sketch.title == "Harbour" && sketch.strokes == 2)
            context.undo()
            #expect(sketch.strokes == 0, "the group that spanned two blocks is undone at once")
            #expect(!context.undoManager!.canUndo)
        }
        context.performAndWait {
            let undo = context.undoManager!
            undo.removeAllActions()
            undo.groupsByEvent = false
        }
        context.performAndWait {
            let undo = context.undoManager!
            #expect(undo.groupingLevel == 0, "a block is no group any more")
            let sketch = context.object(with: sketchID) as! Sketch
            undo.beginUndoGrouping()
            sketch.title = "One"
            undo.endUndoGrouping()
            undo.beginUndoGrouping()
            sketch.title = "Two"
            undo.endUndoGrouping()
            context.undo()
            #expect(sketch.title == "One", "split in two groups")
            context.undo()
            #expect(sketch.title == "Harbour")
            undo.beginUndoGrouping()
        }
        for title in ["A", "B"] {
            context.performAndWait { (context.object(with: sketchID) as! Sketch).title = title }
        }
        context.performAndWait {
            context.undoManager!.endUndoGrouping()
            context.undo()
            #expect((context.object(with: sketchID) as! Sketch).title == "Harbour")
        }
    }

    @Test("disabled registration records nothing; an undo leaves alone what it set")
    func disabledRegistration() throws {
        let manager = undoModelManager(.memory, TemporaryDirectory("undo-disabled"))
        let context = try makeContext(manager, "undo")
        let (_, sketchID) = try Self.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        context.performAndWait { (context.object(with: sketchID) as! Sketch).title = "Mine" }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            context.undoManager!.disableUndoRegistration()
            sketch.strokes = 9
            let imported = context.insert(Sketch.self)
            imported.uid = "imported"
            context.undoManager!.enableUndoRegistration()
            #expect(context.undoManager!.isUndoRegistrationEnabled)
        }
        context.performAndWait {
            context.undo()
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(sketch.title == "Harbour" && sketch.strokes == 9)
            #expect(context.insertedObjects.count == 1)
            #expect(!context.undoManager!.canUndo)
        }
    }

    @Test("inserts and deletes, with both sides of every relationship", arguments: LifecycleStore.allCases)
    func graphChanges(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-graph-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try Self.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        let layerID = context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            let layer = context.insert(Layer.self)
            layer.uid = "l9"
            sketch.layers.insert(layer, at: 0)
            return layer.objectID
        }
        context.performAndWait {
            let album = context.object(with: albumID) as! Album
            let sketch = context.object(with: sketchID) as! Sketch
            sketch.album = nil
            sketch.labels = []
            context.delete(album)
        }
        context.performAndWait {
            let album = context.object(with: albumID) as! Album
            let sketch = context.object(with: sketchID) as! Sketch
            let layer = context.object(with: layerID) as! Layer
            context.undo()
            #expect(!album.isDeleted && sketch.album === album && album.sketches == [sketch])
            #expect(sketch.labels.map(\.uid) == ["t1"] && sketch.labels.first!.sketches == [sketch])
            context.undo()
            #expect(layer.isDeleted && layer.managedObjectContext == nil)
            #expect(sketch.layers.map(\.uid) == ["l0", "l1"])
            #expect(!context.hasChanges)
            context.redo()
            #expect(layer.managedObjectContext === context && layer.isInserted && layer.sketch === sketch)
            #expect(sketch.layers.map(\.uid) == ["l9", "l0", "l1"])
            #expect(layer.objectID == layerID, "the same object, under its temporary ID")
            context.redo()
            #expect(album.isDeleted && sketch.album == nil && sketch.labels.isEmpty)
        }
        try context.performAndWait { try context.save() }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored["a1"] == nil)
        #expect(
            stored["s1"]
                == "Sketch uid=\"s1\" title=\"Harbour\" strokes=0 finished=nil album=[] layers=[l9,l0,l1] labels=[]")
        manager.close()
    }

    @Test(
        "after a save, an undo is a new change to save: an undone deletion comes back under its ID, with what its rules changed",
        arguments: LifecycleStore.allCases)
    func undoAfterSave(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-saved-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let other = try makeContext(manager, "other")
        let (albumID, sketchID) = try Self.seed(context)
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait { context.undoManager = UndoManager() }
        // The album cascades to the sketch, which cascades to its layers; the label is nullified.
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        try context.performAndWait { try context.save() }
        let afterDeletion = try UndoRandomTests.storedSignature(manager)
        #expect(afterDeletion.keys.sorted() == ["t1"], "\(afterDeletion)")
        let recorder = ObjectsDidChangeRecorder(other)
        try context.performAndWait {
            let outcome = context.undo()
            #expect(outcome.didApply && outcome.deletedObjectIDs.isEmpty)
            let album = context.object(with: albumID) as! Album
            #expect(album.isInserted && album.objectID == albumID)
            #expect(context.hasChanges)
            try context.save()
            #expect(!album.isInserted && album.objectID == albumID)
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "restored")
        flush(other)
        #expect(recorder.changes.flatMap(\.inserted).contains(albumID), "other contexts see it inserted again")
        try other.performAndWait {
            let sketch = try other.existingObject(with: sketchID, as: Sketch.self)
            #expect(sketch.layers.count == 2 && sketch.album?.objectID == albumID)
        }
        // Redo deletes it again; undo brings it back again.
        try context.performAndWait {
            context.redo()
            try context.save()
        }
        #expect(try UndoRandomTests.storedSignature(manager).keys.sorted() == ["t1"])
        try context.performAndWait {
            context.undo()
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "restored twice")
        manager.close()
    }

    @Test(
        "an undone insertion that was saved deletes the object; redoing it writes it back",
        arguments: LifecycleStore.allCases)
    func undoSavedInsertion(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-insert-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, _) = try Self.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        let sketchID = try context.performAndWait {
            let sketch = context.insert(Sketch.self)
            sketch.uid = "s2"
            sketch.album = (context.object(with: albumID) as! Album)
            try context.save()
            return sketch.objectID
        }
        try context.performAndWait {
            context.undo()
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(sketch.isDeleted && context.deletedObjects == [sketch])
            #expect((context.object(with: albumID) as! Album).sketches.count == 1)
            try context.save()
        }
        #expect(try UndoRandomTests.storedSignature(manager)["s2"] == nil)
        try context.performAndWait {
            context.redo()
            try context.save()
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored["s2"]?.contains("album=[a1]") == true)
        #expect(stored["a1"]?.contains("sketches=[s1,s2]") == true)
        manager.close()
    }

    @Test("merges are not undoable, and an undo keeps what a merge changed since")
    func mergesStay() throws {
        let manager = undoModelManager(.memory, TemporaryDirectory("undo-merge"))
        let context = try makeContext(manager, "undo")
        let other = try makeContext(manager, "other")
        let (_, sketchID) = try Self.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            sketch.title = "Mine"
            sketch.strokes = 5
        }
        try other.performAndWait {
            let sketch = other.object(with: sketchID) as! Sketch
            sketch.strokes = 7
            sketch.finished = Date(timeIntervalSince1970: 1)
            let layer = other.insert(Layer.self)
            layer.uid = "theirs"
            sketch.layers.append(layer)
            try other.save()
        }
        flush(context)
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(sketch.finished != nil && sketch.strokes == 5, "merged, keeping the local change")
            context.undo()
            #expect(sketch.title == "Harbour")
            #expect(sketch.strokes == 7, "what the merge brought stands (the undone change is gone)")
            #expect(sketch.finished == Date(timeIntervalSince1970: 1), "merges are never undone")
            #expect(sketch.layers.map(\.uid) == ["l0", "l1", "theirs"])
            #expect(!context.undoManager!.canUndo)
        }
    }

    @Test("an undo never brings back what another context deleted, and says so", arguments: LifecycleStore.allCases)
    func deletedElsewhere(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-deleted-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let other = try makeContext(manager, "other")
        let (albumID, sketchID) = try Self.seed(context)
        let (labelID, layerID) = context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            return (sketch.labels.first!.objectID, sketch.layers[0].objectID)
        }
        context.performAndWait { context.undoManager = UndoManager() }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            sketch.title = "Changed"
            sketch.labels = []
            sketch.album = nil
            context.delete(context.object(with: layerID)!)
        }
        // The other context takes the sketch out of the album first (the album cascades to it).
        try other.performAndWait {
            (other.object(with: sketchID) as! Sketch).album = nil
            other.delete(other.object(with: labelID)!)
            other.delete(other.object(with: layerID)!)
            other.delete(other.object(with: albumID)!)
            try other.save()
        }
        flush(context)
        let undid = Recorder<UndoOutcome>()
        // Only this context's undo manager: tests running alongside post the same notification.
        let undoManager = context.performAndWait { context.undoManager! }
        let observer = NotificationCenter.default.addObserver(
            forName: UndoManager.didUndoChangeNotification, object: undoManager, queue: nil
        ) { notification in
            if let outcome = notification.userInfo?[UndoOutcome.userInfoKey] as? UndoOutcome {
                undid.record(outcome)
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try context.performAndWait {
            let outcome = context.undo()
            #expect(outcome.deletedObjectIDs == [labelID, layerID, albumID])
            #expect(undid.values == [outcome])
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(sketch.title == "Harbour", "the rest is undone")
            #expect(sketch.labels.isEmpty && sketch.album == nil && sketch.layers.map(\.uid) == ["l1"])
            #expect(context.object(with: albumID) == nil && context.object(with: layerID) == nil)
            try context.save()
        }
        #expect(try UndoRandomTests.storedSignature(manager).keys.sorted() == ["l1", "s1"])
        manager.close()
    }

    @Test("rollback and reset remove every action")
    func rollbackAndReset() throws {
        let manager = undoModelManager(.memory, TemporaryDirectory("undo-rollback"))
        let context = try makeContext(manager, "undo")
        let (_, sketchID) = try Self.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        context.performAndWait { (context.object(with: sketchID) as! Sketch).title = "x" }
        context.performAndWait {
            context.rollback()
            #expect(!context.undoManager!.canUndo)
        }
        context.performAndWait { (context.object(with: sketchID) as! Sketch).title = "y" }
        context.performAndWait {
            context.reset()
            #expect(!context.undoManager!.canUndo)
            context.undoManager = nil
            #expect(context.undoManager == nil)
        }
    }

    @Test("undo and redo work from other queues, under saves and merges of other contexts")
    func otherQueues() async throws {
        let manager = undoModelManager(.memory, TemporaryDirectory("undo-queues"))
        let context = try makeContext(manager, "undo")
        let other = try makeContext(manager, "other")
        let (_, sketchID) = try Self.seed(context)
        context.performAndWait {
            context.undoManager = UndoManager()
            // Saves race the other context's merges: settle by property.
            context.mergePolicy = .mergeByPropertyObjectTrump
        }
        other.performAndWait { other.mergePolicy = .mergeByPropertyObjectTrump }
        async let edits: Void = withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 0..<50 {
                    try await context.perform {
                        let sketch = context.object(with: sketchID) as! Sketch
                        sketch.title = "mine \(round)"
                        if round % 3 == 2 {
                            context.undo()
                        }
                        if round % 5 == 4 {
                            try context.save()
                        }
                    }
                }
            }
            group.addTask {
                for round in 0..<50 {
                    try await other.perform {
                        (other.object(with: sketchID) as! Sketch).strokes = round
                        try other.save()
                    }
                }
            }
            try await group.waitForAll()
        }
        try await edits
        try await context.perform {
            while context.undoManager!.canUndo {
                context.undo()
            }
            try context.save()
        }
        flush(context)
        let (title, strokes) = context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            return (sketch.title, sketch.strokes)
        }
        #expect(title == "Harbour")
        #expect(strokes == 49, "the other context's saves are never undone")
    }

    @Test("an undo manager used off its context's queue traps")
    func offQueue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: undoModel))
            let context = try manager.createContext(for: DispatchQueue(label: "undo-owner"))
            let box = UndoBox()
            context.performAndWait {
                let undoManager = UndoManager()
                context.undoManager = undoManager
                box.manager = undoManager
            }
            _ = box.manager!.canUndo
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("used off its queue") && message.contains("'undo-owner'"))
    }

    @Test("one undo manager for two contexts traps")
    func twoContexts() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: undoModel))
            let first = try manager.createContext(for: DispatchQueue(label: "first"))
            let second = try manager.createContext(for: DispatchQueue(label: "second"))
            let box = UndoBox()
            first.performAndWait {
                box.manager = UndoManager()
                first.undoManager = box.manager
            }
            second.performAndWait {
                second.undoManager = box.manager
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("already records context 'first'"))
    }

    @Test("undo inside a group you opened traps")
    func undoInsideGroup() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: undoModel))
            let context = try manager.createContext(for: DispatchQueue(label: "grouped"))
            context.performAndWait {
                context.undoManager = UndoManager()
                context.undoManager!.beginUndoGrouping()
                context.undo()
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("call endUndoGrouping() first"))
    }
}

/// Carries an undo manager out of a block (tests only).
final class UndoBox: @unchecked Sendable {
    var manager: UndoManager?
}
