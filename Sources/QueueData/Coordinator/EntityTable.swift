/// A committed row with the version optimistic locking compares: the form a row takes between
/// the coordinator, the commit planner and contexts.
struct CommittedRow: Sendable {
    var primaryKey: Int64
    /// Starts at 1 and grows by one with each committed update. A deleted row (a tombstone)
    /// holds its last version negated, so that a restored row continues the count.
    var version: Int64
    var values: [StoredValue]
    /// Where the row lives in a table's blocks, when it was read from one: an object made from
    /// it reads its values there instead of a copy.
    var reference: RowReference?

    init(primaryKey: Int64, version: Int64, values: [StoredValue], reference: RowReference? = nil) {
        self.primaryKey = primaryKey
        self.version = version
        self.values = values
        self.reference = reference
    }

    var isDeleted: Bool { version <= 0 }
}

/// The committed rows of one entity, in primary-key order.
///
/// Rows live packed in blocks (``RowBlock``) of fixed capacity, and blocks in fixed-size groups,
/// so that a snapshot (what a fetch iterates) shares them all, and the next commit copies only
/// the block it touches, its group's list of blocks and the list of groups: a one-row change
/// copies a block of 32 rows and two short lists whatever the size of the table. A block is
/// written in place only while the table holds the only reference to it. Deleted rows stay as
/// tombstones until there are more of them than live rows. Lookups by primary key are binary
/// searches: keys only grow, so appending keeps the order.
struct EntityTable: Sendable {
    /// Rows per block, and blocks per group (powers of two: positions split with shifts).
    static let chunkCapacity = 32
    static let groupCapacity = 128
    static let rowsPerGroup = chunkCapacity * groupCapacity

    /// How the rows are laid out.
    let layout: RowLayout
    /// Groups of blocks of rows: row `p` is in block `[p / rowsPerGroup][p / chunkCapacity %
    /// groupCapacity]`, at `p % chunkCapacity`. Every group and block is full but the last.
    private(set) var blocks: [[RowBlock]] = []
    private(set) var liveCount = 0
    /// The number of rows in `blocks`, tombstones included.
    private(set) var storedCount = 0
    /// The next primary key to hand out.
    var nextPrimaryKey: Int64 = 1
    /// The indexes of the entity's indexed columns, following every change of the live rows.
    private(set) var indexes: [ColumnIndex] = []
    /// Replaced by a new token when a row that was live or deleted takes new values while a
    /// snapshot holds the old token: a context that found every object it holds current with
    /// a snapshot's token knows they still are while the token stays the same (see
    /// `ManagedObjectContext.forEachCandidate`). Inserted rows keep it: no object holds them.
    private(set) var updateToken = UpdateToken()
    /// Whether appended rows are left out of the indexes, which are rebuilt once they are all
    /// in (see ``append(contentsOf:)``).
    private var defersIndexes = false

    /// Identifies a state of a table's existing rows (compared by identity).
    final class UpdateToken: Sendable {}

    /// An empty table of rows laid out by `layout`.
    init(layout: RowLayout) {
        self.layout = layout
    }

    /// The rows as they are now, unaffected by later commits.
    var snapshot: TableSnapshot {
        TableSnapshot(
            layout: layout, blocks: blocks, liveCount: liveCount, indexes: indexes, storedCount: storedCount,
            updateToken: updateToken)
    }

    /// Notes that an existing row changes (see ``updateToken``).
    private mutating func noteRowUpdate() {
        if !isKnownUniquelyReferenced(&updateToken) {
            updateToken = UpdateToken()
        }
    }

    /// Starts indexing `columns` (of the rows already in the table too).
    mutating func index(columns: [Int]) {
        indexes = columns.map(ColumnIndex.init(column:))
        for position in indexes.indices {
            indexes[position].build(blocks, layout: layout)
        }
    }

    private mutating func addToIndexes(_ block: RowBlock, _ index: Int) {
        let row = block.row(index)
        for position in indexes.indices {
            indexes[position].insert(
                layout.value(row, slot: indexes[position].column), block.key(index), deferred: defersIndexes)
        }
    }

    /// Appends rows whose keys are greater than every key in the table, in increasing order.
    /// When they are many beside the table's rows, the indexes are rebuilt once at the end
    /// instead of taking each row in turn.
    mutating func append(contentsOf rows: [CommittedRow]) {
        let rebuilds = !indexes.isEmpty && rows.count > 64 && rows.count > liveCount / 8
        defersIndexes = rebuilds
        for row in rows {
            append(row)
        }
        defersIndexes = false
        if rebuilds {
            for position in indexes.indices {
                indexes[position].build(blocks, layout: layout)
            }
        }
    }

