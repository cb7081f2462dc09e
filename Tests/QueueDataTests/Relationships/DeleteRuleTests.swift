import Foundation
import Testing

@testable import QueueData

@Suite("Delete rules and validation")
struct DeleteRuleTests {
    private func manager() -> ContextManager {
        ContextManager(delegate: TestStoreDelegate(model: rulesModel))
    }

    private func count<Object: ManagedObject>(_ type: Object.Type, in manager: ContextManager) throws -> Int {
        let context = try manager.createContext()
        return try context.performAndWait { try context.count(for: FetchRequest<Object>()) }
    }

    @Test("cascade deletes the graph below; nullify makes the objects that stay stop pointing back")
    func cascadeAndNullify() throws {
        let manager = manager()
        let context = try manager.createContext()
        let tagID = try context.performAndWait {
            let alice = context.insert(Explorer.self)
            alice.passport = context.insert(Passport.self)
            let tag = context.insert(Tag.self)
            for _ in 0..<3 {
                let expedition = context.insert(Expedition.self)
                expedition.leader = alice
                expedition.tags = [tag]
                expedition.waypoints = (0..<4).map { _ in context.insert(Waypoint.self) }
            }
            try context.save()
            context.delete(alice)
            try context.save()
            #expect(tag.expeditions.isEmpty)
            return tag.objectID
        }
        #expect(try count(Explorer.self, in: manager) == 0)
        #expect(try count(Passport.self, in: manager) == 0)
        #expect(try count(Expedition.self, in: manager) == 0)
        #expect(try count(Waypoint.self, in: manager) == 0)
        let fresh = try manager.createContext()
        let remaining = try fresh.performAndWait { try fresh.existingObject(with: tagID, as: Tag.self).expeditions }
        #expect(remaining.isEmpty)
    }

    @Test("deleting one side of a nullify relationship updates the other in the store")
    func nullify() throws {
        let manager = manager()
        let context = try manager.createContext()
        let aliceID = try context.performAndWait {
            let alice = context.insert(Explorer.self)
            let kept = context.insert(Expedition.self)
            kept.title = "kept"
            kept.leader = alice
            let gone = context.insert(Expedition.self)
            gone.leader = alice
            try context.save()
            context.delete(gone)
            try context.save()
            return alice.objectID
        }
        let fresh = try manager.createContext()
        let titles = try fresh.performAndWait {
            try fresh.existingObject(with: aliceID, as: Explorer.self).expeditions.map(\.title)
        }
        #expect(titles == ["kept"])
    }

    @Test("deny refuses the save, naming the blocking objects, and changes nothing; it saves once they are gone")
    func deny() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            let team = context.insert(Team.self)
            team.name = "core"
            let members = (0..<2).map { _ in context.insert(Member.self) }
            team.members = Set(members)
            try context.save()

            context.delete(team)
            #expect {
                try context.save()
            } throws: { error in
                guard let error = error as? ValidationError, error.failures.count == 1 else { return false }
                let failure = error.failures[0]
                return failure.objectID == team.objectID && failure.property == "members"
                    && members.allSatisfy { failure.reason.contains("\($0.objectID)") }
            }
            #expect(members.allSatisfy { !$0.isDeleted && $0.team === team })
            #expect(team.isDeleted)
            for member in members {
                context.delete(member)
            }
            try context.save()
        }
        #expect(try count(Team.self, in: manager) == 0)
        #expect(try count(Member.self, in: manager) == 0)
    }

    @Test("a deny rule's refusal and validation failures of the same save are reported together")
    func denyWithValidationFailures() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            let team = context.insert(Team.self)
            team.members = [context.insert(Member.self)]
            try context.save()
            context.delete(team)
            context.insert(Member.self).email = "nobody"
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(
                Set(error.failures.map { "\($0.entityName).\($0.property ?? "")" }) == [
                    "Team.members", "Member.email", "Member.team",
                ])
            #expect(team.isDeleted && team.members.count == 1)
        }
        #expect(try count(Team.self, in: manager) == 1)
    }

    @Test("cascades through cycles and long chains end, and delete every node once")
    func cyclesAndDepth() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            let root = context.insert(Node.self)
            var parent = root
            for depth in 1...500 {
                let node = context.insert(Node.self)
                node.depth = depth
                node.parent = parent
                if depth % 50 == 0 {
                    // Siblings, so the graph is a tree and not only a chain.
                    context.insert(Node.self).parent = parent
                }
                parent = node
            }
            try context.save()
            #expect(try context.count(for: FetchRequest<Node>()) == 511)
            // Deleting a node in the middle reaches the root through `parent` and everything below.
            context.delete(try context.fetch(FetchRequest<Node>(predicate: #Predicate { $0.depth == 250 }))[0])
            try context.save()
        }
        #expect(try count(Node.self, in: manager) == 0)
    }

    @Test("validation collects every failure of a save in one error, and nothing is written")
    func collectsFailures() throws {
        let manager = manager()
        let context = try manager.createContext()
        context.performAndWait {
            let orphan = context.insert(Member.self)  // no team: required
            orphan.email = "nobody"  // and not an email address
            _ = context.insert(Team.self)  // no members: needs one
            let crowded = context.insert(Team.self)
            crowded.members = Set((0..<4).map { _ in context.insert(Member.self) })  // at most three
            #expect {
                try context.save()
            } throws: { error in
                guard let error = error as? ValidationError else { return false }
                let reasons = Set(error.failures.map { "\($0.entityName).\($0.property ?? "") \($0.reason)" })
                return reasons.isSuperset(of: [
                    "Member.team is required", "Member.email is not an email address",
                    "Team.members needs at least 1 object (has 0)", "Team.members takes at most 3 objects (has 4)",
                ]) && error.failures.count == 4
            }
        }
        #expect(try count(Member.self, in: manager) == 0)
        #expect(try count(Team.self, in: manager) == 0)
    }

    @Test("nullifying a required relationship fails validation")
    func nullifyRequired() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            let library = context.insert(Library.self)
            context.insert(Book.self).library = library
            try context.save()
            context.delete(library)
            #expect {
                try context.save()
            } throws: { error in
                (error as? ValidationError)?.failures.map(\.property) == ["library"]
            }
            context.rollback()
        }
        #expect(try count(Library.self, in: manager) == 1)
        #expect(try count(Book.self, in: manager) == 1)
    }

    @Test("discarding an inserted object updates the objects that pointed to it at once")
    func discardInserted() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            let alice = context.insert(Explorer.self)
            try context.save()
            let draft = context.insert(Expedition.self)
            draft.leader = alice
            draft.waypoints = [context.insert(Waypoint.self)]
            #expect(alice.expeditions.count == 1)
            context.delete(draft)
            #expect(alice.expeditions.isEmpty)
            #expect(context.insertedObjects.isEmpty, "the cascaded waypoint stayed inserted")
            try context.save()
        }
        #expect(try count(Expedition.self, in: manager) == 0)
        #expect(try count(Waypoint.self, in: manager) == 0)
    }
}
