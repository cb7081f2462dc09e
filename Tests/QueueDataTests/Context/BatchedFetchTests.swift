import Foundation
import Testing

@testable import QueueData

@Suite("Fetching values and batches")
struct BatchedFetchTests {
    /// 100 destinations named D00…D99, rating = index % 10, saved.
    private func seeded(_ label: String) throws -> (ContextManager, ManagedObjectContext) {
        let manager = makeManager()
        let context = try makeContext(manager, label)
        try context.performAndWait {
            for index in 0..<100 {
                let destination = context.insert(Destination.self)
                destination.name = String(format: "D%02d", index)
                destination.rating = index % 10
            }
            try context.save()
            context.reset()
        }
        return (manager, context)
    }

    @Test("values come back as dictionaries of the chosen properties, matched, sorted and paged, registering nothing")
    func values() throws {
        let (_, context) = try seeded("values")
        try context.performAndWait {
            let request = FetchRequest<Destination>(
                predicate: #Predicate { $0.rating == 3 }, sortBy: [SortDescriptor(\.name, order: .reverse)],
                fetchLimit: 3, fetchOffset: 1)
            let rows = try context.fetchValues(request, properties: ["name", "rating"])
            #expect(
                rows == [
                    ["name": .string("D83"), "rating": .integer(3)], ["name": .string("D73"), "rating": .integer(3)],
                    ["name": .string("D63"), "rating": .integer(3)],
                ])
            #expect(context.registeredObjects.isEmpty)
            let all = try context.fetchValues(FetchRequest<Destination>(fetchLimit: 1))
            #expect(Set(all[0].keys) == ["name", "country", "rating", "visited"])
            // Unsaved changes count, as in a fetch.
            let first = try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "D00" }))[0]
            first.rating = 42
            let changed = try context.fetchValues(
                FetchRequest<Destination>(predicate: #Predicate { $0.rating == 42 }), properties: ["name"])
            #expect(changed == [["name": .string("D00")]])
        }
    }

    @Test(
        "enumeration visits every match in order, registering one batch at a time",
        arguments: [1, 7, 100, 1_000])
    func enumeration(batchSize: Int) throws {
        let (_, context) = try seeded("enumerate-\(batchSize)")
        try context.performAndWait {
            let held = try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "D05" }))[0]
            let sorted = FetchRequest<Destination>(
                predicate: #Predicate { $0.rating < 5 }, sortBy: [SortDescriptor(\.rating), SortDescriptor(\.name)],
                fetchOffset: 2)
            var names: [String] = []
            var most = 0
            try context.enumerate(sorted, batchSize: batchSize) { destination in
                names.append(destination.name)
                most = max(most, context.registeredObjects.count)
            }
            #expect(names == (try context.fetch(sorted).map(\.name)))
            #expect(names.count == 48)
            context.reset()
            _ = held

            // Unsorted: streamed, with offset and limit.
            let unsorted = FetchRequest<Destination>(fetchLimit: 30, fetchOffset: 10)
            var streamed: [String] = []
            most = 0
            try context.enumerate(unsorted, batchSize: batchSize) { destination in
                streamed.append(destination.name)
                most = max(most, context.registeredObjects.count)
            }
            let expected = try context.fetchValues(unsorted, properties: ["name"]).map { $0["name"] }
            #expect(streamed.map { StoredValue.string($0) } == expected)
            #expect(most <= batchSize)
            #expect(context.registeredObjects.isEmpty, "objects of finished batches stayed registered")
        }
    }

    @Test("objects changed during an enumeration stay registered and save; the others are let go")
    func changesStay() throws {
        let (manager, context) = try seeded("enumerate-changes")
        weak var released: Destination?
        try context.performAndWait {
            try context.enumerate(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)]), batchSize: 10) {
                destination in
                if destination.name == "D00" {
                    released = destination
                }
                if destination.rating == 9 {
                    destination.country = "changed"
                }
            }
            #expect(context.registeredObjects.count == 10)
            #expect(context.updatedObjects.count == 10)
            try context.save()
        }
        #expect(released == nil, "an unchanged object of a finished batch is still alive")
        let reader = try makeContext(manager, "reader")
        let changed = try reader.performAndWait {
            try reader.count(for: FetchRequest<Destination>(predicate: #Predicate { $0.country == "changed" }))
        }
        #expect(changed == 10)
    }

    @Test(
        "objects the body keeps stay registered and usable: fetches return the same instances, and changes to them save"
    )
    func keptObjectsStay() throws {
        let (manager, context) = try seeded("enumerate-kept")
        var kept: [Destination] = []
        try context.performAndWait {
            try context.enumerate(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)]), batchSize: 10) {
                destination in
                if destination.rating == 3 {
                    kept.append(destination)
                }
            }
            #expect(kept.count == 10)
            #expect(context.registeredObjects.count == 10)
            let fetched = try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating == 3 }))
            for object in kept {
                #expect(object.managedObjectContext === context)
                #expect(context.object(with: object.objectID) === object)
                #expect(fetched.contains { $0 === object })
            }
            kept[0].country = "kept"
            try context.save()
        }
        let reader = try makeContext(manager, "reader")
        let saved = try reader.performAndWait {
            try reader.count(for: FetchRequest<Destination>(predicate: #Predicate { $0.country == "kept" }))
        }
        #expect(saved == 1)
        // Dropped, they go as any unchanged object does.
        kept.removeAll()
        context.performAndWait {}
        context.performAndWait { #expect(context.registeredObjects.isEmpty) }
    }

    @Test("a body that throws stops the enumeration and still lets go of the batch")
    func throwingBody() throws {
        struct Stop: Error {}
        let (_, context) = try seeded("enumerate-throws")
        context.performAndWait {
            var visited = 0
            #expect(throws: Stop.self) {
                try context.enumerate(FetchRequest<Destination>(), batchSize: 8) { _ in
                    visited += 1
                    if visited == 20 { throw Stop() }
                }
            }
            #expect(visited == 20)
            #expect(context.registeredObjects.isEmpty)
        }
    }
}
