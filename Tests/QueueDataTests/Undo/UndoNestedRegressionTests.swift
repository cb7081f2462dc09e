import Foundation
import Testing

@testable import QueueData

/// Defects `UndoNestedRandomTests` found, each replayed deterministically.
@Suite("Undo: nested contexts and deny rules, found by the random tests")
struct UndoNestedRegressionTests {
    /// A context with an undo manager that retains its objects.
    static func undoing(_ context: ManagedObjectContext) -> ManagedObjectContext {
        context.performAndWait {
            context.retainsRegisteredObjects = true
            context.undoManager = UndoManager()
        }
        return context
    }

    /// A new child of `parent` with an undo manager, retaining its objects.
    static func child(of parent: ManagedObjectContext) -> ManagedObjectContext {
        undoing(parent.performAndWait { parent.newChildContext() })
    }

    /// The registered object whose uid is `uid` (on the context's queue).
    static func object(_ context: ManagedObjectContext, _ uid: String) -> ManagedObject? {
        context.registeredObjects.first { UndoRandomTests.uid($0) == uid }
    }

    @Test(
        "a deletion a deny rule refuses leaves the other deletions of its block to their rules",
        arguments: LifecycleStore.allCases)
    func denyLeavesOtherDeletions(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-nested-deny-\(store)")
        let manager = store.manager(directory, model: undoDenyModel)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "undo")
        try context.performAndWait {
            let kiln = context.insert(Kiln.self)
            kiln.uid = "k1"
            let pot = context.insert(Pot.self)
            pot.uid = "p1"
            pot.kiln = kiln
            let album = context.insert(Album.self)
            album.uid = "a1"
            let sketch = context.insert(Sketch.self)
            sketch.uid = "s1"
            sketch.album = album
            try context.save()
            context.undoManager = UndoManager()
        }
        context.performAndWait {
            context.delete(Self.object(context, "k1")!)
            context.delete(Self.object(context, "a1")!)
        }
        context.performAndWait {
            #expect(Self.object(context, "s1")!.isDeleted, "the album's cascade ran at the end of the block")
            #expect(!Self.object(context, "p1")!.isDeleted && (Self.object(context, "k1") as! Kiln).pots.count == 1)
            #expect(throws: ValidationError.self) { try context.save() }
        }
        // A child reads the parent as its save would leave it: no sketch.
        let child = context.performAndWait { context.newChildContext() }
        let sketches = try child.performAndWait { try child.fetch(FetchRequest<Sketch>()).count }
        #expect(sketches == 0)
        try context.performAndWait {
            context.undo()
            #expect(
                !Self.object(context, "s1")!.isDeleted && (Self.object(context, "a1") as! Album).sketches.count == 1)
            try context.save()
        }
    }

    @Test(
        "an object a grandchild deletes, pushes, brings back and pushes again before any save is the child's again",
        arguments: LifecycleStore.allCases)
    func unsavedObjectBroughtBackTwoLevelsDown(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-nested-unsaved-\(store)")
        let manager = store.manager(directory, model: undoDenyModel)
        defer { manager.close() }
        let top = Self.undoing(try makeContext(manager, "top"))
        let child = Self.child(of: top)
        try child.performAndWait {
            child.insert(Layer.self).uid = "l1"
            try child.save()
        }
        let grandchild = Self.child(of: child)
        try grandchild.performAndWait {
            grandchild.delete(try #require(try grandchild.fetch(FetchRequest<Layer>()).first))
            try grandchild.save()
        }
        try grandchild.performAndWait {
            grandchild.undo()
            try grandchild.save()
        }
        child.performAndWait {
            #expect(child.insertedObjects.isEmpty && child.deletedObjects.isEmpty)
            #expect(Self.object(child, "l1").map { !$0.isDeleted } == true)
        }
        // What the child's children and its save see.
        let fresh = child.performAndWait { child.newChildContext() }
        let layers = try fresh.performAndWait { try fresh.fetch(FetchRequest<Layer>()).map(\.uid) }
        #expect(layers == ["l1"])
        try child.performAndWait {
            try child.save()
            child.undo()  // the grandchild's second push: deleted again
            #expect(Self.object(child, "l1")?.isDeleted == true)
        }
    }

    @Test(
        "a grandchild's undone cascade after the top saved and the grandchild read brings back the links",
        arguments: LifecycleStore.allCases)
    func undoneCascadeAfterPermanentKeys(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-nested-keys-\(store)")
        let manager = store.manager(directory, model: undoDenyModel)
        defer { manager.close() }
        let top = Self.undoing(try makeContext(manager, "top"))
        let child = Self.child(of: top)
        try child.performAndWait {
            let album = child.insert(Album.self)
            album.uid = "a1"
            let sketch = child.insert(Sketch.self)
            sketch.uid = "s1"
            sketch.album = album
            try child.save()
        }
        let grandchild = Self.child(of: child)
        try grandchild.performAndWait {
            grandchild.delete(try #require(try grandchild.fetch(FetchRequest<Album>()).first))
            try grandchild.save()
        }
        try top.performAndWait { try top.save() }
        // A read through the child: the grandchild's objects take their permanent IDs.
        _ = try grandchild.performAndWait { try grandchild.fetch(FetchRequest<Layer>()) }
        try grandchild.performAndWait {
            grandchild.undo()
            let album = try #require(Self.object(grandchild, "a1") as? Album)
            #expect(!album.objectID.isTemporaryID)
            #expect(album.sketches.map(\.uid) == ["s1"] && album.sketches.first?.album === album)
            try grandchild.save()
        }
        let linked = try child.performAndWait {
            let sketches = try child.fetch(FetchRequest<Sketch>())
            return sketches.map { "\($0.uid)→\($0.album?.uid ?? "-")" }
        }
        #expect(linked == ["s1→a1"])
        try child.performAndWait { try child.save() }
        try top.performAndWait { try top.save() }
        let stored = try UndoNestedRandomTests.stored(manager)
        #expect(stored["a1"]?.contains("sketches=[s1]") == true && stored["s1"]?.contains("album=[a1]") == true)
    }
}
