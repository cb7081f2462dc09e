import Foundation
import Testing

@testable import QueueData

/// A common base class the model leaves out (Core Data's "class not in the model"): its
/// attributes are its subclasses', it is no entity.
class Stamped: ManagedObject {
    @Attribute var createdAt = Date(timeIntervalSince1970: 0)
}

final class Memo: Stamped {
    @Attribute var text = ""
}

class Creature: ManagedObject {
    @Attribute var legs = 0
}

/// Between two entities, a class the model leaves out.
class Mammal: Creature {
    @Attribute var furry = true
}

final class Cat: Mammal {
    @Attribute var name = ""
}

@Suite("A base class the model leaves out")
struct AbstractBaseClassTests {
    @Test("an entity whose superclass is not in the model has no superentity, and saves and fetches")
    func baseClassNotInModel() throws {
        let model = try ManagedObjectModel(validating: [Memo.self])
        let memo = try #require(model.entity(for: Memo.self))
        #expect(memo.superentityName == nil)
        #expect(memo.attributes.map(\.name) == ["text", "createdAt"])
        let directory = TemporaryDirectory("abstract-base")
        let manager = journalManager(directory, model: model)
        try manager.loadPersistentStore()
        let context = try makeContext(manager, "memos")
        try context.performAndWait {
            let note = context.insert(Memo.self)
            note.text = "hello"
            note.createdAt = Date(timeIntervalSince1970: 5)
            try context.save()
        }
        manager.close()
        let reopened = journalManager(directory, model: model)
        defer { reopened.close() }
        try reopened.loadPersistentStore()
        let again = try makeContext(reopened, "memos-again")
        let cutoff = Date(timeIntervalSince1970: 1)
        try again.performAndWait {
            let memos = try again.fetch(
                FetchRequest<Memo>(predicate: #Predicate { $0.createdAt > cutoff }))
            #expect(memos.map(\.text) == ["hello"])
        }
    }

    @Test("an entity's superentity is its nearest superclass the model lists")
    func nearestListedSuperclass() throws {
        let model = try ManagedObjectModel(validating: [Creature.self, Cat.self])
        let cat = try #require(model.entity(for: Cat.self))
        #expect(cat.superentityName == "Creature")
        let manager = makeManager(model: model)
        defer { manager.close() }
        try manager.loadPersistentStore()
        let context = try makeContext(manager, "cats")
        try context.performAndWait {
            let tom = context.insert(Cat.self)
            tom.name = "Tom"
            tom.legs = 4
            context.insert(Creature.self).legs = 6
            try context.save()
            let creatures = try context.fetch(FetchRequest<Creature>(sortBy: [SortDescriptor(\.legs)]))
            #expect(creatures.map(\.legs) == [4, 6])
            #expect(creatures.first is Cat)
        }
    }
}
