import Foundation
import Testing

@testable import QueueData

/// A merged deletion applies the deleted object's delete rules to the links the receiving
/// context made to it and has not saved (Core Data's merge deletes the object in the receiving
/// context), so the receiving context's next save never refers to a deleted object. Uses the
/// undo model (album → sketches and sketch → layers cascade; labels nullify), with no undo
/// manager.
@Suite("Merged deletions apply their rules to unsaved links")
struct MergedDeletionRulesTests {
    @Test(
        "an unsaved layer in a sketch another context deleted goes with it; a label lets go",
        arguments: LifecycleStore.allCases)
    func unsavedLinksFollowRules(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("merged-deletion-rules-\(store)")
        let manager = undoModelManager(store, directory)
        let mine = try makeContext(manager, "mine")
        let other = try makeContext(manager, "other")
        let (_, sketchID) = try UndoTests.seed(mine)
        let (layerID, labelID, savedLayerID) = try mine.performAndWait {
            let sketch = mine.object(with: sketchID) as! Sketch
            let layer = mine.insert(Layer.self)
            layer.uid = "l9"
            layer.sketch = sketch
            let label = mine.insert(Mark.self)
            label.uid = "t9"
            label.sketches = [sketch]
            let saved = mine.insert(Layer.self)
            saved.uid = "l8"
            try mine.save()
            // A saved layer moved into the sketch, not saved yet.
            saved.sketch = sketch
            let layer2 = mine.insert(Layer.self)
            layer2.uid = "l7"
            layer2.sketch = sketch
            return (layer2.objectID, label.objectID, saved.objectID)
        }
        try other.performAndWait {
            other.delete(other.object(with: sketchID)!)
            try other.save()
        }
        flush(mine)
        try mine.performAndWait {
            #expect(mine.object(with: sketchID) == nil)
            #expect(mine.object(with: layerID) == nil, "the unsaved layer went with its sketch (cascade)")
            let saved = try #require(mine.object(with: savedLayerID) as? Layer)
            #expect(saved.isDeleted, "the saved layer moved into the sketch is deleted with it (cascade)")
            let label = try #require(mine.object(with: labelID) as? Mark)
            #expect(label.sketches.isEmpty && !label.isDeleted)
            try mine.save()
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored["s1"] == nil && stored["l7"] == nil && stored["l8"] == nil && stored["l9"] == nil)
        #expect(stored["t9"]?.contains("sketches=[]") == true && stored["a1"]?.contains("sketches=[]") == true)
        manager.close()
    }
}
