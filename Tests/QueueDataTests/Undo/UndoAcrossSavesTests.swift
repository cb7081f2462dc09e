import Foundation
import Testing

@testable import QueueData

/// Sequences that the random test found (seed 7: rounds 8 and 11 with saves between edits, and
/// rounds without saves that left nothing to save), reduced to the few steps that matter.
@Suite("Undo across saves")
struct UndoAcrossSavesTests {
    @Test(
        "undoing a saved insertion leaves alone an object it linked to, even over a cascade",
        arguments: LifecycleStore.allCases)
    func undoSavedInsertionKeepsLinkedObject(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-saved-insertion-link-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let layerID = try context.performAndWait {
            let layer = context.insert(Layer.self)
            layer.uid = "l1"
            try context.save()
            context.undoManager = UndoManager()
            return layer.objectID
        }
        let before = try UndoRandomTests.storedSignature(manager)
        // One group: a new sketch takes the existing layer (sketch → layers cascades).
        try context.performAndWait {
            let sketch = context.insert(Sketch.self)
            sketch.uid = "s2"
            sketch.layers = [context.object(with: layerID) as! Layer]
            try context.save()
        }
        try context.performAndWait {
            context.undo()
            let layer = context.object(with: layerID) as! Layer
            #expect(layer.sketch == nil && !layer.isDeleted)
            let sketch = try #require(context.deletedObjects.first as? Sketch)
            #expect(sketch.uid == "s2" && sketch.layers.isEmpty, "the sketch leaves without the links it was given")
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "the layer stays")
        try context.performAndWait {
            context.redo()
            try context.save()
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored["s2"]?.contains("layers=[l1]") == true && stored["l1"]?.contains("sketch=[s2]") == true)
        manager.close()
    }

    @Test(
        "an object created after a deletion whose save's cascade removed it does not come back with that deletion's undo",
        arguments: LifecycleStore.allCases)
    func undoDeletionDoesNotBringBackLaterObject(_ store: LifecycleStore) throws {
        // Seed 7, round 65: album a2 (with sketch s1) is deleted; a layer is then created in s1;
        // a save cascades album → sketch → layer. Undoing the layer's creation finds it gone, and
        // undoing the album's deletion (which the cascade joined) must not resurrect it.
        let directory = TemporaryDirectory("undo-later-cascaded-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        try context.performAndWait {
            let album = context.insert(Album.self)
            album.uid = "a2"
            let sketch = context.insert(Sketch.self)
            sketch.uid = "s1"
            sketch.album = album
            try context.save()
            context.undoManager = UndoManager()
        }
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait {
            context.delete(context.registeredObjects.first { UndoRandomTests.uid($0) == "a2" }!)
        }
        context.performAndWait {
            let layer = context.insert(Layer.self)
            layer.uid = "l6"
            layer.sketch = context.registeredObjects.first { UndoRandomTests.uid($0) == "s1" } as? Sketch
        }
        try context.performAndWait { try context.save() }
        #expect(try UndoRandomTests.storedSignature(manager).isEmpty)
        try context.performAndWait {
            let creation = context.undo()
            #expect(creation.didApply && creation.deletedObjectIDs.isEmpty)
            let deletion = context.undo()
            #expect(deletion.didApply && deletion.deletedObjectIDs.isEmpty)
            #expect(!context.registeredObjects.contains { UndoRandomTests.uid($0) == "l6" })
            try context.save()
        }
        UndoRandomTests.expectEqual(
            try UndoRandomTests.storedSignature(manager), before, "the album and sketch are back, without the layer")
        manager.close()
    }

