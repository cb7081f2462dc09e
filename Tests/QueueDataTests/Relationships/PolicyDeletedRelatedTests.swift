import Foundation
import QueueData
import Testing

/// Merge policies settling a save whose relationships refer to an object another save deleted:
/// every policy but `.error` succeeds, and the store stays consistent.
@Suite("Merge policies and related objects deleted by another save")
struct PolicyDeletedRelatedTests {
    static let policies: [String: MergePolicy] = [
        "mergeByPropertyStoreTrump": .mergeByPropertyStoreTrump,
        "mergeByPropertyObjectTrump": .mergeByPropertyObjectTrump,
        "overwrite": .overwrite, "rollback": .rollback,
    ]

    /// A manager whose store holds expedition X (leader L) tagged with T1, and T2 untagged.
    func seeded() throws -> (ContextManager, x: ObjectID, leader: ObjectID, t1: ObjectID, t2: ObjectID) {
        let store = InMemoryStore()
        let manager = ContextManager(delegate: TestStoreDelegate(model: graphModel, storeType: .custom { _ in store }))
        let seed = try manager.createContext()
        let ids = try seed.performAndWait {
            let leader = seed.insert(Explorer.self)
            let x = seed.insert(Expedition.self)
            x.title = "x"
            x.leader = leader
            let t1 = seed.insert(Tag.self)
            let t2 = seed.insert(Tag.self)
            x.tags = [t1]
            try seed.save()
            return (x.objectID, leader.objectID, t1.objectID, t2.objectID)
        }
        return (manager, ids.0, ids.1, ids.2, ids.3)
    }

    @Test(
        "the other side deleted X's leader (cascading to X) and tag; A changed X: X is restored without them, or stays deleted",
        arguments: ["mergeByPropertyStoreTrump", "mergeByPropertyObjectTrump", "overwrite", "rollback"])
    func relatedDeletedElsewhere(_ name: String) throws {
        let (manager, xID, leaderID, t1ID, _) = try seeded()
        defer { manager.close() }
        let a = try makeRetainingContext(manager, "A")
        let b = try makeContext(manager, "B")
        let x = try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            a.mergePolicy = Self.policies[name]!
            let x = try a.existingObject(with: xID, as: Expedition.self)
            #expect(x.tags.count == 1 && x.leader != nil)
            return x
        }
        try b.performAndWait {
            b.delete(try b.existingObject(with: t1ID, as: Tag.self))
            b.delete(try b.existingObject(with: leaderID, as: Explorer.self))  // Cascades to X.
            try b.save()
        }
        let xDeleted = try b.performAndWait { try b.count(for: FetchRequest<Expedition>()) == 0 }
        #expect(xDeleted)
        try a.performAndWait {
            x.title = "xA"
            try a.save()  // overwrite and object trump threw ValidationError: X referred to the deleted rows
            #expect(!a.hasChanges)
        }
        let c = try makeContext(manager, "check")
        try c.performAndWait {
            let expeditions = try c.fetch(FetchRequest<Expedition>())
            let restored = name == "mergeByPropertyObjectTrump" || name == "overwrite"
            #expect(expeditions.map(\.title) == (restored ? ["xA"] : []), "\(name)")
            for expedition in expeditions {
                #expect(expedition.tags.isEmpty && expedition.leader == nil, "\(name)")
            }
            #expect(try c.fetch(FetchRequest<Tag>()).allSatisfy { $0.expeditions.isEmpty })
        }
    }

    @Test(
        "the other side deleted a tag of X and renamed X; A renames X too",
        arguments: ["mergeByPropertyStoreTrump", "mergeByPropertyObjectTrump", "overwrite", "rollback"])
    func tagDeletedElsewhere(_ name: String) throws {
        let (manager, xID, _, t1ID, _) = try seeded()
        defer { manager.close() }
        let a = try makeRetainingContext(manager, "A")
        let b = try makeContext(manager, "B")
        let x = try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            a.mergePolicy = Self.policies[name]!
            let x = try a.existingObject(with: xID, as: Expedition.self)
            #expect(x.tags.count == 1)
            return x
        }
        try b.performAndWait {
            b.delete(try b.existingObject(with: t1ID, as: Tag.self))
            try b.existingObject(with: xID, as: Expedition.self).title = "xB"
            try b.save()
        }
        try a.performAndWait {
            x.title = "xA"
            try a.save()  // overwrite threw ValidationError: "refers to Tag 1, which was deleted by another save"
            #expect(x.tags.isEmpty, "\(name): A's X holds what was stored")
        }
        let c = try makeContext(manager, "check")
        try c.performAndWait {
            let stored = try c.existingObject(with: xID, as: Expedition.self)
            #expect(stored.tags.isEmpty)
            #expect(stored.title == (name == "mergeByPropertyStoreTrump" || name == "rollback" ? "xB" : "xA"))
        }
    }

    @Test(
        "A links X to a tag the other side deleted: the deletion stands or the tag comes back, as the policy says",
        arguments: ["mergeByPropertyStoreTrump", "mergeByPropertyObjectTrump", "overwrite", "rollback"])
    func linkedToDeletedElsewhere(_ name: String) throws {
        let (manager, xID, _, _, t2ID) = try seeded()
        defer { manager.close() }
        let a = try makeRetainingContext(manager, "A")
        let b = try makeContext(manager, "B")
        let (x, t2) = try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            a.mergePolicy = Self.policies[name]!
            return (
                try a.existingObject(with: xID, as: Expedition.self), try a.existingObject(with: t2ID, as: Tag.self)
            )
        }
        try b.performAndWait {
            b.delete(try b.existingObject(with: t2ID, as: Tag.self))
            try b.save()
        }
        let deletionStands = name == "mergeByPropertyStoreTrump" || name == "rollback"
        try a.performAndWait {
            x.tags.insert(t2)
            try a.save()  // store trump and rollback threw ValidationError
            #expect(t2.isDeleted == deletionStands, "\(name)")
            #expect(x.tags.contains(t2) == !deletionStands, "\(name)")
            #expect(!a.hasChanges)
        }
        let c = try makeContext(manager, "check")
        try c.performAndWait {
            let stored = try c.existingObject(with: xID, as: Expedition.self)
            #expect(stored.tags.map(\.objectID).contains(t2ID) == !deletionStands, "\(name)")
            #expect((c.object(with: t2ID) == nil) == deletionStands, "\(name)")
            for tag in try c.fetch(FetchRequest<Tag>()) {
                #expect(tag.expeditions.allSatisfy { $0.tags.contains(tag) })
            }
        }
    }

    @Test("with the error policy, linking to a tag the other side deleted is a merge conflict naming the tag")
    func linkedToDeletedElsewhereFails() throws {
        let (manager, xID, _, _, t2ID) = try seeded()
        defer { manager.close() }
        let a = try makeRetainingContext(manager, "A")
        let b = try makeContext(manager, "B")
        let (x, t2) = try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            return (
                try a.existingObject(with: xID, as: Expedition.self), try a.existingObject(with: t2ID, as: Tag.self)
            )
        }
        try b.performAndWait {
            b.delete(try b.existingObject(with: t2ID, as: Tag.self))
            try b.save()
        }
        a.performAndWait {
            x.tags.insert(t2)
            #expect {
                try a.save()
            } throws: { error in
                (error as? MergeConflictError)?.conflicts.map(\.objectID) == [t2ID]
            }
        }
    }
}

