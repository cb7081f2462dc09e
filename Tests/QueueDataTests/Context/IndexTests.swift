import Foundation
import Testing

@testable import QueueData

/// Listings with a unique code, indexed attributes of several types, and one that is not.
class Listing: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute(.indexed) var country: String = ""
    @Attribute(.indexed) var rating: Int = 0
    @Attribute(.indexed) var score: Double? = nil
    @Attribute(.indexed) var opened: Date? = nil
    @Attribute var name: String = ""
}

final class Franchise: Listing {
    @Attribute var brand: String = ""
}

let listingModel = ManagedObjectModel([Listing.self, Franchise.self])

@Suite("Attribute indexes")
struct IndexTests {
    /// With ASCII characters spelled by a canonically equivalent scalar (U+212A KELVIN SIGN is
    /// "K", U+037E GREEK QUESTION MARK ";"), which begin with ASCII prefixes as Swift compares them.
    static let countries = ["PE", "JP", "CH", "é", "e\u{301}", "", "KR", "\u{212A}R", "a;c", "a\u{37E}b"]
    static let scores: [Double?] = [nil, 1.5, -0.0, 0.0, .nan, 2]
    static let dates: [Date?] = [
        nil, Date(timeIntervalSinceReferenceDate: 7), Date(timeIntervalSinceReferenceDate: .nan),
    ]

    static func fill(_ listing: Listing, _ index: Int, _ random: inout SeededGenerator) {
        listing.code = "C\(index)"
        listing.country = countries.randomElement(using: &random)!
        listing.rating = Int.random(in: 0..<4, using: &random)
        listing.score = scores.randomElement(using: &random)!
        listing.opened = dates.randomElement(using: &random)!
        listing.name = "n\(Int.random(in: 0..<5, using: &random))"
    }

