/// A context's registered objects of one entity, by primary key (temporary keys are negative).
///
/// Dense: primary keys are handed out in order from 1, so the objects of positive keys live in
/// pages of 64 slots indexed by `key >> 6` — a look-up is two loads, a registration a store,
/// and an object takes 8 bytes of map instead of a hashed dictionary entry (≈ 40 bytes). A page
/// is allocated when a key in its range is first registered, and freed when its last object
/// goes. The list of pages covers the keys below some limit, and grows only while it stays
/// within four pages per registered object (or 1,024 pages): objects of keys beyond it — a few
/// objects of a large store, temporary keys, keys at or above 2^30 — live in a dictionary whose
/// keys hash with a seeded 64-bit mix instead of SipHash, and move into pages when the list
/// grows over them. Every key has one place: the pages below the limit, the dictionary above.
///
/// A value: copying a map shares its pages, and a write copies a page first unless the map
/// holds the only reference to it.
struct IdentityMap: Sequence, ExpressibleByDictionaryLiteral {
    /// Keys per page, a power of two.
    static let pageShift = 6
    static let pageSize = 1 << pageShift
    /// Keys from here up are not paged.
    static let pagedKeyLimit: Int64 = 1 << 30

    /// The pages, by `key >> pageShift`: `nil` where no key of the range is registered. Keys
    /// from 1 up to `pages.count << pageShift` are paged.
    private var pages: [Page?] = []
    /// The objects whose keys are not paged.
    private var others: [ObjectKey: ManagedObject] = [:]
    /// How many keys of `others` are positive (the ones the pages may grow over: the others are
    /// temporary keys).
    private var positiveOthers = 0
    /// How many objects are registered.
    private(set) var count = 0

    init() {}

    init(dictionaryLiteral elements: (Int64, ManagedObject)...) {
        for (key, object) in elements {
            self[key] = object
        }
    }

    var isEmpty: Bool { count == 0 }

    /// The object registered for `key`; setting `nil` unregisters it.
    subscript(key: Int64) -> ManagedObject? {
        get {
            guard isPaged(key) else { return others.isEmpty ? nil : others[ObjectKey(key)] }
            guard let page = pages[Int(key >> Self.pageShift)] else { return nil }
            return page.slots[Int(key) & (Self.pageSize - 1)]
        }
        set {
            if !isPaged(key), newValue != nil, key > 0, key < Self.pagedKeyLimit {
                extendPages(toCover: key, adding: 1)
            }
            guard isPaged(key) else {
                if let newValue {
                    if others.updateValue(newValue, forKey: ObjectKey(key)) == nil {
                        count += 1
                        positiveOthers += key > 0 ? 1 : 0
                    }
                } else if others.removeValue(forKey: ObjectKey(key)) != nil {
                    count -= 1
                    positiveOthers -= key > 0 ? 1 : 0
                }
                return
            }
            let pageIndex = Int(key >> Self.pageShift)
            let slot = Int(key) & (Self.pageSize - 1)
            guard pages[pageIndex] != nil else {
                guard let newValue else { return }
                let page = Page()
                page.slots[slot] = newValue
                page.count = 1
                pages[pageIndex] = page
                count += 1
                return
            }
            if !isKnownUniquelyReferenced(&pages[pageIndex]) {
                pages[pageIndex] = pages[pageIndex]!.copy()
            }
            // Through the list each time, not a local reference to the page: binding one
            // retained and released the page around every registration.
            let slots = pages[pageIndex].unsafelyUnwrapped.slots
            let hadObject = slots[slot] != nil
            slots[slot] = newValue
            let change = (newValue == nil ? 0 : 1) - (hadObject ? 1 : 0)
            pages[pageIndex].unsafelyUnwrapped.count += change
            count += change
            if change < 0, pages[pageIndex].unsafelyUnwrapped.count == 0 {
                pages[pageIndex] = nil
            }
        }
    }

    /// Whether `key` is in the pages' range (else in `others`).
    @inline(__always)
    private func isPaged(_ key: Int64) -> Bool {
        key > 0 && key < Int64(pages.count) << Self.pageShift
    }

    /// Grows the list of pages to cover `key`, if it stays within four pages per object once
    /// `adding` more are registered (or 1,024 pages), and moves the objects of `others` it then
    /// covers into their pages.
    private mutating func extendPages(toCover key: Int64, adding: Int) {
        let needed = Int(key >> Self.pageShift) + 1
        let allowed = Swift.max(1024, 4 * (count + adding))
        guard needed > pages.count, needed <= allowed else { return }
        let oldLimit = Int64(pages.count) << Self.pageShift
        pages.append(
            contentsOf: repeatElement(nil, count: Swift.min(Swift.max(needed, pages.count * 2), allowed) - pages.count))
        guard positiveOthers > 0 else { return }
        let moving = others.filter { $0.key.rawValue >= oldLimit && isPaged($0.key.rawValue) }
        for (key, object) in moving {
            others[key] = nil
            count -= 1
            positiveOthers -= 1
            self[key.rawValue] = object
        }
    }

