import Foundation
import Testing

@testable import QueueData

/// Delete rules with an undo manager: a context that records undo applies the rules of a
/// deletion at the end of the event that made it (as Core Data's `propagatesDeletesAtEndOfEvent`),
/// so the deletion's group holds everything they change and one undo brings it all back.
/// Each test starts from ``UndoTests/seed(_:)``: album a1 cascades to sketch s1, which cascades
/// to layers l0 and l1; s1 has label t1 (nullify).
@Suite("Undo over cascades")
struct UndoCascadeTests {
    @Test(
        "a deletion's rules apply at the end of its block, and one undo brings back everything they changed",
        arguments: LifecycleStore.allCases)
    func deletionGroupHoldsItsRules(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-cascade-event-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        try context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            let label = try #require(sketch.labels.first)
            #expect(sketch.isDeleted && sketch.layers.allSatisfy(\.isDeleted) && sketch.layers.count == 2)
            #expect(label.sketches.isEmpty && !label.isDeleted, "the label stops pointing to the sketch (nullify)")
            #expect(context.undoManager!.undoStack.count == 1, "one group")
            context.undo()
            #expect(!sketch.isDeleted && sketch.layers.map(\.uid) == ["l0", "l1"] && !sketch.layers[0].isDeleted)
            #expect(sketch.album?.uid == "a1" && label.sketches == [sketch])
            #expect(!context.hasChanges)
            context.redo()
            #expect(sketch.isDeleted && label.sketches.isEmpty)
            try context.save()
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(Set(stored.keys) == ["t1"] && stored["t1"]?.contains("sketches=[]") == true)
        try context.performAndWait {
            context.undo()
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "undone after the save")
        manager.close()
    }

    @Test(
        "links made to a deleted object in a later block are undone by its rules at the end of that block",
        arguments: LifecycleStore.allCases)
    func linkToDeletedObjectFollowsItsRules(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-cascade-link-\(store)")
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
        let layerID = context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            (context.object(with: labelID) as! Mark).sketches = [sketch]
            let layer = context.insert(Layer.self)
            layer.uid = "l2"
            layer.sketch = sketch
            return layer.objectID
        }
        try context.performAndWait {
            // The sketch's rules ran again: the new layer went with it (cascade), the label
            // let go of it (nullify); that is the second group.
            #expect(context.object(with: layerID) == nil)
            #expect((context.object(with: labelID) as! Mark).sketches.isEmpty)
            // Neither side keeps the link: the deleted sketch holds what it held when deleted.
            let deleted = context.object(with: sketchID) as! Sketch
            #expect(deleted.isDeleted && deleted.labels.map(\.uid) == ["t1"])
            #expect(deleted.layers.map(\.uid) == ["l0", "l1"])
            #expect(context.undoManager!.undoStack.count == 2)
            try context.save()
            context.undo()
            context.undo()
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(!sketch.isDeleted && sketch.layers.map(\.uid) == ["l0", "l1"])
            #expect(sketch.labels.map(\.uid) == ["t1"] && (context.object(with: labelID) as! Mark).sketches.isEmpty)
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "both undone")
        manager.close()
    }

    @Test(
        "undoing a change of an ordered relationship after a deletion's rules changed it gives back its order",
        arguments: LifecycleStore.allCases)
    func undoKeepsOrderOverDeletion(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-order-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let sketchID = try context.performAndWait {
            let sketch = context.insert(Sketch.self)
            sketch.uid = "s1"
            for uid in ["l1", "l2", "l3"] {
                let layer = context.insert(Layer.self)
                layer.uid = uid
                sketch.layers.append(layer)
            }
            try context.save()
            context.undoManager = UndoManager()
            return sketch.objectID
        }
        // Deleting l1 takes it out of the layers at the end of the block (nullify); the next
        // block takes l2 out; a save between the undos.
        context.performAndWait { context.delete((context.object(with: sketchID) as! Sketch).layers[0]) }
        try context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(sketch.layers.map(\.uid) == ["l2", "l3"])
            sketch.layers.remove(at: 0)
            try context.save()
        }
        try context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(sketch.layers.map(\.uid) == ["l3"])
            context.undo()
            #expect(sketch.layers.map(\.uid) == ["l2", "l3"])
            try context.save()
            context.undo()
            #expect(sketch.layers.map(\.uid) == ["l1", "l2", "l3"])
            try context.save()
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored["s1"]?.contains("layers=[l1,l2,l3]") == true)
        manager.close()
    }

    @Test(
        "deleting an object a deletion's cascade already deleted records nothing",
        arguments: LifecycleStore.allCases)
    func deletingCascadedObjectRecordsNothing(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-cascade-again-\(store)")
        let manager = undoModelManager(store, directory)
        let context = try makeContext(manager, "undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.undoManager = UndoManager() }
        let before = try UndoRandomTests.storedSignature(manager)
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        try context.performAndWait {
            context.delete(context.object(with: sketchID)!)
            try context.save()
        }
        try context.performAndWait {
            #expect(context.undoManager!.undoStack.count == 1)
            context.undo()
            #expect(!context.undoManager!.canUndo)
            try context.save()
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), before, "undone")
        manager.close()
    }

    @Test(
        "a deletion denied by a rule at the end of its block is left to the save, which reports it",
        arguments: LifecycleStore.allCases)
    func deniedDeletionWaitsForSave(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("undo-cascade-deny-\(store)")
        let manager = store.manager(directory, model: deniedDeletionModel)
        let context = try makeContext(manager, "undo")
        let publisherID = try context.performAndWait {
            let publisher = context.insert(Publisher.self)
            publisher.name = "p"
            let novel = context.insert(Novel.self)
            novel.publisher = publisher
            try context.save()
            context.undoManager = UndoManager()
            return publisher.objectID
        }
        context.performAndWait { context.delete(context.object(with: publisherID)!) }
        try context.performAndWait {
            let publisher = context.object(with: publisherID) as! Publisher
            let novel = try #require(publisher.books.first)
            #expect(novel.publisher === publisher, "nothing changed")
            #expect(throws: ValidationError.self) { try context.save() }
            // Moving the book out of the way: the deletion's rules run at the end of this block.
            novel.publisher = nil
        }
        try context.performAndWait {
            try context.save()
            context.undo()
            context.undo()
            let publisher = context.object(with: publisherID) as! Publisher
            #expect(!publisher.isDeleted && publisher.books.count == 1)
            try context.save()
        }
        manager.close()
    }

    @Test("without an undo manager, delete rules apply when the deletion is saved")
    func withoutUndoManagerRulesWaitForSave() throws {
        let directory = TemporaryDirectory("undo-cascade-none")
        let manager = undoModelManager(.memory, directory)
        let context = try makeContext(manager, "no-undo")
        let (albumID, sketchID) = try UndoTests.seed(context)
        context.performAndWait { context.delete(context.object(with: albumID)!) }
        try context.performAndWait {
            let sketch = context.object(with: sketchID) as! Sketch
            #expect(!sketch.isDeleted && sketch.labels.count == 1)
            try context.save()
            #expect(context.object(with: sketchID) == nil)
        }
        manager.close()
    }
}
