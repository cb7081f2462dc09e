import Foundation
import Testing

@testable import QueueData

/// An object a context with an undo manager (itself a child) removed while it knew it by a
/// temporary ID, and whose permanent ID it adopted afterwards (its parent had saved it): a child
/// of the context that brings the object back gets the context's own instance again, which the
/// context's undo manager finds under the permanent key, so that undoing the deletion later
/// brings back what was there.
@Suite("Undo: objects removed under a temporary ID that became permanent")
struct UndoAdoptedKeyTests {
    @Test(
        "a grandchild's restore after the middle context adopted the permanent key brings back its own instance",
        arguments: [LifecycleStore.memory, .journal])
    func restoreAfterAdoptedKey(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-adopted-key-\(store)")
        let manager = undoModelManager(store, directory)
        defer { manager.close() }
        let root = try makeRetainingContext(manager, "root")
        let middle = UndoNestedRegressionTests.child(of: root)
        try middle.performAndWait {
            let sketch = middle.insert(Sketch.self)
            sketch.uid = "s1"
            try middle.save()
        }
        let child = UndoNestedRegressionTests.child(of: middle)
        let fetched = try child.performAndWait { try child.fetch(FetchRequest<Sketch>()).count }
        #expect(fetched == 1)
        // The root saves: the sketch takes a permanent ID there, which neither child knows yet.
        try root.performAndWait { try root.save() }
        // The child deletes it and pushes: the middle context removes it under its temporary ID.
        try child.performAndWait {
            child.delete(UndoNestedRegressionTests.object(child, "s1")!)
            try child.save()
        }
        let original = try middle.performAndWait {
            let sketch = try #require(UndoNestedRegressionTests.object(middle, "s1"))
            #expect(sketch.isDeleted && sketch.objectID.isTemporaryID)
            // Its save pushes the deletion into the root and adopts the permanent key, which the
            // instance, gone, takes too.
            try middle.save()
            return sketch
        }
        // The child brings it back and pushes it again, under the temporary key it knows.
        try child.performAndWait {
            #expect(child.undo().didApply)
            try child.save()
        }
        try middle.performAndWait {
            let sketches = middle.registeredObjects.filter { UndoRandomTests.uid($0) == "s1" }
            #expect(sketches.count == 1)
            #expect(sketches.first === original, "the middle context's own instance comes back")
            #expect(!original.isDeleted && !original.objectID.isTemporaryID)
            try middle.save()
            // Undoing the restoring push, then the deleting one, brings the same instance back again.
            #expect(middle.undo().didApply)
            #expect(middle.undo().didApply)
            let again = middle.registeredObjects.filter { UndoRandomTests.uid($0) == "s1" }
            #expect(again.count == 1 && again.first === original && !original.isDeleted)
            try middle.save()
        }
        try root.performAndWait { try root.save() }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored.keys.sorted() == ["s1"])
    }
}
