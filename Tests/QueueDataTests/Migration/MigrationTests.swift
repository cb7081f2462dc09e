import Foundation
import Testing

@testable import QueueData

/// A model of one entity described without a subclass.
func thingModel(
    _ attributes: [AttributeDescription],
    entityName: String = "Thing",
    originalName: String? = nil
) throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(name: entityName, attributes: attributes, originalName: originalName)
    ])
}

/// A manager over `store` (shared across managers, so that one writes what the next opens).
func inMemoryManager(
    _ store: InMemoryStore,
    _ model: ManagedObjectModel,
    migrates: Bool = true,
    steps: [MigrationStep] = [],
    onProgress: (@Sendable (MigrationProgress) -> Void)? = nil
) -> ContextManager {
    ContextManager(
        delegate: TestStoreDelegate(
            model: model, storeType: .custom { _ in store }, migrates: migrates, steps: steps, onProgress: onProgress))
}

/// An in-memory store written with `model`, holding one row of `entityName` per element of
/// `rows`.
func store(
    _ model: ManagedObjectModel,
    _ rows: [[String: StoredValue]],
    entityName: String = "Thing"
) throws -> InMemoryStore {
    let store = InMemoryStore()
    let writer = inMemoryManager(store, model)
    let context = try writer.createContext()
    try context.performAndWait {
        for values in rows {
            let object = context.insert(entityName: entityName)
            for (name, value) in values {
                object.setValue(value, forKey: name)
            }
        }
        try context.save()
    }
    writer.close()
    return store
}

/// Whether `error` is a ``StoreError`` with `code` whose message contains every one of `parts`.
func isStoreError(_ error: any Error, _ code: StoreError.Code, mentioning parts: String...) -> Bool {
    guard let error = error as? StoreError, error.code == code else { return false }
    return parts.allSatisfy { error.message.contains($0) }
}

/// A score as version 1 stored it: text.
final class ScoreV1: ManagedObject {
    override class var entityName: String { "Score" }
    @Attribute var value: String = ""
    @Attribute var note: String? = nil
}

/// The score as a number, parsed by a transform; the note became non-optional by transform.
final class ScoreV2: ManagedObject {
    override class var entityName: String { "Score" }
    @Attribute(transform: { stored in
        guard case .string(let text) = stored, let number = Int(text.trimmingCharacters(in: .whitespaces)) else {
            throw ScoreParsingError(stored: stored)
        }
        return number
    })
    var value: Int = 0
    @Attribute(transform: { stored in
        if case .string(let text) = stored { return text.uppercased() }
        return "NONE"
    })
    var note: String = ""
}

class CarV2: ManagedObject {
    override class var entityName: String { "Automobile" }
    override class var originalEntityName: String? { "Car" }
    @Attribute var wheels: Int = 4
}

final class SportsCar: CarV2 {
    override class var entityName: String { "SportsCar" }
    @Attribute var topSpeed: Int = 0
}

final class Coupe: CarV2 {
    override class var entityName: String { "Coupe" }
    override class var originalEntityName: String? { "TwoDoor" }
}

struct ScoreParsingError: Error, CustomStringConvertible {
    let stored: StoredValue
    var description: String { "\(stored) is not a number" }
}

@Suite("Migration")
struct MigrationTests {
    // MARK: Fixtures

    @Test(
        "stores written by the earlier model migrate to the current one with the expected rows",
        arguments: ["json", "journal"])
    func fixtures(fileExtension: String) throws {
        let directory = TemporaryDirectory("migrate-fixture-\(fileExtension)")
        let original = try MigrationFixtures.install(fileExtension, in: directory)
        let progress = Recorder<MigrationProgress>()
        let open = { (recorder: Recorder<MigrationProgress>) in
            fileExtension == "json"
                ? jsonManager(directory, model: modelV2, onProgress: recorder.record)
                : journalManager(directory, model: modelV2, onProgress: recorder.record)
        }
        let originalContents = try #require(try Self.inspect(fileExtension, directory))

        let first = open(progress)
        #expect(try allRows(first, modelV2) == expectedVersion2Rows)
        #expect(progress.values.last?.phase == .finished)
        // The store keeps its identity (object IDs stay valid), records the new model, and
        // never reuses a key: the deleted Atlantis was Place 4.
        let migrated = try #require(try Self.inspect(fileExtension, directory))
        #expect(migrated.metadata.storeIdentifier == originalContents.metadata.storeIdentifier)
        #expect(migrated.metadata.versionHash == modelV2.versionHash)
        let context = try first.createContext()
        let keys = try context.performAndWait {
            let place = context.insert(PlaceV2.self)
            let voyage = context.insert(VoyageV2.self)
            let review = context.insert(ReviewV2.self)
            try context.save()
            return [place, voyage, review].map { $0.objectID.primaryKey }
        }
        #expect(keys == [5, 3, 1])
        // The original is kept, byte for byte, until the next open.
        let backup = "Store.\(fileExtension).pre-migration-\(modelV1.versionHash.prefix(12))"
        #expect(try directory.bytes(of: backup) == original)
        first.close()

        let again = Recorder<MigrationProgress>()
        let second = open(again)
        var expected = expectedVersion2Rows
        expected["Place"]![5] = PlaceV2.defaultRow
        #expect(try rowsByKey(second, "Place") == expected["Place"])
        #expect(again.values.isEmpty, "the store migrated twice")
        #expect(!directory.contents.contains(backup), "the original outlived the next open")
        second.close()
    }

