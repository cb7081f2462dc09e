/// A committed row with the version optimistic locking compares.
struct CommittedRow: Sendable {
    var primaryKey: Int64
    /// Starts at 1 and grows by one with each committed update. A deleted row (a tombstone)
    /// holds its last version negated, so that a restored row continues the count.
    var version: Int64
    var values: [StoredValue]

    var isDeleted: Bool { version <= 0 }
}

/// The committed rows of one entity, in primary-key order.
///
/// Rows live in fixed-size chunks, and chunks in fixed-size groups, so that a snapshot (what a
/// fetch iterates) shares them all, and the next commit copies only the chunk it touches, its
/// group's list of chunks and the list of groups: a one-row change copies a few hundred
/// references whatever the size of the table (one level of 1,024-row chunks copied 1,024 rows
/// and a list growing with the table). Deleted rows stay as tombstones until there are more of
/// them than live rows. Lookups by primary key are binary searches: keys only grow, so
/// appending keeps the order.
struct EntityTable: Sendable {
    /// Rows per chunk, and chunks per group (powers of two: positions split with shifts).
    static let chunkCapacity = 128
    static let groupCapacity = 128
    static let rowsPerGroup = chunkCapacity * groupCapacity

    /// Groups of chunks of rows: row `p` is at `[p / rowsPerGroup][p / chunkCapacity %
    /// groupCapacity][p % chunkCapacity]`. Every group and chunk is full but the last.
    private(set) var chunks: [[[CommittedRow]]] = []
    private(set) var liveCount = 0
    private var storedCount = 0
    /// The next primary key to hand out.
    var nextPrimaryKey: Int64 = 1
    /// The indexes of the entity's indexed columns, following every change of the live rows.
    private(set) var indexes: [ColumnIndex] = []

    /// The rows as they are now, unaffected by later commits.
    var snapshot: TableSnapshot {
        TableSnapshot(chunks: chunks, liveCount: liveCount, indexes: indexes, storedCount: storedCount)
    }

    /// Starts indexing `columns` (of the rows already in the table too).
    mutating func index(columns: [Int]) {
        indexes = columns.map(ColumnIndex.init(column:))
        guard !indexes.isEmpty else { return }
        for group in chunks {
            for chunk in group {
                for row in chunk where !row.isDeleted {
                    addToIndexes(row)
                }
            }
        }
    }

    private mutating func addToIndexes(_ row: CommittedRow) {
        for position in indexes.indices {
            indexes[position].insert(row.values[indexes[position].column], row.primaryKey)
        }
    }

    private mutating func removeFromIndexes(_ row: CommittedRow) {
        for position in indexes.indices {
            indexes[position].remove(row.values[indexes[position].column], row.primaryKey)
        }
    }

    /// The live row with `primaryKey`, if any.
    func row(for primaryKey: Int64) -> CommittedRow? {
        guard let position = position(of: primaryKey) else { return nil }
        let row = self[position]
        return row.isDeleted ? nil : row
    }

    /// Appends a row whose key is greater than every key in the table.
    mutating func append(_ row: CommittedRow) {
        precondition(storedCount == 0 || self[storedCount - 1].primaryKey < row.primaryKey)
        if storedCount % Self.rowsPerGroup == 0 {
            chunks.append([])
        }
        let group = chunks.count - 1
        if storedCount % Self.chunkCapacity == 0 {
            chunks[group].append([])
            chunks[group][chunks[group].count - 1].reserveCapacity(Self.chunkCapacity)
        }
        chunks[group][chunks[group].count - 1].append(row)
        storedCount += 1
        liveCount += 1
        if !indexes.isEmpty && !row.isDeleted {
            addToIndexes(row)
        }
        nextPrimaryKey = Swift.max(nextPrimaryKey, row.primaryKey + 1)
    }

    /// Replaces the live row with `row.primaryKey`.
    mutating func replace(with row: CommittedRow) {
        guard let position = position(of: row.primaryKey), !self[position].isDeleted else {
            preconditionFailure("QueueData: no committed row \(row.primaryKey) to replace")
        }
        if !indexes.isEmpty {
            removeFromIndexes(self[position])
            addToIndexes(row)
        }
        self[position] = row
    }

