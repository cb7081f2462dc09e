import Foundation
import QueueData

// A small graph with every kind of relationship: one-to-many (Explorer ↔ Expedition),
// ordered one-to-many (Expedition ↔ Waypoint), many-to-many (Expedition ↔ Tag) and
// one-to-one (Explorer ↔ Passport).

final class Explorer: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "leader", deleteRule: .cascade) var expeditions: Set<Expedition>
    @Relationship(inverse: "holder", deleteRule: .cascade) var passport: Passport?
}

final class Expedition: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "expeditions") var leader: Explorer?
    @Relationship(inverse: "expedition", deleteRule: .cascade) var waypoints: [Waypoint]
    @Relationship(inverse: "expeditions") var tags: Set<Tag>
}

final class Waypoint: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "waypoints") var expedition: Expedition?
}

final class Tag: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "tags") var expeditions: Set<Expedition>
}

final class Passport: ManagedObject {
    @Attribute var number: String = ""
    @Relationship(inverse: "passport") var holder: Explorer?
}

let graphModel = ManagedObjectModel([
    Explorer.self, Expedition.self, Waypoint.self, Tag.self, Passport.self,
])

/// A manager of the graph model on a store of `kind` in `directory`.
func graphManager(_ kind: String, _ directory: TemporaryDirectory, store: InMemoryStore? = nil) -> ContextManager {
    switch kind {
    case "json": return jsonManager(directory, model: graphModel)
    case "journal": return journalManager(directory, model: graphModel)
    default:
        let store = store ?? InMemoryStore()
        return ContextManager(delegate: TestStoreDelegate(model: graphModel, storeType: .custom { _ in store }))
    }
}

extension ManagedObjectContext {
    /// The objects of `type` whose `name`-like attribute is `value`.
    func first<Object: ManagedObject>(_ type: Object.Type, where predicate: Predicate<Object>) throws -> Object {
        try fetch(FetchRequest<Object>(predicate: predicate)).first!
    }
}

// Delete rules and validation.

struct InvalidEmail: Error, CustomStringConvertible {
    var description: String { "is not an email address" }
}

final class Team: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "team", deleteRule: .deny, minCount: 1, maxCount: 3) var members: Set<Member>
}

final class Member: ManagedObject {
    @Attribute(validate: { email in
        guard email.contains("@") else { throw InvalidEmail() }
    })
    var email: String = "someone@example.com"
    @Relationship(inverse: "members", isOptional: false) var team: Team?
}

final class Library: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "library") var books: Set<Book>
}

final class Book: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "books", isOptional: false) var library: Library?
}

/// A tree whose every link cascades both ways: deleting any node deletes the whole tree.
final class Node: ManagedObject {
    @Attribute var depth: Int = 0
    @Relationship(inverse: "parent", deleteRule: .cascade) var children: Set<Node>
    @Relationship(inverse: "children", deleteRule: .cascade) var parent: Node?
}

let rulesModel = ManagedObjectModel([
    Explorer.self, Expedition.self, Waypoint.self, Tag.self, Passport.self, Team.self, Member.self, Library.self,
    Book.self, Node.self,
])
