import Foundation
import Testing

@testable import QueueData

/// Sorting by attribute name (`AttributeSort`), against a reference that sorts every match with
/// the properties' own `<`.
@Suite("Attribute sorts")
struct AttributeSortTests {
    /// The attributes of `Specimen` a random round sorts by (not `weight`: a NaN has no order,
    /// so any order of it is as right as another).
    static let names = ["count", "small", "ratio", "label", "note", "seen", "level"]

    /// `a` against `b` by the attribute `name`, with the property's `<`, `nil` first.
    static func compare(_ a: Specimen, _ b: Specimen, _ name: String) -> ComparisonResult {
        func order<Value: Comparable>(_ x: Value?, _ y: Value?) -> ComparisonResult {
            switch (x, y) {
            case (nil, nil): return .orderedSame
            case (nil, _): return .orderedAscending
            case (_, nil): return .orderedDescending
            case (let x?, let y?): return x < y ? .orderedAscending : y < x ? .orderedDescending : .orderedSame
            }
        }
        switch name {
        case "count": return order(a.count, b.count)
        case "small": return order(a.small, b.small)
        case "ratio": return order(a.ratio, b.ratio)
        case "label": return order(a.label, b.label)
        case "note": return order(a.note, b.note)
        case "seen": return order(a.seen, b.seen)
        case "level": return order(a.level, b.level)
        default: fatalError("not a sorted attribute: \(name)")
        }
    }

    /// `objects` in fetch order, stably sorted by `sorts`, then `descriptors`.
    static func reference(
        _ objects: [Specimen], _ sorts: [AttributeSort], _ descriptors: [SortDescriptor<Specimen>]
    ) -> [Specimen] {
        objects.enumerated().sorted { left, right in
            for sort in sorts {
                var result = compare(left.element, right.element, sort.attributeName)
                if !sort.ascending {
                    result =
                        result == .orderedAscending
                        ? .orderedDescending : result == .orderedDescending ? .orderedAscending : .orderedSame
                }
                if result != .orderedSame { return result == .orderedAscending }
            }
            for descriptor in descriptors {
                let result = descriptor.compare(left.element, right.element)
                if result != .orderedSame { return result == .orderedAscending }
            }
            return left.offset < right.offset
        }.map(\.element)
    }

    @Test("fetch, fetchObjectIDs and enumerate return every match sorted by the attributes, then paged, on random data")
    func randomRounds() throws {
        let rounds =
            ProcessInfo.processInfo.environment["QUEUEDATA_PREDICATE_FUZZ"].flatMap(Int.init) ?? scaledRounds(300)
        for seed: UInt64 in [3, 11] {
            let generator = PredicateGenerator(seed: seed)
            let manager = makeManager(model: specimenModel)
            let seeder = try makeContext(manager, "attribute-sort-seed")
            try seeder.performAndWait {
                for _ in 0..<300 {
                    generator.fill(seeder.insert(Specimen.self))
                }
                try seeder.save()
            }
            let context = try makeContext(manager, "attribute-sorts")
            try context.performAndWait {
                for round in 0..<rounds {
                    if round % 30 == 0 {
                        // A fresh start, then some registered objects (some changed) and pending inserts.
                        context.reset()
                        var some = FetchRequest<Specimen>(predicate: generator.predicate(depth: 2))
                        some.fetchLimit = generator.integer(0...80)
                        for specimen in try context.fetch(some) where generator.integer(0...2) == 0 {
                            generator.fill(specimen)
                        }
                        for _ in 0..<generator.integer(0...6) {
                            generator.fill(context.insert(Specimen.self))
                        }
                    }
                    let predicate = round % 3 == 0 ? nil : generator.predicate(depth: 2)
                    let sorts = (0..<generator.integer(1...2)).map { _ in
                        AttributeSort(generator.pick(Self.names), ascending: generator.integer(0...1) == 0)
                    }
                    let descriptors = generator.pick([
                        [], [SortDescriptor(\Specimen.count)], [SortDescriptor(\Specimen.label, comparator: .lexical)],
                        [SortDescriptor(\Specimen.doubled, order: .reverse)],
                    ])
                    let everything = try context.fetch(FetchRequest<Specimen>(predicate: predicate))
                    let reference = Self.reference(everything, sorts, descriptors)
                    var request = FetchRequest<Specimen>(predicate: predicate, sortedBy: sorts)
                    request.sortDescriptors = descriptors
                    request.fetchOffset = generator.integer(0...40)
                    request.fetchLimit = generator.integer(0...40)
                    let start = min(request.fetchOffset, reference.count)
                    let end =
                        request.fetchLimit > 0 ? min(start + request.fetchLimit, reference.count) : reference.count
                    let expected = reference[start..<end].map(\.objectID)
                    let page = try context.fetch(request).map(\.objectID)
                    let ids = try context.fetchObjectIDs(request)
                    var enumerated: [ObjectID] = []
                    try context.enumerate(request, batchSize: generator.integer(1...50)) {
                        enumerated.append($0.objectID)
                    }
                    guard page == expected, ids == expected, enumerated == expected else {
                        let outcome =
                            "fetch \(page == expected), IDs \(ids == expected), enumerate \(enumerated == expected)"
                        Issue.record("seed \(seed) round \(round), by \(sorts) then \(descriptors): \(outcome)")
                        return
                    }
                }
            }
        }
    }

