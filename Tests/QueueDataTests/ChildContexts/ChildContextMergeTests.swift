import Dispatch
import Foundation
import QueueData
import Testing

/// How a conflict between a child's push and its parent's own change ends.
struct ChildConflictCase: Sendable, CustomTestStringConvertible {
    var policy: MergePolicy
    /// `nil`: the push throws ``MergeConflictError`` and changes nothing.
    var expected: (name: String, rating: Int)?
    var testDescription: String { policy.description }

    static let all: [ChildConflictCase] = [
        .init(policy: .error, expected: nil),
        .init(policy: .mergeByPropertyObjectTrump, expected: ("child", 2)),
        .init(policy: .mergeByPropertyStoreTrump, expected: ("child", 3)),
        .init(policy: .rollback, expected: ("x", 3)),
        .init(policy: .overwrite, expected: ("child", 2)),
    ]
}

@Suite("Child contexts: conflicts with the parent and relationships across the push")
struct ChildContextMergeTests {
    @Test(
        "the parent changed the rating, the child the name and the rating: the child's policy decides",
        arguments: ChildConflictCase.all, [false, true])
    func conflictPolicies(_ conflict: ChildConflictCase, _ parentSaved: Bool) throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let id = try parent.performAndWait {
            let object = parent.insert(Destination.self)
            object.name = "x"
            object.rating = 1
            try parent.save()
            return object.objectID
        }
        let child = parent.performAndWait { parent.newChildContext() }.retainingRegisteredObjects()
        try child.performAndWait { _ = try child.existingObject(with: id) }
        try parent.performAndWait {
            try parent.existingObject(with: id, as: Destination.self).rating = 3
            if parentSaved {
                try parent.save()
            }
        }
        try child.performAndWait {
            let object = try child.existingObject(with: id, as: Destination.self)
            object.name = "child"
            object.rating = 2
            child.mergePolicy = conflict.policy
            if conflict.expected == nil {
                let error = #expect(throws: MergeConflictError.self) { try child.save() }
                #expect(error?.conflicts.map(\.objectID) == [id])
                // The parent has no versions: the conflict says what it did instead of "version 0 → 0".
                let description = error?.conflicts.first?.description ?? ""
                #expect(description.contains("changed in the parent context since read"), "\(description)")
                #expect(description.contains("changed here: name, rating"), "\(description)")
                #expect(child.hasChanges)
            } else {
                try child.save()
            }
        }
        try parent.performAndWait {
            let object = try parent.existingObject(with: id, as: Destination.self)
            let expected = conflict.expected ?? ("x", 3)
            #expect(object.name == expected.name && object.rating == expected.rating)
        }
    }

    @Test("the parent deleted what the child changed: object-trump brings it back, rollback keeps it deleted")
    func parentDeletedWhatChildChanged() throws {
        for policy in [MergePolicy.mergeByPropertyObjectTrump, .rollback, .error] {
            let manager = makeManager()
            let parent = try makeContext(manager, "parent")
            let ids = try seedDestinations(parent, ["x"])
            let child = parent.performAndWait { parent.newChildContext() }.retainingRegisteredObjects()
            try child.performAndWait { _ = try child.existingObject(with: ids[0]) }
            try parent.performAndWait { parent.delete(try parent.existingObject(with: ids[0])) }
            try child.performAndWait {
                try child.existingObject(with: ids[0], as: Destination.self).rating = 9
                child.mergePolicy = policy
                if case .error = policy.testKind {
                    #expect(throws: MergeConflictError.self) { try child.save() }
                } else {
                    try child.save()
                }
            }
            try parent.performAndWait { try parent.save() }
            let reader = try makeContext(manager, "reader")
            let ratings = try reader.performAndWait { try reader.fetch(FetchRequest<Destination>()).map(\.rating) }
            #expect(ratings == (policy.testKind == .objectTrump ? [9] : []), "\(policy)")
        }
    }

    @Test(
        "the child deletes a sketch the parent gave a layer since: the parent's cascade takes that layer too",
        arguments: [false, true])
    func childDeletionKeepsParentsNewLinks(_ parentUndoes: Bool) throws {
        let manager = LifecycleStore.memory.manager(TemporaryDirectory("child-delete-links"), model: undoModel)
        let parent = try makeContext(manager, "parent").retainingRegisteredObjects()
        let (_, sketchID) = try UndoTests.seed(parent)
        if parentUndoes {
            parent.performAndWait { parent.undoManager = UndoManager() }
        }
        let child = parent.performAndWait { parent.newChildContext() }.retainingRegisteredObjects()
        try child.performAndWait { () throws -> Void in
            #expect(try child.existingObject(with: sketchID, as: Sketch.self).layers.count == 2)
        }
        parent.performAndWait {
            let layer = parent.insert(Layer.self)
            layer.uid = "new"
            (parent.object(with: sketchID) as! Sketch).layers.append(layer)
        }
        try child.performAndWait {
            child.mergePolicy = .mergeByPropertyObjectTrump
            child.delete(try child.existingObject(with: sketchID))
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        let reader = try makeContext(manager, "reader")
        let (sketches, layers) = try reader.performAndWait {
            (try reader.count(for: FetchRequest<Sketch>()), try reader.count(for: FetchRequest<Layer>()))
        }
        #expect(sketches == 0 && layers == 0)
    }

    @Test("an object the child moves away from an object the parent deleted escapes that deletion's cascade")
    func movedAwayFromParentsDeletion() throws {
        let manager = LifecycleStore.memory.manager(TemporaryDirectory("child-cascade"), model: undoModel)
        let parent = try makeContext(manager, "parent")
        let (doomedID, sketchID, keptID) = try parent.performAndWait {
            let doomed = parent.insert(Album.self)
            doomed.uid = "doomed"
            let kept = parent.insert(Album.self)
            kept.uid = "kept"
            let sketch = parent.insert(Sketch.self)
            sketch.uid = "s"
            sketch.album = doomed
            try parent.save()
            parent.delete(doomed)
            return (doomed.objectID, sketch.objectID, kept.objectID)
        }
        let child = parent.performAndWait { parent.newChildContext() }.retainingRegisteredObjects()
        try child.performAndWait {
            #expect(child.object(with: doomedID) == nil)
            let sketch = try child.existingObject(with: sketchID, as: Sketch.self)
            #expect(sketch.album == nil)
            sketch.album = try child.existingObject(with: keptID, as: Album.self)
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        let reader = try makeContext(manager, "reader")
        let albums = try reader.performAndWait {
            try reader.fetch(FetchRequest<Sketch>()).map { $0.album?.uid ?? "-" }
        }
        #expect(albums == ["kept"])
    }

    @Test("a child pushing again after the parent saved its inserts sees no conflict in their relationships")
    func pushAfterParentSavedInserts() throws {
        let manager = graphManager("memory", TemporaryDirectory("child-repush"))
        let parent = try makeContext(manager, "parent")
        let child = parent.performAndWait { parent.newChildContext() }.retainingRegisteredObjects()
        try child.performAndWait {
            let explorer = child.insert(Explorer.self)
            explorer.name = "E"
            let expedition = child.insert(Expedition.self)
            expedition.title = "first"
            expedition.leader = explorer
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        // No read in between: the child still knows both objects by their temporary IDs.
        try child.performAndWait {
            let expedition = child.registeredObjects.compactMap { $0 as? Expedition }.first!
            expedition.title = "second"
            expedition.leader?.name = "E2"
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        let reader = try makeContext(manager, "reader")
        let (title, leader) = try reader.performAndWait {
            let expedition = try reader.fetch(FetchRequest<Expedition>()).first!
            return (expedition.title, expedition.leader?.name)
        }
        #expect(title == "second" && leader == "E2")
    }

    @Test(
        "relationships and their inverses cross the push, whether the parent holds the objects or not",
        arguments: [false, true])
    func relationshipsAcrossPush(_ parentHoldsObjects: Bool) throws {
        let manager = graphManager("memory", TemporaryDirectory("child-graph"))
        let parent = try makeContext(manager, "parent")
        let (explorerID, oldID) = try parent.performAndWait {
            let explorer = parent.insert(Explorer.self)
            explorer.name = "E"
            let old = parent.insert(Expedition.self)
            old.title = "old"
            old.leader = explorer
            try parent.save()
            return (explorer.objectID, old.objectID)
        }
        // The parent holds the saved objects, or nothing but an unsaved tag the child links to.
        let liveTagID = try parent.performAndWait {
            if parentHoldsObjects {
                _ = try parent.existingObject(with: explorerID, as: Explorer.self).expeditions
            } else {
                parent.reset()
            }
            let tag = parent.insert(Tag.self)
            tag.label = "t"
            return tag.objectID
        }
        let child = parent.performAndWait { parent.newChildContext() }.retainingRegisteredObjects()
        let newID = try child.performAndWait {
            let explorer = try child.existingObject(with: explorerID, as: Explorer.self)
            #expect(explorer.expeditions.map(\.title) == ["old"])
            let expedition = child.insert(Expedition.self)
            expedition.title = "new"
            expedition.leader = explorer
            let waypoint = child.insert(Waypoint.self)
            waypoint.name = "w"
            waypoint.expedition = expedition
            try child.existingObject(with: oldID, as: Expedition.self).leader = nil
            let tag = try child.fetch(FetchRequest<Tag>()).first!
            #expect(tag.objectID == liveTagID)
            expedition.tags = [tag]
            try child.save()
            return expedition.objectID
        }
        func check(_ context: ManagedObjectContext) throws {
            try context.performAndWait {
                let explorer = try context.first(Explorer.self, where: #Predicate { $0.name == "E" })
                #expect(explorer.expeditions.map(\.title) == ["new"])
                let expedition = explorer.expeditions.first!
                #expect(expedition.waypoints.map(\.name) == ["w"])
                #expect(expedition.waypoints.first?.expedition === expedition)
                #expect(expedition.tags.map(\.label) == ["t"])
                #expect(expedition.tags.first?.expeditions == [expedition])
                let old = try context.first(Expedition.self, where: #Predicate { $0.title == "old" })
                #expect(old.leader == nil)
            }
        }
        try check(parent)
        try parent.performAndWait {
            #expect(try parent.existingObject(with: newID, as: Expedition.self).isInserted)
            try parent.save()
        }
        try check(makeContext(manager, "reader"))

        // A deletion in the child cascades there; the parent gets every deletion.
        let child2 = parent.performAndWait { parent.newChildContext() }.retainingRegisteredObjects()
        try child2.performAndWait {
            child2.delete(try child2.existingObject(with: explorerID))
            try child2.save()
        }
        parent.performAndWait {
            #expect(Set(parent.deletedObjects.map(\.entity.name)) == ["Explorer", "Expedition", "Waypoint"])
        }
        try parent.performAndWait { try parent.save() }
        let reader = try makeContext(manager, "reader2")
        let (explorers, titles, waypoints, tagLinks) = try reader.performAndWait {
            (
                try reader.count(for: FetchRequest<Explorer>()),
                try reader.fetch(FetchRequest<Expedition>()).map(\.title),
                try reader.count(for: FetchRequest<Waypoint>()),
                try reader.fetch(FetchRequest<Tag>()).first?.expeditions.count
            )
        }
        #expect(explorers == 0 && titles == ["old"] && waypoints == 0 && tagLinks == 0)
    }
}

extension MergePolicy {
    enum TestKind { case error, objectTrump, other }
    var testKind: TestKind {
        switch description {
        case "error": return .error
        case "mergeByPropertyObjectTrump": return .objectTrump
        default: return .other
        }
    }
}
