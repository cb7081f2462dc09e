import Foundation
import Testing

@testable import QueueData

/// A parent that saves between its child's pushes, then undoes them: each push is one group of
/// the parent, and undoing it takes back exactly what it did, whatever was saved since.
@Suite("Child contexts: a parent undoes its child's pushes after saving them")
struct ChildPushUndoAcrossSavesTests {
    /// A parent with an undo manager over a store holding what `seed` inserts, and its child
    /// (with one too).
    static func contexts(
        _ store: LifecycleStore,
        _ directory: TemporaryDirectory,
        seed: (ManagedObjectContext) -> Void
    ) throws -> (ContextManager, ManagedObjectContext, ManagedObjectContext) {
        let manager = undoModelManager(store, directory)
        let parent = try makeRetainingContext(manager, "p")
        try parent.performAndWait {
            seed(parent)
            try parent.save()
            parent.undoManager = UndoManager()
        }
        let child = parent.performAndWait { parent.newChildContext() }
        child.performAndWait {
            child.retainsRegisteredObjects = true
            child.undoManager = UndoManager()
        }
        return (manager, parent, child)
    }

    static func object(_ uid: String, in context: ManagedObjectContext) throws -> ManagedObject? {
        try UndoChildRandomTests.fetchAll(context).first { UndoRandomTests.uid($0) == uid }
    }

    @Test(
        "undoing a pushed deletion brings the object back after the child restored it and both pushes were saved",
        arguments: [LifecycleStore.memory, .journal])
    func deletionUndoneAfterRestore(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("child-push-undo")
        let (manager, parent, child) = try Self.contexts(store, directory) { parent in
            let album = parent.insert(Album.self)
            album.uid = "a1"
            album.name = "kept"
        }
        defer { manager.close() }
        let original = try parent.performAndWait { try Self.object("a1", in: parent) }
        try child.performAndWait {
            child.delete(try #require(try Self.object("a1", in: child)))
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        // The child takes its deletion back and pushes that: the parent inserts the album again.
        child.performAndWait { _ = child.undo() }
        try child.performAndWait { try child.save() }
        try parent.performAndWait { try parent.save() }
        let restored = try parent.performAndWait { try Self.object("a1", in: parent) }
        #expect(restored === original, "the parent's own instance comes back: one instance per ID")

        // Undo the restoring push (the album is deleted again), then the deleting push.
        parent.performAndWait { _ = parent.undo() }
        #expect(try UndoChildRandomTests.view(parent)["a1"] == nil)
        parent.performAndWait { _ = parent.undo() }
        #expect(try UndoChildRandomTests.view(parent)["a1"] == #"Album uid="a1" name="kept" sketches=[]"#)
        try parent.performAndWait { try parent.save() }
        #expect(try UndoRandomTests.storedSignature(manager)["a1"] == #"Album uid="a1" name="kept" sketches=[]"#)
    }

    @Test(
        "undoing a push that inserted an object takes back its side of the links: a cascade deletes nothing else",
        arguments: [LifecycleStore.memory, .journal], [false, true])
    func insertionUndoneKeepsLinkedObjects(_ store: LifecycleStore, _ saveBetween: Bool) throws {
        let directory = TemporaryDirectory("child-push-undo")
        let (manager, parent, child) = try Self.contexts(store, directory) { parent in
            let sketch = parent.insert(Sketch.self)
            sketch.uid = "s1"
        }
        defer { manager.close() }
        try child.performAndWait {
            let album = child.insert(Album.self)
            album.uid = "a2"
            // Album.sketches cascades: deleting the album deletes the sketches it holds.
            (try #require(try Self.object("s1", in: child)) as! Sketch).album = album
            try child.save()
        }
        if saveBetween {
            try parent.performAndWait { try parent.save() }
        }
        parent.performAndWait { _ = parent.undo() }
        let expected = [#"s1"#: #"Sketch uid="s1" title="" strokes=0 finished=nil album=[] layers=[] labels=[]"#]
        #expect(try UndoChildRandomTests.view(parent) == expected)
        try parent.performAndWait { try parent.save() }
        #expect(try UndoRandomTests.storedSignature(manager) == expected)
    }

    @Test(
        "an object the child restores points back from its to-one's target in the parent",
        arguments: [LifecycleStore.memory, .journal])
    func restoredObjectIsListedByItsTarget(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("child-push-undo")
        let (manager, parent, child) = try Self.contexts(store, directory) { parent in
            let sketch = parent.insert(Sketch.self)
            sketch.uid = "s1"
            let layer = parent.insert(Layer.self)
            layer.uid = "l1"
            layer.depth = 3
            layer.sketch = sketch
        }
        defer { manager.close() }
        try child.performAndWait {
            child.delete(try #require(try Self.object("l1", in: child)))
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        child.performAndWait { _ = child.undo() }
        try child.performAndWait { try child.save() }
        let expected = [
            "s1": #"Sketch uid="s1" title="" strokes=0 finished=nil album=[] layers=[l1] labels=[]"#,
            "l1": #"Layer uid="l1" depth=3 sketch=[s1]"#,
        ]
        #expect(try UndoChildRandomTests.view(child) == expected)
        #expect(try UndoChildRandomTests.view(parent) == expected)
        try parent.performAndWait { try parent.save() }
        #expect(try UndoRandomTests.storedSignature(manager) == expected)
        // Undoing the push deletes the layer again and takes it out of the sketch.
        parent.performAndWait { _ = parent.undo() }
        #expect(
            try UndoChildRandomTests.view(parent) == [
                "s1": #"Sketch uid="s1" title="" strokes=0 finished=nil album=[] layers=[] labels=[]"#
            ])
    }
}