    @Test("nil comes first ascending and last descending; ties fall to the sort descriptors, then to fetch order")
    func nilsAndTies() throws {
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "attribute-sort-ties")
        try context.performAndWait {
            for (level, label) in [(2, "b"), (nil, "c"), (1, "z"), (2, "a"), (nil, "a"), (1, "a")] as [(Int?, String)] {
                let specimen = context.insert(Specimen.self)
                specimen.level = level
                specimen.label = label
            }
            try context.save()
            context.reset()
            let ascending = try context.fetch(FetchRequest<Specimen>(sortedBy: [AttributeSort("level")]))
            #expect(ascending.map(\.level) == [nil, nil, 1, 1, 2, 2])
            #expect(ascending.map(\.label) == ["c", "a", "z", "a", "b", "a"], "ties keep fetch order")
            var request = FetchRequest<Specimen>(sortedBy: [AttributeSort("level", ascending: false)])
            request.sortDescriptors = [SortDescriptor(\.label)]
            let descending = try context.fetch(request)
            #expect(descending.map(\.level) == [2, 2, 1, 1, nil, nil])
            #expect(descending.map(\.label) == ["a", "b", "a", "z", "a", "c"], "ties sorted by the descriptor")
        }
    }

    @Test("without pending changes, the sort reads committed values; with them, the unsaved ones")
    func committedValues() async throws {
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "attribute-sort-committed")
        try context.performAndWait {
            for count in [3, 1, 2] {
                context.insert(Specimen.self).count = count
            }
            try context.save()
            context.reset()
            let all = try context.fetch(FetchRequest<Specimen>(sortedBy: [AttributeSort("count")]))
            all[0].count = 10  // was 1: unsaved
            let inserted = context.insert(Specimen.self)
            inserted.count = 0
            var committed = FetchRequest<Specimen>(sortedBy: [AttributeSort("count")])
            committed.includesPendingChanges = false
            #expect(try context.fetch(committed).map(\.count) == [10, 2, 3], "sorted as 1, 2, 3 were saved")
            let current = try context.fetch(FetchRequest<Specimen>(sortedBy: [AttributeSort("count")]))
            #expect(current.map(\.count) == [0, 2, 3, 10])
        }
        var latest = FetchRequest<Specimen>(sortedBy: [AttributeSort("count", ascending: false)])
        latest.fetchLimit = 2
        let ids = try await context.fetchObjectIDs(latest)
        try context.performAndWait {
            let counts = try ids.map { try context.existingObject(with: $0) as! Specimen }.map(\.count)
            #expect(
                counts == [3, 2],
                "the asynchronous fetch sorts the committed rows (3, 2, 1): the one changed to 10 is third")
        }
    }

    @Test(
        "without pending changes, an object whose merge has not arrived is matched and sorted on the store's values",
        arguments: [false, true])
    func committedValuesOfAnObjectBehindTheStore(indexed: Bool) throws {
        let manager = makeManager(model: listingModel)
        let context = try makeContext(manager, "attribute-sort-behind")
        let other = try makeContext(manager, "attribute-sort-behind-other")
        try context.performAndWait {
            for rating in [1, 2, 3] {
                let listing = context.insert(Listing.self)
                listing.code = "C\(rating)"
                listing.name = "n\(rating)"
                listing.rating = rating
            }
            try context.save()
            let held = try context.fetch(FetchRequest<Listing>(sortedBy: [AttributeSort("code")]))
            // Saved elsewhere from inside this block: the merge waits for the block's end, so `held[0]`
            // still holds its older row ("C1", rating 1) while the store holds "C9" and 9.
            try other.performAndWait {
                let first = try other.fetch(FetchRequest<Listing>(where: "code", equals: "C1"))[0]
                first.code = "C9"
                first.rating = 9
                try other.save()
            }
            #expect(held[0].code == "C1")
            var request = FetchRequest<Listing>(sortedBy: [AttributeSort("code", ascending: false)])
            request.includesPendingChanges = false
            request.includesSubentities = false
            // A limit of 1 reads the index's order; no limit, every match sorted.
            request.fetchLimit = indexed ? 1 : 0
            #expect(try context.fetch(request).first === held[0], "sorted on the store's C9, first")
            request.fetchLimit = 0
            request.predicate = #Predicate { $0.rating > 5 }
            #expect(try context.fetch(request).map(\.objectID) == [held[0].objectID], "matched on the store's 9")
            request.predicate = nil
            #expect(try context.fetch(request).map(\.objectID) == [held[0], held[2], held[1]].map(\.objectID))
            // And by a sort descriptor's key path, read on the store's row too.
            var byKeyPath = FetchRequest<Listing>(sortBy: [SortDescriptor(\.code, order: .reverse)])
            byKeyPath.includesPendingChanges = false
            #expect(try context.fetch(byKeyPath).map(\.objectID) == [held[0], held[2], held[1]].map(\.objectID))
            // fetchValues returns the committed values it sorted on, not the objects' own.
            held[1].code = "A"
            request.fetchLimit = indexed ? 3 : 0
            #expect(
                try context.fetchValues(request, properties: ["code"]).map { $0["code"] }
                    == ["C9", "C3", "C2"].map { .string($0) })
        }
    }

    @Test("a controller sorted by attributes keeps the order a fresh fetch gives, through random changes")
    func controllerFollowsChanges() throws {
        let generator = PredicateGenerator(seed: 19)
        // Swift's `String <` on Linux is no consistent order for the generator's mixed-normalization
        // labels ("é" and "e\u{301}"), so that a sort of them depends on the algorithm: ASCII ones here.
        func fill(_ specimen: Specimen) {
            generator.fill(specimen)
            specimen.label = generator.pick(["", "a", "ab", "Ab", "abc", "b", "zz"])
        }
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "attribute-sort-controller")
        let other = try makeContext(manager, "attribute-sort-other")
        try context.performAndWait {
            for _ in 0..<120 {
                fill(context.insert(Specimen.self))
            }
            try context.save()
        }
        for descriptors in [[], [SortDescriptor(\Specimen.label, comparator: .lexical)]] {
            var request = FetchRequest<Specimen>(
                predicate: #Predicate { $0.count > -4 },
                sortedBy: [AttributeSort("level"), AttributeSort("label", ascending: false)])
            request.sortDescriptors = descriptors
            let controller = try context.performAndWait {
                let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
                try controller.performFetch()
                return controller
            }
            for round in 0..<60 {
                if round % 3 == 0 {
                    // Another context saves: merged into this one asynchronously, on its queue.
                    try other.performAndWait {
                        let objects = try other.fetch(FetchRequest<Specimen>())
                        for object in objects where generator.integer(0...9) == 0 {
                            fill(object)
                        }
                        try other.save()
                    }
                    flush(context)
                } else {
                    try context.performAndWait {
                        let objects = try context.fetch(FetchRequest<Specimen>())
                        for object in objects where generator.integer(0...12) == 0 {
                            fill(object)
                        }
                        if generator.integer(0...3) == 0 {
                            fill(context.insert(Specimen.self))
                        }
                        if generator.integer(0...3) == 0, let victim = objects.randomElement(using: &generator.random) {
                            context.delete(victim)
                        }
                        if round % 2 == 0 { try context.save() } else { context.processPendingChanges() }
                    }
                }
                try context.performAndWait {
                    let fresh = try context.fetch(request)
                    let everything = try context.fetch(FetchRequest<Specimen>(predicate: request.predicate))
                    let reference = Self.reference(everything, request.attributeSorts, descriptors)
                    let expected = reference.map(\.objectID)
                    let fetched = fresh.map(\.objectID)
                    let followed = controller.fetchedObjects?.map(\.objectID) ?? []
                    guard fetched == expected, followed == expected else {
                        let describe = { (ids: [ObjectID]) in
                            ids.prefix(8).map { id in
                                let object = try! context.existingObject(with: id) as! Specimen
                                return
                                    "\(id.uriRepresentation.lastPathComponent):\(object.level.map(String.init) ?? "nil")/\(object.label)"
                            }.joined(separator: " ")
                        }
                        let message: String =
                            "round \(round), descriptors \(descriptors.count): fetch \(fetched == expected), controller "
                            + "\(followed == expected)\nexpected \(describe(expected))\ncontroller \(describe(followed))"
                        Issue.record("\(message)")
                        return
                    }
                }
            }
        }
    }

    @Test("a sort by a name that is not an ordered stored attribute traps, naming it")
    func wrongNamesTrap() async {
        let unknown = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = makeManager(model: specimenModel)
            let context = try makeContext(manager, "attribute-sort-unknown")
            try context.performAndWait {
                _ = try context.fetch(FetchRequest<Specimen>(sortedBy: [AttributeSort("colour")]))
            }
        }
        let message = unknown.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(message.contains("'colour' of 'Specimen', which has no attribute of that name"), "\(message)")
        let unordered = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = makeManager(model: specimenModel)
            let context = try makeContext(manager, "attribute-sort-bool")
            try context.performAndWait {
                _ = try context.fetch(FetchRequest<Specimen>(sortedBy: [AttributeSort("flag")]))
            }
        }
        let second = unordered.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        #expect(second.contains("'Specimen.flag', of type boolean, whose values have no order"), "\(second)")
    }
}

