import Foundation
import Testing

@_spi(StoreTool) @testable import QueueData

/// A model of one entity described without a subclass: `Part` with a `code` and a `label`,
/// constrained by `constraints` (which the version hash leaves out).
private func partModel(_ constraints: [[String]]) throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(
            name: "Part",
            attributes: [
                AttributeDescription(name: "code", type: .string),
                AttributeDescription(name: "label", type: .string),
            ],
            uniquenessConstraints: constraints)
    ])
}

private final class Gadget: ManagedObject {
    @Attribute(.unique) var serial: String = ""
    @Attribute var name: String = ""
}

private final class Phone: ManagedObject {
    @Attribute var number: String = ""
    override class var uniquenessConstraints: [[String]] { [["number"]] }
}

private class Device: ManagedObject {
    @Attribute var maker: String = ""
}

private final class Tablet: Device {
    @Attribute var inches: Int = 10
}

private let recordedModel = ManagedObjectModel([Gadget.self, Phone.self, Device.self, Tablet.self])

private func manager(_ kind: String, _ directory: TemporaryDirectory, model: ManagedObjectModel) -> ContextManager {
    kind == "journal"
        ? journalManager(directory, model: model, migrates: false)
        : jsonManager(directory, model: model, migrates: false)
}

private func insertParts(_ manager: ContextManager, _ parts: [(String, String)]) throws {
    let context = try manager.createContext()
    try context.performAndWait {
        for (code, label) in parts {
            let part = context.insert(entityName: "Part")
            part.setValue(.string(code), forKey: "code")
            part.setValue(.string(label), forKey: "label")
        }
        try context.save()
    }
}

@Suite("Stores record uniqueness constraints and superentities")
struct StoredModelTests {
    @Test(
        "both file stores record the model's constraints and superentities, and read them back",
        arguments: ["journal", "json"])
    func recordsTheModel(kind: String) throws {
        let directory = TemporaryDirectory("stored-model")
        let store = manager(kind, directory, model: recordedModel)
        try store.loadPersistentStore()
        let context = try store.createContext()
        try context.performAndWait {
            context.insert(Gadget.self).serial = "g1"
            context.insert(Tablet.self).maker = "m"
            try context.save()
        }
        store.close()

        let url = directory.file("Store.\(kind)")
        let contents = try StoreInspection.contents(of: url)
        let schema = Dictionary(uniqueKeysWithValues: contents.schema.map { ($0.name, $0) })
        #expect(schema["Gadget"]?.uniquenessConstraints == [["serial"]])
        #expect(schema["Phone"]?.uniquenessConstraints == [["number"]])
        #expect(schema["Device"]?.uniquenessConstraints == [])
        #expect(schema["Tablet"]?.superentityName == "Device")
        #expect(schema["Device"]?.superentityName == nil)
        #expect(schema["Gadget"]?.superentityName == nil)
        let inspection = try StoreInspection.inspect(url)
        #expect(inspection.formatVersion?.hasPrefix("3") == true, "\(String(describing: inspection.formatVersion))")
        #expect(inspection.isSound, "\(inspection.problems)")

        // The store reopens with the model, and the recorded constraint still binds.
        let reopened = manager(kind, directory, model: recordedModel)
        defer { reopened.close() }
        try reopened.loadPersistentStore()
        let again = try reopened.createContext()
        let devices = try again.performAndWait { try again.count(for: FetchRequest<Device>()) }
        #expect(devices == 1)
        let duplicate: (any Error)? = again.performAndWait {
            again.insert(Gadget.self).serial = "g1"
            do {
                try again.save()
                return nil
            } catch {
                return error
            }
        }
        #expect(duplicate is MergeConflictError, "\(String(describing: duplicate))")
    }

    @Test(
        "a store of a model without constraints or subentities keeps writing the older format",
        arguments: ["journal", "json"])
    func olderFormatWithoutThem(kind: String) throws {
        let directory = TemporaryDirectory("stored-model-v1")
        let store = manager(kind, directory, model: try partModel([]))
        try store.loadPersistentStore()
        try insertParts(store, [("a", "x")])
        store.close()
        let inspection = try StoreInspection.inspect(directory.file("Store.\(kind)"))
        #expect(inspection.formatVersion?.hasPrefix("1") == true, "\(String(describing: inspection.formatVersion))")
    }

