import Foundation
import Testing

@testable import QueueData

// Version 1: owners with pets (one-to-many), pets with collars (one-to-one).

final class OwnerV1: ManagedObject {
    override class var entityName: String { "Owner" }
    @Attribute var name: String = ""
    @Relationship(inverse: "owner") var pets: Set<PetV1>
}

final class PetV1: ManagedObject {
    override class var entityName: String { "Pet" }
    @Attribute var name: String = ""
    @Relationship(inverse: "pets") var owner: OwnerV1?
    @Relationship(inverse: "pet") var collar: CollarV1?
}

final class CollarV1: ManagedObject {
    override class var entityName: String { "Collar" }
    @Attribute var color: String = ""
    @Relationship(inverse: "collar") var pet: PetV1?
}

let relationshipModelV1 = ManagedObjectModel([OwnerV1.self, PetV1.self, CollarV1.self])

// Version 2: both sides of owner ↔ pets renamed, the to-many now ordered and cascading;
// collars removed with their relationship; toys added with a many-to-many relationship.

final class OwnerV2: ManagedObject {
    override class var entityName: String { "Owner" }
    @Attribute var name: String = ""
    @Relationship(inverse: "keeper", deleteRule: .cascade, originalName: "pets") var animals: [PetV2]
}

final class PetV2: ManagedObject {
    override class var entityName: String { "Pet" }
    @Attribute var name: String = ""
    @Relationship(inverse: "animals", originalName: "owner") var keeper: OwnerV2?
    @Relationship(inverse: "pets") var toys: Set<ToyV2>
}

final class ToyV2: ManagedObject {
    override class var entityName: String { "Toy" }
    @Attribute var name: String = ""
    @Relationship(inverse: "toys") var pets: Set<PetV2>
}

let relationshipModelV2 = ManagedObjectModel([OwnerV2.self, PetV2.self, ToyV2.self])

// Version 3 (from version 1): a pet may have several owners (to-one → to-many).

final class OwnerV3: ManagedObject {
    override class var entityName: String { "Owner" }
    @Attribute var name: String = ""
    @Relationship(inverse: "owners") var pets: Set<PetV3>
}

final class PetV3: ManagedObject {
    override class var entityName: String { "Pet" }
    @Attribute var name: String = ""
    @Relationship(inverse: "pets", originalName: "owner") var owners: Set<OwnerV3>
    @Relationship(inverse: "pet") var collar: CollarV3?
}

final class CollarV3: ManagedObject {
    override class var entityName: String { "Collar" }
    @Attribute var color: String = ""
    @Relationship(inverse: "collar") var pet: PetV3?
}

let relationshipModelV3 = ManagedObjectModel([OwnerV3.self, PetV3.self, CollarV3.self])

// Version 4 (from version 1): an owner has at most one pet (to-many → to-one).

final class OwnerV4: ManagedObject {
    override class var entityName: String { "Owner" }
    @Attribute var name: String = ""
    @Relationship(inverse: "owner", originalName: "pets") var pet: PetV4?
}

final class PetV4: ManagedObject {
    override class var entityName: String { "Pet" }
    @Attribute var name: String = ""
    @Relationship(inverse: "pet") var owner: OwnerV4?
    @Relationship(inverse: "pet") var collar: CollarV4?
}

final class CollarV4: ManagedObject {
    override class var entityName: String { "Collar" }
    @Attribute var color: String = ""
    @Relationship(inverse: "collar") var pet: PetV4?
}

let relationshipModelV4 = ManagedObjectModel([OwnerV4.self, PetV4.self, CollarV4.self])

// Version 5 (from version 1): `Owner.pets` renamed without a renaming identifier, so the
// relationship is new; its inverse `Pet.owner` was kept and fills it.

final class OwnerV5: ManagedObject {
    override class var entityName: String { "Owner" }
    @Attribute var name: String = ""
    @Relationship(inverse: "owner") var animals: Set<PetV5>
}

final class PetV5: ManagedObject {
    override class var entityName: String { "Pet" }
    @Attribute var name: String = ""
    @Relationship(inverse: "animals") var owner: OwnerV5?
}

let relationshipModelV5 = ManagedObjectModel([OwnerV5.self, PetV5.self])

// Version 6 (from version 1): the same with a new to-one side, which two pets cannot fill.

final class OwnerV6: ManagedObject {
    override class var entityName: String { "Owner" }
    @Attribute var name: String = ""
    @Relationship(inverse: "owner") var favorite: PetV6?
}

final class PetV6: ManagedObject {
    override class var entityName: String { "Pet" }
    @Attribute var name: String = ""
    @Relationship(inverse: "favorite") var owner: OwnerV6?
}

let relationshipModelV6 = ManagedObjectModel([OwnerV6.self, PetV6.self])

@Suite("Migrating relationships")
struct RelationshipMigrationTests {
    private func manager(_ kind: String, _ directory: TemporaryDirectory, _ model: ManagedObjectModel)
        -> ContextManager
    {
        kind == "json" ? jsonManager(directory, model: model) : journalManager(directory, model: model)
    }

