import Foundation
import Testing

@testable import QueueData

// Uniqueness constraints: one attribute, a combination, optional attributes, a hierarchy.

final class Country: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute var name: String = ""
    @Attribute var population: Int = 0
    @Relationship(inverse: "country") var cities: Set<City>
}

final class City: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "cities") var country: Country?
}

final class Account: ManagedObject {
    @Attribute var firstName: String = ""
    @Attribute var lastName: String = ""
    @Attribute(.unique) var email: String? = nil

    override class var uniquenessConstraints: [[String]] { [["firstName", "lastName"]] }
}

class Instrument: ManagedObject {
    @Attribute(.unique) var serial: String = ""
}

final class Violin: Instrument {
    @Attribute var maker: String = ""
}

final class Keeper: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "keeper") var badges: Set<Badge>
    @Relationship(inverse: "holders") var favorites: [Badge]
}

final class Badge: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Relationship(inverse: "badges") var keeper: Keeper?
    @Relationship(inverse: "favorites") var holders: Set<Keeper>
}

/// A record re-imported by code, whose values may be revised back to their defaults.
final class Quake: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute var magnitude: Double = 0.0
    @Attribute var place: String = ""
    @Attribute var depth: Int = 0
    @Attribute var reviewed: Bool = false
}

let uniquenessModel = ManagedObjectModel([
    Country.self, City.self, Account.self, Instrument.self, Violin.self, Keeper.self, Badge.self, Quake.self,
])

@Suite("Uniqueness constraints")
struct UniquenessTests {
    private func manager(_ kind: String = "memory", _ directory: TemporaryDirectory? = nil) -> ContextManager {
        switch kind {
        case "json": return jsonManager(directory!, model: uniquenessModel)
        case "journal": return journalManager(directory!, model: uniquenessModel)
        default: return ContextManager(delegate: TestStoreDelegate(model: uniquenessModel))
        }
    }

    /// Saves Portugal (code PT, population 10) with the city Porto; returns Portugal's ID.
    @discardableResult
    private func seedPortugal(_ manager: ContextManager) throws -> ObjectID {
        let context = try manager.createContext()
        return try context.performAndWait {
            let portugal = context.insert(Country.self)
            portugal.code = "PT"
            portugal.name = "Portugal"
            portugal.population = 10
            let porto = context.insert(City.self)
            porto.name = "Porto"
            porto.country = portugal
            try context.save()
            return portugal.objectID
        }
    }

    /// Every stored country as `code name population [cities]`, by code.
    private func countries(_ manager: ContextManager) throws -> [String] {
        let context = try manager.createContext()
        return try context.performAndWait {
            try context.fetch(FetchRequest<Country>(sortBy: [SortDescriptor(\.code)])).map { country in
                "\(country.code) \(country.name) \(country.population) \(country.cities.map(\.name).sorted())"
            }
        }
    }

    @Test("with .error, inserting a duplicate throws naming both objects and writes nothing")
    func errorPolicyRefusesDuplicates() throws {
        let manager = manager()
        let portugalID = try seedPortugal(manager)
        let context = try manager.createContext()
        try context.performAndWait {
            let duplicate = context.insert(Country.self)
            duplicate.code = "PT"
            let lisbon = context.insert(City.self)
            lisbon.name = "Lisbon"
            lisbon.country = duplicate
            let error = try #require(throws: MergeConflictError.self) { try context.save() }
            #expect(error.conflicts.isEmpty)
            #expect(error.constraintConflicts.count == 1)
            let conflict = try #require(error.constraintConflicts.first)
            #expect(conflict.entityName == "Country")
            #expect(conflict.attributeNames == ["code"])
            #expect(conflict.values == [.string("PT")])
            #expect(conflict.objectID == duplicate.objectID)
            #expect(conflict.conflictingObjectID == portugalID)
            #expect(String(describing: error).contains("code = "))
            // Nothing was written, and the context keeps its changes to fix and save again.
            #expect(duplicate.isInserted && lisbon.isInserted)
            duplicate.code = "ES"
            try context.save()
        }
        #expect(try countries(manager) == ["ES  0 [\"Lisbon\"]", "PT Portugal 10 [\"Porto\"]"])
    }

