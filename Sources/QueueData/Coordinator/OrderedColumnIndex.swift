import Foundation

/// The ordered part of a ``ColumnIndex``: the column's integer, floating-point, date and string
/// values with their rows' primary keys, sorted, for range and prefix constraints.
///
/// Entries are kept in chunks of at most `chunkCapacity` (128), each sorted and every one before
/// the next, and the chunks in groups of at most `groupCapacity` (256), so that a commit
/// inserting or removing an entry moves at most one chunk's entries and copies only that chunk,
/// its group and the list of groups while published versions of the table share the others:
/// about 128 + 256 + n / 24,000 references for n entries, where one list of 512-entry chunks
/// copied n / 384 (at 10 million rows, 26,000 references on every commit that changed the
/// column). Values of other types (and `nil`) are not kept: a range never matches them.
///
/// The order is Swift's `<` for numbers and dates, with a NaN after every number (Swift's `<`
/// leaves NaN unordered, which no sorted array can hold), and the order of their UTF-8 bytes for
/// strings: Swift's `<` on strings is not a consistent order on Linux once they mix precomposed
/// and decomposed characters ("aéa" and "ae\u{301}" are unequal, yet neither compares below
/// the other), and a sorted array needs one. On ASCII strings the two orders agree;
/// ``nonASCIIStrings`` says whether the index holds others. The rows a lookup finds are
/// candidates, which the fetch checks against the constraint itself.
struct OrderedColumnIndex: Sendable {
    /// One value and the primary key of its row.
    struct Entry: Sendable {
        var value: StoredValue
        var key: Int64
    }

    /// Entries per chunk, and chunks per group, at most (smaller in tests, to make many).
    let chunkCapacity: Int
    let groupCapacity: Int

    /// Sorted by value then key; no chunk or group empty, none above its capacity.
    private var groups: [[[Entry]]] = []
    /// How many of the entries are strings with a character beyond ASCII.
    private(set) var nonASCIIStrings = 0
    /// How many of the entries are NaNs (a `Double`, or a `Date` whose interval is NaN): kept
    /// after every number here, but unordered by Swift's `<`.
    private(set) var nanValues = 0

    /// Whether `value` is a NaN double or a date whose interval is NaN.
    static func isNaN(_ value: StoredValue) -> Bool {
        switch value {
        case .double(let value): return value.isNaN
        case .date(let date): return date.timeIntervalSinceReferenceDate.isNaN
        default: return false
        }
    }

    /// Whether `value` is a string with a character beyond ASCII.
    static func isNonASCIIString(_ value: StoredValue) -> Bool {
        guard case .string(let string) = value else { return false }
        return !string.utf8.allSatisfy { $0 < 0x80 }
    }

    /// Whether the index keeps `value`.
    static func isOrdered(_ value: StoredValue) -> Bool {
        switch value {
        case .integer, .double, .date, .string: return true
        default: return false
        }
    }

    /// Whether `lhs` comes before `rhs` in the index's order (values of one column are of one
    /// kind; a value of another kind, which a constraint on a column never holds, sorts by kind).
    static func precedes(_ lhs: StoredValue, _ rhs: StoredValue) -> Bool {
        switch (lhs, rhs) {
        case (.integer(let left), .integer(let right)):
            return left < right
        case (.double(let left), .double(let right)):
            return precedes(left, right)
        case (.date(let left), .date(let right)):
            return precedes(left.timeIntervalSinceReferenceDate, right.timeIntervalSinceReferenceDate)
        case (.string(let left), .string(let right)):
            return bytesPrecede(left, right)
        default:
            return rank(lhs) < rank(rhs)
        }
    }

    /// Whether the UTF-8 bytes of `lhs` precede those of `rhs` (as `utf8.lexicographicallyPrecedes`
    /// says, with one `memcmp` over the strings' contiguous bytes).
    static func bytesPrecede(_ lhs: String, _ rhs: String) -> Bool {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { left in
            rhs.withUTF8 { right in
                let common = Swift.min(left.count, right.count)
                let order = common == 0 ? 0 : memcmp(left.baseAddress!, right.baseAddress!, common)
                return order < 0 || (order == 0 && left.count < right.count)
            }
        }
    }