    /// Unregisters the object of `key`; returns it.
    @discardableResult
    mutating func removeValue(forKey key: Int64) -> ManagedObject? {
        let object = self[key]
        if object != nil {
            self[key] = nil
        }
        return object
    }

    /// Makes room in the pages for keys up to `key`, ahead of registering `count` objects.
    mutating func reserveCapacity(forKeysUpTo key: Int64, adding count: Int) {
        guard key > 0, key < Self.pagedKeyLimit, !isPaged(key) else { return }
        extendPages(toCover: key, adding: count)
    }

    /// The registered objects, in no particular order.
    var values: [ManagedObject] {
        var objects: [ManagedObject] = []
        objects.reserveCapacity(count)
        for (_, object) in self {
            objects.append(object)
        }
        return objects
    }

    /// Unregisters every object for which `isReleasable` is true and the map holds the only
    /// reference (it is referenced nowhere else: the test needs the map's own reference, so the
    /// object is never copied out first); returns how many it released.
    mutating func releaseUnreferenced(where isReleasable: (ManagedObject) -> Bool) -> Int {
        var released = 0
        for pageIndex in pages.indices where pages[pageIndex] != nil {
            if !isKnownUniquelyReferenced(&pages[pageIndex]) {
                pages[pageIndex] = pages[pageIndex]!.copy()
            }
            let page = pages[pageIndex]!
            for slot in 0..<Self.pageSize where page.slots[slot] != nil {
                if isKnownUniquelyReferenced(&page.slots[slot]), isReleasable(page.slots[slot]!) {
                    page.slots[slot] = nil
                    page.count -= 1
                    released += 1
                }
            }
            if page.count == 0 {
                pages[pageIndex] = nil
            }
        }
        if !others.isEmpty {
            var index = others.startIndex
            var releasedKeys: [ObjectKey] = []
            while index != others.endIndex {
                if isKnownUniquelyReferenced(&others.values[index]), isReleasable(others.values[index]) {
                    releasedKeys.append(others.keys[index])
                }
                others.formIndex(after: &index)
            }
            for key in releasedKeys {
                others[key] = nil
                positiveOthers -= key.rawValue > 0 ? 1 : 0
            }
            released += releasedKeys.count
        }
        count -= released
        return released
    }

    /// Unregisters the object of `key` if `isReleasable` is true of it and the map holds the
    /// only reference to it; returns whether it did.
    mutating func releaseIfUnreferenced(key: Int64, where isReleasable: (ManagedObject) -> Bool) -> Bool {
        guard isPaged(key) else {
            guard let index = others.index(forKey: ObjectKey(key)),
                isKnownUniquelyReferenced(&others.values[index]), isReleasable(others.values[index])
            else { return false }
            others.remove(at: index)
            count -= 1
            positiveOthers -= key > 0 ? 1 : 0
            return true
        }
        let pageIndex = Int(key >> Self.pageShift)
        let slot = Int(key) & (Self.pageSize - 1)
        guard pages[pageIndex] != nil else { return false }
        if !isKnownUniquelyReferenced(&pages[pageIndex]) {
            pages[pageIndex] = pages[pageIndex]!.copy()
        }
        let page = pages[pageIndex]!
        guard page.slots[slot] != nil, isKnownUniquelyReferenced(&page.slots[slot]), isReleasable(page.slots[slot]!)
        else { return false }
        page.slots[slot] = nil
        page.count -= 1
        count -= 1
        if page.count == 0 {
            pages[pageIndex] = nil
        }
        return true
    }

    func makeIterator() -> Iterator {
        Iterator(pages: pages, others: others.makeIterator())
    }

    /// The registered objects and their keys: the paged ones in key order, then the others.
    struct Iterator: IteratorProtocol {
        let pages: [Page?]
        var pageIndex = 0
        var slot = 0
        var others: [ObjectKey: ManagedObject].Iterator

        init(pages: [Page?], others: [ObjectKey: ManagedObject].Iterator) {
            self.pages = pages
            self.others = others
        }

        mutating func next() -> (key: Int64, value: ManagedObject)? {
            while pageIndex < pages.count {
                if let page = pages[pageIndex] {
                    while slot < IdentityMap.pageSize {
                        defer { slot += 1 }
                        if let object = page.slots[slot] {
                            return (Int64(pageIndex << IdentityMap.pageShift | slot), object)
                        }
                    }
                }
                pageIndex += 1
                slot = 0
            }
            return others.next().map { ($0.key.rawValue, $0.value) }
        }
    }

    /// One page: the objects of 64 consecutive keys.
    final class Page {
        let slots: UnsafeMutablePointer<ManagedObject?>
        var count = 0

        init() {
            slots = .allocate(capacity: IdentityMap.pageSize)
            slots.initialize(repeating: nil, count: IdentityMap.pageSize)
        }

        deinit {
            slots.deinitialize(count: IdentityMap.pageSize)
            slots.deallocate()
        }

        func copy() -> Page {
            let copy = Page()
            copy.slots.update(from: slots, count: IdentityMap.pageSize)
            copy.count = count
            return copy
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
