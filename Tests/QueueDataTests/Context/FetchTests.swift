import Foundation
import QueueData
import Testing

@Suite("Fetching")
struct FetchTests {
    let manager = makeManager()
    let context: ManagedObjectContext
    let names = ["Paris", "Berlin", "Athens", "Rome", "Oslo", "Cairo", "Lima", "Quito"]

    init() throws {
        context = try makeContext(manager, "fetch")
        try seedDestinations(context, names)  // ratings 0...7 in this order
    }

    @Test("a predicate filters and objects come in insertion order without sort descriptors")
    func predicate() throws {
        let result = try context.performAndWait {
            try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating >= 5 })).map(\.name)
        }
        #expect(result == ["Cairo", "Lima", "Quito"])
        let all = try context.performAndWait { try context.fetch(FetchRequest<Destination>()).map(\.name) }
        #expect(all == names)
    }

    @Test("sort descriptors order ascending, descending and by several keys")
    func sorting() throws {
        try context.performAndWait {
            let ascending = try context.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)]))
            #expect(ascending.map(\.name) == names.sorted())
            let descending = try context.fetch(
                FetchRequest<Destination>(sortBy: [SortDescriptor(\.rating, order: .reverse)]))
            #expect(descending.map(\.name) == names.reversed())
            for (index, object) in try context.fetch(FetchRequest<Destination>()).enumerated() {
                object.country = index.isMultiple(of: 2) ? "even" : "odd"
            }
            let twoKeys = try context.fetch(
                FetchRequest<Destination>(sortBy: [SortDescriptor(\.country), SortDescriptor(\.name, order: .reverse)]))
            #expect(twoKeys.map(\.name) == ["Paris", "Oslo", "Lima", "Athens", "Rome", "Quito", "Cairo", "Berlin"])
        }
    }

    @Test(
        "fetchLimit and fetchOffset page through the sorted results",
        arguments: [
            (0, 0, 8), (3, 0, 3), (3, 2, 3), (0, 6, 2), (5, 6, 2), (4, 8, 0), (2, 100, 0),
        ])
    func paging(limit: Int, offset: Int, expectedCount: Int) throws {
        let sorted = names.sorted()
        let result = try context.performAndWait {
            try context.fetch(
                FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)], fetchLimit: limit, fetchOffset: offset)
            ).map(\.name)
        }
        #expect(result.count == expectedCount)
        #expect(result == Array(sorted.dropFirst(offset).prefix(expectedCount)))
        let unsorted = try context.performAndWait {
            try context.fetch(FetchRequest<Destination>(fetchLimit: limit, fetchOffset: offset)).map(\.name)
        }
        #expect(unsorted == Array(names.dropFirst(offset).prefix(expectedCount)))
        let count = try context.performAndWait {
            try context.count(for: FetchRequest<Destination>(fetchLimit: limit, fetchOffset: offset))
        }
        #expect(count == expectedCount)
    }

    @Test("a limited sorted page of many matches is the same page of the whole sorted result, with unsaved changes")
    func limitedPagesOfManyMatches() throws {
        let manager = ContextManager(delegate: TestStoreDelegate())
        defer { manager.close() }
        let context = try makeContext(manager, "top")
        var random = SeededGenerator(seed: 77)
        try context.performAndWait {
            for index in 0..<800 {
                let destination = context.insert(Destination.self)
                destination.name = "d\(Int.random(in: 0..<50, using: &random))"
                destination.rating = index % 5
            }
            try context.save()
        }
        try context.performAndWait {
            // Some unsaved changes and inserts: registered objects among rows the context let go.
            let all = try context.fetch(FetchRequest<Destination>())
            for object in all.shuffled(using: &random).prefix(40) {
                object.rating = Int.random(in: 0..<5, using: &random)
            }
            for _ in 0..<20 {
                let destination = context.insert(Destination.self)
                destination.name = "d\(Int.random(in: 0..<50, using: &random))"
            }
        }
        for _ in 0..<scaledRounds(200) {
            var descriptors = [
                SortDescriptor<Destination>(\.rating, order: Bool.random(using: &random) ? .forward : .reverse)
            ]
            if Bool.random(using: &random) {
                descriptors.append(SortDescriptor(\.name, order: Bool.random(using: &random) ? .forward : .reverse))
            }
            let limit = Int.random(in: 1...40, using: &random)
            let offset = Int.random(in: 0...60, using: &random)
            // A block each, the page first: the rows the context let go are not registered.
            try context.performAndWait {
                let page = try context.fetch(
                    FetchRequest<Destination>(sortBy: descriptors, fetchLimit: limit, fetchOffset: offset)
                ).map(\.objectID)
                let whole = try context.fetch(FetchRequest<Destination>(sortBy: descriptors)).map(\.objectID)
                #expect(page == Array(whole.dropFirst(offset).prefix(limit)), "limit \(limit), offset \(offset)")
            }
        }
    }

    @Test("unsaved inserts that match are returned, unsaved deletes are not")
    func pendingChanges() throws {
        try context.performAndWait {
            let inserted = context.insert(Destination.self)
            inserted.name = "Nairobi"
            inserted.rating = 9
            let rome = try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "Rome" }))[0]
            context.delete(rome)
            let athens = try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "Athens" }))[0]
            athens.rating = 100

            let high = try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating >= 3 }))
            #expect(high.map(\.name) == ["Athens", "Oslo", "Cairo", "Lima", "Quito", "Nairobi"])
            #expect(try context.count(for: FetchRequest<Destination>()) == 8)
            #expect(try context.count(for: FetchRequest<Destination>(predicate: #Predicate { $0.rating >= 3 })) == 6)

            var committedOnly = FetchRequest<Destination>(predicate: #Predicate { $0.rating >= 3 })
            committedOnly.includesPendingChanges = false
            #expect(try context.fetch(committedOnly).map(\.name) == ["Rome", "Oslo", "Cairo", "Lima", "Quito"])
            committedOnly.predicate = nil
            #expect(try context.count(for: committedOnly) == 8)
        }
    }

    @Test("fetching the same object twice returns the same instance (identity map)")
    func identityMap() throws {
        try context.performAndWait {
            let first = try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "Oslo" }))
            let second = try context.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)]))
            let oslo = try #require(second.first { $0.name == "Oslo" })
            #expect(first[0] === oslo)
            #expect(context.object(with: oslo.objectID) === oslo)
            #expect(context.registeredObjects.count == names.count)
        }
    }

    @Test("only matching rows are registered; IDs and counts register nothing")
    func nonMatchingRowsStayUnregistered() throws {
        let reader = try makeContext(manager, "reader")
        try reader.performAndWait {
            let ids = try reader.fetchObjectIDs(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)]))
            #expect(ids.count == names.count)
            #expect(try reader.count(for: FetchRequest<Destination>(predicate: #Predicate { $0.rating > 1 })) == 6)
            #expect(reader.registeredObjects.isEmpty)
            let two = try reader.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating < 2 }))
            #expect(two.count == 2)
            #expect(reader.registeredObjects.count == 2)
            #expect((reader.object(with: ids[0]) as? Destination)?.name == "Athens")
        }
    }

    @Test("a fetch for a class includes its subclasses' entities unless told otherwise")
    func subentities() throws {
        try context.performAndWait {
            context.insert(Vehicle.self).wheels = 3
            let bicycle = context.insert(Bicycle.self)
            bicycle.wheels = 2
            bicycle.gears = 21
            try context.save()
            let vehicles = try context.fetch(FetchRequest<Vehicle>(sortBy: [SortDescriptor(\.wheels)]))
            #expect(vehicles.map(\.wheels) == [2, 3])
            #expect(vehicles.first is Bicycle)
            let exact = try context.fetch(FetchRequest<Vehicle>(includesSubentities: false))
            #expect(exact.map(\.wheels) == [3])
            let bicycles = try context.fetch(FetchRequest<Bicycle>(predicate: #Predicate { $0.gears > 10 }))
            #expect(bicycles.map(\.gears) == [21])
        }
    }

    @Test("object(with:) and existingObject(with:as:) find saved objects and report missing ones")
    func lookups() throws {
        let reader = try makeContext(manager, "lookups")
        let ids = try reader.performAndWait { try reader.fetchObjectIDs(FetchRequest<Destination>()) }
        try reader.performAndWait {
            let paris = try reader.existingObject(with: ids[0], as: Destination.self)
            #expect(paris.name == "Paris")
            #expect {
                try reader.existingObject(with: ids[0], as: Trip.self)
            } throws: { error in
                (error as? ContextError)?.code == .wrongType
            }
            reader.delete(paris)
            try reader.save()
            #expect(reader.object(with: ids[0]) == nil)
            #expect {
                try reader.existingObject(with: ids[0], as: Destination.self)
            } throws: { error in
                (error as? ContextError)?.code == .objectNotFound && (error as? ContextError)?.objectID == ids[0]
            }
        }
    }

    @Test("a predicate that throws makes the fetch throw")
    func throwingPredicate() {
        context.performAndWait {
            let request = FetchRequest<Destination>(predicate: #Predicate { [0, 1][$0.rating] == 1 })
            #expect(throws: (any Error).self) {
                try context.fetch(request)
            }
        }
    }

    @Test("fetching keeps no state in the request: the same request gives the same page every time")
    func requestUnchanged() async throws {
        // A value type: no fetch can change the caller's request (BSConcurrentManagedObjectContext
        // changed it). What is left to check is that reusing one gives the same result each time.
        let request = FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)], fetchLimit: 2, fetchOffset: 1)
        let page = ["Berlin", "Cairo"]
        try context.performAndWait {
            #expect(try context.fetch(request).map(\.name) == page)
            #expect(try context.fetch(request).map(\.name) == page)
            let ids = try context.fetchObjectIDs(request)
            #expect(ids.map { (context.object(with: $0) as? Destination)?.name } == page)
        }
        #expect(try await context.fetch(request) { $0.map(\.name) } == page)
        #expect(try context.performAndWait { try context.fetch(request).map(\.name) } == page)
    }
}