    @Test("with .error, two inserts of one save sharing a value are a conflict between them")
    func duplicatesInOneSave() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            let first = context.insert(Country.self)
            first.code = "FR"
            let second = context.insert(Country.self)
            second.code = "FR"
            let third = context.insert(Country.self)
            third.code = "DE"
            let error = try #require(throws: MergeConflictError.self) { try context.save() }
            #expect(error.constraintConflicts.count == 1)
            let conflict = try #require(error.constraintConflicts.first)
            #expect(Set([conflict.objectID, conflict.conflictingObjectID]) == Set([first.objectID, second.objectID]))
        }
        #expect(try countries(manager).isEmpty)
    }

    @Test("mergeByPropertyObjectTrump upserts: every attribute of the inserted object wins, the row and its ID stay")
    func objectTrumpUpserts() throws {
        let manager = manager()
        let portugalID = try seedPortugal(manager)
        let observer = try manager.createContext()
        let observed = try observer.performAndWait { try observer.existingObject(with: portugalID, as: Country.self) }
        let changes = ChangeRecorder(observer)
        let context = try manager.createContext()
        try context.performAndWait {
            context.mergePolicy = .mergeByPropertyObjectTrump
            let update = context.insert(Country.self)
            update.code = "PT"
            update.population = 11  // the name is left at its default, which the upsert carries too
            let lisbon = context.insert(City.self)
            lisbon.name = "Lisbon"
            lisbon.country = update
            try context.save()
            #expect(update.objectID == portugalID)
            #expect(!update.isInserted && !update.hasChanges)
            #expect(update.name == "" && update.population == 11)
            #expect(lisbon.country?.objectID == portugalID)
            #expect(context.object(with: portugalID) === update)
            #expect(update.cities.map(\.name).sorted() == ["Lisbon", "Porto"])
        }
        #expect(try countries(manager) == ["PT  11 [\"Lisbon\", \"Porto\"]"])
        // Other contexts merge an update of the existing object, not an insert.
        flush(observer)
        try observer.performAndWait { () throws -> Void in
            #expect(observed.population == 11)
            #expect(observed.cities.map(\.name).sorted() == ["Lisbon", "Porto"])
            #expect(try observer.count(for: FetchRequest<Country>()) == 1)
        }
        #expect(changes.updated.contains(portugalID))
        #expect(!changes.inserted.contains(portugalID))
    }

    @Test("mergeByPropertyStoreTrump upserts keeping every stored value, defaults included; relationships join")
    func storeTrumpUpserts() throws {
        let manager = manager()
        try seedPortugal(manager)
        let context = try manager.createContext()
        try context.performAndWait {
            context.mergePolicy = .mergeByPropertyStoreTrump
            let update = context.insert(Country.self)
            update.code = "PT"
            update.name = "República Portuguesa"
            update.population = 11
            context.insert(City.self).country = update
            let spain = context.insert(Country.self)
            spain.code = "ES"
            try context.save()
        }
        #expect(try countries(manager) == ["ES  0 []", "PT Portugal 10 [\"\", \"Porto\"]"])

        let blank = try manager.createContext()
        try blank.performAndWait {
            blank.mergePolicy = .mergeByPropertyStoreTrump
            let update = blank.insert(Country.self)
            update.code = "ES"
            update.name = "Spain"
            update.population = 48
            try blank.save()
        }
        #expect(try countries(manager).first == "ES  0 []")
    }

    /// Policies that upsert, with whether the inserted object's attributes win.
    static let upsertingPolicies: [(MergePolicy, insertedWins: Bool)] = [
        (.mergeByPropertyObjectTrump, true), (.overwrite, true), (.mergeByPropertyStoreTrump, false),
        (.rollback, false),
    ]

    @Test(
        "a re-imported record revised back to its defaults: the policy alone decides which side's values stay",
        arguments: 0..<4, ["memory", "journal", "json"])
    func revisionToDefaults(_ policyIndex: Int, _ kind: String) throws {
        let (policy, insertedWins) = Self.upsertingPolicies[policyIndex]
        let directory = TemporaryDirectory("upsert-defaults")
        let manager = manager(kind, directory)
        let seed = try manager.createContext()
        let quakeID = try seed.performAndWait {
            let quake = seed.insert(Quake.self)
            quake.code = "us7000"
            quake.magnitude = 1.7
            quake.place = "Alaska"
            quake.depth = 10
            try seed.save()
            return quake.objectID
        }
        let importer = try manager.createContext()
        try importer.performAndWait {
            importer.mergePolicy = policy
            let revision = importer.insert(Quake.self)
            revision.code = "us7000"
            revision.magnitude = 0.0  // revised to the default: data, not "unset"
            revision.place = ""
            revision.depth = 12
            revision.reviewed = true
            try importer.save()
            #expect(revision.objectID == quakeID)
        }
        let reader = try manager.createContext()
        try reader.performAndWait {
            let quakes = try reader.fetch(FetchRequest<Quake>())
            #expect(quakes.count == 1)
            let quake = try #require(quakes.first)
            let stored = "\(quake.magnitude) \(quake.place) \(quake.depth) \(quake.reviewed)"
            #expect(stored == (insertedWins ? "0.0  12 true" : "1.7 Alaska 10 false"), "under \(policy)")
        }
        manager.close()
    }

    @Test(
        "an existing record at its defaults meets a re-import with values: the policy alone decides", arguments: 0..<4)
    func existingAtDefaults(_ policyIndex: Int) throws {
        let (policy, insertedWins) = Self.upsertingPolicies[policyIndex]
        let manager = manager()
        let seed = try manager.createContext()
        try seed.performAndWait {
            seed.insert(Quake.self).code = "nc1"
            try seed.save()
        }
        let importer = try manager.createContext()
        try importer.performAndWait {
            importer.mergePolicy = policy
            let revision = importer.insert(Quake.self)
            revision.code = "nc1"
            revision.magnitude = 4.2
            revision.place = "Napa"
            try importer.save()
            #expect(revision.magnitude == (insertedWins ? 4.2 : 0.0), "under \(policy)")
            #expect(revision.place == (insertedWins ? "Napa" : ""), "under \(policy)")
        }
    }

    @Test("with .error, a re-imported record is refused whatever its values")
    func errorRefusesRevision() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            let quake = context.insert(Quake.self)
            quake.code = "x"
            quake.magnitude = 1.7
            try context.save()
            let revision = context.insert(Quake.self)
            revision.code = "x"
            let error = try #require(throws: MergeConflictError.self) { try context.save() }
            #expect(error.constraintConflicts.map(\.conflictingObjectID) == [quake.objectID])
            #expect(quake.magnitude == 1.7 && revision.isInserted)
        }
    }

    @Test("overwrite upserts the inserted object whole, relationships included")
    func overwriteUpserts() throws {
        let manager = manager()
        try seedPortugal(manager)
        let context = try manager.createContext()
        try context.performAndWait {
            context.mergePolicy = .overwrite
            let update = context.insert(Country.self)
            update.code = "PT"
            update.population = 11
            let lisbon = context.insert(City.self)
            lisbon.name = "Lisbon"
            lisbon.country = update
            try context.save()
            let porto = try context.first(City.self, where: #Predicate { $0.name == "Porto" })
            #expect(porto.country == nil)
        }
        #expect(try countries(manager) == ["PT  11 [\"Lisbon\"]"])
    }

    @Test("rollback upserts keeping the stored object; references to the inserted one go to it")
    func rollbackUpserts() throws {
        let manager = manager()
        try seedPortugal(manager)
        let context = try manager.createContext()
        try context.performAndWait {
            context.mergePolicy = .rollback
            let update = context.insert(Country.self)
            update.code = "PT"
            update.name = "ignored"
            let lisbon = context.insert(City.self)
            lisbon.name = "Lisbon"
            lisbon.country = update
            try context.save()
            #expect(update.name == "Portugal")
        }
        #expect(try countries(manager) == ["PT Portugal 10 [\"Lisbon\", \"Porto\"]"])
    }

    @Test("an upsert into an object this context has registered keeps that instance; the inserted one leaves")
    func upsertIntoRegisteredObject() throws {
        let manager = manager()
        let portugalID = try seedPortugal(manager)
        let context = try manager.createContext()
        try context.performAndWait {
            context.mergePolicy = .mergeByPropertyObjectTrump
            let registered = try context.existingObject(with: portugalID, as: Country.self)
            let update = context.insert(Country.self)
            update.code = "PT"
            update.name = "Portugal!"
            try context.save()
            #expect(update.objectID == portugalID)
            #expect(context.object(with: portugalID) === registered)
            #expect(registered.name == "Portugal!")
            #expect(update.name == "Portugal!")  // still readable
            #expect(!context.hasChanges)
        }
    }

    @Test("after an upsert the saving context's objects match the store, including ones it did not change")
    func upsertLeavesTheSavingContextCurrent() throws {
        let manager = manager()
        let seed = try manager.createContext()
        try seed.performAndWait {
            let keepers = ["first", "second", "third"].map { name in
                let keeper = seed.insert(Keeper.self)
                keeper.name = name
                return keeper
            }
            let badge = seed.insert(Badge.self)
            badge.code = "x"
            badge.keeper = keepers[1]
            badge.holders = [keepers[0], keepers[2]]
            try seed.save()
        }
        let context = try manager.createContext()
        let seen = try context.performAndWait {
            context.mergePolicy = .mergeByPropertyObjectTrump
            let keepers = Dictionary(
                uniqueKeysWithValues: try context.fetch(FetchRequest<Keeper>()).map { ($0.name, $0) })
            let badge = try context.fetch(FetchRequest<Badge>())[0]
            let newcomer = context.insert(Keeper.self)
            newcomer.name = "new"
            let duplicate = context.insert(Badge.self)
            duplicate.code = "x"
            duplicate.keeper = newcomer  // takes the badge from "second", which this save never touched
            duplicate.holders = [keepers["first"]!, keepers["third"]!]
            try context.save()
            return "\(keepers["second"]!.badges.map(\.code)) \(badge.keeper?.name ?? "-")"
        }
        let fresh = try manager.createContext()
        let stored = try fresh.performAndWait {
            let second = try fresh.first(Keeper.self, where: #Predicate { $0.name == "second" })
            return "\(second.badges.map(\.code)) \(try fresh.fetch(FetchRequest<Badge>())[0].keeper?.name ?? "-")"
        }
        #expect(seen == stored)
        #expect(stored == "[] new")
    }

    @Test("several inserts of one value in one save become one object (the last one's values win)")
    func duplicatesInOneSaveUpsert() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            context.mergePolicy = .mergeByPropertyObjectTrump
            let objects = (0..<3).map { index in
                let country = context.insert(Country.self)
                country.code = "IT"
                country.population = index + 1
                let city = context.insert(City.self)
                city.name = "city \(index)"
                city.country = country
                return country
            }
            try context.save()
            #expect(Set(objects.map(\.objectID)).count == 1)
            #expect(context.object(with: objects[0].objectID) === objects[0])
            #expect(objects[0].population == 3)
        }
        #expect(try countries(manager) == ["IT  3 [\"city 0\", \"city 1\", \"city 2\"]"])
    }

    @Test("an update that would duplicate another object's values throws, whatever the policy")
    func updatesNeverUpsert() throws {
        for policy in [MergePolicy.error, .mergeByPropertyObjectTrump, .overwrite] {
            let manager = manager()
            let portugalID = try seedPortugal(manager)
            let context = try manager.createContext()
            try context.performAndWait {
                context.mergePolicy = policy
                let spain = context.insert(Country.self)
                spain.code = "ES"
                try context.save()
                spain.code = "PT"
                spain.name = "Spain"
                let error = try #require(throws: MergeConflictError.self) { try context.save() }
                #expect(error.constraintConflicts.map(\.conflictingObjectID) == [portugalID])
                #expect(error.constraintConflicts.map(\.objectID) == [spain.objectID])
            }
            #expect(try countries(manager) == ["ES  0 []", "PT Portugal 10 [\"Porto\"]"])
        }
    }

    @Test("values freed in a save can be taken in the same save: swaps, and deletes with inserts")
    func valuesMoveWithinASave() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            let a = context.insert(Country.self)
            a.code = "AA"
            let b = context.insert(Country.self)
            b.code = "BB"
            try context.save()
            a.code = "BB"
            b.code = "AA"
            try context.save()
            context.delete(a)
            let replacement = context.insert(Country.self)
            replacement.code = "BB"
            replacement.name = "new"
            try context.save()
            // The index follows: AA is b's now, BB the replacement's.
            let duplicate = context.insert(Country.self)
            duplicate.code = "AA"
            let error = try #require(throws: MergeConflictError.self) { try context.save() }
            #expect(error.constraintConflicts.map(\.conflictingObjectID) == [b.objectID])
            duplicate.code = "CC"
            replacement.code = "DD"
            try context.save()
        }
        #expect(try countries(manager) == ["AA  0 []", "CC  0 []", "DD new 0 []"])
    }

    @Test("combinations are unique together; nil values are not constrained")
    func combinationsAndNil() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            for (first, last) in [("Ada", "Lovelace"), ("Ada", "Byron"), ("Grace", "Lovelace")] {
                let account = context.insert(Account.self)
                account.firstName = first
                account.lastName = last
            }
            try context.save()  // three nil emails, no two equal names
            let twin = context.insert(Account.self)
            twin.firstName = "Ada"
            twin.lastName = "Byron"
            twin.email = "ada@example.com"
            let other = context.insert(Account.self)
            other.firstName = "Alan"
            other.email = "ada@example.com"
            let error = try #require(throws: MergeConflictError.self) { try context.save() }
            #expect(
                Set(error.constraintConflicts.map(\.attributeNames)) == Set([["firstName", "lastName"], ["email"]]))
            twin.lastName = "King"
            other.email = nil
            try context.save()
            #expect(try context.count(for: FetchRequest<Account>()) == 5)
        }
    }

    @Test("a constraint declared on an entity binds its subentities together with it")
    func hierarchy() throws {
        let manager = manager()
        let context = try manager.createContext()
        try context.performAndWait {
            context.insert(Instrument.self).serial = "S1"
            try context.save()
            let violin = context.insert(Violin.self)
            violin.serial = "S1"
            let error = try #require(throws: MergeConflictError.self) { try context.save() }
            #expect(error.constraintConflicts.first?.entityName == "Instrument")
            violin.serial = "S2"
            try context.save()
            // Upserting across entities would change an object's entity: it stays a conflict.
            context.mergePolicy = .mergeByPropertyObjectTrump
            context.insert(Instrument.self).serial = "S2"
            #expect(throws: MergeConflictError.self) { try context.save() }
            context.rollback()
            context.insert(Violin.self).serial = "S2"
            try context.save()
            #expect(try context.count(for: FetchRequest<Instrument>()) == 2)
        }
    }

    @Test("constraints hold across reopening on the file stores", arguments: ["journal", "json"])
    func reopen(kind: String) throws {
        let directory = TemporaryDirectory("unique-\(kind)")
        do {
            let manager = manager(kind, directory)
            try seedPortugal(manager)
            manager.close()
        }
        let manager = manager(kind, directory)
        let context = try manager.createContext()
        try context.performAndWait {
            context.insert(Country.self).code = "PT"
            #expect(throws: MergeConflictError.self) { try context.save() }
            context.mergePolicy = .mergeByPropertyObjectTrump
            try context.save()
        }
        manager.close()
        // One row: upserted (the inserted object's attributes, defaults included, win).
        #expect(try countries(self.manager(kind, directory)) == ["PT  0 [\"Porto\"]"])
    }

    @Test("a store whose rows break a newly declared constraint is refused at open, naming the rows")
    func duplicatesAtOpen() throws {
        let directory = TemporaryDirectory("unique-at-open")
        func model(unique: Bool) throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [
                EntityDescription(
                    name: "Tag", attributes: [AttributeDescription(name: "label", type: .string)],
                    uniquenessConstraints: unique ? [["label"]] : [])
            ])
        }
        do {
            let manager = journalManager(directory, model: try model(unique: false))
            let context = try manager.createContext()
            try context.performAndWait {
                for label in ["a", "b", "a"] {
                    context.insert(entityName: "Tag").setValue(.string(label), forKey: "label")
                }
                try context.save()
            }
            manager.close()
        }
        let manager = journalManager(directory, model: try model(unique: true))
        let error = try #require(throws: StoreError.self) { try manager.createContext() }
        #expect(error.code == .incompatibleModel)
        #expect(error.message.contains("Tag 1 and Tag 3 share label"))
    }

    @Test("concurrent upserts of one value from several queues leave one object", arguments: 0..<20)
    func concurrentUpserts(iteration: Int) throws {
        let manager = manager()
        let contexts = try (0..<4).map { try makeContext(manager, "upsert \($0)") }
        let group = DispatchGroup()
        let failures = AtomicCounter()
        for (index, context) in contexts.enumerated() {
            context.queue.async(group: group) {
                do {
                    try context.performAndWait {
                        context.mergePolicy = .mergeByPropertyObjectTrump
                        let country = context.insert(Country.self)
                        country.code = "NL"
                        context.insert(City.self).country = country
                        country.population = index + 1
                        try context.save()
                    }
                } catch {
                    failures.increment()
                }
            }
        }
        group.wait()
        #expect(failures.value == 0)
        let rows = try countries(manager)
        #expect(rows.count == 1)
        #expect(rows.first?.hasPrefix("NL ") == true)
        #expect(rows.first?.hasSuffix("[\"\", \"\", \"\", \"\"]") == true)
    }
}

