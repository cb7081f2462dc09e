import Foundation
import Testing

@testable import QueueData

/// The identity map behaves as a dictionary by primary key (its keys only hash differently).
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
            for step in 0..<20_000 {
                let key: Int64
                switch random.next() % 4 {
                case 0: key = extremes[Int(random.next() % UInt64(extremes.count))]
                case 1: key = Int64(bitPattern: random.next())
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
                    #expect((map.index(forKey: key) != nil) == (reference[key] != nil))
                }
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
}
