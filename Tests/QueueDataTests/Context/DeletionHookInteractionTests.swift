import Foundation
import Testing

@testable import QueueData

@Suite("Deletion hooks and refreshAllObjects() across contexts, undo and controllers")
struct DeletionHookProbeTests {
    /// Saves crate `label` with items `label-0`, `label-1`.
    private func saveCrate(_ context: ManagedObjectContext, _ label: String) throws -> ObjectID {
        let crate = context.insert(Crate.self)
        crate.label = label
        for item in ["\(label)-0", "\(label)-1"] {
            let object = context.insert(CrateItem.self)
            object.label = item
            object.crate = crate
        }
        try context.save()
        return crate.objectID
    }

    @Test("undo and redo of a deletion call no hook again; the save after calls none")
    func undoRedoCallsNoHook() throws {
        let manager = makeManager(model: crateModel)
        defer { manager.close() }
        let context = try makeContext(manager, "review-hook-undo")
        let id = try context.performAndWait {
            context.undoManager = UndoManager()
            return try saveCrate(context, "ur")
        }
        context.performAndWait {
            context.delete(try! context.existingObject(with: id, as: Crate.self))
        }
        #expect(logged("prepare ur").sorted() == ["prepare ur", "prepare ur-0", "prepare ur-1"])
        context.performAndWait { _ = context.undoManager!.undo() }
        context.performAndWait {
            let count = try? context.count(for: FetchRequest<CrateItem>())
            #expect(count == 2)
            _ = context.undoManager!.redo()
        }
        try context.performAndWait {
            try context.save()
            #expect(try context.count(for: FetchRequest<CrateItem>()) == 0)
        }
        #expect(logged("prepare ur").count == 3)
    }

    @Test("a child's deletion calls the hooks in the child only; the parent's save validates the pushed deletions")
    func childDeletion() throws {
        let manager = makeManager(model: crateModel)
        defer { manager.close() }
        let parent = try makeContext(manager, "review-hook-parent")
        let id = try parent.performAndWait {
            parent.undoManager = UndoManager()
            return try saveCrate(parent, "ch")
        }
        let child = parent.performAndWait { parent.newChildContext() }
        try child.performAndWait {
            child.delete(try child.existingObject(with: id, as: Crate.self))
            try child.save()
        }
        #expect(logged("prepare ch").sorted() == ["prepare ch", "prepare ch-0", "prepare ch-1"])
        #expect(logged("validate ch") == ["validate ch"])
        try parent.performAndWait {
            #expect(parent.deletedObjects.count == 3)
            try parent.save()
        }
        #expect(logged("prepare ch").count == 3)
        #expect(logged("validate ch") == ["validate ch", "validate ch"])
    }

    @Test("refreshAllObjects() keeps a fetched-results controller equal to a fresh fetch", arguments: 0..<6)
    func refreshAllKeepsController(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let manager = makeManager()
        defer { manager.close() }
        let context = try makeContext(manager, "review-refresh-frc")
        let other = try makeContext(manager, "review-refresh-frc-other")
        let ids = try other.performAndWait {
            let objects = (0..<20).map { index in
                let object = other.insert(Destination.self)
                object.name = "d\(index)"
                object.rating = index % 5
                return object
            }
            try other.save()
            return objects.map(\.objectID)
        }
        let request = FetchRequest<Destination>(
            predicate: #Predicate { $0.rating >= 2 }, sortBy: [SortDescriptor(\.name)])
        let controller = try context.performAndWait {
            context.automaticallyMergesChangesFromOtherContexts = false
            context.retainsRegisteredObjects = seed % 2 == 0
            _ = try context.fetch(FetchRequest<Destination>())
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
            try controller.performFetch()
            return controller
        }
        for _ in 0..<4 {
            try other.performAndWait {
                for id in ids.shuffled(using: &random).prefix(6) {
                    guard let object = try? other.existingObject(with: id, as: Destination.self) else { continue }
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: other.delete(object)
                    case 1: object.name = "e\(Int.random(in: 0..<40, using: &random))"
                    default: object.rating = Int.random(in: 0..<5, using: &random)
                    }
                }
                try other.save()
            }
            try context.performAndWait {
                // Some local changes too.
                if let some = controller.fetchedObjects?.first, Bool.random(using: &random) {
                    some.rating = Int.random(in: 0..<5, using: &random)
                }
                let registered = Set(context.registeredObjects.map(\.objectID))
                context.refreshAllObjects()
                let shown = controller.fetchedObjects?.map(\.objectID) ?? []
                let fresh = try context.fetch(request).map(\.objectID)
                if context.retainsRegisteredObjects {
                    #expect(shown == fresh)
                } else {
                    // Objects the context did not hold are not refreshed (as in Core Data): the
                    // controller differs from a fetch by those only.
                    let missing = Set(fresh).symmetricDifference(shown)
                    #expect(missing.isDisjoint(with: registered))
                    #expect(shown.filter { !missing.contains($0) } == fresh.filter { !missing.contains($0) })
                }
            }
        }
    }

