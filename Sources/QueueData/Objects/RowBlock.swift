/// Up to ``capacity`` committed rows of one entity, packed in one allocation: each row's fields
/// (laid out by the entity's ``RowLayout``) and version, with the rows' primary keys.
///
/// Blocks are how committed rows are stored once: an entity's table is a list of them, every
/// snapshot of the table shares them, and an object made from a committed row reads its values
/// in place, in the block (it holds the block, not a copy of the row). A deleted row stays as a
/// tombstone (its version negated, its fields destroyed) until the table is compacted.
///
/// Keys and versions are kept narrow, as most blocks allow: a block whose keys follow one
/// another (the rows of a store that only ever appended, and its deleted rows' tombstones)
/// stores its first key only, and versions take 4 bytes a row. A block whose keys have a gap
/// stores them all (8 bytes a row), and one with a version beyond 32 bits stores every version
/// in 8 bytes as well — what a file holds is kept whatever it is.
///
/// `@unchecked Sendable`: a block is written only by the table that made it while that table
/// holds the only reference to it (``EntityTable`` checks `isKnownUniquelyReferenced` before every
/// write and copies the block otherwise); once shared — by a snapshot, another context's object,
/// a save's notification — it never changes, and is only read. The one other writer is a saving
/// context, which copies its inserted objects' rows into a block of its own on its queue before
/// the save request holding it is made, and writes it no more (the coordinator only reads it).
final class RowBlock: @unchecked Sendable {
    /// How the rows' fields are laid out.
    let layout: RowLayout
    /// How many rows the block has room for.
    let capacity: Int
    /// How many rows it holds (live rows and tombstones).
    private(set) var count = 0
    /// The first row's primary key (0 while the block is empty).
    private(set) var firstKey: Int64 = 0
    /// The rows' primary keys, ascending, once they do not follow one another (`nil` while row
    /// `i`'s key is `firstKey + i`).
    private var explicitKeys: UnsafeMutablePointer<Int64>?
    /// The rows' versions, or for a block with ``wideVersions`` their signs (clamped to 32
    /// bits): positive for live rows, the last version negated for tombstones.
    private let narrowVersions: UnsafeMutablePointer<Int32>
    /// The rows' versions, once one of them does not fit in 32 bits.
    private var wideVersions: UnsafeMutablePointer<Int64>?
    /// The rows' fields, ``RowLayout/rowSize`` bytes each.
    let rows: UnsafeMutableRawPointer
    /// Whether the block is a copy of another (``copy(capacity:)``), which objects may still
    /// read: only then can a context's objects need moving onto it after a save.
    private(set) var isCopy = false

    /// An empty block for `capacity` rows.
    init(layout: RowLayout, capacity: Int) {
        self.layout = layout
        self.capacity = capacity
        // The rows first (their size is a multiple of 8), then the versions.
        rows = UnsafeMutableRawPointer.allocate(
            byteCount: Swift.max(capacity * (layout.rowSize + 4), 8), alignment: 8)
        narrowVersions = (rows + capacity * layout.rowSize).bindMemory(to: Int32.self, capacity: capacity)
    }

    /// A block of one row, for a committed row that lives in no table's blocks (a parent
    /// context's change, say). `nil` if a value does not fit its column.
    convenience init?(layout: RowLayout, row: CommittedRow) {
        self.init(layout: layout, capacity: 1)
        guard append(primaryKey: row.primaryKey, version: row.version, values: row.values) else { return nil }
    }

    deinit {
        if !layout.nontrivialColumns.isEmpty {
            for index in 0..<count where isLive(index) {
                layout.destroyRow(row(index))
            }
        }
        rows.deallocate()
        explicitKeys?.deallocate()
        wideVersions?.deallocate()
    }

    /// The fields of row `index`.
    @inline(__always)
    func row(_ index: Int) -> UnsafeMutableRawPointer {
        rows + index * layout.rowSize
    }

    /// The primary key of row `index`.
    @inline(__always)
    func key(_ index: Int) -> Int64 {
        if let explicitKeys {
            return explicitKeys[index]
        }
        return firstKey &+ Int64(index)
    }

    /// The version of row `index`: positive for a live row, the last version negated for a
    /// tombstone.
    @inline(__always)
    func version(_ index: Int) -> Int64 {
        if let wideVersions {
            return wideVersions[index]
        }
        return Int64(narrowVersions[index])
    }

