/// The ordered part of a ``ColumnIndex``: the column's integer, floating-point, date and string
/// values with their rows' primary keys, sorted, for range and prefix constraints.
///
/// Entries are kept in chunks of at most `chunkCapacity`, each sorted and every one before the
/// next, so that a commit inserting or removing an entry moves at most one chunk's entries and
/// copies only that chunk while published versions of the table share the others. Values of
/// other types (and `nil`) are not kept: a range never matches them.
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

    static let chunkCapacity = 512

    /// Sorted by value then key; no chunk empty, none above `chunkCapacity`.
    private var chunks: [[Entry]] = []
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
            return left.utf8.lexicographicallyPrecedes(right.utf8)
        default:
            return rank(lhs) < rank(rhs)
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
    init(_ entries: [Entry]) {
        let sorted = entries.filter { Self.isOrdered($0.value) }.sorted(by: Self.precedes)
        nonASCIIStrings = sorted.reduce(0) { $0 + (Self.isNonASCIIString($1.value) ? 1 : 0) }
        nanValues = sorted.reduce(0) { $0 + (Self.isNaN($1.value) ? 1 : 0) }
        count = sorted.count
        var start = 0
        while start < sorted.count {
            // Chunks three-quarters full leave room for inserts.
            let end = Swift.min(start + Self.chunkCapacity * 3 / 4, sorted.count)
            chunks.append(Array(sorted[start..<end]))
            start = end
        }
    }

    /// The number of entries: kept, not summed over the chunks (a page read from the index asks
    /// for it, and a sum reads every chunk: its time grew with the store).
    private(set) var count = 0

    /// The index of the first chunk whose last entry does not precede `entry` (`chunks.count`
    /// when every one does).
    private func chunk(for entry: Entry) -> Int {
        var low = 0
        var high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if Self.precedes(chunks[middle][chunks[middle].count - 1], entry) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
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
        guard !chunks.isEmpty else {
            chunks = [[entry]]
            return
        }
        let index = Swift.min(chunk(for: entry), chunks.count - 1)
        let position = Self.firstPosition(in: chunks[index]) { !Self.precedes($0, entry) }
        chunks[index].insert(entry, at: position)
        if chunks[index].count > Self.chunkCapacity {
            let upper = Array(chunks[index][(Self.chunkCapacity / 2)...])
            chunks[index].removeLast(upper.count)
            chunks.insert(upper, at: index + 1)
        }
    }

    mutating func remove(_ value: StoredValue, _ key: Int64) {
        guard Self.isOrdered(value) else { return }
        let entry = Entry(value: value, key: key)
        let index = chunk(for: entry)
        guard index < chunks.count else { return }
        let position = Self.firstPosition(in: chunks[index]) { !Self.precedes($0, entry) }
        guard position < chunks[index].count, chunks[index][position].key == key,
            !Self.precedes(entry, chunks[index][position])
        else { return }
        chunks[index].remove(at: position)
        count -= 1
        nonASCIIStrings -= Self.isNonASCIIString(value) ? 1 : 0
        nanValues -= Self.isNaN(value) ? 1 : 0
        if chunks[index].isEmpty {
            chunks.remove(at: index)
        }
    }

    /// The primary keys of the entries from the first whose value does not precede `lower`
    /// (from the first entry when `nil`) while `continues` holds for the value, in index order.
    func keys(from lower: StoredValue?, while continues: (StoredValue) -> Bool) -> [Int64] {
        var chunkIndex = 0
        var position = 0
        if let lower {
            // Every entry of `lower`'s value, whatever its key: from the first not preceding it.
            var low = 0
            var high = chunks.count
            while low < high {
                let middle = (low + high) / 2
                if Self.precedes(chunks[middle][chunks[middle].count - 1].value, lower) {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            chunkIndex = low
            if chunkIndex < chunks.count {
                position = Self.firstPosition(in: chunks[chunkIndex]) { !Self.precedes($0.value, lower) }
            }
        }
        var keys: [Int64] = []
        while chunkIndex < chunks.count {
            let chunk = chunks[chunkIndex]
            while position < chunk.count {
                guard continues(chunk[position].value) else { return keys }
                keys.append(chunk[position].key)
                position += 1
            }
            chunkIndex += 1
            position = 0
        }
        return keys
    }

    /// Calls `body` with each entry in index order — or from the last, when `descending` —
    /// until it returns `false`.
    func forEachEntry(descending: Bool, _ body: (Entry) throws -> Bool) rethrows {
        if descending {
            for chunk in chunks.reversed() {
                for entry in chunk.reversed() {
                    guard try body(entry) else { return }
                }
            }
        } else {
            for chunk in chunks {
                for entry in chunk {
                    guard try body(entry) else { return }
                }
            }
        }
    }

    /// Every entry, in order (for tests).
    var entries: [Entry] {
        chunks.flatMap { $0 }
    }
}
