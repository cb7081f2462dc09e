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
