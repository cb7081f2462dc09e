import Foundation

/// An index of one column of an entity's committed rows: the primary keys of the rows holding
/// each value.
///
/// It lives in its ``EntityTable``, so every version of the table (the rows as of a commit, the
/// durable rows contexts read) carries the index of exactly its rows. Values are spread over
/// fixed buckets by hash, so that a commit copies only the buckets it touches while published
/// versions share the others, as the table's chunks do.
///
/// Lookups compare values as ``StoredValue``'s `==` does, which is the `==` of the attribute's
/// Swift type for the types a fetch looks up (see ``lookUp(_:)``).
struct ColumnIndex: Sendable {
    static let bucketCount = 4096

    /// The indexed column.
    let column: Int
    private var buckets: [[StoredValue: Keys]]
    /// The column's integer, floating-point, date and string values in order, for ranges and
    /// prefixes.
    private(set) var ordered = OrderedColumnIndex([])

    /// The rows holding one value: almost always one (a unique or nearly unique attribute).
    enum Keys: Sendable {
        case one(Int64)
        case several([Int64])
    }

    init(column: Int) {
        self.column = column
        buckets = Array(repeating: [:], count: Self.bucketCount)
    }

    private static func bucket(of value: StoredValue) -> Int {
        value.hashValue & (bucketCount - 1)
    }

    /// Records that the row `primaryKey` holds `value`; in the ordered entries too unless `ordering` is
    /// `false` (the caller then rebuilds them with ``rebuildOrdered(_:layout:)``).
    mutating func insert(_ value: StoredValue, _ primaryKey: Int64, ordering: Bool = true) {
        if ordering {
            ordered.insert(value, primaryKey)
        }
        insertHashed(value, primaryKey)
    }

    /// Rebuilds the ordered entries from every live row of `blocks` (one sort: for a commit
    /// that inserts many rows, cheaper than an insertion each).
    mutating func rebuildOrdered(_ blocks: [[RowBlock]], layout: RowLayout) {
        var entries: [OrderedColumnIndex.Entry] = []
        for group in blocks {
            for block in group {
                for index in 0..<block.count where block.isLive(index) {
                    let value = layout.value(block.row(index), slot: column)
                    if OrderedColumnIndex.isOrdered(value) {
                        entries.append(OrderedColumnIndex.Entry(value: value, key: block.key(index)))
                    }
                }
            }
        }
        ordered = OrderedColumnIndex(entries)
    }

    /// Indexes every live row of `blocks` at once: the ordered entries sorted once instead of
    /// inserted one by one.
    mutating func build(_ blocks: [[RowBlock]], layout: RowLayout) {
        for group in blocks {
            for block in group {
                for index in 0..<block.count where block.isLive(index) {
                    insertHashed(layout.value(block.row(index), slot: column), block.key(index))
                }
            }
        }
        rebuildOrdered(blocks, layout: layout)
    }

    private mutating func insertHashed(_ value: StoredValue, _ primaryKey: Int64) {
        let bucket = Self.bucket(of: value)
        switch buckets[bucket][value] {
        case nil:
            buckets[bucket][value] = .one(primaryKey)
        case .one(let other):
            buckets[bucket][value] = .several([other, primaryKey])
        case .several(var keys):
            buckets[bucket][value] = nil
            keys.append(primaryKey)
            buckets[bucket][value] = .several(keys)
        }
    }

    /// Records that the row `primaryKey` no longer holds `value`.
    mutating func remove(_ value: StoredValue, _ primaryKey: Int64) {
        ordered.remove(value, primaryKey)
        let bucket = Self.bucket(of: value)
        switch buckets[bucket][value] {
        case nil:
            return
        case .one(let key):
            if key == primaryKey {
                buckets[bucket][value] = nil
            }
        case .several(var keys):
            buckets[bucket][value] = nil
            keys.removeAll { $0 == primaryKey }
            buckets[bucket][value] = keys.count == 1 ? .one(keys[0]) : .several(keys)
        }
    }

    /// The primary keys of the rows holding `value` (in no particular order).
    func lookUp(_ value: StoredValue) -> [Int64] {
        switch buckets[Self.bucket(of: value)][value] {
        case nil: return []
        case .one(let key): return [key]
        case .several(let keys): return keys
        }
    }

    /// The primary keys of the rows that may satisfy `constraint` (a superset of those that do,
    /// which the fetch checks), or `nil` when the index cannot narrow them down (a prefix that
    /// is not ASCII).
    func candidates(for constraint: AttributeConstraint) -> [Int64]? {
        guard constraint.isRange else {
            if constraint.values.count == 1 {
                return lookUp(constraint.values[0])
            }
            var keys: [Int64] = []
            for value in constraint.values {
                keys += lookUp(value)
            }
            return keys
        }
        if let prefix = constraint.prefix {
            // Every string starting with an ASCII prefix lies from the prefix up to (not
            // including) the prefix with its last byte raised by one, in the index's order (of
            // UTF-8 bytes): a string whose first characters are the prefix's ASCII characters
            // begins with their bytes. Other prefixes are looked for in every row.
            guard prefix.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
            guard let last = prefix.utf8.last else {
                return ordered.keys(from: .string(""), while: { if case .string = $0 { true } else { false } })
            }
            let end = StoredValue.string(
                String(decoding: prefix.utf8.dropLast(), as: UTF8.self) + String(UnicodeScalar(last + 1)))
            return ordered.keys(from: .string(prefix), while: { OrderedColumnIndex.precedes($0, end) })
        }
        let upper = constraint.upperBound
        // String ranges follow Swift's `<`, which agrees with the index's byte order on ASCII
        // strings only: with other strings in the index, or at an end, every row is looked at.
        for bound in [constraint.lowerBound, upper].compactMap({ $0 }) {
            if case .string = bound, OrderedColumnIndex.isNonASCIIString(bound) || ordered.nonASCIIStrings > 0 {
                return nil
            }
        }
        var keys = ordered.keys(from: constraint.lowerBound) { value in
            upper.map { !OrderedColumnIndex.precedes($0, value) } ?? true
        }
        if case .date = constraint.lowerBound ?? upper, upper != nil {
            // A date whose interval is NaN is at or above every date by `Date`'s `>=` and at or
            // below every one by its `<=` (both defined through `<`), and sorts last here.
            keys += ordered.keys(from: .date(Date(timeIntervalSinceReferenceDate: .nan))) { _ in true }
        }
        return keys
    }
}