    /// Swift's `<`, with NaN after every number.
    private static func precedes(_ lhs: Double, _ rhs: Double) -> Bool {
        if lhs.isNaN {
            return false
        }
        return rhs.isNaN || lhs < rhs
    }

    private static func rank(_ value: StoredValue) -> Int {
        switch value {
        case .integer: return 0
        case .double: return 1
        case .date: return 2
        case .string: return 3
        default: return 4
        }
    }

    private static func precedes(_ lhs: Entry, _ rhs: Entry) -> Bool {
        if precedes(lhs.value, rhs.value) {
            return true
        }
        return !precedes(rhs.value, lhs.value) && lhs.key < rhs.key
    }

    /// Builds the index of `entries` at once (a sort instead of an insertion each).
    init(_ entries: [Entry], chunkCapacity: Int = 128, groupCapacity: Int = 256) {
        precondition(chunkCapacity >= 2 && groupCapacity >= 2)
        self.chunkCapacity = chunkCapacity
        self.groupCapacity = groupCapacity
        let sorted = entries.filter { Self.isOrdered($0.value) }.sorted(by: Self.precedes)
        nonASCIIStrings = sorted.reduce(0) { $0 + (Self.isNonASCIIString($1.value) ? 1 : 0) }
        nanValues = sorted.reduce(0) { $0 + (Self.isNaN($1.value) ? 1 : 0) }
        count = sorted.count
        // Chunks and groups three-quarters full leave room for inserts.
        let chunkFill = Swift.max(1, chunkCapacity * 3 / 4)
        let groupFill = Swift.max(1, groupCapacity * 3 / 4)
        var start = 0
        while start < sorted.count {
            if groups.isEmpty || groups[groups.count - 1].count == groupFill {
                groups.append([])
            }
            let end = Swift.min(start + chunkFill, sorted.count)
            groups[groups.count - 1].append(Array(sorted[start..<end]))
            start = end
        }
    }

    /// The number of entries: kept, not summed over the chunks (a page read from the index asks
    /// for it, and a sum reads every chunk: its time grew with the store).
    private(set) var count = 0

    /// The last entry of a chunk, of a group.
    private static func last(_ chunk: [Entry]) -> Entry { chunk[chunk.count - 1] }
    private static func last(_ group: [[Entry]]) -> Entry { last(group[group.count - 1]) }

