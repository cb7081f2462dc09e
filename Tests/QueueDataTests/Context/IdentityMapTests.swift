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
