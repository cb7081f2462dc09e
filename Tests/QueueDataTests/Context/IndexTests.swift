import Foundation
import Testing

@testable import QueueData

/// Counts evaluations of ``Listing/counted``, to tell an index lookup from a scan.
final class EvaluationCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func increment() {
        lock.withLock { value += 1 }
    }

    func take() -> Int {
        lock.withLock {
            defer { value = 0 }
            return value
        }
    }
}

let listingEvaluations = EvaluationCounter()

/// Listings with a unique code, indexed attributes of several types, and computed properties
/// that read them.
class Listing: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute(.indexed) var country: String = ""
    @Attribute(.indexed) var rating: Int = 0
    @Attribute(.indexed) var score: Double? = nil
    @Attribute(.indexed) var opened: Date? = nil
    @Attribute var name: String = ""

    /// Reads `country`, but is not it: never answered from the index.
    var countryAlias: String { country }
    /// Always true; counts how many objects a fetch evaluated.
    var counted: Bool {
        listingEvaluations.increment()
        return true
    }
}

final class Franchise: Listing {
    @Attribute var brand: String = ""
}

let listingModel = ManagedObjectModel([Listing.self, Franchise.self])

@Suite("Attribute indexes")
struct IndexTests {
    static let countries = ["PE", "JP", "CH", "é", "e\u{301}", ""]

