import Dispatch
import Foundation
import GRDB

// GRDB is the closest peer: the baseline users compare us with. Only this file imports it,
// so that its SQLite module and ours (CSQLite) never meet in one file.

/// The benchmark record as a GRDB user writes it: a `Codable` struct with the record
/// protocols, in the same table as the raw SQLite baseline (`created` as seconds since the
/// reference date, as `SQLiteBaseline` stores it, rather than GRDB's default text dates).
struct GRDBRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "record"

    var id: Int64
    var name: String
    var age: Int
    var score: Double
    var created: Date

    init(_ value: RecordValue) {
        id = value.id
        name = value.name
        age = value.age
        score = value.score
        created = value.created
    }

    static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy {
        .timeIntervalSinceReferenceDate
    }

    static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
        .timeIntervalSinceReferenceDate
    }
}

/// GRDB on the benchmark records: a `DatabaseQueue`, records written and read through the
/// record protocols and the query interface.
final class GRDBBaseline {
    let queue: DatabaseQueue

    /// An in-memory database with the record table.
    init() throws {
        queue = try DatabaseQueue()
        try createTable()
    }

    /// A database at `path`. `durable` sets WAL with `synchronous = FULL`, so that a commit is
    /// on disk when it returns — the durability of the journal's fdatasync (GRDB's own WAL
    /// setup chooses `NORMAL`, which is not durable). `create` creates the record table.
    init(path: String, durable: Bool, create: Bool) throws {
        queue = try DatabaseQueue(path: path)
        if durable {
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = WAL")
                try db.execute(sql: "PRAGMA synchronous = FULL")
                let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode")
                let synchronous = try Int.fetchOne(db, sql: "PRAGMA synchronous")
                precondition(
                    mode == "wal" && synchronous == 2,
                    "GRDB: journal_mode \(mode ?? "?"), synchronous \(synchronous ?? -1)")
            }
        }
        if create {
            try createTable()
        }
    }

    private func createTable() throws {
        try queue.write { db in
            try db.create(table: GRDBRecord.databaseTableName) { table in
                table.primaryKey("id", .integer)
                table.column("name", .text).notNull()
                table.column("age", .integer).notNull()
                table.column("score", .double).notNull()
                table.column("created", .double).notNull()
            }
        }
    }

    func close() throws {
        try queue.close()
    }

    /// Inserts `records` in one transaction.
    func insert(_ records: [RecordValue]) throws {
        try queue.write { db in
            for value in records {
                try GRDBRecord(value).insert(db)
            }
        }
    }

    func fetchAll() throws -> [GRDBRecord] {
        try queue.read { db in try GRDBRecord.fetchAll(db) }
    }

    /// `age > 50 ORDER BY name` through the query interface.
    func fetchOlderThan50SortedByName() throws -> [GRDBRecord] {
        try queue.read { db in
            try GRDBRecord.filter(Column("age") > 50).order(Column("name")).fetchAll(db)
        }
    }

    /// Times `iterations` one-row updates, a transaction each; returns the sorted latencies.
    func timedUpdates(iterations: Int) throws -> [Double] {
        let records = try queue.read { db in try GRDBRecord.limit(iterations).fetchAll(db) }
        var times: [Double] = []
        for (index, var record) in records.enumerated() {
            record.score += 1
            record.age = (record.age + index) % 100
            let start = DispatchTime.now().uptimeNanoseconds
            try queue.write { db in try record.update(db) }
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return times.sorted()
    }

    /// The SQLite library's version, as GRDB's connection reports it.
    func sqliteVersion() throws -> String {
        try queue.read { db in try String.fetchOne(db, sql: "SELECT sqlite_version()") ?? "?" }
    }
}

/// Opens the GRDB database at `path` and fetches every record, `repetitions` times after a
/// warm-up; returns the median time in seconds.
func grdbOpenAndFetchAllSeconds(path: String, count: Int, repetitions: Int) throws -> Double {
    try medianSeconds(repetitions: repetitions) {
        let database = try GRDBBaseline(path: path, durable: false, create: false)
        let all = try database.fetchAll()
        precondition(all.count == count)
        try database.close()
    }
}

/// Creates a durable GRDB database of `records` at `path`.
func makeGRDBDatabase(_ records: [RecordValue], at path: String) throws {
    let database = try GRDBBaseline(path: path, durable: true, create: true)
    try database.insert(records)
    try database.close()
}
