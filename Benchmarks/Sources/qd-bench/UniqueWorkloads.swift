import Foundation
import QueueData

// The uniqueness workloads: what `@Attribute(.unique)` costs a bulk insert, the open of a
// store (the index is built from the rows), and an upsert, each against the same work
// without the constraint (or, for the upsert, the update it replaces). Every baseline is
// measured in the same run.

/// The benchmark record with a unique code, what an import matches its rows by.
final class CodedRecord: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute var name: String = ""
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// ``CodedRecord`` without the constraint: the baseline.
final class UnconstrainedRecord: ManagedObject {
    @Attribute var code: String = ""
    @Attribute var name: String = ""
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// The attributes both coded records have, so that one insert loop serves both.
protocol CodedRecordFields: ManagedObject {
    var code: String { get set }
    var name: String { get set }
    var age: Int { get set }
    var score: Double { get set }
    var created: Date { get set }
}

extension CodedRecord: CodedRecordFields {}
extension UnconstrainedRecord: CodedRecordFields {}

/// A journal store named `name` in `directory` of either coded record.
private struct CodedStore: ContextManagerDelegate {
    let directory: URL
    let name: String
    let unique: Bool
    var managedObjectModel: ManagedObjectModel {
        ManagedObjectModel([unique ? CodedRecord.self : UnconstrainedRecord.self])
    }
    var persistentStoreName: String { name }
    var storeDirectory: URL { directory }
}

/// The distinct code of record `id`: `SKU-` and 8 digits (a small string, no allocation).
private func code(for id: Int64) -> String {
    let digits = String(id)
    return "SKU-" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
}

/// Inserts a `type` for each of `values` with its code, and saves once.
///
/// - Important: Call on the context's queue.
private func insertCoded<Object: CodedRecordFields>(
    _ type: Object.Type,
    _ values: [RecordValue],
    codes: [String],
    into context: ManagedObjectContext
) throws {
    for (value, code) in zip(values, codes) {
        let record = context.insert(type)
        record.code = code
        record.name = value.name
        record.age = value.age
        record.score = value.score
        record.created = value.created
    }
    try context.save()
}

/// The number of records in a fresh context of `manager`, a store of either coded record.
private func storedCount(_ manager: ContextManager, unique: Bool) throws -> Int {
    let context = try manager.createContext()
    return try context.performAndWait {
        unique
            ? try context.count(for: FetchRequest<CodedRecord>())
            : try context.count(for: FetchRequest<UnconstrainedRecord>())
    }
}

/// The uniqueness workloads on `records`.
///
/// - Parameters:
///   - upserts: How many of the records the upsert workload inserts again.
///   - repetitions: Runs of the open and upsert workloads (after a warm-up).
///   - saveRepetitions: Runs of the bulk insert (after a warm-up).
func uniqueMeasurements(
    _ records: [RecordValue],
    upserts: Int,
    repetitions: Int,
    saveRepetitions: Int
) throws -> [Measurement] {
    let directory = benchmarkDirectory("unique")
    defer { try? FileManager.default.removeItem(at: directory) }
    let codes = records.map { code(for: $0.id) }
    let count = records.count
    func store(_ unique: Bool, name: String? = nil) -> CodedStore {
        CodedStore(directory: directory, name: name ?? (unique ? "Unique" : "Unconstrained"), unique: unique)
    }
    func storeFile(_ name: String) -> URL { directory.appendingPathComponent(name + ".journal") }

    // U1: bulk insert + durable save. The last run's stores stay, for U2 and U3.
    func insertAll(unique: Bool) throws -> Double {
        try medianSeconds(
            repetitions: saveRepetitions,
            setUp: { () throws -> (ContextManager, ManagedObjectContext) in
                try? FileManager.default.removeItem(at: storeFile(store(unique).name))
                let manager = ContextManager(delegate: store(unique))
                try manager.loadPersistentStore()
                return (manager, try manager.createContext())
            },
            measure: { _, context in
                try context.performAndWait {
                    if unique {
                        try insertCoded(CodedRecord.self, records, codes: codes, into: context)
                    } else {
                        try insertCoded(UnconstrainedRecord.self, records, codes: codes, into: context)
                    }
                }
            },
            tearDown: { manager, _ in
                let stored = try storedCount(manager, unique: unique)
                precondition(stored == count, "\(stored) records stored, not \(count)")
                manager.close()
            })
    }
    let uniqueInsert = try insertAll(unique: true)
    let plainInsert = try insertAll(unique: false)
    let uniqueSize = fileSize(storeFile("Unique"))
    let plainSize = fileSize(storeFile("Unconstrained"))

    // U2: open the store and count its rows (the uniqueness index is built at open).
    func openAndCount(unique: Bool) throws -> Double {
        try medianSeconds(repetitions: repetitions) {
            let manager = ContextManager(delegate: store(unique))
            let stored = try storedCount(manager, unique: unique)
            precondition(stored == count, "\(stored) records opened, not \(count)")
            manager.close()
        }
    }
    let uniqueOpen = try openAndCount(unique: true)
    let plainOpen = try openAndCount(unique: false)

    let upsert = try upsertTimes(
        records, codes: codes, upserts: upserts, repetitions: repetitions, template: storeFile("Unique"),
        work: store(true, name: "UniqueWork"))
    return [
        Measurement(
            workload: "U1 insert \(count) with @Attribute(.unique) code + durable save (journal)",
            subject: uniqueInsert, baseline: plainInsert, baselineName: "the same model without .unique",
            unit: "ms", goal: nil,
            note: String(
                format: "journal %.1f MB with the constraint, %.1f MB without", Double(uniqueSize) / 1e6,
                Double(plainSize) / 1e6)),
        Measurement(
            workload: "U2 open \(count)-row store with a unique code + count (index built at open)",
            subject: uniqueOpen, baseline: plainOpen, baselineName: "the same rows without .unique", unit: "ms",
            goal: nil),
        Measurement(
            workload: "U3 upsert \(upserts) of \(count) (insert duplicates, objectTrump) + durable save",
            subject: upsert.subject, baseline: upsert.baseline,
            baselineName: "update of \(upserts) fetched objects + save", unit: "ms", goal: nil,
            note: String(
                format: "%.2f µs per upserted object, %.2f µs per updated object (the fetch of the updated "
                    + "objects is untimed)",
                upsert.subject / Double(upserts) * 1e6, upsert.baseline / Double(upserts) * 1e6)),
    ]
}

/// U3: on a copy of `template` (the saved records), insert `upserts` objects whose codes the
/// first records hold, each a whole record with a new score, under ``MergePolicy/mergeByPropertyObjectTrump``,
/// and save; against fetching those records (untimed) and setting their score.
private func upsertTimes(
    _ records: [RecordValue],
    codes: [String],
    upserts: Int,
    repetitions: Int,
    template: URL,
    work: CodedStore
) throws -> (subject: Double, baseline: Double) {
    let workFile = work.directory.appendingPathComponent(work.name + ".journal")
    // The records whose codes come first: those the baseline fetches by sorting on code.
    let targets = records.indices.sorted { codes[$0] < codes[$1] }.prefix(upserts)
    /// A manager of a fresh copy of the template, and a context on it with the upserting policy.
    func open() throws -> (ContextManager, ManagedObjectContext) {
        try? FileManager.default.removeItem(at: workFile)
        try FileManager.default.copyItem(at: template, to: workFile)
        let manager = ContextManager(delegate: work)
        let context = try manager.createContext()
        // Contexts trap when touched off their queue: set the policy on it.
        context.performAndWait { context.mergePolicy = .mergeByPropertyObjectTrump }
        return (manager, context)
    }
    /// Checks that the store still holds every record once, the first one with its name
    /// kept and its score raised by one.
    func check(_ manager: ContextManager) throws {
        let context = try manager.createContext()
        let value = records[targets.first!]
        let first = codes[targets.first!]
        try context.performAndWait {
            let stored = try context.count(for: FetchRequest<CodedRecord>())
            precondition(stored == records.count, "\(stored) records after the upsert, not \(records.count)")
            let matches = try context.fetch(FetchRequest<CodedRecord>(predicate: #Predicate { $0.code == first }))
            precondition(matches.count == 1, "\(matches.count) records with code \(first)")
            let record = matches[0]
            precondition(
                record.name == value.name && record.score == value.score + 1,
                "record \(first) is \(record.name) \(record.score), not \(value.name) \(value.score + 1)")
        }
        manager.close()
    }
    let subject = try medianSeconds(
        repetitions: repetitions,
        setUp: open,
        measure: { _, context in
            try context.performAndWait {
                // A re-import: the inserted duplicate carries the whole record, and under
                // object trump its values replace the existing object's.
                for index in targets {
                    let value = records[index]
                    let record = context.insert(CodedRecord.self)
                    record.code = codes[index]
                    record.name = value.name
                    record.age = value.age
                    record.score = value.score + 1
                    record.created = value.created
                }
                try context.save()
            }
        },
        tearDown: { manager, _ in try check(manager) })
    let baseline = try medianSeconds(
        repetitions: repetitions,
        setUp: { () throws -> (ContextManager, ManagedObjectContext, [CodedRecord]) in
            let (manager, context) = try open()
            let fetched = try context.performAndWait {
                try context.fetch(FetchRequest<CodedRecord>(sortBy: [SortDescriptor(\.code)], fetchLimit: upserts))
            }
            return (manager, context, fetched)
        },
        measure: { _, context, fetched in
            try context.performAndWait {
                for record in fetched {
                    record.score += 1
                }
                try context.save()
            }
        },
        tearDown: { manager, _, _ in try check(manager) })
    return (subject, baseline)
}
