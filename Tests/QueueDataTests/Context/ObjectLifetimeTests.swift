import Foundation
import Testing

@testable import QueueData

/// Unchanged objects are held as if weakly (Core Data's `retainsRegisteredObjects == false`),
/// objects with changes strongly until saved or rolled back.
@Suite("Object lifetime")
struct ObjectLifetimeTests {
    @Test("an unchanged object nothing references is let go at the end of the block")
    func unreferencedObjectsAreLetGo() throws {
        let (manager, ids) = try seededDestinations(3, "lifetime-let-go")
        let context = try makeContext(manager, "lifetime-let-go")
        weak var weakObject: Destination?
        context.performAndWait {
            weakObject = try? context.existingObject(with: ids[0], as: Destination.self)
            // Registered until the block ends, as Core Data's autoreleased objects.
            #expect(weakObject != nil)
            #expect(context.registeredObject(for: ids[0]) === weakObject)
            #expect(context.registeredObjects.count == 1)
            #expect(context.object(with: ids[0]) === weakObject)
        }
        #expect(weakObject == nil)
        try context.performAndWait {
            #expect(context.registeredObjects.isEmpty)
            #expect(context.registeredObject(for: ids[0]) == nil)
            let again = try context.existingObject(with: ids[0], as: Destination.self)
            #expect(again.name == "d0")
            #expect(context.registeredObject(for: ids[0]) === again)
        }
    }