    @Test(
        "opening an old store twice migrates it once, and the second open writes nothing",
        arguments: ["json", "journal"])
    func migratesOnce(fileExtension: String) throws {
        let directory = TemporaryDirectory("migrate-once-\(fileExtension)")
        try MigrationFixtures.install(fileExtension, in: directory)
        let steps = AtomicCounter()
        let step = MigrationStep("count") { _ in steps.increment() }
        func open() -> ContextManager {
            fileExtension == "json"
                ? jsonManager(directory, model: modelV2, steps: [step])
                : journalManager(directory, model: modelV2, steps: [step])
        }
        let first = open()
        try first.loadPersistentStore()
        first.close()
        let migrated = try directory.bytes(of: "Store.\(fileExtension)")
        for _ in 0..<2 {
            let next = open()
            #expect(try allRows(next, modelV2) == expectedVersion2Rows)
            next.close()
        }
        #expect(steps.value == 1)
        #expect(try directory.bytes(of: "Store.\(fileExtension)") == migrated)
        #expect(try Self.inspect(fileExtension, directory)?.metadata.appliedMigrationSteps == ["count"])

        // Saves and compactions after the migration keep the record of applied steps.
        let writer = open()
        let context = try writer.createContext()
        try context.performAndWait {
            context.insert(ReviewV2.self).text = "after"
            try context.save()
        }
        try writer.compactPersistentStore()
        writer.close()
        let last = open()
        #expect(try rowsByKey(last, "Review").count == 1)
        last.close()
        #expect(steps.value == 1)
        #expect(try Self.inspect(fileExtension, directory)?.metadata.appliedMigrationSteps == ["count"])
    }

    @Test("a torn journal tail is set aside when the journal migrates, and the original keeps it")
    func tornTailMigrates() throws {
        let directory = TemporaryDirectory("migrate-torn")
        let original = try MigrationFixtures.install("journal", in: directory)
        let torn = original + [0x2A, 0, 0, 0, 0x11, 0x22]
        try directory.write(torn, to: "Store.journal")
        let manager = journalManager(directory, model: modelV2)
        #expect(try allRows(manager, modelV2) == expectedVersion2Rows)
        let aside = try #require(directory.contents.first { $0.hasPrefix("Store.journal.torn-") })
        #expect(try directory.bytes(of: aside) == [0x2A, 0, 0, 0, 0x11, 0x22])
        #expect(try directory.bytes(of: "Store.journal.pre-migration-\(modelV1.versionHash.prefix(12))") == torn)
    }

    // MARK: Inferred rules

