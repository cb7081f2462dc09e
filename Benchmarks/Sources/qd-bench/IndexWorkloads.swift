import CSQLite
import Dispatch
import Foundation
import QueueData

/// A record looked up by its indexed code, and the same without the index.
final class IndexedRecord: ManagedObject {
    @Attribute(.indexed) var code: String = ""
    @Attribute var name: String = ""
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// An in-memory store of ``IndexedRecord``s.
private struct IndexedStore: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([IndexedRecord.self]) }
    var persistentStoreName: String { "Indexed" }
    var persistentStoreType: StoreType { .inMemory }
}

/// The code of record `id`: `SKU-` and 8 digits.
private func indexedCode(_ id: Int64) -> String {
    let digits = String(id)
    return "SKU-" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
}

/// P11: fetching one object by an indexed key (`FetchRequest(where:equals:)`), at each of
/// `sizes`, against SQLite with an index on the same column; and the same lookup written as a
/// `#Predicate` (a scan), to show what the index saves.
func indexMeasurements(sizes: [Int], lookups: Int, repetitions: Int) throws -> [Measurement] {
    var results: [Measurement] = []
    for size in sizes {
        let values = makeRecords(size)
        let manager = ContextManager(delegate: IndexedStore())
        defer { manager.close() }
        let loader = try manager.createContext()
        try loader.performAndWait {
            for value in values {
                let record = loader.insert(IndexedRecord.self)
                record.code = indexedCode(value.id)
                record.name = value.name
                record.age = value.age
                record.score = value.score
                record.created = value.created
            }
            try loader.save()
            loader.reset()
        }
        // The same keys in both, spread over the store.
        var generator = SystemRandomNumberGenerator()
        let keys = (0..<lookups).map { _ in values[Int.random(in: 0..<size, using: &generator)].id }

        let context = try manager.createContext()
        // A warm-up fetch.
        try context.performAndWait {
            let first = indexedCode(keys[0])
            let found = try context.fetch(FetchRequest<IndexedRecord>(where: "code", equals: first))
            precondition(found.count == 1)
            context.reset()
        }
        let subject = try context.performAndWait {
            try medianSeconds(repetitions: repetitions) {
                for key in keys {
                    let code = indexedCode(key)
                    let found = try context.fetch(FetchRequest<IndexedRecord>(where: "code", equals: code))
                    precondition(found.count == 1 && found[0].code == code, "no record \(code)")
                    blackHole(found[0].score)
                }
                context.reset()
            } / Double(lookups)
        }
        // The same lookup as a #Predicate, which scans every row (a predicate alone never uses an
        // index).
        let scanCode = indexedCode(keys[0])
        let scan = try context.performAndWait {
            try medianSeconds(repetitions: max(1, repetitions / 2)) {
                let found = try context.fetch(
                    FetchRequest<IndexedRecord>(predicate: #Predicate { $0.code == scanCode }))
                precondition(found.count == 1)
                context.reset()
            }
        }

        // The top 10 by the indexed code, descending: read in the index's order by an attribute
        // sort; by a SortDescriptor (a key path, every row sorted) for comparison.
        var request = FetchRequest<IndexedRecord>(sortedBy: [AttributeSort("code", ascending: false)], fetchLimit: 10)
        request.includesSubentities = false
        let expectedTop = (0..<10).map { indexedCode(values[size - 1 - $0].id) }
        let top = try context.performAndWait {
            try medianSeconds(repetitions: repetitions) {
                let found = try context.fetch(request)
                precondition(found.map(\.code) == expectedTop, "top 10 by code")
                context.reset()
            }
        }
        let topByDescriptor = try context.performAndWait {
            try medianSeconds(repetitions: max(1, repetitions / 2)) {
                let found = try context.fetch(
                    FetchRequest<IndexedRecord>(sortBy: [SortDescriptor(\.code, order: .reverse)], fetchLimit: 10))
                precondition(found.map(\.code) == expectedTop, "top 10 by code (descriptor)")
                context.reset()
            }
        }
        // The same page through enumerate and fetchValues, which read the index's order too.
        let topEnumerated = try context.performAndWait {
            try medianSeconds(repetitions: repetitions) {
                var codes: [String] = []
                try context.enumerate(request) { codes.append($0.code) }
                precondition(codes == expectedTop, "top 10 by code (enumerate)")
                context.reset()
            }
        }
        let topValues = try context.performAndWait {
            try medianSeconds(repetitions: repetitions) {
                let found = try context.fetchValues(request, properties: ["code"])
                precondition(found.map { $0["code"] } == expectedTop.map { .string($0) }, "top 10 by code (values)")
            }
        }
        let sqlite = IndexedSQLite(values, codes: values.map { indexedCode($0.id) })
        let topBaseline = medianSeconds(repetitions: repetitions) {
            let found = sqlite.top(10)
            precondition(found.count == 10)
            blackHole(found)
        }
        results.append(
            Measurement(
                workload: "top 10 by an indexed code (AttributeSort, descending), \(size) in store", subject: top,
                baseline: topBaseline, baselineName: "SQLite :memory: with an index, ORDER BY code DESC LIMIT 10",
                unit: "µs", goal: nil,
                otherBaselines: [
                    Baseline(name: "the same page by a SortDescriptor, every row sorted", value: topByDescriptor)
                ]))
        for (form, seconds) in [("enumerate", topEnumerated), ("fetchValues", topValues)] {
            results.append(
                Measurement(
                    workload: "top 10 by an indexed code through \(form), \(size) in store", subject: seconds,
                    baseline: topBaseline, baselineName: "SQLite :memory: with an index, ORDER BY code DESC LIMIT 10",
                    unit: "µs", goal: nil))
        }
        let baseline =
            medianSeconds(repetitions: repetitions) {
                for key in keys {
                    let found = sqlite.record(code: indexedCode(key))
                    precondition(found?.id == key, "SQLite found no record \(key)")
                    blackHole(found!.score)
                }
            } / Double(lookups)

        // One-object saves on the indexed store, each timed alone: changing the indexed code (the
        // index follows), and changing only the age (the index is left alone). A save must not
        // grow with the store, index or not.
        // Distinct records: a record saved once has a new code, and is not found by its old one.
        var saved = Set<Int64>()
        let saveKeys = keys.filter { saved.insert($0).inserted }.prefix(300)
        let saves = saveKeys.count
        let (codeSaves, ageSaves) = try context.performAndWait {
            var codeTimes: [Double] = []
            var ageTimes: [Double] = []
            for (number, key) in saveKeys.enumerated() {
                let found = try context.fetch(FetchRequest<IndexedRecord>(where: "code", equals: indexedCode(key)))
                guard let record = found.first else { preconditionFailure("no record \(key)") }
                var start = DispatchTime.now().uptimeNanoseconds
                record.code = "NEW-" + indexedCode(Int64(size) * 10 + Int64(number))
                try context.save()
                codeTimes.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                start = DispatchTime.now().uptimeNanoseconds
                record.age += 1
                try context.save()
                ageTimes.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            }
            context.reset()
            return (codeTimes.sorted(), ageTimes.sorted())
        }
        let sqliteSaves = saveKeys.enumerated().map { number, key in
            let start = DispatchTime.now().uptimeNanoseconds
            sqlite.updateCode(id: key, code: "NEW-" + indexedCode(Int64(size) * 10 + Int64(number)))
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }.sorted()
        results.append(
            Measurement(
                workload: "one-object save changing the indexed code, \(size) in store (in-memory), p50",
                subject: codeSaves[codeSaves.count / 2], baseline: sqliteSaves[sqliteSaves.count / 2],
                baselineName: "SQLite :memory: with an index, UPDATE code of one row", unit: "µs", goal: nil,
                note: String(
                    format:
                        "%d saves; p99 %.1f µs; the same save changing only the age (the index left alone): p50 %.1f µs",
                    saves, codeSaves[codeSaves.count * 99 / 100] * 1e6, ageSaves[ageSaves.count / 2] * 1e6),
                otherBaselines: [
                    Baseline(name: "the same save changing only the age", value: ageSaves[ageSaves.count / 2])
                ]))

        results.append(
            Measurement(
                workload: "P11 fetch one object by an indexed code, \(size) in store", subject: subject,
                baseline: baseline, baselineName: "SQLite :memory: with an index, one row by code", unit: "µs",
                goal: 1.0,
                note: String(
                    format: "%d lookups per run; the same lookup as a #Predicate (a scan of every row): %.1f ms",
                    lookups, scan * 1e3),
                otherBaselines: [Baseline(name: "the same lookup as a #Predicate, a scan", value: scan)]))
    }
    return results
}

/// SQLite's side of P11: the records with their codes in an in-memory table, the code indexed.
private final class IndexedSQLite {
    private var db: OpaquePointer?
    private var lookup: OpaquePointer?
    private var topStatement: OpaquePointer?

    init(_ records: [RecordValue], codes: [String]) {
        guard sqlite3_open(":memory:", &db) == SQLITE_OK else { fatalError("sqlite3_open failed") }
        execute(
            "CREATE TABLE record (id INTEGER PRIMARY KEY, code TEXT NOT NULL, name TEXT NOT NULL, age INTEGER NOT NULL, "
                + "score REAL NOT NULL, created REAL NOT NULL)")
        execute("BEGIN")
        var insert: OpaquePointer?
        sqlite3_prepare_v2(
            db, "INSERT INTO record (id, code, name, age, score, created) VALUES (?, ?, ?, ?, ?, ?)", -1, &insert, nil)
        for (record, code) in zip(records, codes) {
            sqlite3_bind_int64(insert, 1, record.id)
            sqlite3_bind_text(insert, 2, code, -1, csqlite_transient())
            sqlite3_bind_text(insert, 3, record.name, -1, csqlite_transient())
            sqlite3_bind_int64(insert, 4, Int64(record.age))
            sqlite3_bind_double(insert, 5, record.score)
            sqlite3_bind_double(insert, 6, record.created.timeIntervalSinceReferenceDate)
            guard sqlite3_step(insert) == SQLITE_DONE else { fatalError("insert failed") }
            sqlite3_reset(insert)
        }
        sqlite3_finalize(insert)
        execute("COMMIT")
        execute("CREATE INDEX record_code ON record (code)")
        sqlite3_prepare_v2(
            db, "SELECT id, name, age, score, created FROM record WHERE code = ?", -1, &lookup, nil)
    }

    deinit {
        sqlite3_finalize(lookup)
        sqlite3_finalize(topStatement)
        sqlite3_finalize(update)
        sqlite3_close(db)
    }

    private func execute(_ sql: String) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            fatalError("SQLite: \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    /// The `limit` records with the greatest codes, read into values, through the index (the
    /// statement prepared once, as the lookup's is).
    func top(_ limit: Int) -> [RecordValue] {
        if topStatement == nil {
            sqlite3_prepare_v2(
                db, "SELECT id, name, age, score, created FROM record ORDER BY code DESC LIMIT ?", -1, &topStatement,
                nil)
        }
        let statement = topStatement
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, Int64(limit))
        var found: [RecordValue] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            found.append(
                RecordValue(
                    id: sqlite3_column_int64(statement, 0), name: String(cString: sqlite3_column_text(statement, 1)),
                    age: Int(sqlite3_column_int64(statement, 2)), score: sqlite3_column_double(statement, 3),
                    created: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(statement, 4))))
        }
        return found
    }

    private var update: OpaquePointer?

    /// Sets the code of the record `id` (one statement, its own transaction).
    func updateCode(id: Int64, code: String) {
        if update == nil {
            sqlite3_prepare_v2(db, "UPDATE record SET code = ? WHERE id = ?", -1, &update, nil)
        }
        defer { sqlite3_reset(update) }
        sqlite3_bind_text(update, 1, code, -1, csqlite_transient())
        sqlite3_bind_int64(update, 2, id)
        guard sqlite3_step(update) == SQLITE_DONE else { fatalError("update failed") }
    }

    /// The record with `code`, read into a value (as a fetch makes an object of it).
    func record(code: String) -> RecordValue? {
        sqlite3_bind_text(lookup, 1, code, -1, csqlite_transient())
        defer { sqlite3_reset(lookup) }
        guard sqlite3_step(lookup) == SQLITE_ROW else { return nil }
        return RecordValue(
            id: sqlite3_column_int64(lookup, 0), name: String(cString: sqlite3_column_text(lookup, 1)),
            age: Int(sqlite3_column_int64(lookup, 2)), score: sqlite3_column_double(lookup, 3),
            created: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(lookup, 4)))
    }
}
