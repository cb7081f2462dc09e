import Foundation
import Testing

@testable import QueueData

/// An undo after a merged deletion's rules deleted an object here: that deletion is part of the
/// merge, which no undo takes back, so no relationship is pointed at the object again.
@Suite("Undo: objects a merged deletion's cascade deleted here are not linked again")
struct UndoMergedCascadeTests {
    @Test(
        "undoing a move into a sketch another context deleted leaves the cascaded layer out of its old sketch; the save succeeds",
        arguments: [LifecycleStore.memory, .journal])
    func undoAfterMergedCascade(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-merged-cascade")
        let manager = undoModelManager(store, directory)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "undo-merged-cascade")
        let other = try makeContext(manager, "undo-merged-cascade-other")
        func object<Object: ManagedObject>(_ type: Object.Type, _ uid: String, in context: ManagedObjectContext) throws
            -> Object
        {
            try #require(
                try context.fetch(FetchRequest<Object>()).first { UndoRandomTests.uid($0) == uid })
        }
        try context.performAndWait {
            let album = context.insert(Album.self)
            album.uid = "a1"
            let doomed = context.insert(Sketch.self)
            doomed.uid = "s1"
            doomed.album = album
            let kept = context.insert(Sketch.self)
            kept.uid = "s2"
            let layer = context.insert(Layer.self)
            layer.uid = "l1"
            layer.sketch = kept
            try context.save()
            context.undoManager = UndoManager()
        }
        // One undoable group: the layer moves into s1 (not saved).
        try context.performAndWait {
            try object(Layer.self, "l1", in: context).sketch = try object(Sketch.self, "s1", in: context)
        }
        // Another context deletes the album; its cascade deletes s1, and the merge applies s1's
        // cascade to the layer this context put into it: the layer is pending deletion here.
        try other.performAndWait {
            other.delete(try object(Album.self, "a1", in: other))
            try other.save()
        }
        flush(context)
        try context.performAndWait {
            let layer = try #require(context.registeredObjects.first { UndoRandomTests.uid($0) == "l1" })
            #expect(layer.isDeleted)
        }
        context.performAndWait { _ = context.undo() }
        let layers = try context.performAndWait {
            try object(Sketch.self, "s2", in: context).layers.map(UndoRandomTests.uid)
        }
        #expect(layers.isEmpty, "the undo does not put the deleted layer back into s2")
        try context.performAndWait { try context.save() }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored.keys.sorted() == ["s2"])
    }
}