@Suite("Sorting")
struct SortingTests {
    /// A stable `SortDescriptor` sort: the reference every fetch must reproduce.
    func referenceOrder<T>(_ objects: [T], _ descriptors: [SortDescriptor<T>]) -> [T] {
        objects.enumerated().sorted { left, right in
            for descriptor in descriptors {
                let result = descriptor.compare(left.element, right.element)
                if result != .orderedSame {
                    return result == .orderedAscending
                }
            }
            return left.offset < right.offset
        }.map(\.element)
    }

    @Test("sorted fetches order exactly like SortDescriptor, on random data with many ties", arguments: 0..<12)
    func matchesSortDescriptor(seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed))
        let context = try makeContext(makeManager(), "sorting-\(seed)")
        let descriptorChoices: [SortDescriptor<AllTypes>] = [
            SortDescriptor(\.int), SortDescriptor(\.int16, order: .reverse), SortDescriptor(\.double),
            SortDescriptor(\.string), SortDescriptor(\.string, order: .reverse), SortDescriptor(\.date),
            SortDescriptor(\.decimal), SortDescriptor(\.uuid), SortDescriptor(\.float, order: .reverse),
            SortDescriptor(\.optionalString), SortDescriptor(\.optionalInt, order: .reverse),
        ]
        try context.performAndWait {
            for _ in 0..<300 {
                let object = context.insert(AllTypes.self)
                object.int = Int.random(in: -3...3, using: &generator)
                object.int16 = Int16.random(in: -2...2, using: &generator)
                object.double = [-0.0, 0.0, 1.5, -2.25, .infinity].randomElement(using: &generator)!
                object.string = ["", "a", "B", "ab", "é", "e\u{301}", "Z", "aa"].randomElement(using: &generator)!
                object.date = Date(timeIntervalSince1970: Double(Int.random(in: 0...4, using: &generator)))
                object.decimal = Decimal(Int.random(in: -2...2, using: &generator)) / 4
                object.uuid = [
                    UUID(uuidString: "00000000-0000-0000-0000-000000000001")!,
                    UUID(uuidString: "FFFFFFFF-0000-0000-0000-000000000000")!,
                ].randomElement(using: &generator)!
                object.float = Float(Int.random(in: 0...3, using: &generator))
                object.optionalString =
                    Bool.random(using: &generator) ? nil : ["x", "y"].randomElement(using: &generator)!
                object.optionalInt = Bool.random(using: &generator) ? nil : Int.random(in: 0...2, using: &generator)
            }
            if seed.isMultiple(of: 2) {
                try context.save()
            }
            let unsorted = try context.fetch(FetchRequest<AllTypes>())
            for _ in 0..<8 {
                let descriptors = (0..<Int.random(in: 1...3, using: &generator)).map { _ in
                    descriptorChoices.randomElement(using: &generator)!
                }
                let fetched = try context.fetch(FetchRequest<AllTypes>(sortBy: descriptors))
                let expected = referenceOrder(unsorted, descriptors)
                #expect(fetched.map(ObjectIdentifier.init) == expected.map(ObjectIdentifier.init))
            }
        }
    }
}

/// A deterministic random number generator (SplitMix64) for reproducible tests.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed &+ 0x9E37_79B9_7F4A_7C15
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Predicates on object state")
struct PredicateStateTests {
    @Test("a predicate on objectID matches the right unregistered rows")
    func objectIDPredicate() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "id-predicate")
        let ids = try seedDestinations(context, ["A", "B", "C", "D"])
        let target = ids[2]
        let fresh = try makeContext(manager, "id-reader")
        try fresh.performAndWait {
            let found = try fresh.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.objectID == target }))
            #expect(found.map(\.name) == ["C"])
        }
    }
}