/// A limited fetch sorted by an indexed attribute reads the index's order instead of every row.
@Suite("Attribute sorts read from an index")
struct IndexedAttributeSortTests {
    /// The ways of reading a sorted page, each compared with itself through the index and a scan.
    enum PageForm: CaseIterable {
        case fetch, objectIDs, enumerate, values

        /// The page's objects (their IDs; for `values`, the attributes `fetchValues` returns).
        func page<Object: ManagedObject>(of request: FetchRequest<Object>, in context: ManagedObjectContext) throws
            -> [String]
        {
            switch self {
            case .fetch: return try context.fetch(request).map { "\($0.objectID)" }
            case .objectIDs: return try context.fetchObjectIDs(request).map { "\($0)" }
            case .enumerate:
                var ids: [String] = []
                try context.enumerate(request, batchSize: 7) { ids.append("\($0.objectID)") }
                return ids
            case .values: return try context.fetchValues(request).map { "\($0.sorted { $0.key < $1.key })" }
            }
        }
    }

    @Test("a limited page sorted by an indexed attribute is the page a scan gives, through unsaved and merged changes")
    func sameAsScan() throws {
        var random = SeededGenerator(seed: 23)
        let manager = makeManager(model: listingModel)
        let context = try makeContext(manager, "indexed-sort")
        // Every object fetched stays registered: those another context's save changes hold their
        // older rows until the merge arrives.
        context.performAndWait { context.retainsRegisteredObjects = true }
        let other = try makeContext(manager, "indexed-sort-other")
        var next = 0
        try context.performAndWait {
            for _ in 0..<1_500 {
                IndexTests.fill(context.insert(Listing.self), next, &random)
                next += 1
            }
            try context.save()
        }
        let sorts: [[AttributeSort]] = [
            [AttributeSort("code")], [AttributeSort("code", ascending: false)],
            [AttributeSort("rating"), AttributeSort("code", ascending: false)],
            [AttributeSort("rating", ascending: false), AttributeSort("name")],
            [AttributeSort("country"), AttributeSort("code")],
        ]
        for round in 0..<scaledRounds(150) {
            let step = Int.random(in: 0..<6, using: &random)
            /// Another context changes and deletes some rows and saves.
            func saveElsewhere() throws {
                try other.performAndWait {
                    let some = try other.fetch(
                        FetchRequest<Listing>(sortedBy: [AttributeSort("code")], fetchLimit: 400))
                    for listing in some where Int.random(in: 0..<20, using: &random) == 0 {
                        listing.rating = Int.random(in: 0..<4, using: &random)
                        listing.code = "C\(next)"
                        next += 1
                    }
                    if let victim = some.randomElement(using: &random) {
                        other.delete(victim)
                    }
                    try other.save()
                }
            }
            if step == 0 {
                try saveElsewhere()
            }
            let report: String? = try context.performAndWait {
                if step == 3 {
                    // Saved elsewhere from inside this context's block: its merge waits for the block,
                    // so the objects here hold older rows than the index describes.
                    try saveElsewhere()
                }
                if step == 1 || step == 2 {
                    let some = try context.fetch(
                        FetchRequest<Listing>(sortedBy: [AttributeSort("code")], fetchLimit: 300))
                    for listing in some where Int.random(in: 0..<25, using: &random) == 0 {
                        switch Int.random(in: 0..<3, using: &random) {
                        case 0: listing.rating = Int.random(in: 0..<4, using: &random)
                        case 1:
                            listing.code = "C\(next)"
                            next += 1
                        default: context.delete(listing)
                        }
                    }
                    if Bool.random(using: &random) {
                        IndexTests.fill(context.insert(Listing.self), next, &random)
                        next += 1
                    }
                    if step == 2 {
                        try context.save()
                    }
                }
                for _ in 0..<4 {
                    // One predicate on an attribute the rounds change: without pending changes, it is
                    // evaluated on the committed values.
                    let predicate: Predicate<Listing>? = [
                        nil, #Predicate { $0.name != "n1" }, #Predicate { $0.rating != 2 },
                    ].randomElement(using: &random)!
                    var request = FetchRequest<Listing>(
                        predicate: predicate, sortedBy: sorts.randomElement(using: &random)!,
                        fetchLimit: Int.random(in: 1...30, using: &random),
                        fetchOffset: Int.random(in: 0...10, using: &random), includesSubentities: false)
                    request.includesSubentities = false
                    // Committed values only now and then (what the asynchronous fetches match).
                    request.includesPendingChanges = Int.random(in: 0..<3, using: &random) != 0
                    let form = PageForm.allCases.randomElement(using: &random)!
                    context.usesIndexes = true
                    let indexed = try form.page(of: request, in: context)
                    context.usesIndexes = false
                    let scanned = try form.page(of: request, in: context)
                    context.usesIndexes = true
                    if indexed != scanned {
                        return
                            "round \(round): \(form) \(request.attributeSorts), limit \(request.fetchLimit), offset \(request.fetchOffset), pending \(request.includesPendingChanges)"
                    }
                }
                return nil
            }
            if let report {
                Issue.record("\(report)")
                return
            }
        }
    }