    /// The index of the first element of `elements` whose last entry does not precede the
    /// wanted place (`isBefore` says which do), `elements.count` when every one does.
    private static func first<Element>(of elements: [Element], notBefore isBefore: (Element) -> Bool) -> Int {
        var low = 0
        var high = elements.count
        while low < high {
            let middle = (low + high) / 2
            if isBefore(elements[middle]) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    /// The group and chunk of the first chunk whose last entry does not precede `entry`, or
    /// `nil` when every one does.
    private func chunk(for entry: Entry) -> (group: Int, chunk: Int)? {
        let group = Self.first(of: groups) { Self.precedes(Self.last($0), entry) }
        guard group < groups.count else { return nil }
        return (group, Self.first(of: groups[group]) { Self.precedes(Self.last($0), entry) })
    }

    /// The first position in `chunk` whose entry satisfies `isAfter`, entries satisfying it
    /// coming after those that do not.
    private static func firstPosition(in chunk: [Entry], where isAfter: (Entry) -> Bool) -> Int {
        var low = 0
        var high = chunk.count
        while low < high {
            let middle = (low + high) / 2
            if isAfter(chunk[middle]) {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }

    mutating func insert(_ value: StoredValue, _ key: Int64) {
        guard Self.isOrdered(value) else { return }
        nonASCIIStrings += Self.isNonASCIIString(value) ? 1 : 0
        nanValues += Self.isNaN(value) ? 1 : 0
        count += 1
        let entry = Entry(value: value, key: key)
        guard !groups.isEmpty else {
            groups = [[[entry]]]
            return
        }
        // After every entry: at the end of the last chunk.
        let (group, chunk) = self.chunk(for: entry) ?? (groups.count - 1, groups[groups.count - 1].count - 1)
        let position = Self.firstPosition(in: groups[group][chunk]) { !Self.precedes($0, entry) }
        groups[group][chunk].insert(entry, at: position)
        guard groups[group][chunk].count > chunkCapacity else { return }
        let upper = Array(groups[group][chunk][(chunkCapacity / 2)...])
        groups[group][chunk].removeLast(upper.count)
        groups[group].insert(upper, at: chunk + 1)
        guard groups[group].count > groupCapacity else { return }
        let upperChunks = Array(groups[group][(groupCapacity / 2)...])
        groups[group].removeLast(upperChunks.count)
        groups.insert(upperChunks, at: group + 1)
    }

    mutating func remove(_ value: StoredValue, _ key: Int64) {
        guard Self.isOrdered(value) else { return }
        let entry = Entry(value: value, key: key)
        guard let (group, chunk) = self.chunk(for: entry) else { return }
        let position = Self.firstPosition(in: groups[group][chunk]) { !Self.precedes($0, entry) }
        guard position < groups[group][chunk].count, groups[group][chunk][position].key == key,
            !Self.precedes(entry, groups[group][chunk][position])
        else { return }
        groups[group][chunk].remove(at: position)
        count -= 1
        nonASCIIStrings -= Self.isNonASCIIString(value) ? 1 : 0
        nanValues -= Self.isNaN(value) ? 1 : 0
        if groups[group][chunk].isEmpty {
            groups[group].remove(at: chunk)
            if groups[group].isEmpty {
                groups.remove(at: group)
            }
        }
    }

    /// The primary keys of the entries from the first whose value does not precede `lower`
    /// (from the first entry when `nil`) while `continues` holds for the value, in index order.
    func keys(from lower: StoredValue?, while continues: (StoredValue) -> Bool) -> [Int64] {
        var group = 0
        var chunk = 0
        var position = 0
        if let lower {
            // Every entry of `lower`'s value, whatever its key: from the first not preceding it.
            group = Self.first(of: groups) { Self.precedes(Self.last($0).value, lower) }
            if group < groups.count {
                chunk = Self.first(of: groups[group]) { Self.precedes(Self.last($0).value, lower) }
                position = Self.firstPosition(in: groups[group][chunk]) { !Self.precedes($0.value, lower) }
            }
        }
        var keys: [Int64] = []
        while group < groups.count {
            while chunk < groups[group].count {
                let entries = groups[group][chunk]
                while position < entries.count {
                    guard continues(entries[position].value) else { return keys }
                    keys.append(entries[position].key)
                    position += 1
                }
                chunk += 1
                position = 0
            }
            group += 1
            chunk = 0
        }
        return keys
    }

    /// Calls `body` with each entry in index order — or from the last, when `descending` —
    /// until it returns `false`.
    func forEachEntry(descending: Bool, _ body: (Entry) throws -> Bool) rethrows {
        if descending {
            for group in groups.reversed() {
                for chunk in group.reversed() {
                    for entry in chunk.reversed() {
                        guard try body(entry) else { return }
                    }
                }
            }
        } else {
            for group in groups {
                for chunk in group {
                    for entry in chunk {
                        guard try body(entry) else { return }
                    }
                }
            }
        }
    }

    /// Every entry, in order (for tests).
    var entries: [Entry] {
        groups.flatMap { $0.flatMap { $0 } }
    }

    /// How many chunks and groups hold the entries (for tests).
    var shape: (chunks: Int, groups: Int) {
        (groups.reduce(0) { $0 + $1.count }, groups.count)
    }
}
