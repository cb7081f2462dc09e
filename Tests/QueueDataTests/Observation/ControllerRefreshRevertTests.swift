import Foundation
import Testing

@testable import QueueData

@Suite("Fetched-results controller: a refresh that moves related objects back")
struct ControllerRefreshRevertTests {
    @Test(
        "refreshing an album without merging puts back the sketch it lost: the controller lists the sketch again",
        arguments: [false, true])
    func revertedInverseIsReported(_ undoable: Bool) throws {
        let directory = TemporaryDirectory("frc-refresh-revert")
        let manager = undoModelManager(.memory, directory)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "frc-refresh-revert")
        let (album, sketch) = try context.performAndWait {
            let album = context.insert(Album.self)
            album.uid = "a1"
            let sketch = context.insert(Sketch.self)
            sketch.uid = "s1"
            sketch.album = album
            try context.save()
            if undoable {
                context.undoManager = UndoManager()
            }
            return (album, sketch)
        }
        let controller = try context.performAndWait {
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<Sketch>(
                    predicate: #Predicate { $0.album != nil }, sortBy: [SortDescriptor(\.title)]),
                managedObjectContext: context)
            try controller.performFetch()
            return controller
        }
        context.performAndWait { sketch.album = nil }
        #expect(context.performAndWait { controller.snapshot.objectIDs }.isEmpty)
        // The album's change (losing the sketch) is discarded on both sides: the sketch is back
        // in it, with no change left, and matches again.
        context.performAndWait { context.refresh(album, mergeChanges: false) }
        let (inAlbum, sketchID, fetched, listed) = try context.queue.sync {
            (
                sketch.album === album, sketch.objectID, try context.fetch(controller.fetchRequest).map(\.objectID),
                controller.snapshot.objectIDs
            )
        }
        #expect(inAlbum)
        #expect(fetched == [sketchID])
        #expect(listed == fetched)
    }
}