    @Test("the top 10 of thousands by an indexed attribute examines about 10 rows, not every row")
    func examinesFewRows() throws {
        var random = SeededGenerator(seed: 41)
        let manager = makeManager(model: listingModel)
        let context = try makeContext(manager, "indexed-sort-cost")
        try context.performAndWait {
            for index in 0..<3_000 {
                IndexTests.fill(context.insert(Listing.self), index, &random)
            }
            try context.save()
            context.reset()
            var request = FetchRequest<Listing>(sortedBy: [AttributeSort("code", ascending: false)], fetchLimit: 10)
            request.includesSubentities = false
            context.rowsExamined = 0
            let top = try context.fetch(request)
            #expect(top.map(\.code) == (0..<3_000).map { "C\($0)" }.sorted(by: >).prefix(10).map { $0 })
            #expect(context.rowsExamined <= 10, "examined \(context.rowsExamined) rows")
            context.usesIndexes = false
            context.rowsExamined = 0
            #expect(try context.fetch(request).map(\.code) == top.map(\.code))
            #expect(context.rowsExamined == 3_000)
            // With every object registered and current, the first page notes it: the next ones look
            // at the objects with unsaved changes only, not at every registered object.
            context.usesIndexes = true
            let all = try context.fetch(FetchRequest<Listing>(includesSubentities: false))
            let entityIndex = context.model.entities.firstIndex { $0.name == "Listing" }!
            context.currentRowsToken[entityIndex] = nil
            _ = try context.fetch(request)
            #expect(context.currentRowsToken[entityIndex] != nil, "the page did not note that every object is current")
            #expect(all.count == 3_000)
        }
    }

