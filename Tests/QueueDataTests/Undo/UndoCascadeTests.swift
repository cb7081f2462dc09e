import Foundation
import Testing

@testable import QueueData

/// Sequences the random test found at 200 rounds (seeds 3, 5 and 11), around objects a save's
/// cascade deleted after a later group had changed them, reduced to the steps that matter.
/// Each starts from ``UndoTests/seed(_:)``: album a1 cascades to sketch s1, which cascades to
/// layers l0 and l1; s1 has label t1.
@Suite("Undo over cascades")
struct UndoCascadeTests {
    @Test(
        "undoing a change of an object a later save's cascade deleted keeps it for that deletion's undo",
        arguments: LifecycleStore.allCases)
    func undoChangeOfCascadedObject(_ store: LifecycleStore) throws {
        // Seed 5, round 173: the album is deleted; the sketch is retitled (it still exists until
        // the save, which cascades to it and joins the album's group). Undoing the retitling
        // finds the sketch gone; undoing the deletion must bring it back with its old title.
        let directory = TemporaryDirectory("undo-cascaded-change-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            sketch.title = "Retitled"
            sketch.isSelected = true
        }
        try context.performAndWait { try context.save() }
        try context.performAndWait {
            context.undo()
            context.undo()
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(!sketch.isDeleted && sketch.title == "Harbour" && !sketch.isSelected)
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "both undone")
        manager.close()
    }

    @Test(
        "undoing a link to an object a later save's cascade deleted leaves it out of that deletion's undo",
        arguments: LifecycleStore.allCases)
    func undoLinkToCascadedObject(_ store: LifecycleStore) throws {
        // Seed 11, round 107: the album is deleted; a new label is then put on the sketch; the
        // save cascades to the sketch and takes it out of the label (joining the album's group).
        // Undoing the labelling, then the deletion, must leave the label without the sketch.
        let directory = TemporaryDirectory("undo-cascaded-link-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        let labelID = try context.performAndWait {
            let label = context.insert(Mark.self)
            label.uid = "t2"
            try context.save()
            context.undoManager = UndoManager()
            return label.objectID
        }
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        context.performAndWait {
            (context.object(with: labelID) as! Mark).sketches = [context.object(with: sketchID) as! Sketch]
        }
        try context.performAndWait { try context.save() }
        try context.performAndWait {
            context.undo()
            context.undo()
            let sketch = context.object(with: sketchID) as! Sketch
            let label = context.object(with: labelID) as! Mark
            #expect(!sketch.isDeleted && sketch.labels.map(\.uid) == ["t1"] && label.sketches.isEmpty)
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "both undone")
        manager.close()
    }

