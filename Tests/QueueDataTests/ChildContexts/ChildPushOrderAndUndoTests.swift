import Foundation
import Testing

@testable import QueueData

@Suite("Child contexts: a push keeps the child's order and is one undoable group of the parent")
struct ChildPushOrderAndUndoTests {
    @Test("a to-many the child reordered by setting to-ones and inserting reaches the parent in the child's order")
    func order() throws {
        let directory = TemporaryDirectory("child-push")
        let manager = undoModelManager(.memory, directory)
        defer { manager.close() }
        let parent = try makeRetainingContext(manager, "p")
        try parent.performAndWait {
            let s2 = parent.insert(Sketch.self)
            s2.uid = "s2"
            let l5 = parent.insert(Layer.self)
            l5.uid = "l5"
            l5.sketch = s2
            let l3 = parent.insert(Layer.self)
            l3.uid = "l3"
            try parent.save()
            parent.undoManager = UndoManager()
        }
        let child = parent.performAndWait { parent.newChildContext() }
        let childOrder = try child.performAndWait {
            child.retainsRegisteredObjects = true
            child.undoManager = UndoManager()
            let all = try UndoChildRandomTests.fetchAll(child)
            let s2 = all.first { UndoRandomTests.uid($0) == "s2" } as! Sketch
            let l3 = all.first { UndoRandomTests.uid($0) == "l3" } as! Layer
            l3.sketch = s2
            let l7 = child.insert(Layer.self)
            l7.uid = "l7"
            l7.sketch = s2
            try child.save()
            return s2.layers.map(UndoRandomTests.uid)
        }
        let parentOrder = try parent.performAndWait {
            let all = try UndoChildRandomTests.fetchAll(parent)
            let s2 = all.first { UndoRandomTests.uid($0) == "s2" } as! Sketch
            return s2.layers.map(UndoRandomTests.uid)
        }
        #expect(childOrder == ["l5", "l3", "l7"])
        #expect(parentOrder == childOrder)
    }

    @Test("a push cancelling the parent's pending deletion (the child undid it) is undone and redone in the parent")
    func deleteUndo() throws {
        let directory = TemporaryDirectory("child-push")
        let manager = undoModelManager(.memory, directory)
        defer { manager.close() }
        let parent = try makeRetainingContext(manager, "p")
        try parent.performAndWait {
            let l1 = parent.insert(Layer.self)
            l1.uid = "l1"
            try parent.save()
            parent.undoManager = UndoManager()
        }
        let child = parent.performAndWait { parent.newChildContext() }
        child.performAndWait {
            child.retainsRegisteredObjects = true
            child.undoManager = UndoManager()
        }
        try child.performAndWait {
            let all = try UndoChildRandomTests.fetchAll(child)
            child.delete(all[0])
        }
        try child.performAndWait { try child.save() }
        #expect(try UndoChildRandomTests.view(parent).isEmpty)
        child.performAndWait { _ = child.undo() }
        #expect(try UndoChildRandomTests.view(child).count == 1)
        let before = parent.performAndWait { parent.undoManager!.undoStack.count }
        try child.performAndWait { try child.save() }
        #expect(try UndoChildRandomTests.view(parent).count == 1)
        #expect(parent.performAndWait { parent.undoManager!.undoStack.count } == before + 1)
        parent.performAndWait { _ = parent.undo() }
        #expect(try UndoChildRandomTests.view(parent).isEmpty)
        parent.performAndWait { _ = parent.redo() }
        #expect(try UndoChildRandomTests.view(parent).count == 1)
        try parent.performAndWait { try parent.save() }
        #expect(try UndoRandomTests.storedSignature(manager).count == 1)
    }
}