    /// Appends copies of the live rows at `sources` (of this table's layout), under `keys`:
    /// greater than every key in the table, in increasing order. As
    /// ``append(contentsOf:)``, the indexes are rebuilt once when the rows are many.
    mutating func append(copying sources: [RowReference], keys: [Int64]) {
        let rebuilds = !indexes.isEmpty && sources.count > 64 && sources.count > liveCount / 8
        defersIndexes = rebuilds
        for (source, key) in zip(sources, keys) {
            precondition(storedCount == 0 || lastKey < key)
            let (group, slot) = blockForAppending()
            let block = blocks[group][slot]
            block.append(copyingRow: source.fields, primaryKey: key, version: 1)
            _ = appended(block)
        }
        defersIndexes = false
        if rebuilds {
            for position in indexes.indices {
                indexes[position].build(blocks, layout: layout)
            }
        }
    }

    private mutating func removeFromIndexes(_ block: RowBlock, _ index: Int) {
        let row = block.row(index)
        for position in indexes.indices {
            indexes[position].remove(layout.value(row, slot: indexes[position].column), block.key(index))
        }
    }

    /// The live row with `primaryKey`, if any.
    func row(for primaryKey: Int64) -> CommittedRow? {
        guard let position = position(of: primaryKey) else { return nil }
        let (block, index) = locate(position)
        return block.isLive(index) ? block.committedRow(at: index) : nil
    }

    /// Where row `position` (live or a tombstone, counted from the first) is.
    func reference(atPosition position: Int) -> RowReference {
        let (block, index) = locate(position)
        return RowReference(block: block, index: index)
    }

    /// Where the live row with `primaryKey` is, if there is one.
    func reference(for primaryKey: Int64) -> RowReference? {
        guard let position = position(of: primaryKey) else { return nil }
        let (block, index) = locate(position)
        return block.isLive(index) ? RowReference(block: block, index: index) : nil
    }

    /// Appends a row whose key is greater than every key in the table.
    ///
    /// - Returns: Where the row now lives.
    @discardableResult
    mutating func append(_ row: CommittedRow) -> RowReference {
        row.values.withUnsafeBufferPointer { append(primaryKey: row.primaryKey, version: row.version, values: $0) }
    }

    /// Appends a row of `values` (checked to fit their columns) whose key is greater than every
    /// key in the table, at `version` (1, a new row, unless given).
    @discardableResult
    mutating func append(
        primaryKey: Int64,
        version: Int64 = 1,
        values: UnsafeBufferPointer<StoredValue>
    ) -> RowReference {
        precondition(storedCount == 0 || lastKey < primaryKey)
        let (group, slot) = blockForAppending()
        let block = blocks[group][slot]
        guard block.append(primaryKey: primaryKey, version: version, values: values) else {
            preconditionFailure("QueueData: row \(primaryKey) has values that do not fit its columns")
        }
        return appended(block)
    }

    /// Appends a copy of a row of another table's block (of the same layout), whose key is
    /// greater than every key in the table.
    private mutating func append(copyOf index: Int, in source: RowBlock) {
        let (group, slot) = blockForAppending()
        blocks[group][slot].append(copyOf: index, in: source)
        _ = appended(blocks[group][slot])
    }

    /// The block the next row goes into, written by this table alone.
    private mutating func blockForAppending() -> (group: Int, slot: Int) {
        if storedCount % Self.rowsPerGroup == 0 {
            blocks.append([])
        }
        let group = blocks.count - 1
        if storedCount % Self.chunkCapacity == 0 {
            blocks[group].append(RowBlock(layout: layout, capacity: Self.chunkCapacity))
        }
        let slot = blocks[group].count - 1
        if !isKnownUniquelyReferenced(&blocks[group][slot]) {
            blocks[group][slot] = blocks[group][slot].copy()
        }
        return (group, slot)
    }

    /// Counts the row just appended to `block`, and indexes it.
    private mutating func appended(_ block: RowBlock) -> RowReference {
        let index = block.count - 1
        storedCount += 1
        if block.isLive(index) {
            liveCount += 1
            if !indexes.isEmpty {
                addToIndexes(block, index)
            }
        }
        nextPrimaryKey = Swift.max(nextPrimaryKey, block.key(index) + 1)
        return RowReference(block: block, index: index)
    }

