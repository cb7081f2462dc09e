import Foundation
import Testing

@testable import QueueData

/// The identity map behaves as a dictionary by primary key (paged for the keys a store hands
/// out, hashed for the others), and as a value.
@Suite("Identity map")
struct IdentityMapTests {
    @Test("random registrations, look-ups and removals match a dictionary, with any keys")
    func matchesADictionary() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "identity-map")
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        context.performAndWait {
            let objects = (0..<64).map { _ in context.insert(Destination.self) as ManagedObject }
            let extremes: [Int64] = [.min, .min + 1, -1, 0, 1, .max - 1, .max]
            var map = IdentityMap()
            var reference: [Int64: ManagedObject] = [:]
            // Temporary keys come from one counter for the process: a window of them that moves on.
            var temporaryBase = Int64.min + Int64(random.next() % 1_000_000)
            for step in 0..<30_000 {
                if step % 2_500 == 0 {
                    temporaryBase += Int64(random.next() % 5_000)
                }
                let key: Int64
                switch random.next() % 8 {
                case 0: key = extremes[Int(random.next() % UInt64(extremes.count))]
                case 1: key = Int64(bitPattern: random.next())
                case 2: key = IdentityMap.pagedKeyLimit + Int64(random.next() % 5) - 2
                // Keys beyond the pages at first, paged once enough objects are registered.
                case 3: key = Int64(random.next() % 400_000) + 1
                case 4, 5: key = temporaryBase + Int64(random.next() % 3_000)
                default: key = Int64(random.next() % 500) - 250
                }
                switch random.next() % 3 {
                case 0:
                    let object = objects[Int(random.next() % 64)]
                    map[key] = object
                    reference[key] = object
                case 1:
                    #expect(map.removeValue(forKey: key) === reference.removeValue(forKey: key))
                default:
                    #expect(map[key] === reference[key], "step \(step) (seed \(seed))")
                }
                if step % 1_000 == 0 {
                    // A copy is a value: later changes of either side leave the other as it was.
                    let copy = map
                    let copied = reference
                    map[1] = objects[0]
                    map[2] = nil
                    reference[1] = objects[0]
                    reference[2] = nil
                    #expect(copy.count == copied.count)
                    #expect(copy[1] === copied[1] && copy[2] === copied[2])
                    #expect(Dictionary(uniqueKeysWithValues: copy.map { ($0.key, $0.value) }).count == copied.count)
                }
                #expect(map.count == reference.count, "step \(step) (seed \(seed))")
            }
            #expect(map.count == reference.count)
            var seen: [Int64: ManagedObject] = [:]
            for (key, object) in map {
                seen[key] = object
            }
            #expect(seen.count == reference.count)
            #expect(seen.allSatisfy { reference[$0.key] === $0.value }, "seed \(seed)")
            context.rollback()
        }
    }

    @Test("objects only the map refers to are released, wherever their keys live; a copy keeps them")
    func releasesUnreferencedObjects() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "identity-map-release")
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        context.performAndWait {
            let shared = (0..<8).map { _ in context.insert(Destination.self) as ManagedObject }
            // Objects that, once handed to the map, only the map refers to: inserted, then rolled
            // back so that their context lets go of them.
            var fresh: [ManagedObject] = []
            func takeFresh() -> ManagedObject {
                if fresh.isEmpty {
                    fresh = (0..<64).map { _ in context.insert(Destination.self) as ManagedObject }
                    context.rollback()
                }
                return fresh.removeLast()
            }
            var map = IdentityMap()
            var reference: [Int64: ObjectIdentifier] = [:]
            var onlyInMap: Set<Int64> = []
            var temporaryBase = Int64.min + Int64(random.next() % 1_000_000)
            for step in 0..<20_000 {
                if step % 2_000 == 0 {
                    temporaryBase += Int64(random.next() % 5_000)
                }
                let key: Int64
                switch random.next() % 6 {
                case 0: key = Int64(random.next() % 400_000) + 1
                case 1: key = Int64(bitPattern: random.next())
                case 2, 3, 4: key = temporaryBase + Int64(random.next() % 3_000)
                default: key = Int64(random.next() % 300)
                }
                switch random.next() % 6 {
                case 0:
                    let object = shared[Int(random.next() % 8)]
                    map[key] = object
                    reference[key] = ObjectIdentifier(object)
                    onlyInMap.remove(key)
                case 1, 2:
                    let object = takeFresh()
                    reference[key] = ObjectIdentifier(object)
                    map[key] = object
                    onlyInMap.insert(key)
                case 3:
                    #expect(
                        map.removeValue(forKey: key).map(ObjectIdentifier.init) == reference.removeValue(forKey: key))
                    onlyInMap.remove(key)
                case 4:
                    let releasable = random.next() % 4 != 0
                    let released = map.releaseIfUnreferenced(key: key) { _ in releasable }
                    #expect(released == (releasable && onlyInMap.contains(key)), "step \(step) (seed \(seed))")
                    if released {
                        reference[key] = nil
                        onlyInMap.remove(key)
                    }
                default:
                    #expect(map[key].map(ObjectIdentifier.init) == reference[key], "step \(step) (seed \(seed))")
                }
                if step % 1_500 == 0 {
                    // While a copy shares the map's pages, nothing is released from either.
                    let copy = map
                    #expect(map.releaseUnreferenced { _ in true } == 0)
                    #expect(copy.count == reference.count && map.count == reference.count)
                }
                if step % 4_000 == 3_999 {
                    #expect(map.releaseUnreferenced { _ in true } == onlyInMap.count, "seed \(seed)")
                    for key in onlyInMap {
                        reference[key] = nil
                    }
                    onlyInMap = []
                }
                #expect(map.count == reference.count, "step \(step) (seed \(seed))")
            }
            var seen: [Int64: ObjectIdentifier] = [:]
            for (key, object) in map {
                #expect(seen.updateValue(ObjectIdentifier(object), forKey: key) == nil, "a key listed twice")
            }
            #expect(seen == reference, "seed \(seed)")
            context.rollback()
        }
    }

    @Test("a context's inserted objects are paged by their temporary keys, and found after their save")
    func temporaryKeysArePaged() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "identity-map-temporary")
        try context.performAndWait {
            let other = try makeContext(manager, "identity-map-temporary-other")
            var inserted: [Destination] = []
            for round in 0..<6 {
                for index in 0..<500 {
                    let object = context.insert(Destination.self)
                    object.name = "d\(round)-\(index)"
                    inserted.append(object)
                }
                // Another context's inserts take temporary keys between this context's.
                other.performAndWait {
                    for _ in 0..<(round * 700) { _ = other.insert(Destination.self) }
                    other.rollback()
                }
                for object in inserted {
                    #expect(context.registeredObject(for: object.objectID) === object)
                }
            }
            try context.save()
            for object in inserted {
                #expect(!object.objectID.isTemporaryID)
                #expect(context.registeredObject(for: object.objectID) === object)
            }
            #expect(context.registeredObjects.count == inserted.count)
        }
    }

    @Test("objects registered one by one at random keys grow the pages a few times, not with every registration")
    func pagesGrowInFewSteps() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "identity-map-growth")
        context.performAndWait {
            let object = context.insert(Destination.self) as ManagedObject
            var random = SeededGenerator(seed: 3)
            var map = IdentityMap()
            var reference: Set<Int64> = []
            var limits: [Int64] = []
            for _ in 0..<1_000 {
                let key = Int64.random(in: 1...100_000, using: &random)
                map[key] = object
                reference.insert(key)
                if limits.last != map.pagedKeyLimit {
                    limits.append(map.pagedKeyLimit)
                }
            }
            // The pages may reach 4 per object (4,000 at the end: every key of 100,000), and
            // grow by half at least each time: a few steps, where growing with the allowance
            // (4 pages more with each registration) took over a hundred, each moving objects out
            // of the dictionary.
            #expect(limits.count <= 6, "the page list grew \(limits.count) times: \(limits)")
            #expect(map.pagedKeyLimit > 100_000)
            #expect(map.count == reference.count)
            for key in reference {
                #expect(map[key] === object)
            }
            #expect(map[1_000_001] == nil)
            context.rollback()
        }
    }

    @Test("an object registered beyond the pages moves into them when they grow over its key")
    func farKeysMoveIntoPages() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "identity-map-far")
        context.performAndWait {
            let far = context.insert(Destination.self) as ManagedObject
            let near = context.insert(Destination.self) as ManagedObject
            var map = IdentityMap()
            map[300_000] = far
            map[Int64.max] = far
            #expect(map.count == 2 && map[300_000] === far)
            for key in 1...Int64(20_000) {
                map[key] = near
            }
            #expect(map[300_000] === far)
            // With 20,000 objects, the pages may grow to 350,000, over 300,000: the far object
            // moves in, and is found there.
            map[350_000] = near
            #expect(map.count == 20_003)
            #expect(map[350_000] === near)
            map[350_000] = nil
            #expect(map[300_000] === far && map[Int64.max] === far && map[299_999] == nil)
            #expect(map.filter { $0.key == 300_000 }.count == 1)
            #expect(map.removeValue(forKey: 300_000) === far)
            #expect(map[300_000] == nil && map.count == 20_001)
            let released = map.releaseUnreferenced { _ in true }
            #expect(released == 0, "every object is referenced here")
            context.rollback()
        }
    }
}
