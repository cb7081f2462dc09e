import Foundation
import Testing

@testable import QueueData

@Suite("A custom merge policy on objects with relationships")
struct CustomPolicyRelationshipTests {
    /// Two contexts change the same expedition (its title and its leader); the second saves
    /// with `policy`. Returns the expedition's title and leader, and each explorer's expedition
    /// titles, as a fresh context reads them.
    private func conflict(_ policy: MergePolicy) throws -> (title: String, leader: String?, lists: [String: [String]]) {
        let directory = TemporaryDirectory("custom-policy-relationships")
        let manager = graphManager("memory", directory)
        defer { manager.close() }
        let a = try makeRetainingContext(manager, "A")
        let b = try makeRetainingContext(manager, "B")
        let id = try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            for name in ["Ada", "Bob", "Cy"] {
                a.insert(Explorer.self).name = name
            }
            let expedition = a.insert(Expedition.self)
            expedition.title = "Nile"
            try a.save()
            return expedition.objectID
        }
        try a.performAndWait {
            let expedition = try a.existingObject(with: id, as: Expedition.self)
            _ = expedition.title  // read before the other save: the snapshot is the first version
        }
        try b.performAndWait {
            b.automaticallyMergesChangesFromOtherContexts = false
            let expedition = try b.existingObject(with: id, as: Expedition.self)
            expedition.title = "Nile (B)"
            expedition.leader = try b.first(Explorer.self, where: #Predicate { $0.name == "Bob" })
            try b.save()
        }
        try a.performAndWait {
            let expedition = try a.existingObject(with: id, as: Expedition.self)
            expedition.title = "Nile (A)"
            expedition.leader = try a.first(Explorer.self, where: #Predicate { $0.name == "Ada" })
            a.mergePolicy = policy
            try a.save()
        }
        let reader = try makeContext(manager, "reader")
        return try reader.performAndWait {
            let expedition = try reader.existingObject(with: id, as: Expedition.self)
            var lists: [String: [String]] = [:]
            for explorer in try reader.fetch(FetchRequest<Explorer>()) {
                lists[explorer.name] = explorer.expeditions.map(\.title).sorted()
            }
            return (expedition.title, expedition.leader?.name, lists)
        }
    }

    @Test("writing back the object's values it was given (relationships included) takes them, inverses too")
    func writesObjectValues() throws {
        let result = try conflict(
            .custom(named: "mine") { conflicts in
                conflicts.map { conflict in conflict.objectValues.map { .write($0) } ?? .delete }
            })
        #expect(result.title == "Nile (A)")
        #expect(result.leader == "Ada")
        #expect(result.lists == ["Ada": ["Nile (A)"], "Bob": [], "Cy": []])
    }

    @Test("writing back the committed values keeps the other save's attributes; the links agree on both sides")
    func writesCommittedValues() throws {
        let result = try conflict(
            .custom(named: "theirs") { conflicts in
                conflicts.map { conflict in conflict.committedValues.map { .write($0) } ?? .delete }
            })
        #expect(result.title == "Nile (B)")
        // The leader's own list (Ada's, changed by the same save) is not part of the conflict:
        // whichever leader wins, the lists agree with it.
        let leader = try #require(result.leader)
        #expect(result.lists.filter { !$0.value.isEmpty } == [leader: ["Nile (B)"]])
    }

    @Test("a relationship written with a value it cannot hold traps, naming the policy")
    func refusesWrongForm() async {
        await #expect(processExitsWith: .failure) {
            let entity = graphModel.entities.first { $0.name == "Expedition" }!
            let policy = MergePolicy.custom(named: "broken") { _ in [] }
            _ = policy.row(writing: ["leader": .string("Ada")], over: entity.defaultRow, of: entity)
        }
    }
}
