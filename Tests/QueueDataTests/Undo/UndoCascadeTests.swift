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