    @Test("an object refreshed without its changes is let go once nothing references it, as any unchanged object")
    func refreshedObjectIsLetGo() throws {
        let (manager, ids) = try seededDestinations(3, "lifetime-refreshed")
        let context = try makeContext(manager, "lifetime-refreshed")
        weak var weakObject: Destination?
        try context.performAndWait {
            let object = try context.existingObject(with: ids[0], as: Destination.self)
            object.rating = 42
            context.refresh(object, mergeChanges: false)
            #expect(!object.hasChanges)
            #expect(!context.hasChanges)
            #expect(object.rating != 42)
            weakObject = object
        }
        #expect(weakObject == nil)
        context.performAndWait { #expect(context.registeredObjects.isEmpty) }
        // Changed again after a refresh, it is held until saved, as before.
        let held = try context.performAndWait {
            let object = try context.existingObject(with: ids[1], as: Destination.self)
            object.rating = 7
            context.refresh(object, mergeChanges: false)
            object.rating = 8
            return ObjectIdentifier(object)
        }
        try context.performAndWait {
            let object = try #require(context.registeredObject(for: ids[1]))
            #expect(ObjectIdentifier(object) == held)
            #expect(context.updatedObjects.count == 1)
            try context.save()
        }
    }

    @Test("a referenced object stays registered, and a fetch returns the same instance")
    func referencedObjectsStay() throws {
        let (manager, ids) = try seededDestinations(10, "lifetime-referenced")
        let context = try makeContext(manager, "lifetime-referenced")
        let held = try context.performAndWait {
            try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating < 3 }))
        }
        try context.performAndWait {
            #expect(Set(context.registeredObjects.map(\.objectID)) == Set(held.map(\.objectID)))
            let all = try context.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.rating)]))
            #expect(all.count == 10)
            for object in held {
                #expect(all[object.rating] === object)
                #expect(context.registeredObject(for: object.objectID) === object)
            }
            #expect(context.registeredObject(for: ids[9]) === all[9])
        }
        context.performAndWait {
            #expect(context.registeredObjects.count == 3)
            #expect(context.registeredObject(for: ids[9]) == nil)
        }
    }

    @Test("an object held across blocks goes at the end of the first block after it was dropped")
    func droppedAfterBeingHeld() throws {
        let (manager, ids) = try seededDestinations(3, "lifetime-dropped")
        let context = try makeContext(manager, "lifetime-dropped")
        var held: Destination? = try context.performAndWait {
            try context.existingObject(with: ids[1], as: Destination.self)
        }
        weak let weakObject = held
        context.performAndWait {}
        #expect(weakObject != nil)
        #expect(context.performAndWait { context.registeredObject(for: ids[1]) } === held)
        held = nil
        #expect(weakObject != nil)  // the context still holds it…
        context.performAndWait {}
        #expect(weakObject == nil)  // …until the end of the next block
        #expect(context.performAndWait { context.registeredObjects.isEmpty })
    }

    @Test("a context holding many objects lets go of one dropped later once it registered enough others")
    func droppedInALargeContext() throws {
        let (manager, ids) = try seededDestinations(3_000, "lifetime-large")
        let context = try makeContext(manager, "lifetime-large")
        var held = try context.performAndWait {
            try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating < 2_000 }))
        }
        let position = try #require(context.performAndWait { held.firstIndex { $0.objectID == ids[0] } })
        weak let weakObject = held[position]
        held.remove(at: position)
        #expect(held.count == 1_999)
        // The next blocks register nothing: the dropped object stays registered…
        context.performAndWait {}
        #expect(weakObject != nil)
        #expect(context.performAndWait { context.registeredObjects.count } == 2_000)
        // …until the context registered a quarter as many as it kept (and let them go too).
        let others = try context.performAndWait {
            try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating >= 2_000 })).count
        }
        #expect(others == 1_000)
        #expect(weakObject == nil)
        #expect(context.performAndWait { context.registeredObjects.count } == 1_999)
        let kept = context.performAndWait { held.allSatisfy { context.registeredObject(for: $0.objectID) === $0 } }
        #expect(kept)
    }

    @Test("objects with changes are held until saved or rolled back, then let go")
    func changedObjectsAreHeldUntilSaved() throws {
        let (manager, ids) = try seededDestinations(3, "lifetime-changed")
        let context = try makeContext(manager, "lifetime-changed")
        weak var weakUpdated: Destination?
        weak var weakInserted: Destination?
        weak var weakDeleted: Destination?
        weak var weakRolledBack: Destination?
        try context.performAndWait {
            let updated = try context.existingObject(with: ids[0], as: Destination.self)
            updated.name = "changed"
            weakUpdated = updated
            let inserted = context.insert(Destination.self)
            inserted.name = "new"
            weakInserted = inserted
            let deleted = try context.existingObject(with: ids[1], as: Destination.self)
            context.delete(deleted)
            weakDeleted = deleted
        }
        #expect(weakUpdated != nil && weakInserted != nil && weakDeleted != nil)
        var insertedID: ObjectID?
        try context.performAndWait {
            #expect(context.registeredObjects.count == 3)
            #expect(context.registeredObject(for: ids[0]).map { ($0 as! Destination).name } == "changed")
            #expect(context.hasChanges)
            try context.save()
            insertedID = weakInserted?.objectID
        }
        #expect(weakUpdated == nil)
        #expect(weakInserted == nil)
        #expect(weakDeleted == nil)
        try context.performAndWait {
            #expect(context.registeredObjects.isEmpty)
            #expect(try context.existingObject(with: ids[0], as: Destination.self).name == "changed")
            #expect(try context.existingObject(with: #require(insertedID), as: Destination.self).name == "new")
            #expect(context.object(with: ids[1]) == nil)
            let changed = try context.existingObject(with: ids[2], as: Destination.self)
            changed.rating = 99
            weakRolledBack = changed
        }
        #expect(weakRolledBack != nil)
        context.performAndWait {
            context.rollback()
        }
        #expect(weakRolledBack == nil)
        let rating = try context.performAndWait {
            try context.existingObject(with: ids[2], as: Destination.self).rating
        }
        #expect(rating == 2)
    }

    @Test("retainsRegisteredObjects keeps every registered object until it is turned off")
    func retainingEveryObject() throws {
        let (manager, ids) = try seededDestinations(5, "lifetime-retains")
        let context = try makeContext(manager, "lifetime-retains")
        weak var weakObject: Destination?
        try context.performAndWait {
            #expect(context.retainsRegisteredObjects == false)
            context.retainsRegisteredObjects = true
            weakObject = try context.fetch(FetchRequest<Destination>())[0]
        }
        #expect(weakObject != nil)
        context.performAndWait {
            #expect(context.registeredObjects.count == 5)
            for id in ids {
                #expect(context.registeredObject(for: id) != nil)
            }
            context.retainsRegisteredObjects = false
            // Let go at the end of the block.
            #expect(context.registeredObjects.count == 5)
        }
        #expect(weakObject == nil)
        context.performAndWait {
            #expect(context.registeredObjects.isEmpty)
        }
        context.performAndWait {
            context.reset()
        }
    }

    @Test("nested blocks let go of nothing: only the outermost block's end does")
    func nestedBlocksLetGoOfNothing() throws {
        let (manager, _) = try seededDestinations(4, "lifetime-nested")
        let context = try makeContext(manager, "lifetime-nested")
        let other = try makeContext(manager, "lifetime-nested-other")
        weak var weakObject: Destination?
        try context.performAndWait {
            weakObject = try context.fetch(FetchRequest<Destination>())[0]
            context.performAndWait {}
            #expect(weakObject != nil)
            // Another context's block nested in this one, and this context's inside it.
            other.performAndWait {
                context.performAndWait {}
            }
            #expect(weakObject != nil)
        }
        #expect(weakObject == nil)
    }

    @Test("an object let go is made again with the values merged since")
    func letGoObjectsSeeLaterSaves() async throws {
        let (manager, ids) = try seededDestinations(2, "lifetime-merge")
        let context = try makeContext(manager, "lifetime-merge")
        let writer = try makeContext(manager, "lifetime-merge-writer")
        let before = try await context.perform {
            try context.existingObject(with: ids[0], as: Destination.self).name
        }
        #expect(before == "d0")
        try await writer.perform {
            try writer.existingObject(with: ids[0], as: Destination.self).name = "renamed"
            try writer.save()
        }
        flush(context)
        let after = try await context.perform {
            #expect(context.registeredObjects.isEmpty)
            return try context.existingObject(with: ids[0], as: Destination.self).name
        }
        #expect(after == "renamed")
    }

    @Test("random holds, changes, saves and rollbacks: the registered objects are the referenced and the changed ones")
    func randomLifetimes() throws {
        let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_LIFETIME_ROUNDS"].flatMap(Int.init) ?? 150
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        let (manager, ids) = try seededDestinations(600, "lifetime-random")
        let context = try makeContext(manager, "lifetime-random")
        var held: [ObjectID: Destination] = [:]
        var changed: Set<ObjectID> = []
        var weakReferences: [ObjectID: WeakDestination] = [:]
        // What the context kept at the end of the previous round: objects kept at a check are
        // checked again only later, so those dropped since may still be registered.
        var keptBefore: Set<ObjectID> = []
        for round in 0..<rounds {
            // The objects whose changes this round's save or rollback ended: checked at its end.
            var settled: Set<ObjectID> = []
            try context.performAndWait {
                // Fetch a random range (sometimes most of the store), keep some of it.
                let low = Int(random.next() % 600)
                let high = low + Int(random.next() % (round % 10 == 0 ? 600 : 40))
                let fetched = try context.fetch(
                    FetchRequest<Destination>(predicate: #Predicate { $0.rating >= low && $0.rating < high }))
                for object in fetched {
                    weakReferences[object.objectID] = WeakDestination(object: object)
                    switch random.next() % 10 {
                    case 0: held[object.objectID] = object
                    case 1:
                        object.name = "r\(round)"
                        changed.insert(object.objectID)
                    default: break
                    }
                }
                // Drop some of what is held.
                for id in held.keys where random.next() % 4 == 0 {
                    held[id] = nil
                }
                switch random.next() % 6 {
                case 0:
                    try context.save()
                    settled = changed
                    changed = []
                case 1:
                    context.rollback()
                    settled = changed
                    changed = []
                default: break
                }
            }
            let (registered, expected) = context.performAndWait {
                (Set(context.registeredObjects.map(\.objectID)), Set(held.keys).union(changed))
            }
            let stale = registered.subtracting(expected)
            if !expected.isSubset(of: registered) || !stale.isSubset(of: keptBefore.subtracting(settled)) {
                let unexpected = stale.subtracting(keptBefore.subtracting(settled)).count
                let missing = expected.subtracting(registered).count
                Issue.record("round \(round) (seed \(seed)): \(missing) missing, \(unexpected) registered unexpectedly")
                return
            }
            keptBefore = registered
            // What the context keeps is the instance it returned.
            for (id, reference) in weakReferences where expected.contains(id) {
                let same = context.performAndWait { context.registeredObject(for: id) === reference.object }
                #expect(same, "round \(round) (seed \(seed))")
            }
            weakReferences = weakReferences.filter { $0.value.object != nil }
        }
        // Every object nothing references is gone once every object is checked.
        held = [:]
        try context.performAndWait {
            try context.save()
            context.retainsRegisteredObjects = false
        }
        #expect(weakReferences.values.allSatisfy { $0.object == nil }, "seed \(seed)")
        #expect(ids.count == 600)
    }
}

/// A weak reference, to watch an object's lifetime.
private final class WeakDestination {
    weak var object: Destination?

    init(object: Destination) {
        self.object = object
    }
}
