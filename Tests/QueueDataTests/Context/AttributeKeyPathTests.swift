import Foundation
import Testing

@testable import QueueData

/// A gadget whose computed properties read its attributes: `drifting` gives its rating the
/// first time it is read and its rating + 100 after that.
class KeyPathGadget: ManagedObject {
    @Attribute var label: String = ""
    @Attribute var rating: Int = 0

    nonisolated(unsafe) static var driftingReads = 0

    var drifting: Int {
        Self.driftingReads += 1
        return Self.driftingReads == 1 ? rating : rating + 100
    }

    var alias: Int { rating }
}

/// A subentity whose own attributes come first in its class, before the inherited ones.
final class KeyPathPhone: KeyPathGadget {
    @Attribute var carrier: String = ""
    @Attribute var dualSIM: Bool = false
    @Attribute var weight: Double = 0
}

let keyPathGadgetModel = ManagedObjectModel([KeyPathGadget.self, KeyPathPhone.self])

/// Fetches read a predicate's and a sort descriptor's key paths through their getters on every
/// object, computed properties included (a computed property that gave an attribute's value once
/// is not assumed to be that attribute), and read each entity's own row layout across a hierarchy.
/// (They guard any later shortcut that reads attributes' fields for key paths.)
@Suite("Attribute key paths in fetches")
struct AttributeKeyPathTests {
    private func seeded(_ label: String) throws -> (ContextManager, ManagedObjectContext) {
        let manager = makeManager(model: keyPathGadgetModel)
        let context = try makeContext(manager, label)
        try context.performAndWait {
            for (index, rating) in [5, 1, 3].enumerated() {
                let gadget = context.insert(KeyPathGadget.self)
                gadget.rating = rating
                gadget.label = "g\(index)"
            }
            try context.save()
        }
        return (manager, context)
    }

    @Test(
        "a computed property is read through its getter on every object, even one that first gave an attribute's value")
    func computedPropertiesReadEveryTime() throws {
        let (manager, context) = try seeded("keypath-computed")
        defer { manager.close() }
        try context.performAndWait {
            KeyPathGadget.driftingReads = 0
            // The first object read gives its rating (5), every later one its rating + 100.
            let matching = try context.fetch(FetchRequest<KeyPathGadget>(predicate: #Predicate { $0.drifting >= 100 }))
            #expect(matching.map(\.rating).sorted() == [1, 3])
            KeyPathGadget.driftingReads = 0
            let sorted = try context.fetch(FetchRequest<KeyPathGadget>(sortBy: [SortDescriptor(\.drifting)]))
            #expect(sorted.map(\.rating) == [5, 1, 3])
            let byAlias = try context.fetch(
                FetchRequest<KeyPathGadget>(predicate: #Predicate { $0.alias >= 3 }, sortBy: [SortDescriptor(\.alias)]))
            #expect(byAlias.map(\.rating) == [3, 5])
        }
    }

    @Test("an attribute read through its key path on a hierarchy: each entity's row layout, unsaved changes included")
    func attributesAcrossSubentities() throws {
        let manager = makeManager(model: keyPathGadgetModel)
        defer { manager.close() }
        let context = try makeContext(manager, "keypath-hierarchy")
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        try context.performAndWait {
            for index in 0..<200 {
                let gadget =
                    Bool.random(using: &random) ? context.insert(KeyPathPhone.self) : context.insert(KeyPathGadget.self)
                gadget.rating = Int.random(in: 0..<50, using: &random)
                gadget.label = "l\(Int.random(in: 0..<1000, using: &random))-\(index)"
                if let phone = gadget as? KeyPathPhone {
                    phone.carrier = "c\(index % 7)"
                    phone.weight = Double(index)
                }
            }
            try context.save()
            for round in 0..<30 {
                // Unsaved changes on some objects, then a fetch compared with a reference.
                let all = try context.fetch(FetchRequest<KeyPathGadget>())
                for _ in 0..<5 {
                    let gadget = all.randomElement(using: &random)!
                    gadget.rating = Int.random(in: 0..<50, using: &random)
                    gadget.label = "u\(Int.random(in: 0..<1000, using: &random))-\(round)"
                }
                let bound = Int.random(in: 0..<50, using: &random)
                let fetched = try context.fetch(
                    FetchRequest<KeyPathGadget>(
                        predicate: #Predicate { $0.rating > bound },
                        sortBy: [SortDescriptor(\.label), SortDescriptor(\.rating, order: .reverse)]))
                let expected = all.filter { $0.rating > bound }.sorted {
                    ($0.label, -$0.rating) < ($1.label, -$1.rating)
                }
                #expect(fetched.map(\.objectID) == expected.map(\.objectID), "seed \(seed), round \(round)")
                let phones = try context.fetch(
                    FetchRequest<KeyPathPhone>(
                        predicate: #Predicate { $0.rating > bound }, sortBy: [SortDescriptor(\.label)]))
                let expectedPhones = all.compactMap { $0 as? KeyPathPhone }.filter { $0.rating > bound }.sorted {
                    $0.label < $1.label
                }
                #expect(phones.map(\.objectID) == expectedPhones.map(\.objectID), "seed \(seed), round \(round)")
                if round % 10 == 9 {
                    try context.save()
                }
            }
        }
    }
}
