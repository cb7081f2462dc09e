import Foundation

/// How a row stores a relationship: a to-one as the related object's primary key
/// (`.integer`, or `.null`), a to-many as the keys packed as little-endian 64-bit integers
/// (`.data`), ascending for an unordered relationship so that equal sets store equal bytes.
/// Inside a context, keys of objects not saved yet are their negative temporary keys.
enum RelationshipKeys {
    /// The keys a stored relationship value holds, in order.
    static func decode(_ value: StoredValue) -> [Int64] {
        switch value {
        case .integer(let key): return [key]
        case .data(let data):
            let count = data.count / 8
            guard count > 0 else { return [] }
            var keys = [Int64](repeating: 0, count: count)
            keys.withUnsafeMutableBytes { destination in
                data.withUnsafeBytes { source in
                    destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<(count * 8)]))
                }
            }
            return keys.map { Int64(littleEndian: $0) }
        default: return []
        }
    }

    /// The stored value of `keys` for `relationship`: sorted unless it is ordered.
    static func encode(_ keys: [Int64], for relationship: RelationshipDescription) -> StoredValue {
        guard relationship.isToMany else {
            return keys.first.map { .integer($0) } ?? .null
        }
        let ordered = relationship.isOrdered ? keys : keys.sorted()
        var data = Data(count: ordered.count * 8)
        data.withUnsafeMutableBytes { buffer in
            for (index, key) in ordered.enumerated() {
                buffer.storeBytes(of: key.littleEndian, toByteOffset: index * 8, as: Int64.self)
            }
        }
        return .data(data)
    }

    /// The keys of a to-many relationship both sides changed since `snapshot`: the `committed`
    /// keys, plus those `object` added, minus those it removed (in the committed order, the
    /// additions last).
    static func merged(
        snapshot: StoredValue,
        object: StoredValue,
        committed: StoredValue,
        relationship: RelationshipDescription
    ) -> StoredValue {
        let base = Set(decode(snapshot))
        let mine = decode(object)
        let removed = base.subtracting(mine)
        var merged = decode(committed).filter { !removed.contains($0) }
        var present = Set(merged)
        for key in mine where !base.contains(key) && present.insert(key).inserted {
            merged.append(key)
        }
        return encode(merged, for: relationship)
    }
}
