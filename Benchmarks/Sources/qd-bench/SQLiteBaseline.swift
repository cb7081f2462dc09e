import CSQLite
import Foundation

/// The raw SQLite C API on the same records: prepared statements, one transaction.
final class SQLiteBaseline {
    private var db: OpaquePointer?
    /// The connection, for workloads written against the C API directly.
    var database: OpaquePointer? { db }

    /// Opens a database at `path` (`:memory:` for an in-memory one); `durable` sets WAL mode
    /// with `synchronous = FULL`, so that a commit is on disk when it returns.
    init(path: String, durable: Bool = false) {
        guard sqlite3_open(path, &db) == SQLITE_OK else { fatalError("sqlite3_open failed") }
        if durable {
            execute("PRAGMA journal_mode = WAL")
            execute("PRAGMA synchronous = FULL")
        }
        execute(
            "CREATE TABLE record (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL, score REAL NOT NULL, created REAL NOT NULL)"
        )
    }

    deinit {
        sqlite3_close(db)
    }

    func execute(_ sql: String) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            fatalError("SQLite: \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    func insert(_ records: [RecordValue]) {
        execute("BEGIN")
        var statement: OpaquePointer?
        sqlite3_prepare_v2(
            db, "INSERT INTO record (id, name, age, score, created) VALUES (?, ?, ?, ?, ?)", -1, &statement, nil)
        for record in records {
            sqlite3_bind_int64(statement, 1, record.id)
            sqlite3_bind_text(statement, 2, record.name, -1, csqlite_transient())
            sqlite3_bind_int64(statement, 3, Int64(record.age))
            sqlite3_bind_double(statement, 4, record.score)
            sqlite3_bind_double(statement, 5, record.created.timeIntervalSinceReferenceDate)
            guard sqlite3_step(statement) == SQLITE_DONE else { fatalError("insert failed") }
            sqlite3_reset(statement)
        }
        sqlite3_finalize(statement)
        execute("COMMIT")
    }

    func select(_ sql: String) -> [RecordValue] {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        var result: [RecordValue] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            result.append(
                RecordValue(
                    id: sqlite3_column_int64(statement, 0),
                    name: String(cString: sqlite3_column_text(statement, 1)),
                    age: Int(sqlite3_column_int64(statement, 2)),
                    score: sqlite3_column_double(statement, 3),
                    created: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(statement, 4))))
        }
        sqlite3_finalize(statement)
        return result
    }
}

extension SQLiteBaseline {
    /// The integer the first column of the first row of `sql` holds (a `count(*)`).
    func scalar(_ sql: String) -> Int {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { fatalError("no row: \(sql)") }
        return Int(sqlite3_column_int64(statement, 0))
    }

    /// The version of the SQLite library linked in (`sqlite3_libversion`).
    static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}
