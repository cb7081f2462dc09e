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

    /// Whether the stored relationship value holds `key` (read in place: no array of keys).
    static func contains(_ key: Int64, in value: StoredValue) -> Bool {
        switch value {
        case .integer(let held): return held == key
        case .data(let data): return firstIndex(of: key, in: data) != nil
        default: return false
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

    /// Adds `key` to the to-many `value` in place: at the end if the relationship is ordered,
    /// at its place in key order otherwise. A binary search and one insertion of 8 bytes
    /// (none when it goes last, as a new object's key does): no decoding, no sorting.
    ///
    /// - Returns: Whether `key` was added (`false`: `value` holds it already).
    static func insert(_ key: Int64, into value: inout StoredValue, for relationship: RelationshipDescription) -> Bool {
        guard case .data(var data) = value else {
            value = encode([key], for: relationship)
            return true
        }
        value = .null  // `data` holds the only reference now, when the caller moved `value` out.
        defer { value = .data(data) }
        let position: Int
        if relationship.isOrdered {
            guard firstIndex(of: key, in: data) == nil else { return false }
            position = data.count / 8
        } else {
            let (index, found) = sortedIndex(of: key, in: data)
            guard !found else { return false }
            position = index
        }
        withUnsafeBytes(of: key.littleEndian) { bytes in
            if position == data.count / 8 {
                data.append(contentsOf: bytes)
            } else {
                let offset = data.startIndex + position * 8
                data.replaceSubrange(offset..<offset, with: bytes)
            }
        }
        return true
    }

    /// Removes `key` from the to-many `value` in place.
    ///
    /// - Returns: Whether `key` was removed (`false`: `value` does not hold it).
    static func remove(_ key: Int64, from value: inout StoredValue, for relationship: RelationshipDescription) -> Bool {
        guard case .data(var data) = value else { return false }
        let position: Int?
        if relationship.isOrdered {
            position = firstIndex(of: key, in: data)
        } else {
            let (index, found) = sortedIndex(of: key, in: data)
            position = found ? index : nil
        }
        guard let position else { return false }
        value = .null
        let offset = data.startIndex + position * 8
        data.removeSubrange(offset..<(offset + 8))
        value = .data(data)
        return true
    }

    /// The key at `index` of packed keys.
    private static func key(at index: Int, in buffer: UnsafeRawBufferPointer) -> Int64 {
        Int64(littleEndian: buffer.loadUnaligned(fromByteOffset: index * 8, as: Int64.self))
    }

    /// Where `key` is, or would go, in ascending packed keys.
    private static func sortedIndex(of key: Int64, in data: Data) -> (index: Int, found: Bool) {
        data.withUnsafeBytes { buffer in
            var low = 0
            var high = buffer.count / 8
            while low < high {
                let middle = (low + high) / 2
                let probe = Self.key(at: middle, in: buffer)
                if probe == key {
                    return (middle, true)
                }
                if probe < key {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            return (low, false)
        }
    }

    /// The position of `key` in packed keys, if there.
    private static func firstIndex(of key: Int64, in data: Data) -> Int? {
        data.withUnsafeBytes { buffer in
            (0..<(buffer.count / 8)).first { Self.key(at: $0, in: buffer) == key }
        }
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