    func manager(_ kind: String, _ directory: TemporaryDirectory) -> ContextManager {
        kind == "journal"
            ? journalManager(directory, model: listingModel)
            : ContextManager(
                delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
    }

    static func fill(_ listing: Listing, _ index: Int, _ random: inout SeededGenerator) {
        listing.code = "C\(index)"
        listing.country = countries.randomElement(using: &random)!
        listing.rating = Int.random(in: 0..<4, using: &random)
        listing.score = [nil, 1.5, -0.0, 0.0, .nan, 2].randomElement(using: &random)!
        listing.opened = [nil, Date(timeIntervalSinceReferenceDate: 7)].randomElement(using: &random)!
        listing.name = "n\(Int.random(in: 0..<5, using: &random))"
    }

    /// Requests with an index term, or a key path that only looks like one.
    static func requests(_ random: inout SeededGenerator) -> FetchRequest<Listing> {
        let country = countries.randomElement(using: &random)!
        let other = countries.randomElement(using: &random)!
        let rating = Int.random(in: 0..<4, using: &random)
        let code = "C\(Int.random(in: 0..<120, using: &random))"
        let score: Double? = [nil, 1.5, 0.0, -0.0, .nan].randomElement(using: &random)!
        let date: Date? = [nil, Date(timeIntervalSinceReferenceDate: 7)].randomElement(using: &random)!
        let predicates: [Predicate<Listing>] = [
            #Predicate { $0.country == country },
            #Predicate { country == $0.country },
            #Predicate { $0.rating == rating && $0.name != "n1" },
            #Predicate { $0.name == "n2" && $0.country == country },
            #Predicate { [country, other].contains($0.country) },
            #Predicate { $0.code == code },
            #Predicate { $0.score == score },
            #Predicate { $0.opened == date },
            #Predicate { $0.countryAlias == country },
            #Predicate { $0.country == country || $0.rating == rating },
        ]
        var request = FetchRequest<Listing>(predicate: predicates.randomElement(using: &random)!)
        if Bool.random(using: &random) {
            request.sortDescriptors = [SortDescriptor(\.name), SortDescriptor(\.code)]
        }
        request.includesPendingChanges = Int.random(in: 0..<4, using: &random) != 0
        return request
    }

    @Test(
        "indexed fetches return what a scan returns, in the same order, with unsaved changes and other contexts' saves",
        arguments: ["memory", "journal"])
    func sameAsScan(store: String) throws {
        let directory = TemporaryDirectory("index-\(store)")
        let manager = manager(store, directory)
        defer { manager.close() }
        let context = try makeContext(manager, "reader")
        let other = try makeContext(manager, "writer")
        var random = SeededGenerator(seed: 11)
        var next = 0
        try other.performAndWait {
            for _ in 0..<80 {
                Self.fill(
                    Bool.random(using: &random) ? other.insert(Listing.self) : other.insert(Franchise.self), next,
                    &random)
                next += 1
            }
            try other.save()
        }
        flush(context)
        for round in 0..<300 {
            var roundRandom = SeededGenerator(seed: random.next())
            switch Int.random(in: 0..<6, using: &random) {
            case 0:
                // Another context saves; this one may not have merged it yet.
                try other.performAndWait {
                    let all = try other.fetch(FetchRequest<Listing>())
                    if let victim = all.randomElement(using: &roundRandom) {
                        if Bool.random(using: &roundRandom) {
                            other.delete(victim)
                        } else {
                            victim.country = Self.countries.randomElement(using: &roundRandom)!
                            victim.score = [nil, 1.5, 0.0].randomElement(using: &roundRandom)!
                        }
                    }
                    Self.fill(other.insert(Listing.self), next, &roundRandom)
                    next += 1
                    try other.save()
                }
                if Bool.random(using: &random) {
                    flush(context)
                }
            case 1:
                try context.performAndWait {
                    let all = try context.fetch(FetchRequest<Listing>())
                    for object in all.shuffled(using: &roundRandom).prefix(3) {
                        object.country = Self.countries.randomElement(using: &roundRandom)!
                        object.rating = Int.random(in: 0..<4, using: &roundRandom)
                    }
                    if let victim = all.randomElement(using: &roundRandom) {
                        context.delete(victim)
                    }
                    Self.fill(context.insert(Listing.self), next, &roundRandom)
                    next += 1
                }
            case 2:
                try context.performAndWait {
                    try context.save()
                }
            case 3:
                context.performAndWait { context.rollback() }
            default:
                break
            }
            try context.performAndWait {
                for _ in 0..<3 {
                    let request = Self.requests(&roundRandom)
                    context.usesIndexes = false
                    let scanned = try context.fetch(request).map(\.objectID)
                    let scannedCount = try context.count(for: request)
                    context.usesIndexes = true
                    let indexed = try context.fetch(request).map(\.objectID)
                    let indexedCount = try context.count(for: request)
                    #expect(indexed == scanned, "round \(round): \(request)")
                    #expect(indexedCount == scannedCount, "round \(round)")
                }
            }
        }
    }

    @Test(
        "a fetch by an indexed value evaluates only the rows the index names, after the first fetch learned the key path"
    )
    func lookupNotScan() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
        defer { manager.close() }
        let context = try manager.createContext()
        try context.performAndWait {
            for index in 0..<2_000 {
                let listing = context.insert(Listing.self)
                listing.code = "C\(index)"
                listing.country = index % 100 == 0 ? "PE" : "JP"
            }
            try context.save()
            context.reset()
            _ = listingEvaluations.take()
            let code = "C1234"
            // The first fetch scans, and learns that \.code is the attribute.
            #expect(
                try context.fetch(FetchRequest<Listing>(predicate: #Predicate { $0.code == code && $0.counted })).count
                    == 1)
            #expect(listingEvaluations.take() == 1, "the && short-circuits: counted runs for the match only")
            let scanned = try context.count(
                for: FetchRequest<Listing>(predicate: #Predicate { $0.counted && $0.code == code }))
            #expect(scanned == 1)
            #expect(listingEvaluations.take() == 1, "the second fetch evaluated only the row the index named")
            let peru = try context.fetch(
                FetchRequest<Listing>(predicate: #Predicate { $0.counted && $0.country == "PE" }))
            #expect(peru.count == 20)
            #expect(listingEvaluations.take() == 2_000, "\\.country was not learned yet: a scan")
            _ = try context.fetch(FetchRequest<Listing>(predicate: #Predicate { $0.counted && $0.country == "PE" }))
            #expect(listingEvaluations.take() == 20)
            // A computed property reading the attribute is not the attribute: always a scan.
            for _ in 0..<2 {
                let aliased = try context.fetch(
                    FetchRequest<Listing>(predicate: #Predicate { $0.counted && $0.countryAlias == "PE" }))
                #expect(aliased.count == 20)
                #expect(listingEvaluations.take() == 2_000)
            }
            // An unsaved change is seen without a scan.
            peru[0].country = "CH"
            let chile = try context.fetch(
                FetchRequest<Listing>(predicate: #Predicate { $0.counted && $0.country == "CH" }))
            #expect(chile.map(\.objectID) == [peru[0].objectID])
            #expect(listingEvaluations.take() <= 2_001)
            let chileAgain = try context.fetch(
                FetchRequest<Listing>(predicate: #Predicate { $0.counted && $0.country == "CH" }))
            #expect(chileAgain.count == 1)
            #expect(listingEvaluations.take() == 1)
        }
    }

    @Test("the index follows saves, deletes and upserts, and is rebuilt when the store opens")
    func followsSaves() throws {
        let directory = TemporaryDirectory("index-saves")
        var manager = journalManager(directory, model: listingModel)
        let context = try manager.createContext()
        try context.performAndWait {
            context.mergePolicy = .mergeByPropertyObjectTrump
            for index in 0..<50 {
                let listing = context.insert(Listing.self)
                listing.code = "C\(index)"
                listing.country = "JP"
            }
            try context.save()
            let byCode = { (code: String) in
                try context.fetch(FetchRequest<Listing>(predicate: #Predicate { $0.code == code }))
            }
            #expect(try byCode("C7").count == 1)
            try byCode("C7")[0].code = "X7"
            try context.save()
            #expect(try byCode("C7").isEmpty)
            #expect(try byCode("X7").count == 1)
            context.delete(try byCode("X7")[0])
            try context.save()
            #expect(try byCode("X7").isEmpty)
            // An upsert: the duplicate goes into the existing object.
            let duplicate = context.insert(Listing.self)
            duplicate.code = "C8"
            duplicate.country = "PE"
            try context.save()
            #expect(try byCode("C8").map(\.country) == ["PE"])
            #expect(try context.count(for: FetchRequest<Listing>(predicate: #Predicate { $0.country == "PE" })) == 1)
        }
        manager.close()
        manager = journalManager(directory, model: listingModel)
        let reopened = try manager.createContext()
        try reopened.performAndWait { () throws in
            for _ in 0..<2 {
                #expect(
                    try reopened.count(for: FetchRequest<Listing>(predicate: #Predicate { $0.country == "PE" })) == 1)
                #expect(try reopened.count(for: FetchRequest<Listing>(predicate: #Predicate { $0.code == "X7" })) == 0)
                #expect(
                    try reopened.count(for: FetchRequest<Listing>(predicate: #Predicate { $0.country == "JP" })) == 48)
            }
        }
        manager.close()
    }
}

/// Declarations an index cannot serve.
final class TransientIndexed: ManagedObject {
    @Attribute([.indexed, .transient]) var flag: Bool = false
}

struct Shape: Codable, Hashable {
    var sides: Int
}

final class TransformableIndexed: ManagedObject {
    @Attribute(.indexed) var shape: Shape = Shape(sides: 3)
}

@Suite("Attribute index declarations")
struct IndexDeclarationTests {
    @Test("a transient or transformable attribute cannot be indexed")
    func refused() {
        for type in [TransientIndexed.self, TransformableIndexed.self] as [ManagedObject.Type] {
            #expect(throws: ModelError.self, "\(type)") {
                _ = try ManagedObjectModel(validating: [type])
            }
        }
    }
}