    @Test(
        "a changed constraint is recorded by the next save, and an open alone writes nothing",
        arguments: ["journal", "json"])
    func changedConstraintRecordedAtTheNextSave(kind: String) throws {
        let directory = TemporaryDirectory("stored-model-change")
        let url = directory.file("Store.\(kind)")
        let first = manager(kind, directory, model: try partModel([["code"]]))
        try first.loadPersistentStore()
        try insertParts(first, [("a", "x"), ("b", "y")])
        first.close()
        #expect(try StoreInspection.contents(of: url).schema[0].uniquenessConstraints == [["code"]])

        // Same version hash, other constraint: opening (and closing) leaves the file as it was.
        let before = try directory.bytes(of: url.lastPathComponent)
        let second = manager(kind, directory, model: try partModel([["label"]]))
        try second.loadPersistentStore()
        second.close()
        #expect(try directory.bytes(of: url.lastPathComponent) == before)

        // A constraint the rows break is refused at open, and nothing is written either.
        let unconstrained = manager(kind, directory, model: try partModel([]))
        try unconstrained.loadPersistentStore()
        try insertParts(unconstrained, [("a", "z")])
        unconstrained.close()
        let duplicated = try directory.bytes(of: url.lastPathComponent)
        let refusing = manager(kind, directory, model: try partModel([["code"]]))
        #expect(throws: StoreError.self) { try refusing.loadPersistentStore() }
        refusing.close()
        #expect(try directory.bytes(of: url.lastPathComponent) == duplicated)

        // The first save under a model records its constraints, with every row kept.
        let third = manager(kind, directory, model: try partModel([["label"]]))
        try third.loadPersistentStore()
        try insertParts(third, [("c", "w")])
        third.close()
        let contents = try StoreInspection.contents(of: url)
        #expect(contents.schema[0].uniquenessConstraints == [["label"]])
        #expect(contents.rows["Part"]?.count == 4)
        let inspection = try StoreInspection.inspect(url)
        #expect(inspection.isSound, "\(inspection.problems)")
    }

