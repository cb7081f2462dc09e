import Foundation
import Testing

@testable import QueueData

/// Groups the reference model's items point at; their titles never change.
final class FRMGroup: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "group") var items: [FRMItem]
}

/// Items with a unique, indexed and plain attributes of several types (optionals, NaNs,
/// non-ASCII strings) and a relationship.
class FRMItem: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute(.indexed) var rank: Int = 0
    @Attribute(.indexed) var label: String = ""
    @Attribute var weight: Double = 0
    @Attribute(.indexed) var score: Double? = nil
    @Attribute var note: String? = nil
    @Attribute var level: Int? = nil
    @Relationship(inverse: "items") var group: FRMGroup?
}

/// A subclass the model leaves out: relationships to entities with subentities are not supported
/// yet, so the reference model has none (subentities are covered elsewhere).
final class FRMSpecial: FRMItem {
    @Attribute var extra: Int = 0
}

let fetchReferenceModel = ManagedObjectModel([FRMGroup.self, FRMItem.self])

/// One object's values as a fetch sees them, and where it comes in fetch order.
struct FRMRow {
    var id: ObjectID
    var isSpecial: Bool
    var code: String
    var rank: Int
    var label: String
    var weight: Double
    var score: Double?
    var note: String?
    var level: Int?
    var groupTitle: String?
    /// (entity position, 0 for saved rows / 1 for a child's parent inserts, key); parent inserts
    /// get an entity position past every entity.
    var order: (Int, Int, Int64) = (0, 0, 0)

    init(_ item: FRMItem) {
        id = item.objectID
        isSpecial = item is FRMSpecial
        code = item.code
        rank = item.rank
        label = item.label
        weight = item.weight
        score = item.score
        note = item.note
        level = item.level
        groupTitle = item.group?.title
    }
}

/// A brute-force reference for every fetch form: random stores, random pending changes (and
/// saves elsewhere, merged or not), random requests, each answered by filtering, sorting and
/// paging the objects' values directly.
@Suite("Fetches against a reference model")
struct FetchReferenceModelTests {
    static let rounds = scaledRounds(
        ProcessInfo.processInfo.environment["QUEUEDATA_FETCH_REFERENCE_ROUNDS"].flatMap(Int.init) ?? 24)
    static let seeds = ProcessInfo.processInfo.environment["QUEUEDATA_FETCH_REFERENCE_SEEDS"].flatMap(Int.init) ?? 1

    static let asciiLabels = ["", "a", "ab", "Ab", "abc", "b", "B", "zz", "a b", "10", "9"]
    /// Not "ée" beside a decomposed "e\u{301}": Swift's `<` orders neither before the other while
    /// it orders "é" (precomposed, equal to the decomposed one) before "ée", which no sort can honour.
    static let otherLabels = ["é", "e\u{301}", "Äb", "ñu", "日本", "ab\u{301}"]
    static let weights: [Double] = [0, -0.0, 1.5, -2, .infinity, 3, .nan]
    static let scores: [Double?] = [nil, 0, 1.5, -2, 3, .nan]
    static let notes: [String?] = [nil, "x", "X", "é", "apple", "Äpfel", "apple pie"]
    static let levels: [Int?] = [nil, 0, 1, 2]
    static let titles = ["north", "Süd", "east", "west"]

    /// What one seed's store may hold: non-ASCII labels and NaNs only in some seeds (they turn
    /// the index-ordered path off).
    struct Flavor {
        var nonASCII: Bool
        var nans: Bool
    }

    static func fill(
        _ item: FRMItem, _ number: Int, _ flavor: Flavor, groups: [FRMGroup], _ random: inout SeededGenerator
    ) {
        item.code = "c\(number)"
        change(item, flavor, groups: groups, &random)
        if let special = item as? FRMSpecial {
            special.extra = Int.random(in: 0..<3, using: &random)
        }
    }

