/// A context's registered objects of one entity, by primary key (temporary keys are negative).
///
/// Dense: primary keys are handed out in order from 1, so the objects of positive keys live in
/// pages of 64 slots indexed by `key >> 6` — a look-up is two loads, a registration a store,
/// and an object takes 8 bytes of map instead of a hashed dictionary entry (≈ 40 bytes). A page
/// is allocated when a key in its range is first registered, and freed when its last object
/// goes. The list of pages covers the keys below some limit, and grows only while it stays
/// within four pages per registered object (or 1,024 pages), and then by half its length at
/// least (not a page at a time as objects register one by one): objects of keys beyond it — a few
/// objects of a large store, keys at or above 2^30 — live in a dictionary whose keys hash with
/// a seeded 64-bit mix instead of SipHash, and move into pages when the list grows over them.
/// Every positive key has one place: the pages below the limit, the dictionary above.
///
/// Temporary keys (`Int64.min + n`, with `n` counted up for the whole process) are paged too,
/// in a second list whose first page is where the first of them registered since the list was
/// last empty, and which grows upwards under the same rule: the objects a context inserts go
/// into pages, not into the dictionary, and a save moves them from one list to the other. A
/// temporary key that was registered in the dictionary stays there (a later look-up of a paged
/// key that is not in its page checks the dictionary), so growing never moves objects; a key
/// is never in both.
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
    /// The pages of temporary keys: `temporaryPages[i]` holds the keys `Int64.min + n` for the
    /// `n` of page number `firstTemporaryPage + i` (`n >> pageShift`).
    private var temporaryPages: [Page?] = []
    private var firstTemporaryPage = 0
    /// How many objects the temporary pages hold.
    private var temporaryPaged = 0
    /// The objects whose keys are not paged.
    private var others: [ObjectKey: ManagedObject] = [:]
    /// How many keys of `others` are positive (the ones the pages may grow over: the others are
    /// temporary keys, or 0).
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
            if isPaged(key) {
                guard let page = pages[Int(key >> Self.pageShift)] else { return nil }
                return page.slots[Int(key) & (Self.pageSize - 1)]
            }
            if key < 0 {
                let (index, slot) = temporaryPlace(of: key)
                if index >= 0, index < temporaryPages.count, let page = temporaryPages[index],
                    let object = page.slots[slot]
                {
                    return object
                }
                // Not in its page: it may have been registered before the pages covered it.
                guard others.count != positiveOthers else { return nil }
            }
            return others.isEmpty ? nil : others[ObjectKey(key)]
        }
        set {
            if key < 0 {
                setTemporary(newValue, forKey: key)
                return
            }
            if !isPaged(key), newValue != nil, key > 0, key < Self.pagedKeyLimit {
                extendPages(toCover: key, adding: 1)
            }
            guard isPaged(key) else {
                setOther(newValue, forKey: key)
                return
            }
            count += Self.store(
                newValue, in: &pages, at: Int(key >> Self.pageShift), slot: Int(key) & (Self.pageSize - 1))
        }
    }

    /// The keys from 1 below this are paged (for tests).
    var pagedKeyLimit: Int64 { Int64(pages.count) << Self.pageShift }

    /// Whether `key` is in the pages' range (else in `others`).
    @inline(__always)
    private func isPaged(_ key: Int64) -> Bool {
        key > 0 && key < Int64(pages.count) << Self.pageShift
    }

    /// Where the temporary (negative) `key` goes: its position in `temporaryPages` (outside
    /// `temporaryPages.indices` when the list does not cover it) and its slot in that page.
    @inline(__always)
    private func temporaryPlace(of key: Int64) -> (index: Int, slot: Int) {
        let n = Int(key &- Int64.min)
        return ((n >> Self.pageShift) &- firstTemporaryPage, n & (Self.pageSize - 1))
    }

    /// Registers (or, with `nil`, unregisters) the object of the temporary key `key`: in its
    /// page when the temporary pages cover it or can grow to, otherwise in `others`.
    private mutating func setTemporary(_ newValue: ManagedObject?, forKey key: Int64) {
        var (index, slot) = temporaryPlace(of: key)
        if index < 0 || index >= temporaryPages.count {
            guard newValue != nil, coverTemporaryPage(index) else {
                setOther(newValue, forKey: key)
                return
            }
            (index, slot) = temporaryPlace(of: key)
        }
        // A key registered in `others` before its page was covered stays in one place.
        if others.count != positiveOthers, others.removeValue(forKey: ObjectKey(key)) != nil {
            count -= 1
        }
        let change = Self.store(newValue, in: &temporaryPages, at: index, slot: slot)
        temporaryPaged += change
        count += change
    }

    /// Makes the temporary pages cover the page at `index` (relative to the first), if that
    /// keeps within four pages per object (or 1,024 pages): starting the list there when it
    /// holds no object, or growing it upwards. Returns whether it covers it now.
    private mutating func coverTemporaryPage(_ index: Int) -> Bool {
        if temporaryPaged == 0 {
            firstTemporaryPage &+= index
            temporaryPages.removeAll(keepingCapacity: true)
            temporaryPages.append(nil)
            return true
        }
        let needed = index + 1
        let allowed = Swift.max(1024, 4 * (temporaryPaged + 1))
        guard index >= 0, needed <= allowed,
            let newCount = Self.grownCount(temporaryPages.count, needed: needed, allowed: allowed)
        else { return false }
        temporaryPages.append(contentsOf: repeatElement(nil, count: newCount - temporaryPages.count))
        return true
    }

    /// The new length of a list of `count` pages that must grow to `needed` (at most
    /// `allowed`, the four pages per object): doubled where that is allowed; otherwise as far
    /// as allowed, but only when that is half the list again — or `nil`, leaving the key to
    /// `others`. (While objects are registered one by one, `allowed` creeps up four pages at a
    /// time: growing with it would lengthen the list, and move `others` into it, with almost
    /// every registration.)
    private static func grownCount(_ count: Int, needed: Int, allowed: Int) -> Int? {
        let doubled = Swift.max(needed, count * 2)
        if doubled <= allowed {
            return doubled
        }
        return allowed - count >= Swift.max(1, count / 2) ? allowed : nil
    }

    /// Registers (or unregisters) the object of an unpaged key in `others`.
    private mutating func setOther(_ newValue: ManagedObject?, forKey key: Int64) {
        if let newValue {
            if others.updateValue(newValue, forKey: ObjectKey(key)) == nil {
                count += 1
                positiveOthers += key > 0 ? 1 : 0
            }
        } else if others.removeValue(forKey: ObjectKey(key)) != nil {
            count -= 1
            positiveOthers -= key > 0 ? 1 : 0
        }
    }

    /// Stores `newValue` in `slot` of `pages[index]`: allocating the page for a first object,
    /// copying it first unless it is only referenced here, freeing it when its last object goes.
    /// Returns the change in the number of objects (−1, 0 or 1).
    @inline(__always)
    private static func store(_ newValue: ManagedObject?, in pages: inout [Page?], at index: Int, slot: Int) -> Int {
        guard pages[index] != nil else {
            guard let newValue else { return 0 }
            let page = Page()
            page.slots[slot] = newValue
            page.count = 1
            pages[index] = page
            return 1
        }
        if !isKnownUniquelyReferenced(&pages[index]) {
            pages[index] = pages[index]!.copy()
        }
        // Through the list each time, not a local reference to the page: binding one retained
        // and released the page around every registration.
        let slots = pages[index].unsafelyUnwrapped.slots
        let hadObject = slots[slot] != nil
        slots[slot] = newValue
        let change = (newValue == nil ? 0 : 1) - (hadObject ? 1 : 0)
        pages[index].unsafelyUnwrapped.count += change
        if change < 0, pages[index].unsafelyUnwrapped.count == 0 {
            pages[index] = nil
        }
        return change
    }

    /// Grows the list of pages to cover `key`, if it stays within four pages per object once
    /// `adding` more are registered (or 1,024 pages), and moves the objects of `others` it then
    /// covers into their pages.
    private mutating func extendPages(toCover key: Int64, adding: Int) {
        let needed = Int(key >> Self.pageShift) + 1
        let allowed = Swift.max(1024, 4 * (count + adding))
        guard needed > pages.count, needed <= allowed,
            let newCount = Self.grownCount(pages.count, needed: needed, allowed: allowed)
        else { return }
        let oldLimit = Int64(pages.count) << Self.pageShift
        pages.append(contentsOf: repeatElement(nil, count: newCount - pages.count))
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
        var released = Self.releaseUnreferenced(in: &pages, where: isReleasable)
        if temporaryPaged > 0 {
            let releasedTemporary = Self.releaseUnreferenced(in: &temporaryPages, where: isReleasable)
            temporaryPaged -= releasedTemporary
            released += releasedTemporary
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

    /// `releaseUnreferenced(where:)` over one list of pages; returns how many it released.
    private static func releaseUnreferenced(in pages: inout [Page?], where isReleasable: (ManagedObject) -> Bool) -> Int
    {
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
        return released
    }

    /// Unregisters the object of `key` if `isReleasable` is true of it and the map holds the
    /// only reference to it; returns whether it did.
    mutating func releaseIfUnreferenced(key: Int64, where isReleasable: (ManagedObject) -> Bool) -> Bool {
        if isPaged(key) {
            guard
                Self.releaseIfUnreferenced(
                    in: &pages, at: Int(key >> Self.pageShift), slot: Int(key) & (Self.pageSize - 1),
                    where: isReleasable)
            else { return false }
            count -= 1
            return true
        }
        if key < 0 {
            let (index, slot) = temporaryPlace(of: key)
            if index >= 0, index < temporaryPages.count, temporaryPages[index]?.slots[slot] != nil {
                guard Self.releaseIfUnreferenced(in: &temporaryPages, at: index, slot: slot, where: isReleasable)
                else { return false }
                temporaryPaged -= 1
                count -= 1
                return true
            }
        }
        guard let index = others.index(forKey: ObjectKey(key)),
            isKnownUniquelyReferenced(&others.values[index]), isReleasable(others.values[index])
        else { return false }
        others.remove(at: index)
        count -= 1
        positiveOthers -= key > 0 ? 1 : 0
        return true
    }

    /// `releaseIfUnreferenced(key:where:)` for the object in `slot` of `pages[index]`.
    private static func releaseIfUnreferenced(
        in pages: inout [Page?], at pageIndex: Int, slot: Int, where isReleasable: (ManagedObject) -> Bool
    ) -> Bool {
        guard pages[pageIndex] != nil else { return false }
        if !isKnownUniquelyReferenced(&pages[pageIndex]) {
            pages[pageIndex] = pages[pageIndex]!.copy()
        }
        let page = pages[pageIndex]!
        guard page.slots[slot] != nil, isKnownUniquelyReferenced(&page.slots[slot]), isReleasable(page.slots[slot]!)
        else { return false }
        page.slots[slot] = nil
        page.count -= 1
        if page.count == 0 {
            pages[pageIndex] = nil
        }
        return true
    }

    func makeIterator() -> Iterator {
        Iterator(
            lists: [
                (pages, 0),
                (temporaryPages, Int64.min &+ Int64(firstTemporaryPage << Self.pageShift)),
            ],
            others: others.makeIterator())
    }

    /// The registered objects and their keys: the paged ones in key order (positive keys, then
    /// temporary ones), then the others.
    struct Iterator: IteratorProtocol {
        /// Lists of pages, each with the key of its first page's first slot.
        let lists: [(pages: [Page?], firstKey: Int64)]
        var list = 0
        var pageIndex = 0
        var slot = 0
        var others: [ObjectKey: ManagedObject].Iterator

        init(lists: [(pages: [Page?], firstKey: Int64)], others: [ObjectKey: ManagedObject].Iterator) {
            self.lists = lists
            self.others = others
        }

        mutating func next() -> (key: Int64, value: ManagedObject)? {
            while list < lists.count {
                let pages = lists[list].pages
                while pageIndex < pages.count {
                    if let page = pages[pageIndex] {
                        while slot < IdentityMap.pageSize {
                            defer { slot += 1 }
                            if let object = page.slots[slot] {
                                return (
                                    lists[list].firstKey &+ Int64(pageIndex << IdentityMap.pageShift | slot), object
                                )
                            }
                        }
                    }
                    pageIndex += 1
                    slot = 0
                }
                list += 1
                pageIndex = 0
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