/// A to-one relationship both contexts changed is one property, like an attribute: the policy
/// decides its value, and the other sides of the link follow.
@Suite("Merge policies on a to-one relationship both sides changed")
struct PolicyToOneTests {
    @Test(
        "B moves X to e1 and renames it, A moves X to e2: the stored leader is the policy's",
        arguments: [
            ("mergeByPropertyStoreTrump", "e1"), ("mergeByPropertyObjectTrump", "e2"), ("overwrite", "e2"),
            ("rollback", "e1"),
        ])
    func toOneConflict(_ name: String, _ leader: String) throws {
        let store = InMemoryStore()
        let manager = ContextManager(delegate: TestStoreDelegate(model: graphModel, storeType: .custom { _ in store }))
        defer { manager.close() }
        let seed = try manager.createContext()
        let (xID, explorerIDs) = try seed.performAndWait {
            let explorers = (0..<3).map { index in
                let explorer = seed.insert(Explorer.self)
                explorer.name = "e\(index)"
                return explorer
            }
            let x = seed.insert(Expedition.self)
            x.leader = explorers[0]
            try seed.save()
            return (x.objectID, explorers.map(\.objectID))
        }
        let a = try makeRetainingContext(manager, "A")
        let b = try makeContext(manager, "B")
        let x = try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            a.mergePolicy = PolicyDeletedRelatedTests.policies[name]!
            let x = try a.existingObject(with: xID, as: Expedition.self)
            _ = x.leader
            return x
        }
        try b.performAndWait {
            let x = try b.existingObject(with: xID, as: Expedition.self)
            x.leader = try b.existingObject(with: explorerIDs[1], as: Explorer.self)
            x.title = "xB"
            try b.save()
        }
        try a.performAndWait {
            x.leader = try a.existingObject(with: explorerIDs[2], as: Explorer.self)
            try a.save()  // store trump and rollback stored e2: A's change came back through e2's row
            #expect(x.leader?.name == leader, "\(name): A's X holds what was stored")
        }
        let check = try makeContext(manager, "check")
        try check.performAndWait {
            let stored = try check.existingObject(with: xID, as: Expedition.self)
            #expect(stored.leader?.name == leader, "\(name)")
            for explorer in try check.fetch(FetchRequest<Explorer>()) {
                #expect(explorer.expeditions.map(\.objectID) == (explorer.name == leader ? [xID] : []), "\(name)")
            }
        }
    }
}