/// Records the object IDs of the merges `context` reports.
final class ChangeRecorder: @unchecked Sendable {
    private(set) var inserted: Set<ObjectID> = []
    private(set) var updated: Set<ObjectID> = []
    private var observer: (any NSObjectProtocol)?

    init(_ context: ManagedObjectContext) {
        observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil
        ) { [weak self] notification in
            guard let changes = ObjectsDidChange(notification) else { return }
            self?.inserted.formUnion(changes.insertedObjectIDs)
            self?.updated.formUnion(changes.updatedObjectIDs)
        }
    }

    deinit {
        observer.map(NotificationCenter.default.removeObserver)
    }
}

/// A one-to-one relationship whose one side is unique.
final class IDCard: ManagedObject {
    @Attribute(.unique) var number: String = ""
    @Attribute var note: String = ""
    @Relationship(inverse: "card") var holder: CardHolder?
}

final class CardHolder: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "holder") var card: IDCard?
}

@Suite("Uniqueness constraints on a one-to-one relationship")
struct OneToOneUpsertTests {
    @Test(
        "an upsert whose new object holds a one-to-one leaves both sides consistent under every upserting policy",
        arguments: 0..<4)
    func oneToOneUpsert(_ policyIndex: Int) throws {
        let (policy, insertedWins) = UniquenessTests.upsertingPolicies[policyIndex]
        let manager = ContextManager(
            delegate: TestStoreDelegate(model: ManagedObjectModel([IDCard.self, CardHolder.self])))
        defer { manager.close() }
        let context = try manager.createContext()
        try context.performAndWait {
            let card = context.insert(IDCard.self)
            card.number = "1"
            card.note = "old"
            let first = context.insert(CardHolder.self)
            first.name = "first"
            card.holder = first
            try context.save()
            context.mergePolicy = policy
            let duplicate = context.insert(IDCard.self)
            duplicate.number = "1"
            duplicate.note = "new"
            let second = context.insert(CardHolder.self)
            second.name = "second"
            duplicate.holder = second
            try context.save()
            // The relationship other objects hold to the new card moves to the existing one.
            #expect(card.holder === second && second.card === card && first.card == nil, "under \(policy)")
        }
        let reader = try manager.createContext()
        try reader.performAndWait {
            let cards = try reader.fetch(FetchRequest<IDCard>())
            #expect(cards.map(\.note) == [insertedWins ? "new" : "old"], "under \(policy)")
            #expect(cards.first?.holder?.name == "second" && cards.first?.holder?.card === cards.first)
            let holders = try reader.fetch(FetchRequest<CardHolder>(sortBy: [SortDescriptor(\.name)]))
            #expect(holders.map { $0.card?.number ?? "-" } == ["-", "1"], "under \(policy)")
        }
    }
}
