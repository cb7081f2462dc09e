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

    /// Records that the row `primaryKey` holds `value`.
    mutating func insert(_ value: StoredValue, _ primaryKey: Int64) {
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
}