    /// Replaces the live row with `row.primaryKey`.
    ///
    /// - Returns: Where the row now lives.
    @discardableResult
    mutating func replace(with row: CommittedRow) -> RowReference {
        guard let position = position(of: row.primaryKey), locate(position).block.isLive(locate(position).index) else {
            preconditionFailure("QueueData: no committed row \(row.primaryKey) to replace")
        }
        precondition(
            row.values.count == layout.columnCount,
            "QueueData: row \(row.primaryKey) has \(row.values.count) values for \(layout.columnCount) columns")
        noteRowUpdate()
        let (block, index) = writableBlock(at: position)
        // Only the indexes whose column changed are touched: an update of other attributes
        // (the common case) copies no part of an index.
        var reindexed: [Int] = []
        if !indexes.isEmpty {
            let old = block.row(index)
            for position in indexes.indices {
                let column = indexes[position].column
                let value = layout.value(old, slot: column)
                if !ColumnIndex.isIndexedAlike(value, row.values[column]) {
                    indexes[position].remove(value, row.primaryKey)
                    reindexed.append(position)
                }
            }
        }
        guard block.replace(at: index, version: row.version, values: row.values) else {
            preconditionFailure("QueueData: row \(row.primaryKey) has values that do not fit its columns")
        }
        for position in reindexed {
            indexes[position].insert(row.values[indexes[position].column], row.primaryKey, deferred: defersIndexes)
        }
        return RowReference(block: block, index: index)
    }

    /// Brings back a row that was deleted (a merge policy writing an object another save had
    /// deleted), under its old primary key, with a version above any it had (and above
    /// `versionAtLeast`).
    ///
    /// - Returns: The restored row.
    mutating func restore(primaryKey: Int64, values: [StoredValue], versionAtLeast: Int64) -> CommittedRow {
        noteRowUpdate()
        if let position = position(of: primaryKey) {
            let (block, index) = writableBlock(at: position)
            precondition(!block.isLive(index), "QueueData: row \(primaryKey) is not deleted")
            let version = Swift.max(-block.version(index), versionAtLeast) + 1
            guard block.replace(at: index, version: version, values: values) else {
                preconditionFailure("QueueData: row \(primaryKey) has values that do not fit its columns")
            }
            liveCount += 1
            if !indexes.isEmpty {
                addToIndexes(block, index)
            }
            return CommittedRow(
                primaryKey: primaryKey, version: version, values: values,
                reference: RowReference(block: block, index: index))
        }
        var row = CommittedRow(primaryKey: primaryKey, version: versionAtLeast + 1, values: values)
        if storedCount == 0 || lastKey < primaryKey {
            row.reference = append(row)
        } else {
            // Its tombstone was compacted away: rebuild with the row in its place (rare).
            var rows: [CommittedRow] = []
            snapshot.forEachLiveRow { rows.append($0.committedRow) }
            rows.append(row)
            let columns = indexes.map(\.column)
            self = EntityTable(layout: layout, rows: rows, nextPrimaryKey: nextPrimaryKey)
            index(columns: columns)
            row.reference = snapshot.reference(for: primaryKey)
        }
        return row
    }

    /// Deletes the live row with `primaryKey`; returns whether there was one.
    @discardableResult
    mutating func remove(_ primaryKey: Int64) -> Bool {
        guard let position = position(of: primaryKey), locate(position).block.isLive(locate(position).index) else {
            return false
        }
        let (block, index) = writableBlock(at: position)
        if !indexes.isEmpty {
            removeFromIndexes(block, index)
        }
        block.delete(at: index)
        liveCount -= 1
        compactIfNeeded()
        return true
    }