    @Test(
        "undoing a saved deletion sets back a to-one it changed to an object inserted in the same save",
        arguments: LifecycleStore.allCases)
    func undoSavedDeletionOfRelinkedObject(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-saved-deletion-relink-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        let before = try UndoRandomTests.storedSignature(manager)
        // One group: the sketch moves to a new album and is deleted; the save gives the album its
        // permanent ID while the deleted sketch still holds the album's temporary one.
        try context.performAndWait {
            let album = context.insert(Album.self)
            album.uid = "a2"
            let sketch = context.object(with: sketchID) as! Sketch
            sketch.album = album
            context.delete(sketch)
            try context.save()
        }
        try context.performAndWait {
            context.undo()
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(sketch.album?.objectID == albumID)
            #expect((context.object(with: albumID) as! Album).sketches.map(\.objectID) == [sketchID])
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "undone")
        try context.performAndWait {
            context.redo()
            try context.save()
            context.undo()
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "redone and undone")
        manager.close()
    }

    @Test(
        "undoing a change of an ordered relationship that a saved deletion's rules changed since gives back its order",
        arguments: LifecycleStore.allCases)
    func undoKeepsOrderOverSavedDeletion(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-order-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let sketchID = try context.performAndWait {
            let sketch = context.insert(Sketch.self)
            sketch.uid = "s1"
            for uid in ["l1", "l2", "l3"] {
                let layer = context.insert(Layer.self)
                layer.uid = uid
                sketch.layers.append(layer)
            }
            try context.save()
            context.undoManager = UndoManager()
            return sketch.objectID
        }
        // Delete l1 (its rule takes it out of the layers when saved), then take l2 out, and save:
        // the first group records the rule's change, so the second no longer matches.
        context.performAndWait { context.delete((context.object(with: sketchID) as! Sketch).layers[0]) }
        try context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            sketch.layers.remove(at: 1)
            try context.save()
        }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(sketch.layers.map(\.uid) == ["l3"])
            context.undo()
            #expect(sketch.layers.map(\.uid) == ["l2", "l3"])
            context.undo()
            #expect(sketch.layers.map(\.uid) == ["l1", "l2", "l3"])
        }
        manager.close()
    }

    @Test(
        "undoing a group that inserted and deleted a layer of a saved sketch leaves nothing to save",
        arguments: LifecycleStore.allCases)
    func undoLeavesNoNetChange(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-no-net-change-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (_, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        // One group: the sketch gets a layer that is deleted again (no net change to the sketch).
        context.performAndWait {
            let layer = context.insert(Layer.self)
            layer.uid = "l9"
            layer.sketch = (context.object(with: sketchID) as! Sketch)
            context.delete(layer)
        }
        context.performAndWait {
            context.undo()
            #expect(!context.hasChanges, "updated: \(context.updatedObjects.map(UndoRandomTests.uid))")
        }
        manager.close()
    }

    @Test(
        "undoing a link to an object this context's save deleted applies that deletion's rule; undoing it restores both",
        arguments: LifecycleStore.allCases)
    func undoOverOwnSavedDeletion(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-own-deletion-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (_, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        let before = try UndoRandomTests.storedSignature(manager)
        // Delete the sketch (its layers cascade), then take its first layer out of it and save:
        // the save deletes the sketch and its other layer, and keeps the first.
        let layerID = context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            let layer = sketch.layers[0]
            context.delete(sketch)
            return layer.objectID
        }
        try context.performAndWait {
            (context.object(with: layerID) as! Layer).sketch = nil
            try context.save()
        }
        try context.performAndWait {
            // The layer would go back to the sketch this context deleted: as the save would have
            // done then, the sketch's cascade deletes it. Not another context's deletion.
            let outcome = context.undo()
            #expect(outcome.deletedObjectIDs.isEmpty)
            let layer = context.object(with: layerID) as! Layer
            #expect(layer.isDeleted && layer.sketch == nil)
            try context.save()
            context.redo()
            #expect(!layer.isDeleted && layer.sketch == nil)
            context.undo()
            #expect(context.undo().deletedObjectIDs.isEmpty)
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(sketch.layers.map(\.uid).sorted() == ["l0", "l1"] && !layer.isDeleted)
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "both undone")
        manager.close()
    }
}