    /// The index of the row with `primaryKey` (live or a tombstone), if the block has it: a
    /// subtraction when the keys follow one another, a binary search otherwise.
    func index(of primaryKey: Int64) -> Int? {
        guard count > 0, primaryKey >= firstKey else { return nil }
        guard let keys = explicitKeys else {
            // `primaryKey - firstKey` fits in 64 bits unsigned (the key is not below the first).
            let offset = UInt64(bitPattern: primaryKey &- firstKey)
            return offset < UInt64(count) ? Int(offset) : nil
        }
        var first = 0
        var last = count
        while first < last {
            let middle = (first + last) / 2
            let key = keys[middle]
            if key == primaryKey {
                return middle
            } else if key < primaryKey {
                first = middle + 1
            } else {
                last = middle
            }
        }
        return nil
    }

    /// Stores `version` as row `index`'s version, widening the block's versions if it does not
    /// fit in 32 bits.
    private func setVersion(_ version: Int64, at index: Int) {
        if let wideVersions {
            wideVersions[index] = version
            narrowVersions[index] = Int32(clamping: version)
        } else if let narrow = Int32(exactly: version) {
            narrowVersions[index] = narrow
        } else {
            let wide = UnsafeMutablePointer<Int64>.allocate(capacity: capacity)
            for other in 0..<count {
                wide[other] = Int64(narrowVersions[other])
            }
            wideVersions = wide
            wide[index] = version
            narrowVersions[index] = Int32(clamping: version)
        }
    }

    /// Stores `primaryKey` as the key of row `count` (the next one), which must be greater than
    /// the previous row's.
    private func appendKey(_ primaryKey: Int64) {
        if count == 0 {
            firstKey = primaryKey
        } else if let explicitKeys {
            explicitKeys[count] = primaryKey
        } else if primaryKey &- firstKey != Int64(count) || primaryKey < firstKey {
            let keys = UnsafeMutablePointer<Int64>.allocate(capacity: capacity)
            for index in 0..<count {
                keys[index] = firstKey &+ Int64(index)
            }
            keys[count] = primaryKey
            explicitKeys = keys
        }
    }

    /// Whether row `index` is live (not a tombstone).
    @inline(__always)
    func isLive(_ index: Int) -> Bool {
        narrowVersions[index] > 0
    }

    /// Row `index` as a value (its fields read into stored values), with a reference to it here.
    func committedRow(at index: Int) -> CommittedRow {
        CommittedRow(
            primaryKey: key(index), version: version(index),
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
        appendKey(primaryKey)
        setVersion(version, at: count)
        count += 1
        return true
    }

    /// Appends a copy of row `index` of `block` (which has the same layout).
    func append(copyOf index: Int, in block: RowBlock) {
        precondition(count < capacity, "QueueData: a row block is full")
        if block.isLive(index) {
            layout.initializeRow(row(count), copying: block.row(index), byteCount: layout.rowSize)
        }
        appendKey(block.key(index))
        setVersion(block.version(index), at: count)
        count += 1
    }

    /// Appends a copy of the row at `source` (an object's row of the same layout: its columns are
    /// copied, its transient fields are not) as a live row.
    func append(copyingRow source: UnsafeRawPointer, primaryKey: Int64, version: Int64) {
        precondition(count < capacity, "QueueData: a row block is full")
        precondition(version > 0, "QueueData: a copied row is live")
        layout.initializeRow(row(count), copying: source, byteCount: layout.rowSize)
        appendKey(primaryKey)
        setVersion(version, at: count)
        count += 1
    }

    /// A copy of this block, with room for `capacity` rows.
    func copy(capacity: Int? = nil) -> RowBlock {
        let copy = RowBlock(layout: layout, capacity: capacity ?? self.capacity)
        for index in 0..<count {
            copy.append(copyOf: index, in: self)
        }
        copy.isCopy = true
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
        setVersion(version, at: index)
        return true
    }

    /// Makes live row `index` a tombstone: its fields are destroyed, its version negated.
    func delete(at index: Int) {
        precondition(isLive(index), "QueueData: row \(key(index)) is deleted already")
        layout.destroyRow(row(index))
        setVersion(-version(index), at: index)
    }
}

/// A committed row where it lives: row ``index`` of ``block``.
struct RowReference: Sendable {
    let block: RowBlock
    let index: Int

    var primaryKey: Int64 { block.key(index) }
    var version: Int64 { block.version(index) }
    /// The row's fields.
    var fields: UnsafeMutableRawPointer { block.row(index) }
    /// The row's values, read into their stored form.
    var values: [StoredValue] { block.layout.values(fields, count: block.layout.columnCount) }
    /// The row as a value.
    var committedRow: CommittedRow { block.committedRow(at: index) }
}