    /// Builds a table from rows in any order.
    init<Rows: Sequence>(layout: RowLayout, rows: Rows, nextPrimaryKey: Int64) where Rows.Element == CommittedRow {
        self.layout = layout
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

    /// The block and index of row `position`.
    @inline(__always)
    private func locate(_ position: Int) -> (block: RowBlock, index: Int) {
        (
            blocks[position / Self.rowsPerGroup][position / Self.chunkCapacity % Self.groupCapacity],
            position % Self.chunkCapacity
        )
    }

    /// The block and index of row `position`, the block copied first unless this table holds
    /// the only reference to it.
    private mutating func writableBlock(at position: Int) -> (block: RowBlock, index: Int) {
        let group = position / Self.rowsPerGroup
        let slot = position / Self.chunkCapacity % Self.groupCapacity
        if !isKnownUniquelyReferenced(&blocks[group][slot]) {
            blocks[group][slot] = blocks[group][slot].copy()
        }
        return (blocks[group][slot], position % Self.chunkCapacity)
    }

    /// The key of the last row (live or a tombstone); the table must not be empty.
    private var lastKey: Int64 {
        let (block, index) = locate(storedCount - 1)
        return block.key(index)
    }

    private func position(of primaryKey: Int64) -> Int? {
        Self.position(of: primaryKey, in: blocks)
    }

    /// The position of the row with `primaryKey` in `blocks` (laid out as a table's), if it is
    /// there: binary searches of the groups, then of the group's blocks, by their first keys,
    /// then in the block (every block is full but the last, and keys ascend).
    static func position(of primaryKey: Int64, in blocks: [[RowBlock]]) -> Int? {
        blocks.withUnsafeBufferPointer { groups -> Int? in
            // The last group whose first key is at most `primaryKey`.
            var low = 0
            var high = groups.count
            while low < high {
                let middle = (low + high) / 2
                if groups[middle][0].firstKey <= primaryKey {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            guard low > 0 else { return nil }
            let group = low - 1
            return groups[group].withUnsafeBufferPointer { members -> Int? in
                var low = 0
                var high = members.count
                while low < high {
                    let middle = (low + high) / 2
                    if members[middle].firstKey <= primaryKey {
                        low = middle + 1
                    } else {
                        high = middle
                    }
                }
                guard low > 0 else { return nil }
                return members[low - 1].index(of: primaryKey).map {
                    group * rowsPerGroup + (low - 1) * chunkCapacity + $0
                }
            }
        }
    }

    /// Drops tombstones once they outnumber live rows (and are at least 1,024), so that
    /// scans stay proportional to the live data.
    private mutating func compactIfNeeded() {
        let tombstones = storedCount - liveCount
        guard tombstones >= 1024, tombstones > liveCount else { return }
        let old = blocks
        let next = nextPrimaryKey
        let indexes = self.indexes
        let updateToken = self.updateToken
        self = EntityTable(layout: layout)
        self.indexes = []
        for group in old {
            for block in group {
                for index in 0..<block.count where block.isLive(index) {
                    append(copyOf: index, in: block)
                }
            }
        }
        nextPrimaryKey = next
        // The live rows are the same: so are their indexes, and the objects current with them.
        self.indexes = indexes
        self.updateToken = updateToken
    }
}

/// An immutable view of an entity's committed rows at one moment.
struct TableSnapshot: Sendable {
    /// How the rows are laid out.
    let layout: RowLayout?
    /// Groups of blocks of rows, as ``EntityTable`` lays them out.
    let blocks: [[RowBlock]]
    let liveCount: Int
    /// The indexes of the entity's indexed columns, for these rows.
    var indexes: [ColumnIndex] = []
    /// The number of rows in `blocks`, tombstones included.
    var storedCount = 0
    /// The table's ``EntityTable/updateToken`` when it had these rows.
    var updateToken: EntityTable.UpdateToken?

    static let empty = TableSnapshot(layout: nil, blocks: [], liveCount: 0)

    /// The index of `column`, if it is indexed.
    func index(of column: Int) -> ColumnIndex? {
        indexes.first { $0.column == column }
    }

    /// The live row with `primaryKey`, if any.
    func row(for primaryKey: Int64) -> CommittedRow? {
        reference(for: primaryKey)?.committedRow
    }

    /// Where the live row with `primaryKey` is, if there is one: a binary search (blocks are
    /// full but the last, and keys ascend).
    func reference(for primaryKey: Int64) -> RowReference? {
        guard let position = EntityTable.position(of: primaryKey, in: blocks) else { return nil }
        let block = blocks[position / EntityTable.rowsPerGroup][
            position / EntityTable.chunkCapacity % EntityTable.groupCapacity]
        let index = position % EntityTable.chunkCapacity
        return block.isLive(index) ? RowReference(block: block, index: index) : nil
    }

    /// Calls `body` with every live row, in primary-key order.
    @inline(__always)
    func forEachLiveRow(_ body: (RowReference) throws -> Void) rethrows {
        for group in blocks {
            for block in group {
                for index in 0..<block.count where block.isLive(index) {
                    try body(RowReference(block: block, index: index))
                }
            }
        }
    }
}