    @Test("added attributes get their declared default, or nil when optional")
    func addedAttributes() throws {
        let old = try thingModel([AttributeDescription(name: "name", type: .string)])
        let new = try thingModel([
            AttributeDescription(name: "name", type: .string),
            AttributeDescription(name: "count", type: .integer64, defaultValue: .integer(7)),
            AttributeDescription(name: "note", type: .string, isOptional: true),
        ])
        let store = try store(old, [["name": .string("a")], ["name": .string("b")]])
        #expect(
            try rowsByKey(inMemoryManager(store, new), "Thing") == [
                1: ["name": .string("a"), "count": .integer(7), "note": .null],
                2: ["name": .string("b"), "count": .integer(7), "note": .null],
            ])
    }

    @Test("an added non-optional attribute without a declared default is refused, naming it, and nothing is written")
    func addedWithoutDefault() throws {
        let old = try thingModel([AttributeDescription(name: "name", type: .string)])
        let new = try thingModel([
            AttributeDescription(name: "name", type: .string), AttributeDescription(name: "count", type: .integer64),
        ])
        let store = try store(old, [["name": .string("a")]])
        #expect {
            try inMemoryManager(store, new).loadPersistentStore()
        } throws: { error in
            isStoreError(
                error, .incompatibleModel,
                mentioning: "attribute 'Thing.count' was added as non-optional without a declared default")
        }
        #expect(try store.inspect()?.metadata.versionHash == old.versionHash)
        #expect(try rowsByKey(inMemoryManager(store, old), "Thing") == [1: ["name": .string("a")]])
    }

    @Test("removed attributes and entities are dropped; an entity added back never reuses its keys")
    func removed() throws {
        let old = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Thing",
                attributes: [
                    AttributeDescription(name: "name", type: .string), AttributeDescription(name: "old", type: .date),
                ]),
            EntityDescription(name: "Gone", attributes: [AttributeDescription(name: "x", type: .integer16)]),
        ])
        let new = try thingModel([AttributeDescription(name: "name", type: .string)])
        let store = try store(old, [["name": .string("a"), "old": .date(Date(timeIntervalSince1970: 5))]])
        let writer = inMemoryManager(store, old)
        let context = try writer.createContext()
        try context.performAndWait {
            context.insert(entityName: "Gone")
            context.insert(entityName: "Gone")
            try context.save()
        }
        writer.close()
        let migrated = inMemoryManager(store, new)
        #expect(try rowsByKey(migrated, "Thing") == [1: ["name": .string("a")]])
        let later = try migrated.createContext()
        try later.performAndWait {
            later.insert(entityName: "Thing")
            try later.save()
        }
        migrated.close()
        let contents = try #require(try store.inspect())
        #expect(contents.schema.map(\.name) == ["Thing"])
        #expect(contents.rows["Gone"] == nil)

        // Added back: its rows are gone, but its first new key follows the old ones.
        let back = inMemoryManager(
            store,
            try ManagedObjectModel(entities: [
                EntityDescription(name: "Thing", attributes: [AttributeDescription(name: "name", type: .string)]),
                EntityDescription(name: "Gone", attributes: [AttributeDescription(name: "x", type: .integer16)]),
            ]))
        let again = try back.createContext()
        let key = try again.performAndWait {
            let gone = again.insert(entityName: "Gone")
            try again.save()
            return gone.objectID.primaryKey
        }
        #expect(key == 3)
        #expect(try rowsByKey(back, "Gone").count == 1)
    }

    @Test(
        "renaming twice, keeping the first name: stores of every earlier version migrate",
        arguments: ["json", "journal"])
    func chainedRenames(fileExtension: String) throws {
        let version1 = try thingModel([AttributeDescription(name: "plate", type: .string)], entityName: "Car")
        let version2 = try thingModel(
            [AttributeDescription(name: "registration", type: .string, originalName: "plate")],
            entityName: "Automobile", originalName: "Car")
        let version3 = try thingModel(
            [AttributeDescription(name: "licence", type: .string, originalName: "plate")], entityName: "Vehicle",
            originalName: "Car")
        func open(_ directory: TemporaryDirectory, _ model: ManagedObjectModel) -> ContextManager {
            fileExtension == "json" ? jsonManager(directory, model: model) : journalManager(directory, model: model)
        }
        func writeVersion1(_ directory: TemporaryDirectory) throws {
            let manager = open(directory, version1)
            let context = try manager.createContext()
            try context.performAndWait {
                context.insert(entityName: "Car").setValue(.string("QD-1"), forKey: "plate")
                try context.save()
            }
            manager.close()
        }
        let expected: [Int64: [String: StoredValue]] = [1: ["licence": .string("QD-1")]]

        let skipping = TemporaryDirectory("migrate-chain-skip-\(fileExtension)")
        try writeVersion1(skipping)
        #expect(try rowsByKey(open(skipping, version3), "Vehicle") == expected)

        let stepping = TemporaryDirectory("migrate-chain-step-\(fileExtension)")
        try writeVersion1(stepping)
        let second = open(stepping, version2)
        #expect(try rowsByKey(second, "Automobile") == [1: ["registration": .string("QD-1")]])
        second.close()
        // The version 2 store recorded the renaming identifiers, in the newer format version.
        let recorded = try #require(try Self.inspect(fileExtension, stepping))
        #expect(recorded.schema.first?.originalName == "Car")
        #expect(recorded.schema.first?.attributes.first?.originalName == "plate")
        let bytes = try stepping.bytes(of: "Store.\(fileExtension)")
        if fileExtension == "journal" {
            #expect(bytes[8] == 2, "a journal with renaming identifiers is not major version 2")
        } else {
            #expect(String(decoding: bytes, as: UTF8.self).contains(#""version": 2"#))
        }
        #expect(try rowsByKey(open(stepping, version3), "Vehicle") == expected)
    }

    @Test(
        "stores without migration records keep the format version older readers read", arguments: ["json", "journal"])
    func formatVersions(fileExtension: String) throws {
        let directory = TemporaryDirectory("migrate-format-\(fileExtension)")
        let original = try MigrationFixtures.install(fileExtension, in: directory)
        let manager =
            fileExtension == "json" ? jsonManager(directory, model: modelV1) : journalManager(directory, model: modelV1)
        try manager.loadPersistentStore()
        try manager.compactPersistentStore()
        manager.close()
        let rewritten = try directory.bytes(of: "Store.\(fileExtension)")
        if fileExtension == "journal" {
            #expect(Array(rewritten[8..<12]) == [1, 0, 0, 0], "major 1, minor 0")
        } else {
            #expect(rewritten == original, "a JSON store rewritten without migration records changed")
        }
    }

    @Test(
        "a seed store of another model is migrated into place, or refused without leaving anything",
        arguments: ["json", "journal"])
    func seedOfAnotherModel(fileExtension: String) throws {
        let seeds = TemporaryDirectory("migrate-seed-source-\(fileExtension)")
        let seedBytes = try MigrationFixtures.install(fileExtension, in: seeds)
        let seed = seeds.file("Store.\(fileExtension)")
        func open(_ directory: TemporaryDirectory, migrates: Bool) -> ContextManager {
            fileExtension == "json"
                ? jsonManager(directory, seed: seed, model: modelV2, migrates: migrates)
                : journalManager(directory, seed: seed, model: modelV2, migrates: migrates)
        }
        let refusing = TemporaryDirectory("migrate-seed-refused-\(fileExtension)")
        #expect {
            try open(refusing, migrates: false).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .incompatibleModel, mentioning: "shouldUseAutomaticLightweightMigration")
        }
        #expect(!refusing.contents.contains("Store.\(fileExtension)"), "a refused seed was left installed")

        let migrating = TemporaryDirectory("migrate-seed-\(fileExtension)")
        let manager = open(migrating, migrates: true)
        #expect(try allRows(manager, modelV2) == expectedVersion2Rows)
        manager.close()
        #expect(migrating.contents == ["Store.\(fileExtension)", "Store.lock"], "a backup of a seed was kept")
        #expect(try seeds.bytes(of: "Store.\(fileExtension)") == seedBytes, "the seed was modified")
        #expect(try allRows(open(migrating, migrates: true), modelV2) == expectedVersion2Rows)
    }

    @Test("renamed attributes and entities keep their values and keys")
    func renamed() throws {
        let old = try thingModel([AttributeDescription(name: "title", type: .string)], entityName: "Note")
        let new = try thingModel(
            [AttributeDescription(name: "heading", type: .string, originalName: "title")], entityName: "Memo",
            originalName: "Note")
        let store = try store(old, [["title": .string("a")], ["title": .string("b")]], entityName: "Note")
        let plan = try inMemoryManager(store, new).migrationPlan()
        #expect(
            plan.changes == [
                .entityRenamed(from: "Note", to: "Memo"),
                .attributeRenamed(entity: "Memo", from: "title", to: "heading"),
            ])
        let migrated = inMemoryManager(store, new)
        #expect(try rowsByKey(migrated, "Memo") == [1: ["heading": .string("a")], 2: ["heading": .string("b")]])
        let context = try migrated.createContext()
        let key = try context.performAndWait {
            let memo = context.insert(entityName: "Memo")
            try context.save()
            return memo.objectID.primaryKey
        }
        #expect(key == 3)
    }

    @Test("a stored entity or attribute goes to one place: same names first, renames only of what is left")
    func renameClaims() throws {
        let old = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Old",
                attributes: [
                    AttributeDescription(name: "a", type: .string), AttributeDescription(name: "b", type: .string),
                ])
        ])
        let new = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "First",
                attributes: [
                    AttributeDescription(name: "b", type: .string),
                    AttributeDescription(name: "c", type: .string, defaultValue: .string("-"), originalName: "b"),
                    AttributeDescription(name: "d", type: .string, originalName: "a"),
                ], originalName: "Old"),
            EntityDescription(
                name: "Second", attributes: [AttributeDescription(name: "a", type: .string)], originalName: "Old"),
        ])
        let store = try store(old, [["a": .string("x"), "b": .string("y")]], entityName: "Old")
        let migrated = inMemoryManager(store, new)
        #expect(
            try rowsByKey(migrated, "First") == [1: ["b": .string("y"), "c": .string("-"), "d": .string("x")]])
        #expect(try rowsByKey(migrated, "Second") == [:])
    }

    @Test("a subclass does not inherit its parent's original entity name")
    func inheritedOriginalName() throws {
        let model = ManagedObjectModel([CarV2.self, SportsCar.self])
        #expect(model.entity(for: CarV2.self)?.originalName == "Car")
        #expect(model.entity(for: SportsCar.self)?.originalName == nil)
        #expect(model.entity(for: Coupe.self) == nil)
        #expect(ManagedObjectModel([Coupe.self]).entity(for: Coupe.self)?.originalName == "TwoDoor")
    }

    /// A lossless change: the stored attribute, its value, the new attribute, the value expected.
    struct Conversion: Sendable, CustomStringConvertible {
        var from: AttributeDescription
        var value: StoredValue
        var to: AttributeDescription
        var expected: StoredValue
        var description: String {
            "\(from.type.rawValue)\(from.isOptional ? "?" : "") \(value) → \(to.type.rawValue)\(to.isOptional ? "?" : "")"
        }

        init(_ from: AttributeType, _ value: StoredValue, _ to: AttributeType, _ expected: StoredValue) {
            self.from = AttributeDescription(
                name: "value", type: from, defaultValue: from == .uri ? .url(URL(string: "a:b")!) : nil)
            self.value = value
            self.to = AttributeDescription(name: "value", type: to)
            self.expected = expected
        }

        init(_ from: AttributeDescription, _ value: StoredValue, _ to: AttributeDescription, _ expected: StoredValue) {
            self.from = from
            self.value = value
            self.to = to
            self.expected = expected
        }
    }

    static let lossless: [Conversion] = [
        Conversion(.integer16, .integer(-7), .integer64, .integer(-7)),
        Conversion(.integer16, .integer(300), .integer32, .integer(300)),
        Conversion(.integer32, .integer(70_000), .integer64, .integer(70_000)),
        Conversion(.integer64, .integer(1 << 53), .double, .double(9_007_199_254_740_992)),
        Conversion(.integer32, .integer(-5), .double, .double(-5)),
        Conversion(.integer16, .integer(12), .float, .double(12)),
        Conversion(.float, .double(Double(Float(0.1))), .double, .double(Double(Float(0.1)))),
        Conversion(.boolean, .bool(true), .integer64, .integer(1)),
        Conversion(.boolean, .bool(false), .integer16, .integer(0)),
        Conversion(.integer64, .integer(42), .decimal, .decimal(42)),
        Conversion(.boolean, .bool(true), .string, .string("true")),
        Conversion(.integer64, .integer(-12), .string, .string("-12")),
        Conversion(.double, .double(2.5), .string, .string("2.5")),
        Conversion(.float, .double(Double(Float(0.1))), .string, .string("0.1")),
        Conversion(.date, .date(Date(timeIntervalSince1970: 0.25)), .string, .string("1970-01-01T00:00:00.250Z")),
        Conversion(
            .date, .date(Date(timeIntervalSinceReferenceDate: 20.123456)), .string,
            .string("2001-01-01T00:00:20.123456Z")),
        Conversion(
            .date, .date(Date(timeIntervalSinceReferenceDate: -0.000000001)), .string,
            .string("2000-12-31T23:59:59.999999999Z")),
        Conversion(.binaryData, .data(Data([0, 255])), .string, .string("AP8=")),
        Conversion(
            .uuid, .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!), .string,
            .string("E621E1F8-C36C-495A-93FC-0C247A3E6E5F")),
        Conversion(
            .uri, .url(URL(string: "https://example.com/a?b=1")!), .string, .string("https://example.com/a?b=1")),
        Conversion(.decimal, .decimal(Decimal(string: "12.34")!), .string, .string("12.34")),
        Conversion(
            AttributeDescription(name: "value", type: .transformable, defaultValue: .data(Data("{}".utf8))),
            .data(Data(#"{"a":[1,2]}"#.utf8)), AttributeDescription(name: "value", type: .string),
            .string(#"{"a":[1,2]}"#)),
        Conversion(
            AttributeDescription(name: "value", type: .string), .string("x"),
            AttributeDescription(name: "value", type: .string, isOptional: true), .string("x")),
        Conversion(
            AttributeDescription(name: "value", type: .integer16, isOptional: true), .null,
            AttributeDescription(name: "value", type: .integer64, defaultValue: .integer(-1)), .integer(-1)),
        Conversion(
            AttributeDescription(name: "value", type: .integer16, isOptional: true), .integer(3),
            AttributeDescription(name: "value", type: .integer64, defaultValue: .integer(-1)), .integer(3)),
    ]

    @Test("lossless type changes convert every value", arguments: lossless)
    func losslessConversion(_ conversion: Conversion) throws {
        let old = try thingModel([conversion.from])
        let new = try thingModel([conversion.to])
        let store = try store(old, [["value": conversion.value]])
        #expect(try rowsByKey(inMemoryManager(store, new), "Thing") == [1: ["value": conversion.expected]])
    }

    static let lossy: [Conversion] = [
        Conversion(.string, .string("12"), .integer64, .null),
        Conversion(.integer64, .integer(1), .integer16, .null),
        Conversion(.integer32, .integer(1), .float, .null),
        Conversion(.double, .double(1), .integer64, .null),
        Conversion(.double, .double(1), .float, .null),
        Conversion(.date, .date(Date()), .double, .null),
        Conversion(.string, .string("https://example.com"), .uri, .null),
        Conversion(
            AttributeDescription(name: "value", type: .string, isOptional: true), .null,
            AttributeDescription(name: "value", type: .string), .null),
    ]

    @Test("lossy changes are refused, naming the attribute, and nothing is written", arguments: lossy)
    func lossyConversion(_ conversion: Conversion) throws {
        let old = try thingModel([conversion.from])
        let newAttribute =
            conversion.to.type == .uri
            ? AttributeDescription(name: "value", type: .uri, defaultValue: .url(URL(string: "a:b")!)) : conversion.to
        let new = try thingModel([newAttribute])
        let store = try store(old, [["value": conversion.value]])
        #expect {
            try inMemoryManager(store, new).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .incompatibleModel, mentioning: "attribute 'Thing.value'", "Nothing was changed")
        }
        #expect(try store.inspect()?.metadata.versionHash == old.versionHash)
        #expect(try rowsByKey(inMemoryManager(store, old), "Thing") == [1: ["value": conversion.value]])
        #expect(try !inMemoryManager(store, new).migrationPlan().canMigrate)
    }

    @Test("a lossy change leaves JSON and journal files byte for byte as they were", arguments: ["json", "journal"])
    func lossyLeavesFiles(fileExtension: String) throws {
        let directory = TemporaryDirectory("migrate-lossy-\(fileExtension)")
        try MigrationFixtures.install(fileExtension, in: directory)
        let torn = try directory.bytes(of: "Store.\(fileExtension)") + (fileExtension == "journal" ? [1, 2, 3] : [])
        try directory.write(torn, to: "Store.\(fileExtension)")
        let lossy = try ManagedObjectModel(entities: [
            EntityDescription(name: "Place", attributes: [AttributeDescription(name: "name", type: .integer64)])
        ])
        let manager =
            fileExtension == "json" ? jsonManager(directory, model: lossy) : journalManager(directory, model: lossy)
        #expect {
            try manager.loadPersistentStore()
        } throws: { error in
            isStoreError(
                error, .incompatibleModel, mentioning: "attribute 'Place.name' changed type from string to integer64",
                "entity 'Journey' was removed", "attribute 'Place.country' was removed")
                && (error as? StoreError)?.url?.lastPathComponent == "Store.\(fileExtension)"
        }
        #expect(try directory.bytes(of: "Store.\(fileExtension)") == torn)
        #expect(directory.contents == ["Store.\(fileExtension)", "Store.lock"])
    }

    @Test("with migration off, every difference is listed and nothing is written")
    func migrationOff() throws {
        let directory = TemporaryDirectory("migrate-off")
        let original = try MigrationFixtures.install("json", in: directory)
        #expect {
            try jsonManager(directory, model: modelV2, migrates: false).loadPersistentStore()
        } throws: { error in
            isStoreError(
                error, .incompatibleModel, mentioning: "shouldUseAutomaticLightweightMigration",
                "entity 'Journey' was renamed to 'Voyage'", "entity 'Review' was added", "entity 'Legacy' was removed",
                "attribute 'Place.country' was renamed to 'countryName'", "attribute 'Place.code' was removed",
                "attribute 'Place.stars' changed type from integer16 to integer64",
                "attribute 'Place.notes' became non-optional", "attribute 'Place.rating' was added")
        }
        #expect(try directory.bytes(of: "Store.json") == original)
    }

    // MARK: Transforms

    @Test("a transform converts what inference cannot, including nil to a non-optional value")
    func transform() throws {
        let store = try store(
            ManagedObjectModel([ScoreV1.self]),
            [["value": .string("12")], ["value": .string(" 7 "), "note": .string("late")]], entityName: "Score")
        #expect(
            try rowsByKey(inMemoryManager(store, ManagedObjectModel([ScoreV2.self])), "Score") == [
                1: ["value": .integer(12), "note": .string("NONE")],
                2: ["value": .integer(7), "note": .string("LATE")],
            ])
    }

    @Test("a transform also runs when an attribute only becomes optional")
    func transformOnBecomingOptional() throws {
        final class OptionalThing: ManagedObject {
            override class var entityName: String { "Thing" }
            @Attribute(transform: { value in
                guard case .string(let text) = value, !text.isEmpty else { return nil }
                return text.uppercased()
            })
            var value: String? = nil
        }
        let old = try thingModel([AttributeDescription(name: "value", type: .string)])
        let store = try store(old, [["value": .string("x")], ["value": .string("")]])
        #expect(
            try rowsByKey(inMemoryManager(store, ManagedObjectModel([OptionalThing.self])), "Thing") == [
                1: ["value": .string("X")], 2: ["value": .null],
            ])
    }

    @Test(
        "an open refused after the model's version matched keeps the original an earlier migration kept",
        arguments: ["json", "journal"])
    func refusedOpenKeepsTheOriginal(fileExtension: String) throws {
        let directory = TemporaryDirectory("migrate-refused-\(fileExtension)")
        func open(_ model: ManagedObjectModel) -> ContextManager {
            fileExtension == "json" ? jsonManager(directory, model: model) : journalManager(directory, model: model)
        }
        let version1 = try thingModel([AttributeDescription(name: "name", type: .string)])
        let attributes = [
            AttributeDescription(name: "name", type: .string),
            AttributeDescription(name: "count", type: .integer64, defaultValue: .integer(0)),
        ]
        let version2 = try thingModel(attributes)
        // Uniqueness is not part of the version: the same version, refused for the duplicates.
        let version2Unique = try ManagedObjectModel(entities: [
            EntityDescription(name: "Thing", attributes: attributes, uniquenessConstraints: [["name"]])
        ])
        #expect(version2.versionHash == version2Unique.versionHash)
        let writer = open(version1)
        let context = try writer.createContext()
        try context.performAndWait {
            context.insert(entityName: "Thing").setValue(.string("a"), forKey: "name")
            context.insert(entityName: "Thing").setValue(.string("a"), forKey: "name")
            try context.save()
        }
        writer.close()
        let migrating = open(version2)
        try migrating.loadPersistentStore()
        migrating.close()
        let backup = "Store.\(fileExtension).pre-migration-\(version1.versionHash.prefix(12))"
        let original = try directory.bytes(of: backup)
        let store = try directory.bytes(of: "Store.\(fileExtension)")
        #expect(throws: StoreError.self) { try open(version2Unique).loadPersistentStore() }
        #expect(try directory.bytes(of: backup) == original, "the refused open removed the original")
        #expect(try directory.bytes(of: "Store.\(fileExtension)") == store)
        // An open the coordinator accepts lets it go.
        let accepted = open(version2)
        try accepted.loadPersistentStore()
        accepted.close()
        #expect(!directory.contents.contains(backup))
    }

    @Test("a transform that throws fails the migration, naming the row and the value, and nothing is written")
    func transformThrows() throws {
        let old = ManagedObjectModel([ScoreV1.self])
        let store = try store(old, [["value": .string("12")], ["value": .string("twelve")]], entityName: "Score")
        let new = inMemoryManager(store, ManagedObjectModel([ScoreV2.self]))
        #expect {
            try new.loadPersistentStore()
        } throws: { error in
            isStoreError(error, .migrationFailed, mentioning: "Row 2 of 'Score'", "\"twelve\"", "is not a number")
        }
        #expect(try store.inspect()?.metadata.versionHash == old.versionHash)
        let plan = try new.migrationPlan()
        #expect(!plan.canMigrate)
        #expect(plan.problems.count == 1)
    }

    @Test("an integer that Double cannot represent exactly fails the migration, and the dry run says so")
    func inexactInteger() throws {
        let old = try thingModel([AttributeDescription(name: "value", type: .integer64)])
        let new = try thingModel([AttributeDescription(name: "value", type: .double)])
        let store = try store(old, [["value": .integer(1)], ["value": .integer((1 << 53) + 1)]])
        let plan = try inMemoryManager(store, new).migrationPlan()
        #expect(plan.problems.count == 1)
        #expect(plan.problems.first?.contains("9007199254740993 has no exact Double representation") == true)
        #expect {
            try inMemoryManager(store, new).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .migrationFailed, mentioning: "Row 2 of 'Thing'", "no exact Double representation")
        }
        #expect(try store.inspect()?.metadata.versionHash == old.versionHash)
    }

    // MARK: Custom steps

    @Test("a custom step computes new attributes from the original rows, runs once, and is recorded")
    func customStep() throws {
        let old = try thingModel([AttributeDescription(name: "fullName", type: .string)], entityName: "Person")
        let new = try thingModel(
            [
                AttributeDescription(name: "givenName", type: .string, defaultValue: .string("")),
                AttributeDescription(name: "familyName", type: .string, defaultValue: .string("")),
            ], entityName: "Person")
        let store = try store(
            old, [["fullName": .string("Ada Lovelace")], ["fullName": .string("Grace Brewster Hopper")]],
            entityName: "Person")
        let runs = AtomicCounter()
        let split = MigrationStep("split full names") { rows in
            runs.increment()
            rows.updateRows(of: "Person") { person, original in
                if case .string(let name)? = original?["fullName"], let space = name.lastIndex(of: " ") {
                    person.setValue(.string(String(name[..<space])), for: "givenName")
                    person.setValue(.string(String(name[space...].dropFirst())), for: "familyName")
                }
            }
        }
        let plan = try inMemoryManager(store, new, steps: [split]).migrationPlan()
        #expect(plan.pendingSteps == ["split full names"])
        #expect(runs.value == 0, "the dry run ran a step")
        let expected: [Int64: [String: StoredValue]] = [
            1: ["givenName": .string("Ada"), "familyName": .string("Lovelace")],
            2: ["givenName": .string("Grace Brewster"), "familyName": .string("Hopper")],
        ]
        #expect(try rowsByKey(inMemoryManager(store, new, steps: [split]), "Person") == expected)
        #expect(try rowsByKey(inMemoryManager(store, new, steps: [split]), "Person") == expected)
        #expect(runs.value == 1)
        #expect(try store.inspect()?.metadata.appliedMigrationSteps == ["split full names"])
    }

    @Test("steps run in order, each once, later steps when they are added, with the same model too")
    func stepOrder() throws {
        let model = try thingModel([AttributeDescription(name: "value", type: .integer64)])
        let store = try store(model, [["value": .integer(1)], ["value": .integer(2)]])
        let double = MigrationStep("double") { rows in
            rows.updateRows(of: "Thing") { row, _ in
                if case .integer(let value)? = row["value"] { row.setValue(.integer(value * 2), for: "value") }
            }
        }
        let addTen = MigrationStep("add ten") { rows in
            rows.updateRows(of: "Thing") { row, _ in
                if case .integer(let value)? = row["value"] { row.setValue(.integer(value + 10), for: "value") }
            }
        }
        #expect(
            try rowsByKey(inMemoryManager(store, model, steps: [double]), "Thing") == [
                1: ["value": .integer(2)], 2: ["value": .integer(4)],
            ])
        #expect(
            try rowsByKey(inMemoryManager(store, model, steps: [double, addTen]), "Thing") == [
                1: ["value": .integer(12)], 2: ["value": .integer(14)],
            ])
        #expect(try store.inspect()?.metadata.appliedMigrationSteps == ["double", "add ten"])
        #expect(
            try rowsByKey(inMemoryManager(store, model, steps: [double, addTen]), "Thing") == [
                1: ["value": .integer(12)], 2: ["value": .integer(14)],
            ])
    }

    @Test("steps insert rows with fresh keys and remove rows; a new store runs every step over no rows")
    func stepInsertsAndRemoves() throws {
        let model = try thingModel([AttributeDescription(name: "value", type: .integer64)])
        let reference = MigrationStep("reference rows") { rows in
            rows.removeRows(of: "Thing") { $0["value"] == .integer(2) }
            rows.insertRow(into: "Thing", ["value": .integer(100)])
        }
        let existing = try store(model, [["value": .integer(1)], ["value": .integer(2)], ["value": .integer(3)]])
        #expect(
            try rowsByKey(inMemoryManager(existing, model, steps: [reference]), "Thing") == [
                1: ["value": .integer(1)], 3: ["value": .integer(3)], 4: ["value": .integer(100)],
            ])
        let fresh = InMemoryStore()
        #expect(
            try rowsByKey(inMemoryManager(fresh, model, steps: [reference]), "Thing") == [1: ["value": .integer(100)]])
        #expect(try fresh.inspect()?.metadata.appliedMigrationSteps == ["reference rows"])
    }

    @Test("a step that throws or leaves a misfit fails the migration, is not recorded, and nothing is written")
    func failingSteps() throws {
        struct Refusal: Error {}
        let model = try thingModel([AttributeDescription(name: "value", type: .integer64)])
        let store = try store(model, [["value": .integer(1)]])
        let throwing = MigrationStep("throws") { _ in throw Refusal() }
        #expect {
            try inMemoryManager(store, model, steps: [throwing]).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .migrationFailed, mentioning: "The migration step 'throws' failed")
                && (error as? StoreError)?.underlyingError is Refusal
        }
        let misfit = MigrationStep("misfit") { rows in
            rows.updateRows(of: "Thing") { row, _ in row.setValue(.string("one"), for: "value") }
        }
        #expect {
            try inMemoryManager(store, model, steps: [misfit]).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .migrationFailed, mentioning: "'misfit'", "'Thing.value' of row 1", "\"one\"")
        }
        let duplicated = MigrationStep("misfit") { _ in }
        #expect {
            try inMemoryManager(store, model, steps: [duplicated, duplicated]).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .incompatibleModel, mentioning: "two migration steps are named 'misfit'")
                && !"\(error)".contains("different model")
        }
        #expect(try store.inspect()?.metadata.appliedMigrationSteps == [])
        #expect(try rowsByKey(inMemoryManager(store, model), "Thing") == [1: ["value": .integer(1)]])
    }

    // MARK: Dry run and progress

    @Test("the dry run lists every change, step and row without touching the file", arguments: ["json", "journal"])
    func dryRun(fileExtension: String) throws {
        let directory = TemporaryDirectory("migrate-plan-\(fileExtension)")
        let original = try MigrationFixtures.install(fileExtension, in: directory)
        let step = MigrationStep("later") { _ in }
        let manager =
            fileExtension == "json"
            ? jsonManager(directory, model: modelV2, steps: [step])
            : journalManager(directory, model: modelV2, steps: [step])
        let plan = try manager.migrationPlan()
        #expect(plan.storedVersionHash == modelV1.versionHash)
        #expect(plan.currentVersionHash == modelV2.versionHash)
        #expect(
            plan.changes == [
                .attributeRenamed(entity: "Place", from: "country", to: "countryName"),
                .attributeTypeChanged(entity: "Place", attribute: "stars", from: .integer16, to: .integer64),
                .attributeTypeChanged(entity: "Place", attribute: "population", from: .integer32, to: .double),
                .attributeTypeChanged(entity: "Place", attribute: "visited", from: .boolean, to: .integer64),
                .attributeBecameNonOptional(entity: "Place", attribute: "notes"),
                .attributeTypeChanged(entity: "Place", attribute: "founded", from: .date, to: .string),
                .attributeAdded(entity: "Place", attribute: "rating"),
                .attributeAdded(entity: "Place", attribute: "tags"),
                .attributeRemoved(entity: "Place", attribute: "code"),
                .entityRenamed(from: "Journey", to: "Voyage"),
                .attributeTypeChanged(entity: "Voyage", attribute: "cost", from: .float, to: .double),
                .entityAdded("Review"),
                .entityRemoved("Legacy"),
            ])
        #expect(plan.pendingSteps == ["later"])
        #expect(plan.problems.isEmpty)
        #expect(plan.rowCount == 6)
        #expect(plan.isMigrationNeeded && plan.canMigrate)
        #expect(plan.description.contains("- entity 'Journey' was renamed to 'Voyage'"))
        #expect(plan.description.contains("- run step 'later'"))
        #expect(try directory.bytes(of: "Store.\(fileExtension)") == original)
        #expect(directory.contents == ["Store.\(fileExtension)"], "the dry run created or locked something")

        try manager.loadPersistentStore()
        let after = try manager.migrationPlan()
        #expect(!after.isMigrationNeeded)
        #expect(after.rowCount == 5)
        manager.close()
        #expect(try !manager.migrationPlan().isMigrationNeeded)
    }

    @Test("the dry run of a journal with a torn tail reads the valid prefix and repairs nothing")
    func dryRunTorn() throws {
        let directory = TemporaryDirectory("migrate-plan-torn")
        let torn = try MigrationFixtures.install("journal", in: directory) + [7, 7, 7]
        try directory.write(torn, to: "Store.journal")
        let plan = try journalManager(directory, model: modelV2).migrationPlan()
        #expect(plan.rowCount == 6 && plan.canMigrate)
        #expect(try directory.bytes(of: "Store.journal") == torn)
        #expect(directory.contents == ["Store.journal"])
    }

    @Test("the dry run of a missing store, and of a store that cannot be migrated")
    func dryRunEdges() throws {
        let directory = TemporaryDirectory("migrate-plan-edges")
        let none = try jsonManager(directory, model: modelV2).migrationPlan()
        #expect(none.storedVersionHash == nil)
        #expect(!none.isMigrationNeeded)
        #expect(directory.contents.isEmpty)

        try MigrationFixtures.install("json", in: directory)
        let off = try jsonManager(directory, model: modelV2, migrates: false).migrationPlan()
        #expect(!off.canMigrate)
        #expect(off.problems.first?.contains("shouldUseAutomaticLightweightMigration") == true)
        #expect(off.description.contains("- problem: "))
    }

    @Test("progress goes from converting through each step and the write to finished, never backwards")
    func progress() throws {
        let old = try thingModel([AttributeDescription(name: "value", type: .integer16)])
        let new = try thingModel([AttributeDescription(name: "value", type: .integer64)])
        let store = InMemoryStore()
        let writer = inMemoryManager(store, old)
        let context = try writer.createContext()
        try context.performAndWait {
            for index in 0..<10_000 {
                context.insert(entityName: "Thing").setValue(.integer(Int64(index % 100)), forKey: "value")
            }
            try context.save()
        }
        writer.close()
        let reports = Recorder<MigrationProgress>()
        let steps = [MigrationStep("one") { _ in }, MigrationStep("two") { _ in }]
        try inMemoryManager(store, new, steps: steps, onProgress: reports.record).loadPersistentStore()
        let values = reports.values
        #expect(values.first?.completedUnitCount == 0)
        #expect(values.first?.phase == .converting)
        #expect(values.filter { $0.phase == .converting }.count >= 3, "no progress while converting")
        #expect(values.contains { $0.phase == .runningStep("one") })
        #expect(values.contains { $0.phase == .runningStep("two") })
        #expect(values.contains { $0.phase == .writing })
        #expect(values.last?.phase == .finished)
        #expect(values.last?.fractionCompleted == 1)
        #expect(zip(values, values.dropFirst()).allSatisfy { $0.completedUnitCount <= $1.completedUnitCount })
        #expect(values.allSatisfy { $0.totalUnitCount == values[0].totalUnitCount })
    }

    // MARK: Helpers

    static func inspect(_ fileExtension: String, _ directory: TemporaryDirectory) throws -> StoreContents? {
        fileExtension == "json"
            ? try JSONFileStore(directory: directory.url, name: "Store").inspect()
            : try JournalStore(directory: directory.url, name: "Store").inspect()
    }
}

extension ManagedObject {
    /// The values of a new object of this class, by attribute name.
    static var defaultRow: [String: StoredValue] {
        let entity = modelV2.entity(for: self)!
        return Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, $0.defaultValue) })
    }
}