    /// Brings back a row that was deleted (a merge policy writing an object another save had
    /// deleted), under its old primary key, with a version above any it had (and above
    /// `versionAtLeast`).
    ///
    /// - Returns: The restored row.
    mutating func restore(primaryKey: Int64, values: [StoredValue], versionAtLeast: Int64) -> CommittedRow {
        if let position = position(of: primaryKey) {
            precondition(self[position].isDeleted, "QueueData: row \(primaryKey) is not deleted")
            let row = CommittedRow(
                primaryKey: primaryKey, version: Swift.max(-self[position].version, versionAtLeast) + 1, values: values)
            self[position] = row
            liveCount += 1
            if !indexes.isEmpty {
                addToIndexes(row)
            }
            return row
        }
        let row = CommittedRow(primaryKey: primaryKey, version: versionAtLeast + 1, values: values)
        if storedCount == 0 || self[storedCount - 1].primaryKey < primaryKey {
            append(row)
        } else {
            // Its tombstone was compacted away: rebuild with the row in its place (rare).
            var rows = chunks.joined().joined().filter { !$0.isDeleted }
            rows.append(row)
            let columns = indexes.map(\.column)
            self = EntityTable(rows: rows, nextPrimaryKey: nextPrimaryKey)
            index(columns: columns)
        }
        return row
    }

    /// Deletes the live row with `primaryKey`; returns whether there was one.
    @discardableResult
    mutating func remove(_ primaryKey: Int64) -> Bool {
        guard let position = position(of: primaryKey), !self[position].isDeleted else { return false }
        if !indexes.isEmpty {
            removeFromIndexes(self[position])
        }
        self[position] = CommittedRow(primaryKey: primaryKey, version: -self[position].version, values: [])
        liveCount -= 1
        compactIfNeeded()
        return true
    }

    /// Builds a table from rows in any order.
    init<Rows: Sequence>(rows: Rows, nextPrimaryKey: Int64) where Rows.Element == CommittedRow {
        // Stores return their rows in key order, as a rule: sorted only when they are not.
        let rows = Array(rows)
        var ordered = true
        for index in rows.indices.dropFirst() where rows[index - 1].primaryKey >= rows[index].primaryKey {
            ordered = false
            break
        }
        for row in ordered ? rows : rows.sorted(by: { $0.primaryKey < $1.primaryKey }) {
            append(row)
        }
        self.nextPrimaryKey = Swift.max(self.nextPrimaryKey, nextPrimaryKey)
    }

    init() {}

    private subscript(position: Int) -> CommittedRow {
        get {
            chunks[position / Self.rowsPerGroup][position / Self.chunkCapacity % Self.groupCapacity][
                position % Self.chunkCapacity]
        }
        set {
            chunks[position / Self.rowsPerGroup][position / Self.chunkCapacity % Self.groupCapacity][
                position % Self.chunkCapacity] = newValue
        }
    }

    private func position(of primaryKey: Int64) -> Int? {
        var low = 0
        var high = storedCount
        while low < high {
            let middle = (low + high) / 2
            let key = self[middle].primaryKey
            if key == primaryKey {
                return middle
            } else if key < primaryKey {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return nil
    }

    /// Drops tombstones once they outnumber live rows (and are at least 1,024), so that
    /// scans stay proportional to the live data.
    private mutating func compactIfNeeded() {
        let tombstones = storedCount - liveCount
        guard tombstones >= 1024, tombstones > liveCount else { return }
        let live = chunks.joined().joined().filter { !$0.isDeleted }
        let next = nextPrimaryKey
        let indexes = self.indexes
        self = EntityTable()
        for row in live {
            append(row)
        }
        nextPrimaryKey = next
        // The live rows are the same: so are their indexes.
        self.indexes = indexes
    }
}

/// An immutable view of an entity's committed rows at one moment.
struct TableSnapshot: Sendable {
    /// Groups of chunks of rows, as ``EntityTable`` lays them out.
    let chunks: [[[CommittedRow]]]
    let liveCount: Int
    /// The indexes of the entity's indexed columns, for these rows.
    var indexes: [ColumnIndex] = []
    /// The number of rows in `chunks`, tombstones included.
    var storedCount = 0

    static let empty = TableSnapshot(chunks: [], liveCount: 0)

    /// The index of `column`, if it is indexed.
    func index(of column: Int) -> ColumnIndex? {
        indexes.first { $0.column == column }
    }

    /// The live row with `primaryKey`, if any: a binary search (chunks are full but the last,
    /// and keys ascend).
    func row(for primaryKey: Int64) -> CommittedRow? {
        var low = 0
        var high = storedCount
        while low < high {
            let middle = (low + high) / 2
            let row = chunks[middle / EntityTable.rowsPerGroup][
                middle / EntityTable.chunkCapacity % EntityTable.groupCapacity][middle % EntityTable.chunkCapacity]
            if row.primaryKey == primaryKey {
                return row.isDeleted ? nil : row
            } else if row.primaryKey < primaryKey {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return nil
    }

    /// Calls `body` with every live row, in primary-key order.
    @inline(__always)
    func forEachLiveRow(_ body: (CommittedRow) throws -> Void) rethrows {
        for group in chunks {
            for chunk in group {
                for row in chunk where !row.isDeleted {
                    try body(row)
                }
            }
        }
    }
}