    /// Version 1's rows: Ann owns Rex and Tom (Rex wears a red collar), Bob owns Max.
    private func writeVersion1(_ kind: String, _ directory: TemporaryDirectory, annPets: [String] = ["Rex", "Tom"])
        throws
    {
        let manager = manager(kind, directory, relationshipModelV1)
        let context = try manager.createContext()
        try context.performAndWait {
            let ann = context.insert(OwnerV1.self)
            ann.name = "Ann"
            let bob = context.insert(OwnerV1.self)
            bob.name = "Bob"
            for (name, owner) in annPets.map({ ($0, ann) }) + [("Max", bob)] {
                let pet = context.insert(PetV1.self)
                pet.name = name
                pet.owner = owner
            }
            try context.save()
            let rex = try context.first(PetV1.self, where: #Predicate { $0.name == "Rex" })
            let collar = context.insert(CollarV1.self)
            collar.color = "red"
            collar.pet = rex
            try context.save()
        }
        manager.close()
    }

    @Test(
        "relationships are renamed on both sides, removed with their entity, added empty; the new delete rule applies",
        arguments: ["journal", "json"])
    func renamedRemovedAdded(kind: String) throws {
        let directory = TemporaryDirectory("migrate-relationships-\(kind)")
        try writeVersion1(kind, directory)
        let plan = try manager(kind, directory, relationshipModelV2).migrationPlan()
        let described = plan.changes.map { String(describing: $0) }.joined(separator: "\n")
        #expect(described.contains("Owner.pets") && described.contains("Owner.animals"), "\(described)")
        #expect(described.contains("Pet.collar"), "\(described)")
        #expect(described.contains("Pet.toys"), "\(described)")

        let manager = manager(kind, directory, relationshipModelV2)
        let context = try manager.createContext()
        try context.performAndWait {
            let ann = try context.first(OwnerV2.self, where: #Predicate { $0.name == "Ann" })
            // Ordered now: in the order of the stored (ascending) keys.
            #expect(ann.animals.map(\.name) == ["Rex", "Tom"])
            #expect(ann.animals.allSatisfy { $0.keeper === ann && $0.toys.isEmpty })
            let max = try context.first(PetV2.self, where: #Predicate { $0.name == "Max" })
            #expect(max.keeper?.name == "Bob")
            // The added relationship works and saves.
            let ball = context.insert(ToyV2.self)
            ball.name = "ball"
            ball.pets = [max, ann.animals[0]]
            try context.save()
            // Owner → animals cascades now (it was nullify).
            context.delete(ann)
            try context.save()
            #expect(try context.fetch(FetchRequest<PetV2>()).map(\.name) == ["Max"])
            #expect(ball.pets.map(\.name) == ["Max"])
        }
        manager.close()
        let reopened = self.manager(kind, directory, relationshipModelV2)
        let again = try reopened.createContext()
        try again.performAndWait {
            let ball = try again.first(ToyV2.self, where: #Predicate { $0.name == "ball" })
            #expect(ball.pets.map(\.name) == ["Max"])
            #expect(ball.pets.first?.keeper?.name == "Bob")
        }
    }

    @Test("a to-one relationship becomes to-many, keeping every reference", arguments: ["journal", "json"])
    func toOneBecomesToMany(kind: String) throws {
        let directory = TemporaryDirectory("migrate-to-many-\(kind)")
        try writeVersion1(kind, directory)
        let manager = manager(kind, directory, relationshipModelV3)
        let context = try manager.createContext()
        try context.performAndWait {
            let rex = try context.first(PetV3.self, where: #Predicate { $0.name == "Rex" })
            #expect(rex.owners.map(\.name) == ["Ann"])
            #expect(rex.collar?.color == "red")
            let bob = try context.first(OwnerV3.self, where: #Predicate { $0.name == "Bob" })
            rex.owners.insert(bob)
            try context.save()
            #expect(bob.pets.map(\.name).sorted() == ["Max", "Rex"])
        }
    }

    @Test(
        "a to-many relationship becomes to-one when no row holds several objects, and is refused otherwise",
        arguments: ["journal", "json"])
    func toManyBecomesToOne(kind: String) throws {
        let refused = TemporaryDirectory("migrate-to-one-refused-\(kind)")
        try writeVersion1(kind, refused)
        let file = "Store.\(kind)"
        let original = try refused.bytes(of: file)
        #expect {
            try self.manager(kind, refused, relationshipModelV4).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .migrationFailed, mentioning: "'Owner.pet' is now a to-one relationship")
        }
        #expect(try refused.bytes(of: file) == original)
        // The original still opens with version 1.
        let old = try manager(kind, refused, relationshipModelV1).createContext()
        #expect(try old.performAndWait { try old.count(for: FetchRequest<PetV1>()) } == 3)

        let accepted = TemporaryDirectory("migrate-to-one-\(kind)")
        try writeVersion1(kind, accepted, annPets: ["Rex"])
        let manager = manager(kind, accepted, relationshipModelV4)
        let context = try manager.createContext()
        try context.performAndWait {
            let ann = try context.first(OwnerV4.self, where: #Predicate { $0.name == "Ann" })
            #expect(ann.pet?.name == "Rex")
            #expect(ann.pet?.owner === ann)
        }
    }

    @Test(
        "a relationship added opposite a kept inverse is filled from it; a to-one that cannot be is refused",
        arguments: ["journal", "json"])
    func addedSideFilledFromInverse(kind: String) throws {
        let directory = TemporaryDirectory("migrate-fill-\(kind)")
        try writeVersion1(kind, directory)
        let original = try directory.bytes(of: "Store.\(kind)")
        #expect {
            try self.manager(kind, directory, relationshipModelV6).loadPersistentStore()
        } throws: { error in
            isStoreError(
                error, .migrationFailed, mentioning: "Row 1 of 'Owner'", "'favorite'", "'Pet.owner'",
                "2 objects refer")
        }
        #expect(try directory.bytes(of: "Store.\(kind)") == original)

        let manager = manager(kind, directory, relationshipModelV5)
        let context = try manager.createContext()
        try context.performAndWait {
            let ann = try context.first(OwnerV5.self, where: #Predicate { $0.name == "Ann" })
            #expect(ann.animals.map(\.name).sorted() == ["Rex", "Tom"])
            let bob = try context.first(OwnerV5.self, where: #Predicate { $0.name == "Bob" })
            #expect(bob.animals.map(\.name) == ["Max"])
        }
    }
}
