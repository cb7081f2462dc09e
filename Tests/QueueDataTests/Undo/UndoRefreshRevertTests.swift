import Foundation
import Testing

@testable import QueueData

@Suite("Refresh without merging: objects the revert would move back are pending deletions")
struct UndoRefreshRevertTests {
    @Test("refreshing a deleted sketch that a deleted layer was moved into leaves the layer deleted, linked nowhere")
    func cascadedLayerOfRefreshedSketch() throws {
        let directory = TemporaryDirectory("refresh-revert-deleted")
        let manager = undoModelManager(.memory, directory)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "refresh-revert-deleted")
        let (first, second, layer) = try context.performAndWait {
            let first = context.insert(Sketch.self)
            first.uid = "s1"
            let second = context.insert(Sketch.self)
            second.uid = "s2"
            let layer = context.insert(Layer.self)
            layer.uid = "l1"
            layer.sketch = second
            try context.save()
            context.undoManager = UndoManager()
            return (first, second, layer)
        }
        // The layer moves into a deleted sketch: the cascade takes it at the end of the block.
        context.performAndWait {
            context.delete(first)
            layer.sketch = first
        }
        #expect(context.performAndWait { layer.isDeleted && first.layers == [layer] && second.layers.isEmpty })
        // Discarding the sketch's changes takes the layer out of it; a pending deletion, the
        // layer is not put back into the sketch it has committed.
        context.performAndWait { context.refresh(first, mergeChanges: false) }
        let state = context.performAndWait {
            (first.isDeleted, layer.isDeleted, first.layers.isEmpty, layer.sketch == nil, second.layers.isEmpty)
        }
        #expect(state == (true, true, true, true, true))
        try context.performAndWait { try context.save() }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored.keys.sorted() == ["s2"])
        #expect(stored["s2"]?.contains("layers=[]") == true)
    }
}