    static func change(_ item: FRMItem, _ flavor: Flavor, groups: [FRMGroup], _ random: inout SeededGenerator) {
        let labels = flavor.nonASCII ? asciiLabels + otherLabels : asciiLabels
        let weights = flavor.nans ? Self.weights : Self.weights.dropLast()
        let scores = flavor.nans ? Self.scores : Self.scores.dropLast()
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            item.rank = Int.random(in: 0..<10, using: &random)
        case 1:
            item.label = labels.randomElement(using: &random)!
            item.note = notes.randomElement(using: &random)!
        case 2:
            item.weight = weights.randomElement(using: &random)!
            item.score = scores.randomElement(using: &random)!
        default:
            item.level = levels.randomElement(using: &random)!
            item.group = Bool.random(using: &random) ? nil : groups.randomElement(using: &random)
        }
        if Int.random(in: 0..<3, using: &random) == 0 {
            item.rank = Int.random(in: 0..<10, using: &random)
            item.label = labels.randomElement(using: &random)!
            item.score = scores.randomElement(using: &random)!
        }
    }

    // MARK: Requests

    /// A predicate and what it answers for a row.
    static func predicate<T: FRMItem>(
        _: T.Type,
        _ random: inout SeededGenerator
    ) -> (Predicate<T>?, (FRMRow) -> Bool) {
        let rank = Int.random(in: 0..<10, using: &random)
        let label = (asciiLabels + otherLabels).randomElement(using: &random)!
        let number = [0, 1.5, -2, 3, -0.0].randomElement(using: &random)!
        let note = notes.randomElement(using: &random)!
        let title = titles.randomElement(using: &random)!
        switch Int.random(in: 0..<13, using: &random) {
        case 0: return (nil, { _ in true })
        case 1: return (#Predicate<T> { $0.rank > rank }, { $0.rank > rank })
        case 2:
            return (#Predicate<T> { $0.rank == rank || $0.label == label }, { $0.rank == rank || $0.label == label })
        case 3: return (#Predicate<T> { $0.label.starts(with: label) }, { $0.label.starts(with: label) })
        case 4: return (#Predicate<T> { $0.weight < number }, { $0.weight < number })
        case 5: return (#Predicate<T> { $0.score == nil }, { $0.score == nil })
        case 6: return (#Predicate<T> { ($0.score ?? -100) >= number }, { ($0.score ?? -100) >= number })
        case 7: return (#Predicate<T> { $0.note == note }, { $0.note == note })
        case 8: return (#Predicate<T> { ($0.level ?? 0) <= 1 }, { ($0.level ?? 0) <= 1 })
        case 9: return (#Predicate<T> { $0.group?.title == title }, { $0.groupTitle == title })
        case 10: return (#Predicate<T> { $0.group == nil }, { $0.groupTitle == nil })
        case 11:
            return (
                #Predicate<T> { !($0.rank < rank) && $0.label != label }, { !($0.rank < rank) && $0.label != label }
            )
        default: return (#Predicate<T> { $0.label < label }, { $0.label < label })
        }
    }

    /// A constraint and what it answers for a row.
    static func constraint<T: FRMItem>(
        _ request: inout FetchRequest<T>,
        _ random: inout SeededGenerator,
        codes: Int
    ) -> (FRMRow) -> Bool {
        let rank = Int.random(in: 0..<10, using: &random)
        let other = Int.random(in: 0..<10, using: &random)
        let (low, high) = (min(rank, other), max(rank, other))
        let label = (asciiLabels + otherLabels).randomElement(using: &random)!
        let otherLabel = (asciiLabels + otherLabels).randomElement(using: &random)!
        let (lowLabel, highLabel) = (min(label, otherLabel), max(label, otherLabel))
        let number = [0, 1.5, -2, 3].randomElement(using: &random)!
        let code = "c\(Int.random(in: 0..<max(codes, 1), using: &random))"
        let secondCode = "c\(Int.random(in: 0..<max(codes, 1), using: &random))"
        let pending = request.includesPendingChanges
        let subentities = request.includesSubentities
        defer {
            request.includesPendingChanges = pending
            request.includesSubentities = subentities
        }
        switch Int.random(in: 0..<14, using: &random) {
        case 0:
            request = FetchRequest<T>(where: "code", equals: code)
            return { $0.code == code }
        case 1:
            request = FetchRequest<T>(where: "code", in: [code, secondCode, "nope"])
            return { $0.code == code || $0.code == secondCode }
        case 2:
            request = FetchRequest<T>(where: "rank", in: [rank, other])
            return { $0.rank == rank || $0.rank == other }
        case 3:
            request = FetchRequest<T>(where: "rank", in: low...high)
            return { $0.rank >= low && $0.rank <= high }
        case 4:
            request = FetchRequest<T>(where: "rank", in: low..<high)
            return { $0.rank >= low && $0.rank < high }
        case 5:
            request = FetchRequest<T>(where: "rank", in: rank...)
            return { $0.rank >= rank }
        case 6:
            request = FetchRequest<T>(where: "rank", in: ..<rank)
            return { $0.rank < rank }
        case 7:
            request = FetchRequest<T>(where: "label", startsWith: label)
            return { $0.label.starts(with: label) }
        case 8:
            request = FetchRequest<T>(where: "label", in: lowLabel...highLabel)
            return { $0.label >= lowLabel && $0.label <= highLabel }
        case 9:
            request = FetchRequest<T>(where: "score", in: ...number)
            return { $0.score.map { $0 <= number } ?? false }
        case 10:
            request = FetchRequest<T>(where: "score", equals: Double?.none)
            return { $0.score == nil }
        case 11:
            request = FetchRequest<T>(where: "weight", in: number...)
            return { $0.weight >= number }
        case 12:
            let prefix = ["a", "x", "é", "Ä", "apple "].randomElement(using: &random)!
            request = FetchRequest<T>(where: "note", startsWith: prefix)
            return { $0.note?.starts(with: prefix) ?? false }
        default:
            request = FetchRequest<T>(where: "level", in: [Int?.none, 1])
            return { $0.level == nil || $0.level == 1 }
        }
    }

    /// Attribute sorts compared as AttributeSort documents: the type's `<`, `nil` first, NaN as `nil`.
    static func attributeComparison(_ name: String, _ lhs: FRMRow, _ rhs: FRMRow) -> ComparisonResult {
        func compare<V: Comparable>(_ left: V?, _ right: V?) -> ComparisonResult {
            switch (left, right) {
            case (nil, nil): return .orderedSame
            case (nil, _): return .orderedAscending
            case (_, nil): return .orderedDescending
            case (let left?, let right?):
                return left < right ? .orderedAscending : right < left ? .orderedDescending : .orderedSame
            }
        }
        func number(_ value: Double?) -> Double? {
            value.flatMap { $0.isNaN ? nil : $0 }
        }
        switch name {
        case "rank": return compare(lhs.rank, rhs.rank)
        case "label": return compare(lhs.label, rhs.label)
        case "weight": return compare(number(lhs.weight), number(rhs.weight))
        case "score": return compare(number(lhs.score), number(rhs.score))
        case "note": return compare(lhs.note, rhs.note)
        case "level": return compare(lhs.level, rhs.level)
        default: return compare(lhs.code, rhs.code)
        }
    }

    /// Sort descriptors on the items and the same on the rows.
    static func descriptor<T: FRMItem>(
        _: T.Type,
        _ random: inout SeededGenerator
    ) -> (SortDescriptor<T>, SortDescriptor<FRMRow>) {
        let order: SortOrder = Bool.random(using: &random) ? .forward : .reverse
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return (SortDescriptor(\T.rank, order: order), SortDescriptor(\FRMRow.rank, order: order))
        case 1: return (SortDescriptor(\T.code, order: order), SortDescriptor(\FRMRow.code, order: order))
        case 2: return (SortDescriptor(\T.label, order: order), SortDescriptor(\FRMRow.label, order: order))
        case 3:
            return (
                SortDescriptor(\T.label, comparator: .lexical, order: order),
                SortDescriptor(\FRMRow.label, comparator: .lexical, order: order)
            )
        case 4: return (SortDescriptor(\T.note, order: order), SortDescriptor(\FRMRow.note, order: order))
        default: return (SortDescriptor(\T.level, order: order), SortDescriptor(\FRMRow.level, order: order))
        }
    }

    /// A random request and the reference's answer over any view.
    struct Case<T: FRMItem> {
        var request: FetchRequest<T>
        var matches: (FRMRow) -> Bool
        var rowDescriptors: [SortDescriptor<FRMRow>]

        /// The page the request returns from `view` (in fetch order).
        func expected(_ view: [FRMRow]) -> [FRMRow] {
            let entityMatches = view.filter {
                request.includesSubentities || $0.isSpecial == (T.self == FRMSpecial.self)
            }
            .filter { T.self != FRMSpecial.self || $0.isSpecial }
            let matched = entityMatches.filter(matches).sorted { $0.order < $1.order }
            let positions = matched.indices.sorted { left, right in
                for sort in request.attributeSorts {
                    var result = FetchReferenceModelTests.attributeComparison(
                        sort.attributeName, matched[left], matched[right])
                    if !sort.ascending {
                        result =
                            result == .orderedAscending
                            ? .orderedDescending : result == .orderedDescending ? .orderedAscending : .orderedSame
                    }
                    if result != .orderedSame {
                        return result == .orderedAscending
                    }
                }
                for descriptor in rowDescriptors {
                    let result = descriptor.compare(matched[left], matched[right])
                    if result != .orderedSame {
                        return result == .orderedAscending
                    }
                }
                return left < right
            }
            let sorted = positions.map { matched[$0] }
            let start = min(max(request.fetchOffset, 0), sorted.count)
            let end = request.fetchLimit > 0 ? min(start + request.fetchLimit, sorted.count) : sorted.count
            return Array(sorted[start..<end])
        }

        init(_ random: inout SeededGenerator, codes: Int) {
            var request = FetchRequest<T>()
            request.includesPendingChanges = Int.random(in: 0..<3, using: &random) != 0
            request.includesSubentities = Int.random(in: 0..<3, using: &random) != 0
            var constraintMatches: (FRMRow) -> Bool = { _ in true }
            if Int.random(in: 0..<3, using: &random) == 0 {
                constraintMatches = FetchReferenceModelTests.constraint(&request, &random, codes: codes)
            }
            let (predicate, predicateMatches) = FetchReferenceModelTests.predicate(T.self, &random)
            request.predicate = predicate
            matches = { constraintMatches($0) && predicateMatches($0) }
            let names = ["rank", "label", "weight", "score", "note", "level", "code"]
            for _ in 0..<[0, 1, 1, 2].randomElement(using: &random)! {
                request.attributeSorts.append(
                    AttributeSort(names.randomElement(using: &random)!, ascending: Bool.random(using: &random)))
            }
            var descriptors: [SortDescriptor<FRMRow>] = []
            for _ in 0..<[0, 0, 1, 2].randomElement(using: &random)! {
                let (item, row) = FetchReferenceModelTests.descriptor(T.self, &random)
                request.sortDescriptors.append(item)
                descriptors.append(row)
            }
            rowDescriptors = descriptors
            request.fetchLimit = [0, 0, 1, 3, 10, 40].randomElement(using: &random)!
            request.fetchOffset = [0, 0, 0, 2, 7].randomElement(using: &random)!
            self.request = request
        }
    }

    // MARK: Views

    /// Where a row comes in fetch order, by its entity's place among the fetched ones.
    static func order(of id: ObjectID, entityPositions: [Int: Int], insert: Bool, child: Bool) -> (Int, Int, Int64) {
        let position = entityPositions[id.key.entityIndex!] ?? 0
        if insert {
            return child ? (position, 1, id.rawValue) : (Int.max, 0, id.rawValue)
        }
        return (position, 0, id.rawValue)
    }

    /// The committed rows, read by a context without changes.
    static func committedRows(_ reader: ManagedObjectContext) throws -> [FRMRow] {
        try reader.performAndWait {
            reader.reset()
            return try reader.fetch(FetchRequest<FRMItem>()).map(FRMRow.init)
        }
    }

    /// What `context` sees: committed rows, or its registered objects' own values, less its
    /// deletions, plus its inserts. On the context's queue.
    static func contextRows(_ context: ManagedObjectContext, committed: [FRMRow], positions: [Int: Int]) -> [FRMRow] {
        var registered: [ObjectID: FRMItem] = [:]
        for case let item as FRMItem in context.registeredObjects {
            registered[item.objectID] = item
        }
        let deleted = Set(context.deletedObjects.map(\.objectID))
        var rows: [FRMRow] = []
        for row in committed where !deleted.contains(row.id) {
            var row = registered[row.id].map(FRMRow.init) ?? row
            row.order = order(of: row.id, entityPositions: positions, insert: false, child: false)
            rows.append(row)
        }
        for case let item as FRMItem in context.insertedObjects {
            var row = FRMRow(item)
            row.order = order(of: row.id, entityPositions: positions, insert: true, child: false)
            rows.append(row)
        }
        return rows
    }

    /// What a child of `context` without changes of its own sees: committed rows overlaid with
    /// `context`'s changes. On `context`'s queue.
    static func childRows(_ context: ManagedObjectContext, committed: [FRMRow], positions: [Int: Int]) -> [FRMRow] {
        var updated: [ObjectID: FRMItem] = [:]
        for case let item as FRMItem in context.updatedObjects {
            updated[item.objectID] = item
        }
        let deleted = Set(context.deletedObjects.map(\.objectID))
        var rows: [FRMRow] = []
        for row in committed where !deleted.contains(row.id) {
            var row = updated[row.id].map(FRMRow.init) ?? row
            row.order = order(of: row.id, entityPositions: positions, insert: false, child: true)
            rows.append(row)
        }
        for case let item as FRMItem in context.insertedObjects {
            var row = FRMRow(item)
            row.order = order(of: row.id, entityPositions: positions, insert: true, child: true)
            rows.append(row)
        }
        return rows
    }

    static func positions<T>(_ context: ManagedObjectContext, _ request: FetchRequest<T>) -> [Int: Int] {
        Dictionary(uniqueKeysWithValues: context.fetchedEntityIndexes(for: request).enumerated().map { ($1, $0) })
    }

    // MARK: The test

    @Test("every fetch form returns what filtering, sorting and paging the objects' values returns", arguments: [0, 1])
    func matchesReference(kind: Int) async throws {
        for seedIndex in 0..<Self.seeds {
            let seed = UInt64(seedIndex * 2 + kind)
            try await run(seed: seed)
        }
    }

    func run(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let flavor = Flavor(nonASCII: seed % 3 != 0, nans: seed % 4 >= 2)
        let manager = makeManager(model: fetchReferenceModel)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "reference-\(seed)")
        let other = try makeContext(manager, "reference-other-\(seed)")
        let reader = try makeContext(manager, "reference-reader-\(seed)")
        var next = 0
        try other.performAndWait {
            let groups = Self.titles.map { title in
                let group = other.insert(FRMGroup.self)
                group.title = title
                return group
            }
            for _ in 0..<Int.random(in: 150..<300, using: &random) {
                let item = other.insert(FRMItem.self)
                Self.fill(item, next, flavor, groups: groups, &random)
                next += 1
            }
            try other.save()
        }
        flush(context)
        var mismatches = 0
        for round in 0..<Self.rounds {
            context.performAndWait { context.automaticallyMergesChangesFromOtherContexts = round / 8 % 2 == 0 }
            var roundRandom = SeededGenerator(seed: random.next())
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1:
                try other.performAndWait {
                    let groups = try other.fetch(FetchRequest<FRMGroup>())
                    let all = try other.fetch(FetchRequest<FRMItem>())
                    for item in all.shuffled(using: &roundRandom).prefix(4) {
                        Self.change(item, flavor, groups: groups, &roundRandom)
                    }
                    if let victim = all.randomElement(using: &roundRandom), Bool.random(using: &roundRandom) {
                        other.delete(victim)
                    }
                    let item = other.insert(FRMItem.self)
                    Self.fill(item, next, flavor, groups: groups, &roundRandom)
                    next += 1
                    try other.save()
                }
                if Bool.random(using: &random) {
                    flush(context)
                }
            case 2, 3:
                try context.performAndWait {
                    let groups = try context.fetch(FetchRequest<FRMGroup>())
                    let all = try context.fetch(FetchRequest<FRMItem>())
                    for item in all.shuffled(using: &roundRandom).prefix(4) {
                        Self.change(item, flavor, groups: groups, &roundRandom)
                    }
                    if let victim = all.randomElement(using: &roundRandom) {
                        context.delete(victim)
                    }
                    for _ in 0..<Int.random(in: 0..<3, using: &roundRandom) {
                        let item = context.insert(FRMItem.self)
                        Self.fill(item, next, flavor, groups: groups, &roundRandom)
                        next += 1
                    }
                    // Some inserts changed again or deleted before the save.
                    if let inserted = context.insertedObjects.compactMap({ $0 as? FRMItem }).randomElement(
                        using: &roundRandom)
                    {
                        if Bool.random(using: &roundRandom) {
                            context.delete(inserted)
                        } else {
                            Self.change(inserted, flavor, groups: groups, &roundRandom)
                        }
                    }
                }
            case 4:
                try context.performAndWait {
                    do {
                        try context.save()
                    } catch is MergeConflictError {
                        context.rollback()
                    }
                }
            default:
                if Int.random(in: 0..<3, using: &random) == 0 {
                    context.performAndWait { context.rollback() }
                }
            }
            let committed = try Self.committedRows(reader)
            for _ in 0..<4 {
                mismatches += try await check(
                    Case<FRMItem>(&roundRandom, codes: next), context, committed, &roundRandom,
                    "seed \(seed) round \(round)",
                    manager)
                if mismatches > 20 {
                    return
                }
            }
        }
    }

    /// Compares every fetch form for `testCase` with the reference; the number of mismatches.
    func check<T: FRMItem>(
        _ testCase: Case<T>,
        _ context: ManagedObjectContext,
        _ committed: [FRMRow],
        _ random: inout SeededGenerator,
        _ label: String,
        _ manager: ContextManager
    ) async throws -> Int {
        let request = testCase.request
        var failures = 0
        let byID = Dictionary(committed.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        func describe(_ row: FRMRow?) -> String {
            guard let row else { return "?" }
            let scalars = row.label.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: ".")
            return "\(row.code)/\(scalars)/\(row.rank)/\(row.level.map(String.init) ?? "nil")/\(row.id.rawValue)"
        }
        func expect(_ actual: [ObjectID], _ expected: [FRMRow], _ form: String) {
            let expectedIDs = expected.map(\.id)
            if actual != expectedIDs {
                failures += 1
                let actualRows = actual.map { describe(byID[$0]) }
                Issue.record(
                    "\(label) \(form): \(request)\nexpected \(expected.map(describe))\nactual (committed values) \(actualRows)"
                )
            }
        }
        let batchSize = Int.random(in: 1..<8, using: &random)
        let committedExpected = try context.performAndWait {
            let positions = Self.positions(context, request)
            var committedView = committed
            for index in committedView.indices {
                committedView[index].order = Self.order(
                    of: committedView[index].id, entityPositions: positions, insert: false, child: false)
            }
            let view =
                request.includesPendingChanges
                ? Self.contextRows(context, committed: committed, positions: positions) : committedView
            let expected = testCase.expected(view)
            expect(try context.fetch(request).map(\.objectID), expected, "fetch")
            expect(try context.fetchObjectIDs(request), expected, "fetchObjectIDs")
            var enumerated: [ObjectID] = []
            try context.enumerate(request, batchSize: batchSize) { enumerated.append($0.objectID) }
            expect(enumerated, expected, "enumerate(batchSize: \(batchSize))")
            let count = try context.count(for: request)
            if count != expected.count {
                failures += 1
                Issue.record("\(label) count: \(count), expected \(expected.count): \(request)")
            }
            let values = try context.fetchValues(request, properties: ["code", "rank", "label"])
            let expectedValues: [[String: StoredValue]] = expected.map {
                ["code": .string($0.code), "rank": .integer(Int64($0.rank)), "label": .string($0.label)]
            }
            if values != expectedValues {
                failures += 1
                Issue.record("\(label) fetchValues: \(values)\nexpected \(expectedValues)\n\(request)")
            }
            return testCase.expected(committedView)
        }
        // The asynchronous fetches match committed rows, whatever includesPendingChanges says.
        let asyncIDs = try await context.fetchObjectIDs(request)
        expect(asyncIDs, committedExpected, "async fetchObjectIDs")
        let deleted = context.performAndWait { Set(context.deletedObjects.map(\.objectID)) }
        let delivered = try await context.fetch(request, then: { objects in objects.map(\.objectID) })
        expect(delivered, committedExpected.filter { !deleted.contains($0.id) }, "async fetch")
        // A child without changes of its own reads through its parent's unsaved changes.
        let (child, childExpected) = context.performAndWait {
            let positions = Self.positions(context, request)
            return (
                context.newChildContext(),
                testCase.expected(Self.childRows(context, committed: committed, positions: positions))
            )
        }
        try child.performAndWait {
            expect(try child.fetch(request).map(\.objectID), childExpected, "child fetch")
            expect(try child.fetchObjectIDs(request), childExpected, "child fetchObjectIDs")
            let count = try child.count(for: request)
            if count != childExpected.count {
                failures += 1
                Issue.record("\(label) child count: \(count), expected \(childExpected.count): \(request)")
            }
        }
        // A child with changes of its own: its parent's view, overlaid with them as a context's
        // own changes overlay the store (none when the request leaves pending changes out).
        var childRandom = SeededGenerator(seed: random.next())
        let parentView = context.performAndWait {
            Self.childRows(context, committed: committed, positions: Self.positions(context, request))
        }
        let (ownExpected, ownRows) = try child.performAndWait {
            child.retainsRegisteredObjects = true
            let groups = try child.fetch(FetchRequest<FRMGroup>())
            let all = try child.fetch(FetchRequest<FRMItem>()).filter { !($0 is FRMSpecial) }
            for item in all.shuffled(using: &childRandom).prefix(4) {
                Self.change(item, Self.Flavor(nonASCII: false, nans: false), groups: groups, &childRandom)
            }
            if let victim = all.randomElement(using: &childRandom), Bool.random(using: &childRandom) {
                child.delete(victim)
            }
            for number in 0..<Int.random(in: 0..<3, using: &childRandom) {
                let item = child.insert(FRMItem.self)
                Self.fill(
                    item, 1_000_000 + number, Self.Flavor(nonASCII: false, nans: false), groups: groups, &childRandom)
            }
            let positions = Self.positions(child, request)
            var rows: [FRMRow] = []
            if request.includesPendingChanges {
                let deleted = Set(child.deletedObjects.map(\.objectID))
                var registered: [ObjectID: FRMItem] = [:]
                for case let item as FRMItem in child.registeredObjects {
                    registered[item.objectID] = item
                }
                for row in parentView where !deleted.contains(row.id) {
                    var own = registered[row.id].map(FRMRow.init) ?? row
                    own.order = row.order
                    rows.append(own)
                }
                for case let item as FRMItem in child.insertedObjects {
                    var row = FRMRow(item)
                    row.order = Self.order(of: row.id, entityPositions: positions, insert: true, child: false)
                    rows.append(row)
                }
            } else {
                rows = parentView
            }
            return (testCase.expected(rows), rows)
        }
        try child.performAndWait {
            expect(try child.fetch(request).map(\.objectID), ownExpected, "child fetch, with changes of its own")
            expect(try child.fetchObjectIDs(request), ownExpected, "child fetchObjectIDs, with changes of its own")
            let count = try child.count(for: request)
            if count != ownExpected.count {
                failures += 1
                let description = "\(label) child count with changes of its own: \(count)"
                Issue.record("\(description), expected \(ownExpected.count) of \(ownRows.count) rows: \(request)")
            }
        }
        return failures
    }
}

@Suite("Fetch reference model: regressions")
struct FetchReferenceRegressionTests {
    @Test("a child's fetch skips its parent's updated object whose row another context's unmerged save deleted")
    func childSkipsUpdateOfRowDeletedElsewhere() throws {
        let manager = makeManager(model: fetchReferenceModel)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "deleted-elsewhere")
        let other = try makeContext(manager, "deleted-elsewhere-other")
        try other.performAndWait {
            for index in 0..<3 {
                other.insert(FRMItem.self).code = "c\(index)"
            }
            try other.save()
        }
        flush(context)
        let child = try context.performAndWait {
            context.automaticallyMergesChangesFromOtherContexts = false
            let all = try context.fetch(FetchRequest<FRMItem>(sortedBy: [AttributeSort("code")]))
            try other.performAndWait {
                other.delete(try other.fetch(FetchRequest<FRMItem>(where: "code", equals: "c0"))[0])
                try other.save()
            }
            all[0].rank = 5
            return context.newChildContext()
        }
        let parentCodes = try context.performAndWait { try context.fetch(FetchRequest<FRMItem>()).map(\.code) }
        #expect(parentCodes == ["c1", "c2"])
        let childCodes = try child.performAndWait { try child.fetch(FetchRequest<FRMItem>()).map(\.code) }
        #expect(childCodes == parentCodes)
        #expect(try child.performAndWait { try child.count(for: FetchRequest<FRMItem>()) } == 2)
    }
}
