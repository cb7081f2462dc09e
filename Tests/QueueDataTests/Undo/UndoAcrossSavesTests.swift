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
        let context = try makeRetainingContext(manager, "undo")
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
        let context = try makeRetainingContext(manager, "undo")
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
        let context = try makeRetainingContext(manager, "undo")
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
        "undoing a group that inserted and deleted a layer of a saved sketch leaves nothing to save",
        arguments: LifecycleStore.allCases)
    func undoLeavesNoNetChange(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-no-net-change-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeRetainingContext(manager, "undo")
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
}
