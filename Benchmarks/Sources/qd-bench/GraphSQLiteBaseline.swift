import CSQLite
import Foundation

/// The raw SQLite C API on the graph: a `parent` table and a `child` table whose `parent_id`
/// references it with `ON DELETE CASCADE` (foreign keys on, `child.parent_id` indexed), in
/// WAL mode with `synchronous = FULL`, so that a commit is on disk when it returns.
final class GraphSQLiteBaseline {
    /// A parent row read back.
    struct ParentRow {
        var id: Int64
        var name: String
        var rank: Int
    }

    /// A child row read back.
    struct ChildRow {
        var id: Int64
        var name: String
        var age: Int
        var score: Double
    }

    private var db: OpaquePointer?

    /// Opens the database at `path`, creating the schema unless the file already has it.
    init(path: String) {
        guard sqlite3_open(path, &db) == SQLITE_OK else { fatalError("sqlite3_open failed") }
        execute("PRAGMA journal_mode = WAL")
        execute("PRAGMA synchronous = FULL")
        execute("PRAGMA foreign_keys = ON")
        execute(
            """
            CREATE TABLE IF NOT EXISTS parent (id INTEGER PRIMARY KEY, name TEXT NOT NULL, rank INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS child (
                id INTEGER PRIMARY KEY,
                parent_id INTEGER NOT NULL REFERENCES parent (id) ON DELETE CASCADE,
                name TEXT NOT NULL, age INTEGER NOT NULL, score REAL NOT NULL);
            CREATE INDEX IF NOT EXISTS child_parent ON child (parent_id);
            """)
    }

    /// Closes the database (the last connection checkpoints the WAL into the file).
    deinit {
        sqlite3_close(db)
    }

    func execute(_ sql: String) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            fatalError("SQLite: \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    private func prepare(_ sql: String) -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            fatalError("SQLite: \(String(cString: sqlite3_errmsg(db)))")
        }
        return statement
    }

    /// Inserts every parent and child in one transaction.
    func insert(_ graph: GraphValues) {
        execute("BEGIN")
        let insertParent = prepare("INSERT INTO parent (id, name, rank) VALUES (?, ?, ?)")
        let insertChild = prepare("INSERT INTO child (id, parent_id, name, age, score) VALUES (?, ?, ?, ?, ?)")
        for (index, parent) in graph.parents.enumerated() {
            sqlite3_bind_int64(insertParent, 1, parent.id)
            sqlite3_bind_text(insertParent, 2, parent.name, -1, csqlite_transient())
            sqlite3_bind_int64(insertParent, 3, Int64(parent.age))
            guard sqlite3_step(insertParent) == SQLITE_DONE else { fatalError("insert failed") }
            sqlite3_reset(insertParent)
            let first = index * graph.childrenPerParent
            for child in graph.children[first..<(first + graph.childrenPerParent)] {
                sqlite3_bind_int64(insertChild, 1, child.id)
                sqlite3_bind_int64(insertChild, 2, parent.id)
                sqlite3_bind_text(insertChild, 3, child.name, -1, csqlite_transient())
                sqlite3_bind_int64(insertChild, 4, Int64(child.age))
                sqlite3_bind_double(insertChild, 5, child.score)
                guard sqlite3_step(insertChild) == SQLITE_DONE else { fatalError("insert failed") }
                sqlite3_reset(insertChild)
            }
        }
        sqlite3_finalize(insertParent)
        sqlite3_finalize(insertChild)
        execute("COMMIT")
    }

    /// Deletes every parent, and through the foreign key every child, in one transaction.
    func deleteAllParents() {
        execute("BEGIN; DELETE FROM parent; COMMIT")
    }

    /// The number of rows in `table`.
    func count(_ table: String) -> Int {
        let statement = prepare("SELECT count(*) FROM \(table)")
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { fatalError("count failed") }
        return Int(sqlite3_column_int64(statement, 0))
    }

    /// Every parent, then each parent's children through the index, into structs: the access
    /// pattern of reading `children` on each fetched parent. Returns the parents, the children
    /// and the sum of the children's ages.
    func parentsAndChildren() -> (parents: [ParentRow], children: [ChildRow], ageSum: Int) {
        let selectParents = prepare("SELECT id, name, rank FROM parent")
        let selectChildren = prepare("SELECT id, name, age, score FROM child WHERE parent_id = ?")
        defer {
            sqlite3_finalize(selectParents)
            sqlite3_finalize(selectChildren)
        }
        var parents: [ParentRow] = []
        while sqlite3_step(selectParents) == SQLITE_ROW {
            parents.append(
                ParentRow(
                    id: sqlite3_column_int64(selectParents, 0),
                    name: String(cString: sqlite3_column_text(selectParents, 1)),
                    rank: Int(sqlite3_column_int64(selectParents, 2))))
        }
        var children: [ChildRow] = []
        var ageSum = 0
        for parent in parents {
            sqlite3_bind_int64(selectChildren, 1, parent.id)
            while sqlite3_step(selectChildren) == SQLITE_ROW {
                let child = childRow(selectChildren, from: 0)
                ageSum += child.age
                children.append(child)
            }
            sqlite3_reset(selectChildren)
        }
        return (parents, children, ageSum)
    }

    /// The same rows with one join, into structs. Returns the number of children and the sum
    /// of their ages.
    func joinedParentsAndChildren() -> (children: Int, ageSum: Int) {
        let statement = prepare(
            "SELECT p.id, p.name, p.rank, c.id, c.name, c.age, c.score FROM parent p JOIN child c ON c.parent_id = p.id"
        )
        defer { sqlite3_finalize(statement) }
        var parents: [ParentRow] = []
        var children: [ChildRow] = []
        var ageSum = 0
        while sqlite3_step(statement) == SQLITE_ROW {
            let id = sqlite3_column_int64(statement, 0)
            if parents.last?.id != id {
                parents.append(
                    ParentRow(
                        id: id, name: String(cString: sqlite3_column_text(statement, 1)),
                        rank: Int(sqlite3_column_int64(statement, 2))))
            }
            let child = childRow(statement, from: 3)
            ageSum += child.age
            children.append(child)
        }
        return (children.count, ageSum)
    }

    private func childRow(_ statement: OpaquePointer?, from column: Int32) -> ChildRow {
        ChildRow(
            id: sqlite3_column_int64(statement, column),
            name: String(cString: sqlite3_column_text(statement, column + 1)),
            age: Int(sqlite3_column_int64(statement, column + 2)),
            score: sqlite3_column_double(statement, column + 3))
    }
}