    @Test(
        "refreshAllObjects() is not undoable; a pending deletion another context made leaves, and the save goes through"
    )
    func refreshAllUndoAndPendingDeletion() throws {
        let manager = makeManager(model: crateModel)
        defer { manager.close() }
        let context = try makeContext(manager, "review-refresh-undo")
        let other = try makeContext(manager, "review-refresh-undo-other")
        let (a, b) = try context.performAndWait {
            context.automaticallyMergesChangesFromOtherContexts = false
            context.retainsRegisteredObjects = true
            context.undoManager = UndoManager()
            return (try saveCrate(context, "ra"), try saveCrate(context, "rb"))
        }
        try other.performAndWait {
            try other.existingObject(with: a, as: Crate.self).label = "ra changed"
            other.delete(try other.existingObject(with: b, as: Crate.self))
            try other.save()
        }
        try context.performAndWait {
            context.delete(try context.existingObject(with: b, as: Crate.self))
        }
        try context.performAndWait {
            let crateA = try context.existingObject(with: a, as: Crate.self)
            context.refreshAllObjects()
            #expect(crateA.label == "ra changed")
        }
        try context.performAndWait {
            _ = context.undoManager!.undo()
            let crateA = try context.existingObject(with: a, as: Crate.self)
            #expect(crateA.label == "ra changed")
            try context.save()
            #expect(try context.count(for: FetchRequest<Crate>()) == 1)
        }
    }

    @Test("refreshAllObjects() in a child reads the parent's unsaved values")
    func refreshAllChild() throws {
        let manager = makeManager(model: crateModel)
        defer { manager.close() }
        let parent = try makeContext(manager, "review-refresh-child")
        let id = try parent.performAndWait { try saveCrate(parent, "rc") }
        let child = parent.performAndWait { parent.newChildContext() }
        try child.performAndWait {
            child.retainsRegisteredObjects = true
            _ = try child.existingObject(with: id, as: Crate.self).items.count
        }
        try parent.performAndWait {
            let crate = try parent.existingObject(with: id, as: Crate.self)
            crate.label = "rc parent"
            parent.delete(crate.items.first { $0.label == "rc-0" }!)
        }
        try child.performAndWait {
            let crate = try child.existingObject(with: id, as: Crate.self)
            child.refreshAllObjects()
            #expect(crate.label == "rc parent")
            #expect(crate.items.map(\.label) == ["rc-1"])
        }
    }
}

/// An album whose ordered tracks go with it, and which cannot go while a label holds it.
final class HookAlbum: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "album", deleteRule: .cascade) var tracks: [HookTrack]
    @Relationship(inverse: "albums", deleteRule: .deny) var label: HookLabel?

    override func prepareForDeletion() {
        super.prepareForDeletion()
        reviewHookLog.withLock { $0.append("prepare \(title)") }
    }
}

/// A track on an album, with tags (many-to-many; a tag's deletion takes its tracks along).
final class HookTrack: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "tracks") var album: HookAlbum?
    @Relationship(inverse: "tracks") var tags: Set<HookTag>

    override func prepareForDeletion() {
        super.prepareForDeletion()
        reviewHookLog.withLock { $0.append("prepare \(title)") }
    }
}

/// A tag of many tracks.
final class HookTag: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "tags", deleteRule: .cascade) var tracks: Set<HookTrack>
}

/// A record label holding albums.
final class HookLabel: ManagedObject {
    @Relationship(inverse: "label") var albums: Set<HookAlbum>
}

private let albumModel = ManagedObjectModel([HookAlbum.self, HookTrack.self, HookTag.self, HookLabel.self])

@Suite("Deletion hooks over ordered, many-to-many and deny relationships")
struct DeletionHookShapeProbeTests {
    @Test(
        "ordered and many-to-many cascades call each hook once; a deny refusal calls none of the cascade's, then the retry does",
        arguments: [false, true])
    func shapes(undo: Bool) throws {
        let manager = makeManager(model: albumModel)
        defer { manager.close() }
        let context = try makeContext(manager, "review-shapes")
        let tag = undo ? "U" : "N"
        let (albumID, tagID, labelID) = try context.performAndWait {
            if undo { context.undoManager = UndoManager() }
            context.retainsRegisteredObjects = true
            let album = context.insert(HookAlbum.self)
            album.title = "\(tag)album"
            let label = context.insert(HookLabel.self)
            album.label = label
            let shared = context.insert(HookTag.self)
            for index in 0..<3 {
                let track = context.insert(HookTrack.self)
                track.title = "\(tag)track\(index)"
                track.album = album
                track.tags = [shared]
            }
            try context.save()
            return (album.objectID, shared.objectID, label.objectID)
        }
        context.performAndWait {
            context.delete(try! context.existingObject(with: albumID, as: HookAlbum.self))
        }
        try context.performAndWait {
            #expect(throws: ValidationError.self) { try context.save() }
            #expect(logged("prepare \(tag)") == ["prepare \(tag)album"])
            let label = try context.existingObject(with: labelID, as: HookLabel.self)
            label.albums = []
        }
        try context.performAndWait {
            try context.save()
            #expect(try context.count(for: FetchRequest<HookTrack>()) == 0)
            #expect(
                logged("prepare \(tag)").sorted() == ["prepare \(tag)album"]
                    + (0..<3).map { "prepare \(tag)track\($0)" })
            // A many-to-many cascade from the other side.
            let newTag = try context.existingObject(with: tagID, as: HookTag.self)
            let album = context.insert(HookAlbum.self)
            for index in 0..<2 {
                let track = context.insert(HookTrack.self)
                track.title = "\(tag)m\(index)"
                track.album = album
                track.tags = [newTag]
            }
            try context.save()
            context.delete(newTag)
            try context.save()
            #expect(logged("prepare \(tag)m").sorted() == ["prepare \(tag)m0", "prepare \(tag)m1"])
            #expect(try context.count(for: FetchRequest<HookTrack>()) == 0)
            #expect(album.tracks.isEmpty)
        }
    }
}