    @Test("enumerate, fetchValues and fetches of committed values read a limited page from the index too")
    func everyFormReadsTheIndex() async throws {
        var random = SeededGenerator(seed: 9)
        let manager = makeManager(model: listingModel)
        let context = try makeContext(manager, "indexed-sort-forms")
        var request = FetchRequest<Listing>(sortedBy: [AttributeSort("code", ascending: false)], fetchLimit: 10)
        request.includesSubentities = false
        let expected = (0..<3_000).map { "C\($0)" }.sorted(by: >).prefix(10).map { $0 }
        try context.performAndWait {
            for index in 0..<3_000 {
                IndexTests.fill(context.insert(Listing.self), index, &random)
            }
            try context.save()
            context.reset()
            context.rowsExamined = 0
            var codes: [String] = []
            try context.enumerate(request, batchSize: 4) { codes.append($0.code) }
            #expect(codes == expected)
            #expect(context.rowsExamined <= 10, "enumerate examined \(context.rowsExamined) rows")
            context.rowsExamined = 0
            let values = try context.fetchValues(request, properties: ["code"])
            #expect(values.map { $0["code"] } == expected.map { .string($0) })
            #expect(context.rowsExamined <= 10, "fetchValues examined \(context.rowsExamined) rows")
            // Committed values only, with an unsaved change that would put an object first: it is
            // sorted on its committed value, as a scan sorts it.
            let first = try context.fetch(FetchRequest<Listing>(where: "code", equals: "C5"))[0]
            first.code = "Z"
            var committed = request
            committed.includesPendingChanges = false
            context.rowsExamined = 0
            #expect(
                try context.fetch(committed).map { $0.committedValues(forKeys: ["code"])["code"] }
                    == expected.map { .string($0) })
            #expect(context.rowsExamined <= 11, "a committed-values fetch examined \(context.rowsExamined) rows")
            #expect(try context.fetch(request).first?.code == "Z")
        }
        // The asynchronous fetch matches committed values on a private queue, by the same path.
        let ids = try await context.fetchObjectIDs(request)
        let codes = try context.performAndWait {
            try ids.map { try context.existingObject(with: $0, as: Listing.self).code }
        }
        #expect(codes == expected)
    }
}

