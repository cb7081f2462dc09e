/// Up to ``capacity`` committed rows of one entity, packed in one allocation: each row's primary
/// key, version and fields (laid out by the entity's ``RowLayout``).
///
/// Blocks are how committed rows are stored once: an entity's table is a list of them, every
/// snapshot of the table shares them, and an object made from a committed row reads its values
/// in place, in the block (it holds the block, not a copy of the row). A deleted row stays as a
/// tombstone (its version negated, its fields destroyed) until the table is compacted.
///
/// `@unchecked Sendable`: a block is written only by the table that made it while that table
/// holds the only reference to it (``EntityTable`` checks `isKnownUniquelyReferenced` before every
/// write and copies the block otherwise); once shared — by a snapshot, another context's object,
/// a save's notification — it never changes, and is only read.
final class RowBlock: @unchecked Sendable {
    /// How the rows' fields are laid out.
    let layout: RowLayout
    /// How many rows the block has room for.
    let capacity: Int
    /// How many rows it holds (live rows and tombstones).
    private(set) var count = 0
    /// The rows' primary keys, ascending.
    let keys: UnsafeMutablePointer<Int64>
    /// The rows' versions: positive for live rows, the last version negated for tombstones.
    let versions: UnsafeMutablePointer<Int64>
    /// The rows' fields, ``RowLayout/rowSize`` bytes each.
    let rows: UnsafeMutableRawPointer

    /// An empty block for `capacity` rows.
    init(layout: RowLayout, capacity: Int) {
        self.layout = layout
        self.capacity = capacity
        let storage = UnsafeMutableRawPointer.allocate(
            byteCount: Swift.max(capacity * (16 + layout.rowSize), 8), alignment: 8)
        keys = storage.bindMemory(to: Int64.self, capacity: capacity)
        versions = (storage + capacity * 8).bindMemory(to: Int64.self, capacity: capacity)
        rows = storage + capacity * 16
    }

    /// A block of one row, for a committed row that lives in no table's blocks (a parent
    /// context's change, say). `nil` if a value does not fit its column.
    convenience init?(layout: RowLayout, row: CommittedRow) {
        self.init(layout: layout, capacity: 1)
        guard append(primaryKey: row.primaryKey, version: row.version, values: row.values) else { return nil }
    }

    deinit {
        if !layout.nontrivialColumns.isEmpty {
            for index in 0..<count where versions[index] > 0 {
                layout.destroyRow(row(index))
            }
        }
        UnsafeMutableRawPointer(keys).deallocate()
    }

    /// The fields of row `index`.
    @inline(__always)
    func row(_ index: Int) -> UnsafeMutableRawPointer {
        rows + index * layout.rowSize
    }

    /// Whether row `index` is live (not a tombstone).
    @inline(__always)
    func isLive(_ index: Int) -> Bool {
        versions[index] > 0
    }

    /// Row `index` as a value (its fields read into stored values), with a reference to it here.
    func committedRow(at index: Int) -> CommittedRow {
        CommittedRow(
            primaryKey: keys[index], version: versions[index],
            values: isLive(index) ? layout.values(row(index), count: layout.columnCount) : [],
            reference: isLive(index) ? RowReference(block: self, index: index) : nil)
    }

    /// Appends a row; `false`, appending nothing, if a value does not fit its column. The
    /// block must have room; a tombstone (`version` ≤ 0) takes no values.
    @discardableResult
    func append(primaryKey: Int64, version: Int64, values: [StoredValue]) -> Bool {
        values.withUnsafeBufferPointer { append(primaryKey: primaryKey, version: version, values: $0) }
    }

    /// ``append(primaryKey:version:values:)-([StoredValue])`` of values in a buffer.
    @discardableResult
    func append(primaryKey: Int64, version: Int64, values: UnsafeBufferPointer<StoredValue>) -> Bool {
        precondition(count < capacity, "QueueData: a row block is full")
        if version > 0 {
            guard layout.initializeRow(row(count), from: values) else { return false }
        }
        keys[count] = primaryKey
        versions[count] = version
        count += 1
        return true
    }

    /// Appends a copy of row `index` of `block` (which has the same layout).
    func append(copyOf index: Int, in block: RowBlock) {
        precondition(count < capacity, "QueueData: a row block is full")
        if block.isLive(index) {
            layout.initializeRow(row(count), copying: block.row(index), byteCount: layout.rowSize)
        }
        keys[count] = block.keys[index]
        versions[count] = block.versions[index]
        count += 1
    }

    /// A copy of this block, with room for `capacity` rows.
    func copy(capacity: Int? = nil) -> RowBlock {
        let copy = RowBlock(layout: layout, capacity: capacity ?? self.capacity)
        for index in 0..<count {
            copy.append(copyOf: index, in: self)
        }
        return copy
    }

    /// Replaces row `index` (live or a tombstone) with `values` at `version`; `false`, changing
    /// nothing, if a value does not fit its column.
    func replace(at index: Int, version: Int64, values: [StoredValue]) -> Bool {
        let target = row(index)
        if version > 0 {
            // Built aside first, so that a value that does not fit leaves the row as it was.
            let built = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(layout.rowSize, 8), alignment: 8)
            defer { built.deallocate() }
            guard layout.initializeRow(built, from: values) else { return false }
            if isLive(index) {
                layout.destroyRow(target)
            }
            target.copyMemory(from: built, byteCount: layout.rowSize)
        } else if isLive(index) {
            layout.destroyRow(target)
        }
        versions[index] = version
        return true
    }

    /// Makes live row `index` a tombstone: its fields are destroyed, its version negated.
    func delete(at index: Int) {
        precondition(isLive(index), "QueueData: row \(keys[index]) is deleted already")
        layout.destroyRow(row(index))
        versions[index] = -versions[index]
    }
}

/// A committed row where it lives: row ``index`` of ``block``.
struct RowReference: Sendable {
    let block: RowBlock
    let index: Int

    var primaryKey: Int64 { block.keys[index] }
    var version: Int64 { block.versions[index] }
    /// The row's fields.
    var fields: UnsafeMutableRawPointer { block.row(index) }
    /// The row's values, read into their stored form.
    var values: [StoredValue] { block.layout.values(fields, count: block.layout.columnCount) }
    /// The row as a value.
    var committedRow: CommittedRow { block.committedRow(at: index) }
}