    @Test(
        "a redo that moves an object out of a deleted object's cascade brings it back",
        arguments: LifecycleStore.allCases, [false, true])
    func redoMovingOutOfCascade(_ store: LifecycleStore, _ saveBetweenRedos: Bool) throws {
        // Seed 11, round 7: the album is deleted, then its sketch moved out of it. With the move
        // undone, a save cascades to the sketch (joining the album's group). Undoing the deletion
        // brings both back; redoing it removes the sketch again as the cascade had (and with a
        // save, deletes it), and redoing the move must bring the sketch (and its layers) back,
        // as they were after the move.
        let directory = TemporaryDirectory("undo-redo-cascade-\(store)-\(saveBetweenRedos)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        context.performAndWait { (context.object(with: sketchID) as! Sketch).album = nil }
        try context.performAndWait {
            context.undo()
            try context.save()
            context.undo()
            try context.save()
            context.redo()
            if saveBetweenRedos {
                try context.save()
            }
            context.redo()
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(!sketch.isDeleted && sketch.album == nil && sketch.layers.count == 2)
            try context.save()
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored["a1"] == nil && stored["s1"]?.contains("layers=[l0,l1]") == true)
        manager.close()
    }
}

extension UndoCascadeTests {
    @Test(
        "an undo that removes an object by its deleted album's cascade removes what the object's cascade reaches",
        arguments: LifecycleStore.allCases)
    func undoCascadesOnFromSettledObject(_ store: LifecycleStore) throws {
        // Seed 3, round 179: the album is deleted, then its sketch; a save deletes both and
        // cascades to the layers (joining the sketch's group). Undoing the sketch's deletion
        // brings it and its layers back, and the album's cascade (the album is gone) removes the
        // sketch again: its layers must go with it, as the save would have had them.
        let directory = TemporaryDirectory("undo-settled-cascade-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        let layerIDs = context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            context.delete(sketch)
            return sketch.layers.map(\.objectID)
        }
        try context.performAndWait {
            try context.save()
            context.undo()
            #expect(layerIDs.count == 2 && layerIDs.allSatisfy { context.object(with: $0)?.isDeleted ?? true })
            try context.save()
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored["l0"] == nil && stored["l1"] == nil && stored["s1"] == nil)
        try context.performAndWait {
            context.undo()
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "both undone")
        manager.close()
    }
}

extension UndoCascadeTests {
    @Test(
        "an object an undo removes again by a cascade, created after the deletion it follows from, is not brought back",
        arguments: LifecycleStore.allCases)
    func undoCreationOfSettledObject(_ store: LifecycleStore) throws {
        // Seed 5, round 19: the album is deleted; a layer is then added to its sketch; a later
        // group deletes another album and saves, cascading to both (the save's deletions join
        // that group, the latest removal's). Undoing it brings them back, and the album's
        // cascade removes them again (joining the album's group). Undoing the layer's creation
        // must take it out of the album's group too: undoing the deletion brings back the sketch
        // as it was then, without the layer.
        let directory = TemporaryDirectory("undo-settled-creation-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        let otherID = try Self.insertAlbum(context)
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        let layerID = context.performAndWait {
            let layer = context.insert(Layer.self)
            layer.uid = "l2"
            layer.sketch = context.object(with: sketchID) as? Sketch
            return layer.objectID
        }
        try context.performAndWait {
            context.delete(context.object(with: otherID)!)
            try context.save()
        }
        try context.performAndWait {
            context.undo()
            context.undo()
            context.undo()
            #expect(context.object(with: layerID).map { $0.isDeleted } ?? true)
            #expect((context.object(with: sketchID) as! Sketch).layers.map(\.uid) == ["l0", "l1"])
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "all undone")
        manager.close()
    }

    @Test(
        "a link an undo drops from an object it removes again by a cascade comes back only while the object has it",
        arguments: LifecycleStore.allCases)
    func undoLinkToSettledObject(_ store: LifecycleStore) throws {
        // Seed 2, round 38: the album is deleted; a label is then put on its sketch; a later group
        // deletes another album and saves, cascading to the sketch (the save's changes join that
        // group). Undoing it brings the sketch back with both labels, and the album's cascade
        // removes it again, taking it out of the labels (joining the album's group). Undoing the
        // labelling (the sketch is gone: only its side changes) and then the deletion must leave
        // the new label without the sketch.
        let directory = TemporaryDirectory("undo-settled-link-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        let labelID = try context.performAndWait {
            let label = context.insert(Mark.self)
            label.uid = "t2"
            try context.save()
            return label.objectID
        }
        let otherID = try Self.insertAlbum(context)
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        context.performAndWait {
            (context.object(with: labelID) as! Mark).sketches = [context.object(with: sketchID) as! Sketch]
        }
        try context.performAndWait {
            context.delete(context.object(with: otherID)!)
            try context.save()
        }
        try context.performAndWait {
            context.undo()
            context.undo()
            context.undo()
            let sketch = context.object(with: sketchID) as! Sketch
            let label = context.object(with: labelID) as! Mark
            #expect(!sketch.isDeleted && sketch.labels.map(\.uid) == ["t1"] && label.sketches.isEmpty)
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "all undone")
        manager.close()
    }

    /// Inserts and saves an album unrelated to the others (a deletion for a later group), then
    /// gives the context an undo manager.
    static func insertAlbum(_ context: ManagedObjectContext) throws -> ObjectID {
        try context.performAndWait {
            let album = context.insert(Album.self)
            album.uid = "a2"
            try context.save()
            context.undoManager = UndoManager()
            return album.objectID
        }
    }
}

extension UndoCascadeTests {
    @Test(
        "a redo that moves an object out of a deleted object's cascade into another object brings it back there",
        arguments: LifecycleStore.allCases)
    func redoMovingOutOfCascadeIntoNewObject(_ store: LifecycleStore) throws {
        // Seed 5, round 132: the album is deleted, then its sketch moved into a new album. With
        // the move undone, a save cascades to the sketch (joining the deletion's group). Redoing
        // the move must bring the sketch back in the new album, whose side of the link is not
        // left out as a reference to an object the context's save deleted.
        let directory = TemporaryDirectory("undo-redo-cascade-into-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        context.performAndWait {
            let album = context.insert(Album.self)
            album.uid = "a2"
            (context.object(with: sketchID) as! Sketch).album = album
        }
        try context.performAndWait {
            context.undo()
            try context.save()
            context.redo()
            let sketch = try #require(context.object(with: sketchID) as? Sketch)
            #expect(!sketch.isDeleted && sketch.album?.uid == "a2" && sketch.layers.count == 2)
            #expect(sketch.album?.sketches.contains(sketch) == true)
            try context.save()
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored["a1"] == nil && stored["s1"]?.contains("album=[a2] layers=[l0,l1]") == true)
        try context.performAndWait {
            context.undo()
            context.undo()
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "both undone")
        manager.close()
    }
}
