import Dispatch
import Foundation
import QueueData
import Testing

/// The checks every ``PersistentStore`` must pass, runnable from your own tests.
///
/// ```swift
/// import QueueDataTestSupport
/// import Testing
///
/// @Test func myStoreConforms() throws {
///     let directory = ... // an empty directory for this test
///     try StoreConformanceSuite { try MyStore(directory: directory) }.run()
/// }
/// ```
///
/// `makeStore` is called many times; every store it returns must use the same (initially
/// empty) location, so that what one store committed, the next one opens. The suite drives
/// the store through a ``ContextManager`` and records each failed check as a test issue.
/// The last check changes the model: a store that implements migration
/// (``PersistentStore/replaceContents(with:keepingOriginalAs:)``) must migrate it, any other
/// must refuse it unchanged.
public struct StoreConformanceSuite: Sendable {
    /// Makes a store over the suite's location.
    public var makeStore: @Sendable () throws -> any PersistentStore
    /// Whether to check that a second opener gets ``StoreError/Code/locked`` (default `true`).
    public var checksExclusiveAccess: Bool

    /// Creates the suite for the stores `makeStore` returns.
    public init(
        checksExclusiveAccess: Bool = true,
        makeStore: @escaping @Sendable () throws -> any PersistentStore
    ) {
        self.makeStore = makeStore
        self.checksExclusiveAccess = checksExclusiveAccess
    }

    /// Runs every check, in order, on the suite's location (which must start empty).
    ///
    /// - Throws: Errors that stop the checks (a store that cannot be opened at all).
    public func run(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try checkNewStore(sourceLocation)
        let expected = try checkRoundTrip(sourceLocation)
        try checkUpdatesAndDeletes(expected, sourceLocation)
        try checkManySaves(sourceLocation)
        if checksExclusiveAccess {
            try checkExclusiveAccess(sourceLocation)
        }
        try checkIncompatibleModel(sourceLocation)
        try checkMigration(sourceLocation)
    }

    // MARK: Checks

    private func manager(_ model: ManagedObjectModel = conformanceModel) -> ContextManager {
        ContextManager(delegate: ConformanceDelegate(model: model, makeStore: makeStore))
    }

