import Foundation
import Testing

@testable import QueueData

@Suite("A child context reads its parent's objects that an undo brought back")
struct ChildSeesRestoredObjectsTests {
    @Test("an object whose saved deletion the parent undid is matched, counted and sorted by a child's fetches")
    func childFetchesRestoredObject() throws {
        let manager = makeManager(model: undoModel)
        defer { manager.close() }
        let parent = try makeRetainingContext(manager, "restored-parent")
        let (restoredID, keptID) = try parent.performAndWait {
            parent.undoManager = UndoManager()
            let restored = parent.insert(Layer.self)
            restored.uid = "restored"
            restored.depth = 2
            let kept = parent.insert(Layer.self)
            kept.uid = "kept"
            kept.depth = 1
            let gone = parent.insert(Layer.self)
            gone.uid = "gone"
            try parent.save()
            parent.delete(gone)
            try parent.save()
            parent.delete(restored)
            try parent.save()
            parent.undo()
            // Pending again under its permanent ID, which the store no longer holds.
            #expect(restored.isInserted && !restored.objectID.isTemporaryID)
            return (restored.objectID, kept.objectID)
        }
        let child = parent.performAndWait { parent.newChildContext() }
        try child.performAndWait {
            let matched = try child.fetch(FetchRequest<Layer>(predicate: #Predicate { $0.uid == "restored" }))
            #expect(matched.map(\.objectID) == [restoredID])
            #expect(try child.count(for: FetchRequest<Layer>()) == 2)
            var top = FetchRequest<Layer>(sortBy: [SortDescriptor(\.depth, order: .reverse)])
            top.fetchLimit = 1
            #expect(try child.fetch(top).map(\.objectID) == [restoredID])
            #expect(
                try child.fetchObjectIDs(FetchRequest<Layer>()).sorted { $0.rawValue < $1.rawValue }
                    == [keptID, restoredID].sorted { $0.rawValue < $1.rawValue })
            // A change in the child goes back to the parent's pending object.
            matched.first?.depth = 5
            try child.save()
        }
        try parent.performAndWait {
            let restored = try parent.existingObject(with: restoredID, as: Layer.self)
            #expect(restored.depth == 5 && restored.isInserted)
            try parent.save()
        }
        let reader = try makeContext(manager, "restored-reader")
        let stored = try reader.performAndWait {
            try reader.fetch(FetchRequest<Layer>(sortBy: [SortDescriptor(\.uid)])).map { "\($0.uid) \($0.depth)" }
        }
        #expect(stored == ["kept 1", "restored 5"])
    }
}