/// Readings with indexed, non-optional floating-point and date attributes.
final class Reading: ManagedObject {
    @Attribute(.indexed) var value: Double = 0
    @Attribute(.indexed) var taken: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var label: String = ""
    @Attribute(.indexed) var reviewed: Date? = nil
}

let readingModel = ManagedObjectModel([Reading.self])

@Suite("Attribute sorts read from a floating-point or date index")
struct FloatingIndexedAttributeSortTests {
    /// `objects` (in fetch order) sorted by `sorts` as ``AttributeSort`` documents: `<` on each
    /// value, `nil` and NaN first when ascending, ties in the given order.
    static func referenceOrder(_ objects: [Reading], _ sorts: [AttributeSort]) -> [Reading] {
        /// -1, 0 or 1: `a` before, tied with, or after `b`.
        func compare<Value: Comparable>(_ a: Value?, _ b: Value?) -> Int {
            switch (a, b) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let a?, let b?): return a < b ? -1 : b < a ? 1 : 0
            }
        }
        func notNaN(_ date: Date?) -> Date? {
            date.flatMap { $0.timeIntervalSinceReferenceDate.isNaN ? nil : $0 }
        }
        return objects.enumerated().sorted { left, right in
            for sort in sorts {
                let (a, b) = (left.element, right.element)
                var order: Int
                switch sort.attributeName {
                case "value": order = compare(a.value.isNaN ? nil : a.value, b.value.isNaN ? nil : b.value)
                case "taken": order = compare(notNaN(a.taken), notNaN(b.taken))
                case "reviewed": order = compare(notNaN(a.reviewed), notNaN(b.reviewed))
                default: order = compare(a.label, b.label)
                }
                if !sort.ascending {
                    order = -order
                }
                if order != 0 {
                    return order < 0
                }
            }
            return left.offset < right.offset
        }.map(\.element)
    }

    @Test(
        "a limited page by an indexed Double or Date, optional or not, is the page a scan gives and the reference order (NaN as nil); a NaN makes both sort all"
    )
    func sameAsScan() throws {
        var random = SeededGenerator(seed: 41)
        let values: [Double] = [-1.5, 0, -0.0, 2, 3.25, 7, -20]
        let manager = makeManager(model: readingModel)
        let context = try makeContext(manager, "floating-indexed-sort")
        context.performAndWait { context.retainsRegisteredObjects = true }
        func fill(_ reading: Reading, allowingNaN: Bool) {
            reading.value =
                allowingNaN && Int.random(in: 0..<50, using: &random) == 0
                ? .nan : values.randomElement(using: &random)!
            reading.taken = Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0..<40, using: &random)))
            reading.label = ["a", "b", "c"].randomElement(using: &random)!
            reading.reviewed =
                Int.random(in: 0..<4, using: &random) == 0
                ? nil : Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0..<60, using: &random)))
        }
        try context.performAndWait {
            for _ in 0..<800 {
                fill(context.insert(Reading.self), allowingNaN: false)
            }
            try context.save()
        }
        let sorts: [[AttributeSort]] = [
            [AttributeSort("value")], [AttributeSort("value", ascending: false), AttributeSort("label")],
            [AttributeSort("taken", ascending: false)], [AttributeSort("taken"), AttributeSort("value")],
            [AttributeSort("reviewed", ascending: false)], [AttributeSort("reviewed"), AttributeSort("label")],
        ]
        let rounds = scaledRounds(120)
        for round in 0..<rounds {
            // NaNs only in the last rounds: then neither the index nor a scan is in a consistent order,
            // and the fetch must not read the index.
            let allowingNaN = round >= rounds - rounds / 6
            let report: String? = try context.performAndWait {
                let some = try context.fetch(FetchRequest<Reading>(sortedBy: [AttributeSort("label")], fetchLimit: 200))
                for reading in some where Int.random(in: 0..<30, using: &random) == 0 {
                    if Bool.random(using: &random) {
                        fill(reading, allowingNaN: allowingNaN)
                    } else {
                        context.delete(reading)
                    }
                }
                if Bool.random(using: &random) {
                    fill(context.insert(Reading.self), allowingNaN: allowingNaN)
                }
                if round % 3 == 0 {
                    try context.save()
                }
                for _ in 0..<4 {
                    var request = FetchRequest<Reading>(
                        sortedBy: sorts.randomElement(using: &random)!,
                        // Now and then a page longer than the non-nil values of `reviewed`.
                        fetchLimit: Int.random(in: 0..<8, using: &random) == 0
                            ? 900 : Int.random(in: 1...25, using: &random),
                        fetchOffset: Int.random(in: 0...10, using: &random))
                    request.includesPendingChanges = Int.random(in: 0..<3, using: &random) != 0
                    let form = IndexedAttributeSortTests.PageForm.allCases.randomElement(using: &random)!
                    context.rowsExamined = 0
                    let indexed = try form.page(of: request, in: context)
                    let examined = context.rowsExamined
                    context.usesIndexes = false
                    let scanned = try form.page(of: request, in: context)
                    context.usesIndexes = true
                    if indexed != scanned {
                        return
                            "round \(round): \(form) \(request.attributeSorts), limit \(request.fetchLimit), pending \(request.includesPendingChanges)"
                    }
                    if request.includesPendingChanges {
                        // The documented order, sorted here: a NaN as nil (first when ascending), ties
                        // in fetch order.
                        let all = try context.fetch(FetchRequest<Reading>())
                        let expected = Self.referenceOrder(all, request.attributeSorts)
                            .dropFirst(request.fetchOffset).prefix(request.fetchLimit).map(\.objectID)
                        if try context.fetch(request).map(\.objectID) != expected {
                            return "round \(round): \(request.attributeSorts) is not the reference order"
                        }
                    }
                    // An ascending sort of `reviewed` needs its `nil` rows, which only a scan finds.
                    let first = request.attributeSorts[0]
                    let readsIndex =
                        !allowingNaN && request.fetchLimit < 900
                        && !(first.attributeName == "reviewed" && first.ascending)
                    if readsIndex && examined >= 800 {
                        return "round \(round): the index was not read (\(examined) rows examined)"
                    }
                }
                return nil
            }
            if let report {
                Issue.record("\(report)")
                return
            }
        }
    }
}
