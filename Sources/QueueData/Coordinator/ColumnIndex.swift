import Foundation

/// An index of one column of an entity's committed rows: the primary keys of the rows holding
/// each value.
///
/// It lives in its ``EntityTable``, so every version of the table (the rows as of a commit, the
/// durable rows contexts read) carries the index of exactly its rows. Values are kept in a
/// persistent hash trie (``HashedValueTrie``), so that a commit copies only the few nodes on the
/// paths it changes while published versions share the others, as the table's chunks do; a
/// commit that leaves the column's values alone copies nothing of it.
///
/// Lookups compare values as ``StoredValue``'s `==` does, which is the `==` of the attribute's
/// Swift type for the types a fetch looks up (see ``lookUp(_:)``).
struct ColumnIndex: Sendable {
    /// The indexed column.
    let column: Int
    private var hashed = HashedValueTrie()
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
    }

    /// How many distinct values the hashed part holds (for tests).
    var hashedValueCount: Int { hashed.valueCount }

    /// The identity of the hashed part's root node (for tests: a change copies it when a
    /// published version of the table holds it).
    var hashedRootIdentity: ObjectIdentifier { hashed.rootIdentity }

    /// Whether the index holds `lhs` and `rhs` alike: the same hashed entry and the same
    /// ordered one. Strings must have the same UTF-8 bytes (the ordered entries are in byte
    /// order, and canonically equivalent strings are `==` with different bytes); other values
    /// the same bits.
    static func isIndexedAlike(_ lhs: StoredValue, _ rhs: StoredValue) -> Bool {
        if case .string(var left) = lhs, case .string(var right) = rhs {
            // One `memcmp` over the contiguous bytes (`utf8.elementsEqual` walks them generically).
            return left.withUTF8 { left in
                right.withUTF8 { right in
                    left.count == right.count
                        && (left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
                }
            }
        }
        return StoredValue.isSame(lhs, rhs)
    }

    /// Whether `value` is `==` to no value, itself included (a `Double` or a `Date` whose
    /// interval is NaN): no lookup can find it, so the hashed part leaves it out. (Kept there, it
    /// was never found to be removed either — each save of a NaN added an entry for good — and
    /// many of them made one collision list searched on every insert: appending 40,000 rows
    /// holding NaN one by one took 83 s in a debug build, 0.2 s without them.)
    static func isUnequalToItself(_ value: StoredValue) -> Bool {
        switch value {
        case .double(let double): return double.isNaN
        case .date(let date): return date.timeIntervalSinceReferenceDate.isNaN
        default: return false
        }
    }

    /// Records that the row `primaryKey` holds `value`, unless `deferred` (the caller then
    /// rebuilds the whole index with ``build(_:layout:)``).
    mutating func insert(_ value: StoredValue, _ primaryKey: Int64, deferred: Bool = false) {
        guard !deferred else { return }
        ordered.insert(value, primaryKey)
        insertHashed(value, primaryKey)
    }

    /// Indexes every live row of `blocks` at once, replacing what the index held: both parts
    /// built from one sort each instead of an insertion per row (at open, and for a commit
    /// that adds many rows beside the table's).
    mutating func build(_ blocks: [[RowBlock]], layout: RowLayout) {
        var pairs: [(value: StoredValue, key: Int64)] = []
        var entries: [OrderedColumnIndex.Entry] = []
        for group in blocks {
            for block in group {
                for index in 0..<block.count where block.isLive(index) {
                    let value = layout.value(block.row(index), slot: column)
                    if !Self.isUnequalToItself(value) {
                        pairs.append((value, block.key(index)))
                    }
                    if OrderedColumnIndex.isOrdered(value) {
                        entries.append(OrderedColumnIndex.Entry(value: value, key: block.key(index)))
                    }
                }
            }
        }
        hashed = HashedValueTrie(pairs)
        ordered = OrderedColumnIndex(entries)
    }

    private mutating func insertHashed(_ value: StoredValue, _ primaryKey: Int64) {
        guard !Self.isUnequalToItself(value) else { return }
        hashed.modifyKeys(for: value, hash: HashedValueTrie.hash(of: value)) { keys in
            switch keys {
            case nil:
                keys = .one(primaryKey)
            case .one(let other):
                keys = .several([other, primaryKey])
            case .several(var several):
                keys = nil
                several.append(primaryKey)
                keys = .several(several)
            }
        }
    }

    /// Records that the row `primaryKey` no longer holds `value`.
    mutating func remove(_ value: StoredValue, _ primaryKey: Int64) {
        ordered.remove(value, primaryKey)
        guard !Self.isUnequalToItself(value) else { return }
        hashed.modifyKeys(for: value, hash: HashedValueTrie.hash(of: value)) { keys in
            switch keys {
            case nil:
                return
            case .one(let key):
                if key == primaryKey {
                    keys = nil
                }
            case .several(var several):
                keys = nil
                several.removeAll { $0 == primaryKey }
                keys = several.count == 1 ? .one(several[0]) : .several(several)
            }
        }
    }

    /// The primary keys of the rows holding `value` (in no particular order).
    func lookUp(_ value: StoredValue) -> [Int64] {
        switch hashed[value] {
        case nil: return []
        case .one(let key): return [key]
        case .several(let keys): return keys
        }
    }

    /// The primary keys of the strings in `ordered` that begin with the ASCII bytes `prefix`
    /// (and, with `thenNonASCII`, continue with a non-ASCII scalar).
    private static func keys(
        startingWith prefix: ArraySlice<UInt8>, in ordered: OrderedColumnIndex, thenNonASCII: Bool = false
    ) -> [Int64] {
        let text = String(decoding: prefix, as: UTF8.self)
        // The least string beginning with the prefix (and then a non-ASCII scalar: U+0080 is the
        // least, its UTF-8 bytes C2 80 below every other non-ASCII scalar's).
        let lower = StoredValue.string(thenNonASCII ? text + "\u{80}" : text)
        guard let last = prefix.last else {
            return ordered.keys(from: lower, while: { if case .string = $0 { true } else { false } })
        }
        let end = StoredValue.string(
            String(decoding: prefix.dropLast(), as: UTF8.self) + String(UnicodeScalar(last + 1)))
        return ordered.keys(from: lower, while: { OrderedColumnIndex.precedes($0, end) })
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
            // A string whose first characters are an ASCII prefix's either begins with its bytes
            // — and lies from the prefix up to (not including) the prefix with its last byte
            // raised by one, in the index's order (of UTF-8 bytes) — or spells one of them with
            // a scalar canonically equivalent to it (U+212A KELVIN SIGN is "K", U+037E GREEK
            // QUESTION MARK ";"): it then begins with the bytes before that character and a
            // non-ASCII byte. With non-ASCII strings in the index, those ranges are read too.
            // Other prefixes are looked for in every row.
            let bytes = Array(prefix.utf8)
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            var keys = Self.keys(startingWith: bytes[...], in: ordered)
            if ordered.nonASCIIStrings > 0 {
                for count in 0..<bytes.count {
                    keys += Self.keys(startingWith: bytes[..<count], in: ordered, thenNonASCII: true)
                }
            }
            return keys
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