    @Test(
        "verification finds rows that break a recorded constraint, across subentities", arguments: ["journal", "json"])
    func verificationFindsDuplicates(kind: String) throws {
        let directory = TemporaryDirectory("stored-model-verify")
        let url = directory.file("Store.\(kind)")
        let store = manager(kind, directory, model: try partModel([]))
        try store.loadPersistentStore()
        try insertParts(store, [("a", "x"), ("a", "y"), ("b", "y")])
        store.close()
        // The same rows, recorded under a constraint they break (as a hand edit would).
        var contents = try StoreInspection.contents(of: url)
        contents.schema = [
            try contents.schema[0].recording(
                uniquenessConstraints: [["code"], ["code", "label"]], superentityName: nil)
        ]
        try write(contents, to: url, kind: kind)
        let inspection = try StoreInspection.inspect(url)
        #expect(!inspection.isSound)
        let messages = inspection.problems.map(\.message)
        #expect(messages.count == 1, "\(messages)")
        #expect(
            messages.first?.contains(
                #"Part row 2 and Part row 1 share code = "a", which the uniqueness constraint (code) of Part forbids"#)
                == true, "\(messages)")

        // A constraint binds an entity and its subentities together.
        let hierarchy = try ManagedObjectModel(entities: [
            EntityDescription(name: "Device", attributes: [AttributeDescription(name: "maker", type: .string)]),
            EntityDescription(
                name: "Tablet", attributes: [AttributeDescription(name: "maker", type: .string)],
                uniquenessConstraints: [], superentityName: "Device"),
        ])
        let other = TemporaryDirectory("stored-model-verify-hierarchy")
        let otherURL = other.file("Store.\(kind)")
        let devices = manager(kind, other, model: hierarchy)
        try devices.loadPersistentStore()
        let context = try devices.createContext()
        try context.performAndWait {
            context.insert(entityName: "Device").setValue(.string("m"), forKey: "maker")
            context.insert(entityName: "Tablet").setValue(.string("m"), forKey: "maker")
            context.insert(entityName: "Tablet").setValue(.string("n"), forKey: "maker")
            try context.save()
        }
        devices.close()
        var recorded = try StoreInspection.contents(of: otherURL)
        #expect(recorded.schema.map(\.superentityName) == [nil, "Device"])
        recorded.schema = try recorded.schema.map {
            try $0.recording(uniquenessConstraints: [["maker"]], superentityName: $0.superentityName)
        }
        try write(recorded, to: otherURL, kind: kind)
        let problems = try StoreInspection.inspect(otherURL).problems.map(\.message)
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.contains(#"Tablet row 1 and Device row 1 share maker = "m""#) == true, "\(problems)")
    }

    /// Writes `contents` as a store file of `kind` at `url`, as a hand edit could.
    private func write(_ contents: StoreContents, to url: URL, kind: String) throws {
        try Data(storeFileBytes(contents, kind: kind)).write(to: url)
    }

    @Test("a recorded hierarchy or constraint that does not hold together is damage, never a trap")
    func hostileModelRecords() throws {
        let directory = TemporaryDirectory("stored-model-hostile")
        let store = manager("json", directory, model: recordedModel)
        try store.loadPersistentStore()
        store.close()
        let valid = String(decoding: try directory.bytes(of: "Store.json"), as: UTF8.self)
        #expect(valid.contains(#""superentity": "Device""#))
        #expect(valid.contains(#""uniquenessConstraints": [["serial"]]"#))
        let cases: [(String, String)] = [
            (
                "unknown superentity",
                valid.replacingOccurrences(of: #""superentity": "Device""#, with: #""superentity": "Nope""#)
            ),
            (
                "own superentity",
                valid.replacingOccurrences(of: #""superentity": "Device""#, with: #""superentity": "Tablet""#)
            ),
            (
                "cycle",
                valid.replacingOccurrences(
                    of: #"{"name": "Device", "attributes""#,
                    with: #"{"name": "Device", "superentity": "Tablet", "attributes""#)
            ),
            ("unknown attribute", valid.replacingOccurrences(of: #"[["serial"]]"#, with: #"[["nope"]]"#)),
            ("empty constraint", valid.replacingOccurrences(of: #"[["serial"]]"#, with: #"[[]]"#)),
            ("not a list", valid.replacingOccurrences(of: #"[["serial"]]"#, with: #""serial""#)),
            ("older version", valid.replacingOccurrences(of: #""version": 3"#, with: #""version": 2"#)),
        ]
        for (label, text) in cases {
            #expect(text != valid, "\(label)")
            try directory.write(Array(text.utf8), to: "Store.json")
            let reopened = manager("json", directory, model: recordedModel)
            #expect(throws: StoreError.self, "\(label)") { try reopened.loadPersistentStore() }
            reopened.close()
            #expect(try directory.bytes(of: "Store.json") == Array(text.utf8), "\(label)")
            #expect(try !StoreInspection.inspect(directory.file("Store.json")).isSound, "\(label)")
        }

        // A journal whose snapshot records a cycle of superentities.
        let journalDirectory = TemporaryDirectory("stored-model-hostile-journal")
        // (A model refuses such a hierarchy: the cycle is written from bare descriptions, with
        // the version hash of the same entities without superentities, which the hash leaves out.)
        let x = AttributeDescription(name: "x", type: .integer64)
        let cyclic = [
            try EntityDescription(name: "A", attributes: [x], uniquenessConstraints: [], superentityName: "B"),
            try EntityDescription(name: "B", attributes: [x], uniquenessConstraints: [], superentityName: "A"),
        ]
        let plain = try ManagedObjectModel(entities: [
            EntityDescription(name: "A", attributes: [x]), EntityDescription(name: "B", attributes: [x]),
        ])
        let bytes = JournalStore.snapshotFileBytes(
            StoreContents(
                metadata: StoreMetadata(storeIdentifier: UUID(), versionHash: plain.versionHash),
                schema: cyclic, rows: [:]))
        try journalDirectory.write(bytes, to: "Store.journal")
        let journal = journalManager(journalDirectory, model: plain, migrates: false)
        #expect(throws: StoreError.self) { try journal.loadPersistentStore() }
        journal.close()
        #expect(try journalDirectory.bytes(of: "Store.journal") == bytes)
        let inspection = try StoreInspection.inspect(journalDirectory.file("Store.journal"))
        #expect(inspection.problems.contains { $0.message.contains("form a cycle") }, "\(inspection.problems)")
    }
}

@Suite("Superentities in a model")
struct SuperentityModelTests {
    @Test("a model whose superentities loop or name a missing entity is refused, not written")
    func invalidHierarchiesAreRefused() {
        let x = AttributeDescription(name: "x", type: .integer64)
        #expect(throws: ModelError.self) {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "A", attributes: [x], uniquenessConstraints: [], superentityName: "B"),
                EntityDescription(name: "B", attributes: [x], uniquenessConstraints: [], superentityName: "A"),
            ])
        }
        #expect(throws: ModelError.self) {
            try ManagedObjectModel(entities: [
                EntityDescription(name: "A", attributes: [x], uniquenessConstraints: [], superentityName: "Missing")
            ])
        }
        // A described subentity has everything its superentity declares.
        let y = AttributeDescription(name: "y", type: .string)
        let parent = try? EntityDescription(name: "P", attributes: [x], uniquenessConstraints: [["x"]])
        for (label, child) in [
            (
                "missing attribute",
                try? EntityDescription(name: "C", attributes: [y], uniquenessConstraints: [], superentityName: "P")
            ),
            (
                "other type",
                try? EntityDescription(
                    name: "C", attributes: [AttributeDescription(name: "x", type: .string)], uniquenessConstraints: [],
                    superentityName: "P")
            ),
            (
                "missing constraint",
                try? EntityDescription(name: "C", attributes: [x, y], uniquenessConstraints: [], superentityName: "P")
            ),
        ] {
            #expect(throws: ModelError.self, "\(label)") { try ManagedObjectModel(entities: [parent!, child!]) }
        }
        let valid = try? ManagedObjectModel(entities: [
            parent!,
            EntityDescription(name: "C", attributes: [y, x], uniquenessConstraints: [["x"]], superentityName: "P"),
        ])
        #expect(valid?.entityIndexes(named: "P", includingSubentities: true) == [0, 1])
        // A subclass whose superclass's entity is not in the model stays valid, as before.
        #expect(throws: Never.self) { _ = ManagedObjectModel([Tablet.self]) }
    }
}
