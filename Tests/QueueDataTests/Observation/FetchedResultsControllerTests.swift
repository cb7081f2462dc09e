import Dispatch
import Foundation
import Testing

@testable import QueueData

/// Places for the controller tests: sectioned by country, sorted by name, rating or score.
final class Place: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var country: String = ""
    @Attribute var rating: Int = 0
    @Attribute var score: Double? = nil
    @Attribute var visited: Bool = false
    @Attribute var note: String? = nil
}

let placeModel = ManagedObjectModel([Place.self])

/// A delegate that records every callback, and checks each batch's difference.
final class RecordingDelegate: FetchedResultsControllerDelegate {
    typealias Object = Place

    var calls: [String] = []
    var differences: [FetchedResultsDifference] = []

    func controllerWillChangeContent(_ controller: FetchedResultsController<Place>) {
        calls.append("will")
    }

    func controller(
        _ controller: FetchedResultsController<Place>,
        didChange section: FetchedResultsSection<Place>,
        atSectionIndex sectionIndex: Int,
        for type: FetchedResultsChangeType
    ) {
        calls.append("section \(type) \(sectionIndex) \(section.name)")
    }

    func controller(
        _ controller: FetchedResultsController<Place>,
        didChange object: Place,
        at indexPath: IndexPath?,
        for type: FetchedResultsChangeType,
        newIndexPath: IndexPath?
    ) {
        calls.append("object \(type) \(indexPath.map { "\($0)" } ?? "-") \(newIndexPath.map { "\($0)" } ?? "-")")
    }

    func controllerDidChangeContent(_ controller: FetchedResultsController<Place>) {
        calls.append("did")
    }

    func controller(
        _ controller: FetchedResultsController<Place>,
        didChangeContentWith difference: FetchedResultsDifference
    ) {
        differences.append(difference)
    }
}

/// The controller's configurations under test.
enum ControllerShape: String, CaseIterable, CustomTestStringConvertible {
    /// Sections by country, sorted by country then name; a predicate.
    case sectionedBySort
    /// Sections by country, sorted by rating (descending) then name: sections by name.
    case sectionedByName
    /// One section, sorted by optional score then name, with a fetch batch size.
    case batched
    /// One section, sorted with a string comparator (objects compared), no predicate.
    case comparator
    /// Sections by country, sorted by country descending then name: sections follow the sort.
    case sectionedByReverseSort

    var testDescription: String { rawValue }

