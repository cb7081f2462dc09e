import Foundation
import Testing

@testable import QueueData

/// A sorted, paged fetch makes objects for the page only, and returns what sorting every
/// object and slicing returns.
@Suite("Sorted pages")
struct SortedPageTests {
    @Test("a sorted page is the slice of every match sorted, on random data, pages and registered objects")
    func randomPages() throws {
        let rounds =
            ProcessInfo.processInfo.environment["QUEUEDATA_PREDICATE_FUZZ"].flatMap(Int.init) ?? scaledRounds(400)
        let seed = ProcessInfo.processInfo.environment["QUEUEDATA_PREDICATE_SEED"].flatMap(UInt64.init) ?? 5
        let generator = PredicateGenerator(seed: seed)
        let sorts: [[SortDescriptor<Specimen>]] = [
            [SortDescriptor(\.label)], [SortDescriptor(\.count, order: .reverse)], [SortDescriptor(\.weight)],
            [SortDescriptor(\.seen)], [SortDescriptor(\.small), SortDescriptor(\.label, order: .reverse)],
            [SortDescriptor(\.ratio, order: .reverse), SortDescriptor(\.count)], [SortDescriptor(\.level)],
            [SortDescriptor(\.doubled)], [SortDescriptor(\.label, comparator: .lexical)], [SortDescriptor(\.note)],
        ]
        let manager = makeManager(model: specimenModel)
        let seeder = try makeContext(manager, "sorted-pages-seed")
        try seeder.performAndWait {
            for _ in 0..<250 {
                generator.fill(seeder.insert(Specimen.self))
            }
            try seeder.save()
        }
        let context = try makeContext(manager, "sorted-pages")
        try context.performAndWait {
            for round in 0..<rounds {
                if round % 40 == 0 {
                    // A fresh start, then some registered objects (some changed) and pending inserts.
                    context.reset()
                    var some = FetchRequest<Specimen>(predicate: generator.predicate(depth: 2))
                    some.fetchLimit = generator.integer(0...60)
                    for specimen in try context.fetch(some) where generator.integer(0...2) == 0 {
                        generator.fill(specimen)
                    }
                    for _ in 0..<generator.integer(0...5) {
                        generator.fill(context.insert(Specimen.self))
                    }
                }
                let predicate = round % 3 == 0 ? nil : generator.predicate(depth: 2)
                let descriptors = generator.pick(sorts)
                let everything = try context.fetch(FetchRequest<Specimen>(predicate: predicate))
                var reference = everything
                reference.sortStably(using: descriptors)
                var request = FetchRequest<Specimen>(predicate: predicate, sortBy: descriptors)
                request.fetchOffset = generator.integer(0...30)
                request.fetchLimit = generator.integer(0...30)
                let page = try context.fetch(request)
                let start = min(request.fetchOffset, reference.count)
                let end = request.fetchLimit > 0 ? min(start + request.fetchLimit, reference.count) : reference.count
                if page.map(\.objectID) != reference[start..<end].map(\.objectID) {
                    Issue.record("round \(round) (seed \(seed)) differs: \(descriptors)")
                    return
                }
            }
        }
    }

    @Test("only the returned page becomes objects")
    func onlyThePageIsMade() throws {
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "sorted-page-objects")
        try context.performAndWait {
            for count in 0..<500 {
                context.insert(Specimen.self).count = (count * 7919) % 500
            }
            try context.save()
            context.reset()
            var request = FetchRequest<Specimen>(sortBy: [SortDescriptor(\.count, order: .reverse)])
            request.fetchLimit = 10
            request.fetchOffset = 5
            weak var outside: Specimen?
            let page = try context.fetch(request)
            #expect(page.map(\.count) == Array((485...494).reversed()))
            #expect(context.registry.reduce(0) { $0 + $1.count } == 10)
            // A registered object outside the page keeps its identity in a later page.
            let all = try context.fetch(FetchRequest<Specimen>(sortBy: [SortDescriptor(\.count)]))
            outside = all[0]
            #expect(try context.fetch(request).first === page.first)
            #expect(outside?.count == 0)
        }
    }
}
