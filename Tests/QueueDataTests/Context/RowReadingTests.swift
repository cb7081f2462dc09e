import Foundation
import Testing

@testable import QueueData

/// Fetches that read predicates' and sort descriptors' attributes straight from rows return what
/// fetches reading them on objects return.
@Suite("Reading rows in place")
struct RowReadingTests {
    @Test("key paths naming attributes resolve to their slots; computed properties and relationships do not")
    func keyPathResolution() throws {
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "row-key-paths")
        try context.performAndWait {
            for count in [1, 5, 9] {
                context.insert(Specimen.self).count = count
            }
            try context.save()
            context.reset()
            let entityIndex = context.model.entityIndexes(for: Specimen.self, includingSubentities: false)[0]
            func slot(_ keyPath: AnyKeyPath) -> Int?? {
                context.resolvedSlot(of: keyPath, entityIndex: entityIndex)
            }
            #expect(slot(\Specimen.count) == nil, "nothing is resolved before a fetch reads it")
            #expect(
                try context.count(for: FetchRequest<Specimen>(predicate: #Predicate<Specimen> { $0.count > 3 })) == 2)
            #expect(slot(\Specimen.count) == .some(.some(0)))
            // A computed property returning an attribute's value unchanged is still not the attribute.
            #expect(
                try context.count(for: FetchRequest<Specimen>(predicate: #Predicate<Specimen> { $0.clampedCount > 3 }))
                    == 2)
            #expect(slot(\Specimen.clampedCount) == .some(.none))
            #expect(
                try context.count(for: FetchRequest<Specimen>(predicate: #Predicate<Specimen> { $0.doubled > 3 })) == 2)
            #expect(slot(\Specimen.doubled) == .some(.none))
            // Optional attributes resolve too.
            #expect(
                try context.count(for: FetchRequest<Specimen>(predicate: #Predicate<Specimen> { $0.level == nil })) == 3
            )
            #expect(slot(\Specimen.level) == .some(.some(8)))
            // Sort descriptors resolve on the objects they sort.
            let sorted = try context.fetch(FetchRequest<Specimen>(sortBy: [SortDescriptor(\.count, order: .reverse)]))
            #expect(sorted.map(\.count) == [9, 5, 1])
        }
        let graph = graphManager("memory", TemporaryDirectory("row-key-paths-graph"))
        let graphContext = try graph.createContext()
        try graphContext.performAndWait {
            let explorer = graphContext.insert(Explorer.self)
            explorer.name = "Alice"
            let expedition = graphContext.insert(Expedition.self)
            expedition.title = "x"
            expedition.leader = explorer
            try graphContext.save()
            graphContext.reset()
            let entityIndex = graphContext.model.entityIndexes(for: Expedition.self, includingSubentities: false)[0]
            let found = try graphContext.fetch(
                FetchRequest(predicate: #Predicate<Expedition> { $0.leader?.name == "Alice" }))
            #expect(found.map(\.title) == ["x"])
            #expect(graphContext.resolvedSlot(of: \Expedition.leader, entityIndex: entityIndex) == .some(.none))
        }
    }

    @Test("a predicate reading only attributes matches rows in place once its key paths resolve")
    func matcherSwitchesToRows() throws {
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "row-matcher")
        try context.performAndWait {
            let specimen = context.insert(Specimen.self)
            specimen.count = 4
            specimen.label = "ab"
            try context.save()
            let entityIndex = context.model.entityIndexes(for: Specimen.self, includingSubentities: false)[0]
            let attributes = #Predicate<Specimen> { $0.count > 3 && $0.label.starts(with: "a") }
            let matcher = EntityMatcher(
                attributes, objectMatcher: attributes.evaluate, entityIndex: entityIndex, context: context)
            #expect(matcher.rowPredicate == nil)
            #expect(try matcher.matches(specimen))
            #expect(matcher.rowPredicate != nil)
            // A second matcher for the same context starts on rows: the slots are remembered.
            let again = EntityMatcher(
                attributes, objectMatcher: attributes.evaluate, entityIndex: entityIndex, context: context)
            #expect(again.rowPredicate != nil)
            // A computed property keeps the predicate on objects.
            let computed = #Predicate<Specimen> { $0.count > 3 && $0.doubled > 7 }
            let objects = EntityMatcher(
                computed, objectMatcher: computed.evaluate, entityIndex: entityIndex, context: context)
            #expect(try objects.matches(specimen))
            #expect(objects.rowPredicate == nil)
            // So does turning it off.
            context.readsRows = false
            let off = EntityMatcher(
                attributes, objectMatcher: attributes.evaluate, entityIndex: entityIndex, context: context)
            #expect(try off.matches(specimen))
            #expect(off.rowPredicate == nil)
        }
    }

    @Test("fetches reading rows return what fetches reading objects return: random predicates, sorts, pages")
    func differential() throws {
        let iterations = ProcessInfo.processInfo.environment["QUEUEDATA_PREDICATE_FUZZ"].flatMap(Int.init) ?? 600
        let seed = ProcessInfo.processInfo.environment["QUEUEDATA_PREDICATE_SEED"].flatMap(UInt64.init) ?? 11
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "row-differential")
        let generator = PredicateGenerator(seed: seed)
        let sorts: [[SortDescriptor<Specimen>]] = [
            [SortDescriptor(\.label)], [SortDescriptor(\.count, order: .reverse)], [SortDescriptor(\.weight)],
            [SortDescriptor(\.seen)], [SortDescriptor(\.small), SortDescriptor(\.label, order: .reverse)],
            [SortDescriptor(\.ratio), SortDescriptor(\.count)], [SortDescriptor(\.level)],
            [SortDescriptor(\.doubled)], [SortDescriptor(\.label, comparator: .lexical)],
            [SortDescriptor(\.note)],
        ]
        try context.performAndWait {
            for _ in 0..<300 {
                generator.fill(context.insert(Specimen.self))
            }
            try context.save()
            // Unsaved changes: updated objects and pending inserts.
            let all = try context.fetch(FetchRequest<Specimen>())
            for specimen in all.prefix(30) {
                generator.fill(specimen)
            }
            for _ in 0..<30 {
                generator.fill(context.insert(Specimen.self))
            }
            for iteration in 0..<iterations {
                var request = FetchRequest<Specimen>(
                    predicate: iteration % 5 == 0 ? nil : generator.predicate(depth: 3),
                    sortBy: generator.pick(sorts))
                request.includesPendingChanges = iteration % 3 != 0
                if iteration % 4 == 1 {
                    request.fetchLimit = generator.integer(1...40)
                    request.fetchOffset = generator.integer(0...20)
                }
                context.readsRows = true
                let rows = try context.fetch(request).map(\.objectID)
                let rowCount = try context.count(for: request)
                context.readsRows = false
                let objects = try context.fetch(request).map(\.objectID)
                let objectCount = try context.count(for: request)
                context.readsRows = true
                if rows != objects || rowCount != objectCount {
                    Issue.record(
                        "request \(iteration) (seed \(seed)) differs: \(String(describing: request.predicate))")
                    return
                }
            }
        }
    }

    @Test("a subentity's rows are read with its own slots")
    func subentities() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "row-subentities")
        try context.performAndWait {
            for wheels in [3, 1, 5] {
                context.insert(Vehicle.self).wheels = wheels
                let bicycle = context.insert(Bicycle.self)
                bicycle.wheels = wheels + 1
                bicycle.gears = 10 - wheels
            }
            try context.save()
            context.reset()
            let request = FetchRequest<Vehicle>(
                predicate: #Predicate { $0.wheels >= 2 }, sortBy: [SortDescriptor(\.wheels, order: .reverse)])
            context.readsRows = true
            let rows = try context.fetch(request).map(\.wheels)
            context.readsRows = false
            let objects = try context.fetch(request).map(\.wheels)
            #expect(rows == objects)
            #expect(rows == [6, 5, 4, 3, 2])
            context.readsRows = true
            let bicycles = try context.fetch(
                FetchRequest<Bicycle>(
                    predicate: #Predicate { $0.gears > 5 && $0.wheels < 5 }, sortBy: [SortDescriptor(\.gears)]))
            #expect(bicycles.map(\.wheels) == [4, 2])
        }
    }
}
