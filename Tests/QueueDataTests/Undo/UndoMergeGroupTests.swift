import Foundation
import Testing

@testable import QueueData

/// A save is never an undoable action: what its delete rules do to objects another context's
/// save linked to an object an undo deleted joins the group that brings the object back.
@Suite("Undo: a save after undoing a saved insertion records no group of its own")
struct UndoMergeGroupTests {
    @Test(
        "undoing a saved sketch's insertion, then saving, keeps the redo and records nothing",
        arguments: [LifecycleStore.memory, .journal])
    func saveAfterUndoneInsertion(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-merge-group-\(store)")
        let manager = undoModelManager(store, directory)
        defer { manager.close() }
        let mine = try makeRetainingContext(manager, "mine")
        mine.performAndWait { mine.undoManager = UndoManager() }
        try mine.performAndWait {
            let sketch = mine.insert(Sketch.self)
            sketch.uid = "s1"
            try mine.save()
        }
        // Another context puts a layer of its own into the sketch.
        let other = try makeContext(manager, "other")
        try other.performAndWait {
            let layer = other.insert(Layer.self)
            layer.uid = "l1"
            layer.sketch = try other.fetch(FetchRequest<Sketch>()).first
            try other.save()
        }
        flush(mine)
        try mine.performAndWait {
            #expect(mine.undo().didApply)
            try mine.save()
            #expect(mine.undoManager!.undoStack.isEmpty, "the save records no group")
            #expect(mine.undoManager!.canRedo)
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored.isEmpty, "the sketch's cascade took the layer: \(stored)")
        try mine.performAndWait {
            #expect(mine.redo().didApply)
            try mine.save()
        }
        let back = try UndoRandomTests.storedSignature(manager)
        #expect(back.keys.sorted() == ["l1", "s1"], "the redo brings the sketch back with the layer its deletion took")
        #expect(back["l1"]?.contains("sketch=[s1]") == true)
    }
}