    /// A new store is empty, records the model's version hash and entities, and keeps its
    /// identity across reopening.
    private func checkNewStore(_ sourceLocation: SourceLocation) throws {
        let store = try makeStore()
        let contents = try store.open(for: conformanceModel)
        store.close()
        let isEmpty = contents.rows.values.allSatisfy { $0.isEmpty }
        #expect(isEmpty, "a new store holds rows", sourceLocation: sourceLocation)
        #expect(
            contents.metadata.versionHash == conformanceModel.versionHash,
            "a new store does not record the model's version hash", sourceLocation: sourceLocation)
        #expect(
            Set(contents.schema.map(\.name)) == Set(conformanceModel.entities.map(\.name)),
            "a new store does not record the model's entities", sourceLocation: sourceLocation)
        let again = try makeStore()
        let reopened = try again.open(for: conformanceModel)
        again.close()
        #expect(
            reopened.metadata.storeIdentifier == contents.metadata.storeIdentifier,
            "the store identifier changed on reopening", sourceLocation: sourceLocation)
    }

    /// Values of every type, edge cases included, survive a save and a reopen exactly.
    private func checkRoundTrip(_ sourceLocation: SourceLocation) throws -> [Int: [String: StoredValue]] {
        let writer = manager()
        let context = try writer.createContext()
        try context.performAndWait {
            for (sequence, fill) in Self.samples.enumerated() {
                let item = context.insert(ConformanceItem.self)
                item.sequence = sequence
                fill(item)
            }
            for sequence in 0..<3 {
                let note = context.insert(ConformanceNote.self)
                note.sequence = sequence
                note.text = "note \(sequence)"
            }
            try context.save()
        }
        let expected = try context.performAndWait { try Self.snapshot(context) }
        writer.close()
        let reopened = try Self.reopenedSnapshot(manager())
        Self.compare(reopened, expected, "after a save and a reopen", sourceLocation)
        return expected
    }

    /// Updates, deletes and new inserts survive a reopen, and primary keys are never reused.
    private func checkUpdatesAndDeletes(_ before: [Int: [String: StoredValue]], _ sourceLocation: SourceLocation) throws
    {
        let writer = manager()
        let context = try writer.createContext()
        let highestKey: Int64 = try context.performAndWait {
            let items = try context.fetch(FetchRequest<ConformanceItem>(sortBy: [SortDescriptor(\.sequence)]))
            items[0].string = "changed"
            items[0].optionalString = "now set"
            items[1].double = -0.0
            items[1].optionalPayload = nil
            let highest = items.map { $0.objectID.primaryKey ?? 0 }.max() ?? 0
            if let last = items.last {
                context.delete(last)
            }
            try context.save()
            return highest
        }
        writer.close()

        let second = manager()
        let next = try second.createContext()
        try next.performAndWait {
            let items = try next.fetch(FetchRequest<ConformanceItem>(sortBy: [SortDescriptor(\.sequence)]))
            #expect(items.count == Self.samples.count - 1, "a deleted row came back", sourceLocation: sourceLocation)
            #expect(items.first?.string == "changed", "an update was lost", sourceLocation: sourceLocation)
            #expect(items.first?.optionalString == "now set", "an update was lost", sourceLocation: sourceLocation)
            #expect(items.dropFirst().first?.double.sign == .minus, "-0.0 was not kept", sourceLocation: sourceLocation)
            let untouched = items.dropFirst(2).first.map { Self.values(of: $0) }
            #expect(
                untouched.map { Self.sameValues($0, before[2] ?? [:]) } ?? false,
                "an untouched row changed", sourceLocation: sourceLocation)
            let fresh = next.insert(ConformanceItem.self)
            try next.save()
            #expect(
                (fresh.objectID.primaryKey ?? 0) > highestKey,
                "the primary key \(fresh.objectID.primaryKey ?? 0) of a deleted row was reused",
                sourceLocation: sourceLocation)
            next.delete(fresh)
            try next.save()
        }
        second.close()
    }

    /// Many small saves all survive a reopen.
    private func checkManySaves(_ sourceLocation: SourceLocation) throws {
        let writer = manager()
        let context = try writer.createContext()
        try context.performAndWait {
            for sequence in 100..<140 {
                let note = context.insert(ConformanceNote.self)
                note.sequence = sequence
                note.text = String(repeating: "x", count: sequence)
                try context.save()
            }
            let notes = try context.fetch(FetchRequest<ConformanceNote>(predicate: #Predicate { $0.sequence < 3 }))
            for note in notes {
                note.text += " (edited)"
                try context.save()
            }
        }
        writer.close()
        let reader = manager()
        let context2 = try reader.createContext()
        try context2.performAndWait {
            let notes = try context2.fetch(FetchRequest<ConformanceNote>(sortBy: [SortDescriptor(\.sequence)]))
            #expect(notes.count == 43, "saves were lost: \(notes.count) of 43 notes", sourceLocation: sourceLocation)
            #expect(
                notes.prefix(3).allSatisfy { $0.text.hasSuffix("(edited)") }, "edits were lost",
                sourceLocation: sourceLocation)
            #expect(
                notes.dropFirst(3).allSatisfy { $0.text.count == $0.sequence }, "texts were damaged",
                sourceLocation: sourceLocation)
        }
        reader.close()
    }

    /// A second opener gets `.locked`; after the first closes, it can open.
    private func checkExclusiveAccess(_ sourceLocation: SourceLocation) throws {
        let first = manager()
        try first.loadPersistentStore()
        let second = manager()
        #expect(sourceLocation: sourceLocation) {
            try second.loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code == .locked
        }
        first.close()
        try second.loadPersistentStore()
        second.close()
    }

    /// A model with a changed attribute is refused, and the store still opens with its own.
    private func checkIncompatibleModel(_ sourceLocation: SourceLocation) throws {
        let changed = manager(incompatibleConformanceModel)
        #expect(sourceLocation: sourceLocation) {
            try changed.loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code == .incompatibleModel
        }
        changed.close()
        try expectUnchangedNotes("refusing a model changed the store", sourceLocation)
    }

    /// Checks that the store still opens with the original model and holds its 43 notes.
    private func expectUnchangedNotes(_ message: Comment, _ sourceLocation: SourceLocation) throws {
        let original = manager()
        let context = try original.createContext()
        let count = try context.performAndWait { try context.count(for: FetchRequest<ConformanceNote>()) }
        #expect(count == 43, message, sourceLocation: sourceLocation)
        original.close()
    }

    /// A model with an added and a renamed attribute either migrates, keeping every row and
    /// migrating once, or — for a store without ``PersistentStore/replaceContents(with:keepingOriginalAs:)``
    /// — is refused with `.incompatibleModel` and leaves the store as it was.
    private func checkMigration(_ sourceLocation: SourceLocation) throws {
        let migrating = manager(migratedConformanceModel)
        do {
            try migrating.loadPersistentStore()
        } catch let error as StoreError where error.code == .incompatibleModel {
            migrating.close()
            try expectUnchangedNotes("a refused migration changed the store", sourceLocation)
            return
        }
        migrating.close()
        for pass in ["after migrating", "after reopening the migrated store"] {
            let reader = manager(migratedConformanceModel)
            let context = try reader.createContext()
            try context.performAndWait {
                let notes = try context.fetch(
                    FetchRequest<ConformanceNoteMigrated>(sortBy: [SortDescriptor(\.sequence)]))
                #expect(notes.count == 43, "\(pass): \(notes.count) of 43 notes", sourceLocation: sourceLocation)
                #expect(
                    notes.prefix(3).allSatisfy { $0.body.hasPrefix("note ") && $0.body.hasSuffix("(edited)") },
                    "\(pass): a renamed attribute lost its values", sourceLocation: sourceLocation)
                #expect(
                    notes.allSatisfy { $0.pinned }, "\(pass): an added attribute did not get its default",
                    sourceLocation: sourceLocation)
            }
            reader.close()
        }
        let store = try makeStore()
        let contents = try store.open(for: migratedConformanceModel)
        store.close()
        #expect(
            contents.metadata.versionHash == migratedConformanceModel.versionHash,
            "the migrated store does not record the new model", sourceLocation: sourceLocation)
    }

    // MARK: Samples and comparison

    /// Values every store must keep exactly.
    private static let samples: [@Sendable (ConformanceItem) -> Void] = [
        { _ in },
        { item in
            item.flag = true
            item.int = Int.min
            item.int16 = Int16.min
            item.int32 = Int32.max
            item.int64 = Int64.max
            item.double = .nan
            item.float = -Float.infinity
            item.string = "Zürich, 東京, 👋\u{0000}\u{001F} \"quoted\" \\ back\nslash\ttab"
            item.date = Date(timeIntervalSinceReferenceDate: 123_456_789.123_456_7)
            item.data = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 * 7) })
            item.uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
            item.url = URL(fileURLWithPath: "/tmp/a dir/ñ.txt")
            item.decimal = Decimal(string: "-12345678901234567890.123456789")!
            item.optionalString = ""
            item.optionalDate = Date(timeIntervalSince1970: -1e9)
            item.payload = ConformancePayload(label: "nested \"json\"", numbers: [1, -2, 3])
            item.optionalPayload = ConformancePayload(label: "", numbers: [])
        },
        { item in
            item.int = Int.max
            item.double = .infinity
            item.float = 1.1
            item.string = String(repeating: "long string ", count: 2_000)
            item.data = Data((0..<262_144).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            item.date = Date.distantPast
            item.decimal = Decimal(string: "0.000000000000000000000000000001")!
            item.optionalString = "present"
        },
        { item in
            item.double = -0.0
            item.float = -0.0
            item.int16 = Int16.max
            item.int32 = Int32.min
            item.int64 = Int64.min
            item.date = Date.distantFuture
            item.url = URL(string: "https://example.com/path?query=a%20b#fragment")!
        },
    ]

    private static func values(of object: ManagedObject) -> [String: StoredValue] {
        Dictionary(uniqueKeysWithValues: object.entity.attributes.map { ($0.name, object.value(forKey: $0.name)) })
    }

    private static func snapshot(_ context: ManagedObjectContext) throws -> [Int: [String: StoredValue]] {
        var result: [Int: [String: StoredValue]] = [:]
        for item in try context.fetch(FetchRequest<ConformanceItem>()) {
            result[item.sequence] = values(of: item)
        }
        for note in try context.fetch(FetchRequest<ConformanceNote>()) {
            result[1_000 + note.sequence] = values(of: note)
        }
        return result
    }

    private static func reopenedSnapshot(_ manager: ContextManager) throws -> [Int: [String: StoredValue]] {
        let context = try manager.createContext()
        let result = try context.performAndWait { try snapshot(context) }
        manager.close()
        return result
    }

    /// Equal, with doubles compared bit for bit (NaN equals NaN, -0.0 differs from 0.0).
    static func sameValues(_ lhs: [String: StoredValue], _ rhs: [String: StoredValue]) -> Bool {
        guard lhs.keys == rhs.keys else { return false }
        return lhs.allSatisfy { key, value in
            switch (value, rhs[key]!) {
            case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern
            case (.date(let a), .date(let b)):
                return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
            case (let a, let b): return a == b
            }
        }
    }

    private static func compare(
        _ actual: [Int: [String: StoredValue]],
        _ expected: [Int: [String: StoredValue]],
        _ when: String,
        _ sourceLocation: SourceLocation
    ) {
        #expect(
            actual.keys.sorted() == expected.keys.sorted(), "rows differ \(when)", sourceLocation: sourceLocation)
        for (key, values) in expected {
            guard let found = actual[key] else { continue }
            for (name, value) in values where !sameValues([name: value], [name: found[name] ?? .null]) {
                Issue.record(
                    "row \(key) attribute \(name) is \(found[name] ?? .null), expected \(value) \(when)",
                    sourceLocation: sourceLocation)
            }
        }
    }
}