    func request() -> FetchRequest<Place> {
        switch self {
        case .sectionedBySort:
            return FetchRequest(
                predicate: #Predicate { $0.rating > 0 }, sortBy: [SortDescriptor(\.country), SortDescriptor(\.name)])
        case .sectionedByName:
            return FetchRequest(
                predicate: #Predicate { $0.rating > 0 && !$0.visited },
                sortBy: [SortDescriptor(\.rating, order: .reverse), SortDescriptor(\.name)])
        case .batched:
            var request = FetchRequest<Place>(
                predicate: #Predicate { $0.rating != 2 }, sortBy: [SortDescriptor(\.score), SortDescriptor(\.name)])
            request.fetchBatchSize = 4
            return request
        case .comparator:
            return FetchRequest(sortBy: [SortDescriptor(\.name, comparator: .lexical)])
        case .sectionedByReverseSort:
            return FetchRequest(
                predicate: #Predicate { $0.rating > 0 },
                sortBy: [SortDescriptor(\.country, order: .reverse), SortDescriptor(\.name)])
        }
    }

    var hasSections: Bool { self != .batched && self != .comparator }

    func controller(_ context: ManagedObjectContext) -> FetchedResultsController<Place> {
        hasSections
            ? FetchedResultsController(
                fetchRequest: request(), managedObjectContext: context, sectionNameKeyPath: \.country)
            : FetchedResultsController(fetchRequest: request(), managedObjectContext: context)
    }

    /// The reference: a fetch, grouped as the controller documents.
    func expected(_ context: ManagedObjectContext) throws -> FetchedResultsSnapshot {
        let objects = try context.fetch(request())
        guard hasSections else {
            return FetchedResultsSnapshot(sections: [.init(name: "", objectIDs: objects.map(\.objectID))])
        }
        var sections: [(name: String, ids: [ObjectID])] = []
        if self != .sectionedByName {
            for object in objects {
                if sections.last?.name == object.country {
                    sections[sections.count - 1].ids.append(object.objectID)
                } else {
                    sections.append((object.country, [object.objectID]))
                }
            }
        } else {
            for object in objects {
                if let index = sections.firstIndex(where: { $0.name == object.country }) {
                    sections[index].ids.append(object.objectID)
                } else {
                    sections.append((object.country, [object.objectID]))
                }
            }
            sections.sort { $0.name < $1.name }
        }
        return FetchedResultsSnapshot(sections: sections.map { .init(name: $0.name, objectIDs: $0.ids) })
    }
}

@Suite("Fetched-results controller")
struct FetchedResultsControllerTests {
    private static let countries = ["Chile", "Japan", "Kenya", "Peru", ""]
    private static let names = ["Arica", "Beppu", "Cusco", "Dori", "Eldoret", "Fuji", "Gion", "Huaraz", "Iquique"]

    private static func randomize(_ place: Place, _ random: inout SeededGenerator) {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: place.name = names.randomElement(using: &random)!
        case 1: place.country = countries.randomElement(using: &random)!
        case 2: place.rating = Int.random(in: 0...3, using: &random)
        case 3: place.score = Bool.random(using: &random) ? nil : Double(Int.random(in: 0...4, using: &random))
        case 4: place.visited.toggle()
        default: place.note = Bool.random(using: &random) ? nil : "note \(Int.random(in: 0...9, using: &random))"
        }
    }

    private static func insertRandom(_ context: ManagedObjectContext, _ random: inout SeededGenerator) {
        let place = context.insert(Place.self)
        place.name = names.randomElement(using: &random)!
        place.country = countries.randomElement(using: &random)!
        place.rating = Int.random(in: 0...3, using: &random)
        place.score = Bool.random(using: &random) ? nil : Double(Int.random(in: 0...4, using: &random))
    }

    /// One random batch of changes on `context` (its own, unsaved or saved).
    private static func mutate(_ context: ManagedObjectContext, _ random: inout SeededGenerator) throws {
        let places = try context.fetch(FetchRequest<Place>())
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1:
                insertRandom(context, &random)
            case 2:
                if let place = places.randomElement(using: &random), !place.isDeleted {
                    context.delete(place)
                }
            default:
                if let place = places.randomElement(using: &random), !place.isDeleted {
                    randomize(place, &random)
                }
            }
        }
        switch Int.random(in: 0..<12, using: &random) {
        case 0...3: try context.save()
        case 4: context.rollback()
        case 5:
            if let place = places.randomElement(using: &random), !place.isDeleted, !place.isInserted {
                context.refresh(place, mergeChanges: Bool.random(using: &random))
            }
        default: break
        }
    }

    @Test(
        "random changes from its context and others: it equals a fresh fetch, and each batch's difference adds up",
        arguments: ControllerShape.allCases, LifecycleStore.allCases)
    func randomRounds(_ shape: ControllerShape, _ store: LifecycleStore) throws {
        let rounds =
            (ProcessInfo.processInfo.environment["QUEUEDATA_FRC_ROUNDS"].flatMap(Int.init) ?? 150)
            / (store == .memory ? 1 : 3)
        let seed = ProcessInfo.processInfo.environment["QUEUEDATA_FRC_SEED"].flatMap(UInt64.init) ?? 42
        let directory = TemporaryDirectory("frc-\(shape)-\(store)")
        let manager = store.manager(directory, model: placeModel)
        let context = try makeContext(manager, "controller")
        let other = try makeContext(manager, "other")
        var random = SeededGenerator(seed: seed &+ UInt64(ControllerShape.allCases.firstIndex(of: shape)!))
        try context.performAndWait {
            for _ in 0..<20 {
                Self.insertRandom(context, &random)
            }
            try context.save()
        }
        let delegate = RecordingDelegate()
        let controller = context.performAndWait { shape.controller(context) }
        try context.performAndWait {
            controller.delegate = delegate
            try controller.performFetch()
            let expected = try shape.expected(context)
            #expect(controller.snapshot == expected)
        }
        var last = context.performAndWait { controller.snapshot }
        var reported = 0
        for round in 0..<rounds {
            if Int.random(in: 0..<3, using: &random) == 0 {
                var otherRandom = SeededGenerator(seed: random.next())
                try other.performAndWait {
                    try Self.mutate(other, &otherRandom)
                    try other.save()
                }
                flush(context)
            } else {
                var ownRandom = SeededGenerator(seed: random.next())
                try context.performAndWait {
                    try Self.mutate(context, &ownRandom)
                }
            }
            if round % 40 == 39 {
                context.performAndWait { context.reset() }
            }
            try context.performAndWait {
                let expected = try shape.expected(context)
                let actual = controller.snapshot
                #expect(actual == expected, "round \(round) (seed \(seed))")
                for difference in delegate.differences {
                    #expect(difference.old == last, "round \(round): a batch starts where the last ended")
                    #expect(difference.applied(to: difference.old) == difference.new, "round \(round)")
                    last = difference.new
                }
                #expect(last == actual, "round \(round): the batches add up to the controller's content")
                reported += delegate.differences.reduce(0) { $0 + $1.objectChanges.count }
                delegate.differences.removeAll()
                last = actual
            }
        }
        #expect(delegate.calls.first == "will")
        #expect(reported > rounds, "the rounds changed what the controller shows")
        print("FRC \(shape) \(store): \(rounds) rounds, \(reported) object changes reported")
        manager.close()
    }

    @Test(
        "an asynchronous fetch gives what performFetch gives, unsaved changes and changes meanwhile included",
        arguments: ControllerShape.allCases)
    func asynchronousFetch(_ shape: ControllerShape) async throws {
        let manager = LifecycleStore.memory.manager(TemporaryDirectory("frc-async"), model: placeModel)
        let context = try makeContext(manager, "controller")
        let other = try makeContext(manager, "other")
        var random = SeededGenerator(seed: 7)
        try context.performAndWait {
            for _ in 0..<300 {
                Self.insertRandom(context, &random)
            }
            try context.save()
            // Unsaved changes: the committed rows differ from what the context shows.
            for place in try context.fetch(FetchRequest<Place>()).prefix(40) {
                Self.randomize(place, &random)
            }
            Self.insertRandom(context, &random)
        }
        let controller = context.performAndWait { shape.controller(context) }
        let box = UncheckedSendableBox(controller)
        async let fetched: Void = box.value.performFetch()
        try await other.perform {
            var random = SeededGenerator(seed: 9)
            for _ in 0..<5 {
                try Self.mutate(other, &random)
                try other.save()
            }
        }
        try await fetched
        flush(context)
        try context.performAndWait {
            let expected = try shape.expected(context)
            #expect(controller.snapshot == expected)
        }
    }

    @Test("Core Data's callbacks: a sort key change moves, a predicate flip deletes or inserts, other changes update")
    func callbacks() throws {
        let manager = LifecycleStore.memory.manager(TemporaryDirectory("frc-callbacks"), model: placeModel)
        let context = try makeContext(manager, "controller")
        let delegate = RecordingDelegate()
        let (lima, cusco, kyoto) = try context.performAndWait {
            func place(_ name: String, _ country: String) -> Place {
                let place = context.insert(Place.self)
                place.name = name
                place.country = country
                place.rating = 1
                return place
            }
            let places = (place("Lima", "Peru"), place("Cusco", "Peru"), place("Kyoto", "Japan"))
            try context.save()
            return places
        }
        let controller = context.performAndWait {
            FetchedResultsController(
                fetchRequest: ControllerShape.sectionedBySort.request(), managedObjectContext: context,
                sectionNameKeyPath: \.country)
        }
        try context.performAndWait {
            controller.delegate = delegate
            try controller.performFetch()
            #expect(controller.sections?.map(\.name) == ["Japan", "Peru"])
            #expect(controller.sections?.map(\.numberOfObjects) == [1, 2])
            #expect(controller.object(at: IndexPath(indexes: [1, 0])) === cusco)
            #expect(controller.indexPath(forObject: lima) == IndexPath(indexes: [1, 1]))
            #expect(controller.sectionIndexTitles == ["J", "P"])
        }
        context.performAndWait { lima.name = "Arequipa" }  // sorts before Cusco now
        #expect(delegate.calls == ["will", "object move [1, 1] [1, 0]", "did"])
        delegate.calls = []
        context.performAndWait { cusco.visited = true }  // not a sort key
        #expect(delegate.calls == ["will", "object update [1, 1] [1, 1]", "did"])
        delegate.calls = []
        context.performAndWait { kyoto.rating = 0 }  // leaves the predicate, and its section empties
        #expect(delegate.calls == ["will", "section delete 0 Japan", "object delete [0, 0] -", "did"])
        delegate.calls = []
        context.performAndWait { kyoto.rating = 2 }
        #expect(delegate.calls == ["will", "section insert 0 Japan", "object insert - [0, 0]", "did"])
        delegate.calls = []
        context.performAndWait { lima.country = "Chile" }  // a new section, moved into it
        #expect(delegate.calls == ["will", "section insert 0 Chile", "object move [1, 0] [0, 0]", "did"])
        delegate.calls = []
        try context.performAndWait { try context.save() }  // nothing else changed: no batch
        #expect(delegate.calls.isEmpty)
        context.performAndWait {
            let fresh = context.insert(Place.self)
            fresh.name = "Quito"
            fresh.country = "Peru"
            fresh.rating = 3
        }
        delegate.calls = []
        try context.performAndWait { try context.save() }  // its permanent ID: an update in place
        #expect(delegate.calls == ["will", "object update [2, 1] [2, 1]", "did"])
        manager.close()
    }

    @Test("objects compared with a comparator: a change of the sort value moves, any other change updates")
    func comparatorMovesAndUpdates() throws {
        let manager = LifecycleStore.memory.manager(TemporaryDirectory("frc-comparator"), model: placeModel)
        let context = try makeContext(manager, "controller")
        let delegate = RecordingDelegate()
        let controller = try context.performAndWait {
            for name in ["A", "B", "C"] {
                context.insert(Place.self).name = name
            }
            try context.save()
            let controller = FetchedResultsController(
                fetchRequest: ControllerShape.comparator.request(), managedObjectContext: context)
            controller.delegate = delegate
            try controller.performFetch()
            return controller
        }
        context.performAndWait {
            controller.object(at: IndexPath(indexes: [0, 1])).note = "x"
            context.processPendingChanges()
        }
        #expect(delegate.calls == ["will", "object update [0, 1] [0, 1]", "did"])
        delegate.calls = []
        context.performAndWait {
            controller.object(at: IndexPath(indexes: [0, 1])).name = "Bb"  // still between A and C
            context.processPendingChanges()
        }
        #expect(delegate.calls == ["will", "object move [0, 1] [0, 1]", "did"])
        delegate.calls = []
        context.performAndWait {
            controller.object(at: IndexPath(indexes: [0, 0])).name = "D"
            context.processPendingChanges()
        }
        #expect(delegate.calls == ["will", "object move [0, 0] [0, 2]", "did"])
        manager.close()
    }

    @Test("sections that follow a descending sort: new sections take their places while another empties and refills")
    func newSectionsWhileAnotherEmpties() throws {
        let manager = LifecycleStore.memory.manager(TemporaryDirectory("frc-reverse"), model: placeModel)
        let context = try makeContext(manager, "controller")
        let delegate = RecordingDelegate()
        try context.performAndWait {
            var saved: [Place] = []
            for country in ["C", "B"] {
                let place = context.insert(Place.self)
                place.name = "in \(country)"
                place.country = country
                place.rating = 1
                saved.append(place)
            }
            try context.save()
            let controller = FetchedResultsController(
                fetchRequest: ControllerShape.sectionedByReverseSort.request(), managedObjectContext: context,
                sectionNameKeyPath: \.country)
            controller.delegate = delegate
            try controller.performFetch()
            saved[1].rating = 5  // "B"'s only object: not a key, but it leaves and comes back
            saved[0].country = "D"  // "C" empties for good; "D" is new, first
            let newCountries = ["A", "AA", "AB", "AC", "AD", "AE", "AF", "AG", "AH", "AI"]  // all after "B"
            for country in newCountries {
                let place = context.insert(Place.self)
                place.country = country
                place.rating = 1
            }
            context.processPendingChanges()
            #expect(controller.sections?.map(\.name) == ["D", "B"] + newCountries.reversed())
            #expect(controller.snapshot == (try ControllerShape.sectionedByReverseSort.expected(context)))
            let difference = try #require(delegate.differences.last)
            #expect(difference.applied(to: difference.old) == difference.new)
            #expect(difference.new == controller.snapshot)
        }
        manager.close()
    }

    @Test("section index titles: each once, in the order of the sections that first give them")
    func sectionIndexTitlesWithoutRepeats() throws {
        let manager = LifecycleStore.memory.manager(TemporaryDirectory("frc-titles"), model: placeModel)
        let context = try makeContext(manager, "controller")
        try context.performAndWait {
            for country in ["Angola", "Benin", "austria", "Chile", "chad", ""] {
                let place = context.insert(Place.self)
                place.country = country
            }
            try context.save()
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<Place>(sortBy: [SortDescriptor(\.country)]), managedObjectContext: context,
                sectionNameKeyPath: \.country)
            try controller.performFetch()
            #expect(controller.sections?.map(\.name) == ["", "Angola", "Benin", "Chile", "austria", "chad"])
            #expect(controller.sectionIndexTitles == ["A", "B", "C"])
        }
        manager.close()
    }

    @Test("indexPath(forObject:) is nil for an object outside the results, wherever its keys would sort")
    func indexPathOfObjectOutside() throws {
        let manager = LifecycleStore.memory.manager(TemporaryDirectory("frc-outside"), model: placeModel)
        let context = try makeContext(manager, "controller")
        try context.performAndWait {
            func place(_ name: String, rating: Int) -> Place {
                let place = context.insert(Place.self)
                place.name = name
                place.country = "Peru"
                place.rating = rating
                return place
            }
            let inside = place("Lima", rating: 1)
            // Not matched (rating 0): one sorts after every entry of its section, one before.
            let last = place("Zaña", rating: 0)
            let first = place("Abancay", rating: 0)
            try context.save()
            let controller = FetchedResultsController(
                fetchRequest: ControllerShape.sectionedBySort.request(), managedObjectContext: context,
                sectionNameKeyPath: \.country)
            try controller.performFetch()
            #expect(controller.indexPath(forObject: inside) == IndexPath(indexes: [0, 0]))
            #expect(controller.indexPath(forObject: last) == nil)
            #expect(controller.indexPath(forObject: first) == nil)
        }
        manager.close()
    }

    @Test("a 1-object change of a 20k-object controller touches that object, not the list")
    func proportionalCost() throws {
        let manager = LifecycleStore.memory.manager(TemporaryDirectory("frc-cost"), model: placeModel)
        let context = try makeContext(manager, "controller")
        let other = try makeContext(manager, "other")
        try context.performAndWait {
            for index in 0..<20_000 {
                let place = context.insert(Place.self)
                place.name = String(format: "%06d", index)
                place.rating = 1
            }
            try context.save()
            context.reset()
        }
        var request = FetchRequest<Place>(sortBy: [SortDescriptor(\.name)])
        request.fetchBatchSize = 50
        let controller = try context.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
            try controller.performFetch()
            return controller
        }
        let registered = context.performAndWait { context.registeredObjects.count }
        #expect(registered == 0, "a batched controller materializes nothing until asked")
        let batch = context.performAndWait {
            _ = controller.object(at: IndexPath(indexes: [0, 10_000]))
            return context.registeredObjects.count
        }
        #expect(batch == 50, "one batch")
        // Nothing holds the batch's objects once the block ended: the context let them go.
        #expect(context.performAndWait { context.registeredObjects.count } == 0)
        try other.performAndWait {
            let place = try other.fetch(
                FetchRequest<Place>(predicate: #Predicate { $0.name == "010000" }))[0]
            place.name = "zzz"
            try other.save()
        }
        flush(context)
        context.performAndWait {
            #expect(controller.snapshot.objectIDs.count == 20_000)
            #expect(controller.object(at: IndexPath(indexes: [0, 19_999])).name == "zzz")
            #expect(context.registeredObjects.count <= 101, "two batches, and the changed object")
        }
    }
}