    /// A request with an attribute constraint, and the same request written as a `#Predicate`:
    /// the reference (Swift's `==` on the values).
    static func requests(_ random: inout SeededGenerator) -> (FetchRequest<Listing>, FetchRequest<Listing>) {
        let country = countries.randomElement(using: &random)!
        let other = countries.randomElement(using: &random)!
        let rating = Int.random(in: 0..<4, using: &random)
        let code = "C\(Int.random(in: 0..<340, using: &random))"
        let score = scores.randomElement(using: &random)!
        let date = dates.randomElement(using: &random)!
        let name = "n\(Int.random(in: 0..<5, using: &random))"
        var pair: (FetchRequest<Listing>, FetchRequest<Listing>)
        let ratings = [Int.random(in: -1..<5, using: &random), Int.random(in: -1..<5, using: &random)].sorted()
        let (low, high) = (ratings[0], ratings[1])
        // Ranges cannot end at a NaN (Swift's range operators trap).
        let bounds = [scores.randomElement(using: &random)! ?? 1, scores.randomElement(using: &random)! ?? 2]
            .map { $0.isNaN ? 1.5 : $0 }
        let (lowScore, highScore) = bounds[0] < bounds[1] ? (bounds[0], bounds[1]) : (bounds[1], bounds[0])
        let codes = ["C1", "C\(Int.random(in: 0..<340, using: &random))"].sorted()
        let (lowCode, highCode) = (codes[0], codes[1])
        let prefix = ["C1", "C", "", "C10", "é", "e", "P", "K", "KR", "a;", "a"].randomElement(using: &random)!
        let never = Date.distantPast
        let nan = Double.nan
        switch Int.random(in: 0..<16, using: &random) {
        case 7:
            pair = (
                FetchRequest(where: "rating", in: low...high),
                FetchRequest(predicate: #Predicate { $0.rating >= low && $0.rating <= high })
            )
        case 8:
            pair = (
                FetchRequest(where: "rating", in: low..<high, predicate: #Predicate { $0.name != "n2" }),
                FetchRequest(predicate: #Predicate { $0.rating >= low && $0.rating < high && $0.name != "n2" })
            )
        case 9:
            if Bool.random(using: &random) {
                pair = (
                    FetchRequest(where: "score", in: lowScore...highScore),
                    FetchRequest(
                        predicate: #Predicate { ($0.score ?? nan) >= lowScore && ($0.score ?? nan) <= highScore })
                )
            } else {
                pair = (
                    FetchRequest(where: "score", in: ..<highScore),
                    FetchRequest(predicate: #Predicate { ($0.score ?? nan) < highScore })
                )
            }
        case 10:
            let date = dates[1]!
            if Bool.random(using: &random) {
                pair = (
                    FetchRequest(where: "opened", in: date...),
                    FetchRequest(predicate: #Predicate { ($0.opened ?? never) >= date })
                )
            } else {
                // A NaN date is at or below every date by Date's `<=`.
                let future = Date.distantFuture
                pair = (
                    FetchRequest(where: "opened", in: ...date),
                    FetchRequest(predicate: #Predicate { ($0.opened ?? future) <= date })
                )
            }
        case 11:
            pair = (
                FetchRequest(where: "code", in: lowCode...highCode),
                FetchRequest(predicate: #Predicate { $0.code >= lowCode && $0.code <= highCode })
            )
        case 12:
            pair = (
                FetchRequest(where: "country", in: ...country),
                FetchRequest(predicate: #Predicate { $0.country <= country })
            )
        case 13:
            let attribute = Bool.random(using: &random) ? "code" : "country"
            pair = (
                FetchRequest(where: attribute, startsWith: prefix),
                attribute == "code"
                    ? FetchRequest(predicate: #Predicate { $0.code.starts(with: prefix) })
                    : FetchRequest(predicate: #Predicate { $0.country.starts(with: prefix) })
            )
        case 14:
            // Not indexed: a range checked on each row's field.
            let names = ["n1", name].sorted()
            pair = (
                FetchRequest(where: "name", in: names[0]...names[1]),
                FetchRequest(predicate: #Predicate { $0.name >= names[0] && $0.name <= names[1] })
            )
        case 15:
            if Bool.random(using: &random) {
                pair = (
                    FetchRequest(where: "name", in: ..<name), FetchRequest(predicate: #Predicate { $0.name < name })
                )
            } else {
                pair = (
                    FetchRequest(where: "name", startsWith: prefix),
                    FetchRequest(predicate: #Predicate { $0.name.starts(with: prefix) })
                )
            }
        case 0:
            pair = (
                FetchRequest(where: "country", equals: country),
                FetchRequest(predicate: #Predicate { $0.country == country })
            )
        case 1:
            pair = (
                FetchRequest(where: "country", in: [country, other]),
                FetchRequest(predicate: #Predicate { $0.country == country || $0.country == other })
            )
        case 2:
            pair = (
                FetchRequest(where: "rating", equals: rating, predicate: #Predicate { $0.name != "n1" }),
                FetchRequest(predicate: #Predicate { $0.rating == rating && $0.name != "n1" })
            )
        case 3:
            pair = (FetchRequest(where: "code", equals: code), FetchRequest(predicate: #Predicate { $0.code == code }))
        case 4:
            pair = (
                FetchRequest(where: "score", equals: score), FetchRequest(predicate: #Predicate { $0.score == score })
            )
        case 5:
            pair = (
                FetchRequest(where: "opened", equals: date), FetchRequest(predicate: #Predicate { $0.opened == date })
            )
        default:
            // Not indexed: checked row by row.
            pair = (FetchRequest(where: "name", equals: name), FetchRequest(predicate: #Predicate { $0.name == name }))
        }
        if Bool.random(using: &random) {
            pair.0.sortDescriptors = [SortDescriptor(\.name), SortDescriptor(\.code)]
            pair.1.sortDescriptors = pair.0.sortDescriptors
        }
        let pending = Int.random(in: 0..<4, using: &random) != 0
        pair.0.includesPendingChanges = pending
        pair.1.includesPendingChanges = pending
        return pair
    }

    @Test(
        "a constraint on an indexed attribute (values, ranges, prefixes) returns what the same #Predicate returns, in the same order, with unsaved changes and unmerged saves",
        arguments: ["memory", "journal"], [false, true])
    func sameAsPredicate(store: String, retains: Bool) throws {
        let directory = TemporaryDirectory("index-\(store)")
        let manager =
            store == "journal"
            ? journalManager(directory, model: listingModel)
            : ContextManager(delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
        defer { manager.close() }
        let context = try makeContext(manager, "reader")
        // Retained, the objects that missed a merge stay registered, holding old rows.
        context.performAndWait { context.retainsRegisteredObjects = retains }
        let other = try makeContext(manager, "writer")
        var random = SeededGenerator(seed: retains ? 12 : 11)
        var next = 0
        try other.performAndWait {
            // Over 64 rows of each entity: the first save rebuilds the ordered entries at once.
            for _ in 0..<300 {
                let listing = Bool.random(using: &random) ? other.insert(Listing.self) : other.insert(Franchise.self)
                Self.fill(listing, next, &random)
                next += 1
            }
            try other.save()
        }
        flush(context)
        var indexedRows = 0
        var scannedRows = 0
        for round in 0..<300 {
            var roundRandom = SeededGenerator(seed: random.next())
            // Stretches without merges leave objects holding rows older than the store's.
            context.performAndWait { context.automaticallyMergesChangesFromOtherContexts = round / 40 % 2 == 0 }
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
                            victim.score = Self.scores.randomElement(using: &roundRandom)!
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
                        object.opened = Self.dates.randomElement(using: &roundRandom)!
                    }
                    if let victim = all.randomElement(using: &roundRandom) {
                        context.delete(victim)
                    }
                    Self.fill(context.insert(Franchise.self), next, &roundRandom)
                    next += 1
                }
            case 2:
                try context.performAndWait {
                    do {
                        try context.save()
                    } catch is MergeConflictError {
                        // An edit of an object whose row changed in a save it did not merge.
                        context.rollback()
                    }
                }
            case 3:
                context.performAndWait { context.rollback() }
            default:
                break
            }
            try context.performAndWait {
                for _ in 0..<3 {
                    let (constrained, reference) = Self.requests(&roundRandom)
                    let expected = try context.fetch(reference).map(\.objectID)
                    let expectedCount = try context.count(for: reference)
                    context.usesIndexes = false
                    context.rowsExamined = 0
                    let scanned = try context.fetch(constrained).map(\.objectID)
                    // (A constraint on `name`, which has no index, is scanned both ways.)
                    let isIndexed = constrained.attributeConstraint?.attributeName != "name"
                    scannedRows += isIndexed ? context.rowsExamined : 0
                    context.usesIndexes = true
                    context.rowsExamined = 0
                    let indexed = try context.fetch(constrained).map(\.objectID)
                    indexedRows += isIndexed ? context.rowsExamined : 0
                    #expect(indexed == expected, "round \(round): \(constrained)")
                    #expect(scanned == expected, "round \(round): \(constrained)")
                    #expect(try context.count(for: constrained) == expectedCount, "round \(round)")
                }
            }
        }
        #expect(
            indexedRows * 2 < scannedRows,
            "the indexes were used: \(indexedRows) rows examined, \(scannedRows) by scans")
    }

    @Test(
        "a prefix finds, through the index, the strings that spell its characters with canonically equivalent scalars, as starts(with:) does"
    )
    func prefixWithEquivalentScalars() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
        defer { manager.close() }
        let context = try makeContext(manager, "equivalent-prefixes")
        try context.performAndWait {
            // U+212A KELVIN SIGN is "K", U+037E GREEK QUESTION MARK ";", U+1FEF GREEK VARIA "`".
            let countries = [
                "\u{212A}elvin", "Kelvin", "Kx", "a\u{37E}b", "a;c", "ab", "\u{1FEF}x", "`y", "é", "e\u{301}",
            ]
            for (index, country) in countries.enumerated() {
                let listing = context.insert(Listing.self)
                listing.code = "C\(index)"
                listing.country = country
            }
            try context.save()
            for prefix in ["K", "Ke", "a", "a;", "a;b", "`", "e", ""] {
                var indexed = FetchRequest<Listing>(where: "country", startsWith: prefix)
                indexed.includesSubentities = false
                let expected = countries.filter { $0.starts(with: prefix) }.sorted()
                #expect(try context.fetch(indexed).map(\.country).sorted() == expected, "prefix \(prefix)")
                #expect(try context.count(for: indexed) == expected.count, "prefix \(prefix)")
            }
        }
    }

    @Test("a lookup by an indexed value examines only the rows the index names; an unindexed attribute is scanned")
    func lookupNotScan() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
        defer { manager.close() }
        let context = try manager.createContext()
        try context.performAndWait {
            for index in 0..<2_000 {
                let listing = context.insert(Listing.self)
                listing.code = "C\(index)"
                listing.country = index % 100 == 0 ? "PE" : "JP"
                listing.name = index % 100 == 0 ? "hundred" : "other"
            }
            try context.save()
            context.reset()
            context.rowsExamined = 0
            #expect(try context.fetch(FetchRequest<Listing>(where: "code", equals: "C1234")).map(\.code) == ["C1234"])
            #expect(context.rowsExamined == 1)
            #expect(
                try context.fetch(FetchRequest<Listing>(where: "code", in: ["C7", "C9", "nope"])).map(\.code) == [
                    "C7", "C9",
                ])
            #expect(context.rowsExamined == 3)
            let peru = try context.fetch(FetchRequest<Listing>(where: "country", equals: "PE"))
            #expect(peru.count == 20)
            #expect(context.rowsExamined == 23)
            #expect(try context.count(for: FetchRequest<Listing>(where: "name", equals: "hundred")) == 20)
            #expect(context.rowsExamined == 2_023, "an unindexed attribute: every row")
            // An unsaved change is found without a scan, and its committed value no longer matches.
            peru[0].country = "CH"
            context.rowsExamined = 0
            #expect(
                try context.fetch(FetchRequest<Listing>(where: "country", equals: "CH")).map(\.objectID) == [
                    peru[0].objectID
                ])
            #expect(try context.count(for: FetchRequest<Listing>(where: "country", equals: "PE")) == 19)
            #expect(context.rowsExamined == 21)
            #expect(try context.count(for: FetchRequest<Listing>(where: "score", equals: Double?.none)) == 2_000)
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
            func byCode(_ code: String) throws -> [Listing] {
                try context.fetch(FetchRequest<Listing>(where: "code", equals: code))
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
            #expect(try context.count(for: FetchRequest<Listing>(where: "country", equals: "PE")) == 1)
        }
        manager.close()
        manager = journalManager(directory, model: listingModel)
        let reopened = try manager.createContext()
        try reopened.performAndWait { () throws in
            reopened.rowsExamined = 0
            #expect(try reopened.count(for: FetchRequest<Listing>(where: "country", equals: "PE")) == 1)
            #expect(try reopened.count(for: FetchRequest<Listing>(where: "code", equals: "X7")) == 0)
            #expect(try reopened.count(for: FetchRequest<Listing>(where: "country", equals: "JP")) == 48)
            #expect(reopened.rowsExamined == 49)
        }
        manager.close()
    }

    @Test("a fetched-results controller follows a constrained request")
    func controller() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
        defer { manager.close() }
        let context = try manager.createContext()
        try context.performAndWait {
            for (index, country) in ["PE", "JP", "PE"].enumerated() {
                let listing = context.insert(Listing.self)
                listing.code = "C\(index)"
                listing.country = country
            }
            try context.save()
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<Listing>(where: "country", equals: "PE", sortBy: [SortDescriptor(\.code)]),
                managedObjectContext: context)
            try controller.performFetch()
            #expect(controller.fetchedObjects?.map(\.code) == ["C0", "C2"])
            let japan = try context.fetch(FetchRequest<Listing>(where: "country", equals: "JP"))[0]
            japan.country = "PE"
            context.processPendingChanges()
            #expect(controller.fetchedObjects?.map(\.code) == ["C0", "C1", "C2"])
        }
    }

    @Test(
        "a constraint naming no attribute, a value the attribute cannot hold, or a range or prefix it cannot have, traps with a message"
    )
    func misuse() async {
        let unknown = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
            let context = try manager.createContext()
            _ = try context.performAndWait { try context.fetch(FetchRequest<Listing>(where: "colour", equals: "red")) }
        }
        let unknownMessage = String(decoding: unknown?.standardErrorContent ?? [], as: UTF8.self)
        #expect(unknownMessage.contains("no attribute of that name"))
        let mismatch = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
            let context = try manager.createContext()
            _ = try context.performAndWait { try context.fetch(FetchRequest<Listing>(where: "rating", equals: "five")) }
        }
        let mismatchMessage = String(decoding: mismatch?.standardErrorContent ?? [], as: UTF8.self)
        #expect(mismatchMessage.contains("can never hold"))
        let prefixOfNumber = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
            let context = try manager.createContext()
            _ = try context.performAndWait {
                try context.fetch(FetchRequest<Listing>(where: "rating", startsWith: "1"))
            }
        }
        let prefixMessage = String(decoding: prefixOfNumber?.standardErrorContent ?? [], as: UTF8.self)
        #expect(prefixMessage.contains("only strings can"))
        let rangeOfOtherType = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: listingModel, storeType: .inMemory))
            let context = try manager.createContext()
            _ = try context.performAndWait { try context.fetch(FetchRequest<Listing>(where: "rating", in: 1.0...2.0)) }
        }
        let rangeMessage = String(decoding: rangeOfOtherType?.standardErrorContent ?? [], as: UTF8.self)
        #expect(rangeMessage.contains("not one of its values"))
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
