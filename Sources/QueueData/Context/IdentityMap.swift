/// A context's registered objects of one entity, by primary key (temporary keys are negative).
///
/// A dictionary whose keys hash with a seeded 64-bit mix instead of SipHash: a context looks
/// its objects up on every fetch, registration and save, and hashing an `Int64` through
/// `Hasher` cost more than the rest of the look-up.
struct IdentityMap: Sequence, ExpressibleByDictionaryLiteral {
    typealias Storage = [ObjectKey: ManagedObject]

    /// The objects, by key.
    var storage: Storage

    init(minimumCapacity: Int = 0) {
        storage = Storage(minimumCapacity: minimumCapacity)
    }

    init(dictionaryLiteral elements: (Int64, ManagedObject)...) {
        storage = Storage(minimumCapacity: elements.count)
        for (key, object) in elements {
            storage[ObjectKey(key)] = object
        }
    }

    /// The object registered for `key`; setting `nil` unregisters it.
    subscript(key: Int64) -> ManagedObject? {
        get { storage[ObjectKey(key)] }
        set { storage[ObjectKey(key)] = newValue }
    }

    var count: Int { storage.count }
    var capacity: Int { storage.capacity }
    var isEmpty: Bool { storage.isEmpty }
    var values: Storage.Values { storage.values }

    mutating func reserveCapacity(_ capacity: Int) {
        storage.reserveCapacity(capacity)
    }

    func index(forKey key: Int64) -> Storage.Index? {
        storage.index(forKey: ObjectKey(key))
    }

    mutating func remove(at index: Storage.Index) {
        storage.remove(at: index)
    }

    @discardableResult
    mutating func removeValue(forKey key: Int64) -> ManagedObject? {
        storage.removeValue(forKey: ObjectKey(key))
    }

    func makeIterator() -> Iterator {
        Iterator(base: storage.makeIterator())
    }

    /// The registered objects and their keys, in no particular order.
    struct Iterator: IteratorProtocol {
        var base: Storage.Iterator

        mutating func next() -> (key: Int64, value: ManagedObject)? {
            base.next().map { ($0.key.rawValue, $0.value) }
        }
    }
}

/// A primary key as an identity map's key: hashed by a seeded mix of its bits (SplitMix64's
/// finalizer), not by SipHash. The dictionary's per-instance seed still varies the buckets, so
/// keys chosen to collide cannot be planned from the keys alone.
struct ObjectKey: Hashable {
    let rawValue: Int64

    init(_ rawValue: Int64) {
        self.rawValue = rawValue
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(rawValue)
    }

    func _rawHashValue(seed: Int) -> Int {
        var mixed = UInt64(bitPattern: rawValue) ^ (UInt64(bitPattern: Int64(seed)) &* 0x9E37_79B9_7F4A_7C15)
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: mixed ^ (mixed >> 31))
    }
}
