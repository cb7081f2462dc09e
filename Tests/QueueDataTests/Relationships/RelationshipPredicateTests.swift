import Foundation
import Testing

@testable import QueueData

@Suite("Predicates over relationships")
struct RelationshipPredicateTests {
    /// Alice leads two expeditions (tagged winter, and winter + polar), Bob one (untagged with
    /// four waypoints), and one expedition has no leader.
    private func seeded() throws -> (ContextManager, ManagedObjectContext) {
        let manager = graphManager("memory", TemporaryDirectory("rel-predicates"))
        let context = try manager.createContext()
        try context.performAndWait {
            let alice = context.insert(Explorer.self)
            alice.name = "Alice"
            let bob = context.insert(Explorer.self)
            bob.name = "Bob"
            let winter = context.insert(Tag.self)
            winter.label = "winter"
            let polar = context.insert(Tag.self)
            polar.label = "polar"
            for (title, leader, tags, waypoints) in [
                ("Andes", alice, [winter], 1), ("Arctic", alice, [winter, polar], 2), ("Sahara", bob, [], 4),
                ("Unled", nil, [], 0),
            ] as [(String, Explorer?, Set<Tag>, Int)] {
                let expedition = context.insert(Expedition.self)
                expedition.title = title
                expedition.leader = leader
                expedition.tags = tags
                expedition.waypoints = (0..<waypoints).map { _ in context.insert(Waypoint.self) }
            }
            try context.save()
        }
        return (manager, try manager.createContext())
    }

    private func titles(
        _ context: ManagedObjectContext,
        _ predicate: Predicate<Expedition>
    ) throws -> [String] {
        try context.performAndWait {
            try context.fetch(FetchRequest<Expedition>(predicate: predicate, sortBy: [SortDescriptor(\.title)]))
                .map(\.title)
        }
    }

    @Test("a predicate follows a to-one relationship, including a nil one")
    func toOne() throws {
        let (_, context) = try seeded()
        #expect(try titles(context, #Predicate { $0.leader?.name == "Alice" }) == ["Andes", "Arctic"])
        #expect(try titles(context, #Predicate { $0.leader == nil }) == ["Unled"])
        #expect(
            try titles(context, #Predicate { $0.leader.flatMap { $0.name.starts(with: "B") } ?? false }) == ["Sahara"])
        // Following the relationship registers only what the fetch returns and what it touched.
        let waypointOwners = try context.performAndWait {
            try context.fetch(
                FetchRequest<Waypoint>(predicate: #Predicate { $0.expedition.flatMap { $0.leader?.name } == "Bob" })
            ).count
        }
        #expect(waypointOwners == 4)
    }

    @Test("a predicate tests a to-many relationship's count and membership")
    func toMany() throws {
        let (_, context) = try seeded()
        #expect(try titles(context, #Predicate { $0.tags.count == 2 }) == ["Arctic"])
        #expect(try titles(context, #Predicate { $0.tags.isEmpty }) == ["Sahara", "Unled"])
        #expect(try titles(context, #Predicate { $0.waypoints.count > 1 }) == ["Arctic", "Sahara"])
        #expect(
            try titles(context, #Predicate { $0.tags.contains { $0.label == "winter" } }) == ["Andes", "Arctic"])
        #expect(
            try titles(context, #Predicate { $0.tags.allSatisfy { $0.label == "winter" } }) == [
                "Andes", "Sahara", "Unled",
            ])
        let polarID = try context.performAndWait {
            try context.first(Tag.self, where: #Predicate { $0.label == "polar" }).objectID
        }
        #expect(try titles(context, #Predicate { $0.tags.contains { $0.objectID == polarID } }) == ["Arctic"])
        let leaders = try context.performAndWait {
            try context.fetch(
                FetchRequest<Explorer>(predicate: #Predicate { $0.expeditions.contains { $0.tags.count > 1 } })
            ).map(\.name)
        }
        #expect(leaders == ["Alice"])
    }

    @Test("unsaved relationship changes count in a fetch that includes pending changes")
    func pendingChanges() throws {
        let (_, context) = try seeded()
        try context.performAndWait {
            let unled = try context.first(Expedition.self, where: #Predicate { $0.title == "Unled" })
            unled.leader = try context.first(Explorer.self, where: #Predicate { $0.name == "Bob" })
        }
        #expect(try titles(context, #Predicate { $0.leader?.name == "Bob" }) == ["Sahara", "Unled"])
        #expect(try titles(context, #Predicate { $0.leader == nil }).isEmpty)
    }

    @Test("an asynchronous fetch follows relationships over the committed rows")
    func asynchronous() async throws {
        let (_, context) = try seeded()
        let request = FetchRequest<Expedition>(
            predicate: #Predicate { $0.leader?.name == "Alice" && $0.tags.contains { $0.label == "polar" } })
        let found = try await context.fetch(request) { expeditions in
            dispatchPrecondition(condition: .onQueue(context.queue))
            return expeditions.map(\.title)
        }
        #expect(found == ["Arctic"])
    }
}
