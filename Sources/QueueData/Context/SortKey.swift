import Foundation

/// One object's value for one sort descriptor, extracted once so that sorting compares
/// values instead of applying key paths (and Foundation's generic comparison, ≈ 1 µs) at
/// every comparison.
///
/// Only values whose `SortDescriptor` ordering is plain `<` are extracted: descriptors with
/// a string comparator (localized orderings), and values of other types (or `nil`), make the
/// whole sort fall back to `SortDescriptor.compare`, so results never differ.
enum SortKey: Sendable {
    case integer(Int64)
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    case date(Date)
    case decimal(Decimal)
    case uuid(UUID)
    /// An attribute sort's `nil` (``AttributeSort``): before every value, as `SortDescriptor`
    /// orders optionals. Never extracted through a key path (those fall back instead).
    case null

    /// The key of a stored value of an ordered attribute type; `nil` for the others.
    init?(stored value: StoredValue) {
        switch value {
        case .null: self = .null
        case .integer(let value): self = .integer(value)
        case .double(let value): self = .double(value)
        case .string(let value): self = .string(value)
        case .date(let value): self = .date(value)
        case .decimal(let value): self = .decimal(value)
        case .uuid(let value): self = .uuid(value)
        case .bool, .data, .url: return nil
        }
    }

    /// The key an ``AttributeSort`` orders `value` by: its ``init(stored:)`` key, but a NaN (a
    /// `Double`, or a `Date` whose interval is NaN) sorts as `nil` does. Swift's `<` leaves NaN
    /// unordered, and one unordered key makes a sort's comparisons inconsistent, which can leave
    /// the other values out of order too; SQLite, under Core Data, stores a NaN as NULL.
    init?(attributeValue value: StoredValue) {
        switch value {
        case .double(let double) where double.isNaN: self = .null
        case .date(let date) where date.timeIntervalSinceReferenceDate.isNaN: self = .null
        default: self.init(stored: value)
        }
    }

    init?(_ value: Any) {
        switch value {
        case let value as String: self = .string(value)
        case let value as Int: self = .integer(Int64(value))
        case let value as Int64: self = .integer(value)
        case let value as Int32: self = .integer(Int64(value))
        case let value as Int16: self = .integer(Int64(value))
        case let value as Int8: self = .integer(Int64(value))
        case let value as UInt: self = .unsigned(UInt64(value))
        case let value as UInt64: self = .unsigned(value)
        case let value as UInt32: self = .unsigned(UInt64(value))
        case let value as UInt16: self = .unsigned(UInt64(value))
        case let value as UInt8: self = .unsigned(UInt64(value))
        case let value as Double: self = .double(value)
        case let value as Float: self = .double(Double(value))
        case let value as Date: self = .date(value)
        case let value as Decimal: self = .decimal(value)
        case let value as UUID: self = .uuid(value)
        default: return nil
        }
    }

    /// `SortDescriptor`'s comparison of Comparable values: ascending if `<`, descending if
    /// `>`, otherwise the same.
    static func compare(_ lhs: SortKey, _ rhs: SortKey) -> ComparisonResult {
        switch (lhs, rhs) {
        case (.integer(let a), .integer(let b)): return order(a, b)
        case (.unsigned(let a), .unsigned(let b)): return order(a, b)
        case (.double(let a), .double(let b)): return order(a, b)
        case (.string(let a), .string(let b)): return order(a, b)
        case (.date(let a), .date(let b)): return order(a, b)
        case (.decimal(let a), .decimal(let b)): return order(a, b)
        case (.uuid(let a), .uuid(let b)): return order(a, b)
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        default: return .orderedSame
        }
    }

    @inline(__always)
    private static func order<Value: Comparable>(_ a: Value, _ b: Value) -> ComparisonResult {
        if a < b { return .orderedAscending }
        if a > b { return .orderedDescending }
        return .orderedSame
    }
}

extension SortKey {
    /// The order of `count` elements by `descriptors`, as positions, stable (ties keep their
    /// order), with each element's keys extracted once; `nil` when a descriptor or a value
    /// does not allow extraction (then sort with `SortDescriptor.compare`).
    ///
    /// `element(i)` may return the same (reloaded) instance for every `i`: keys are read
    /// before the next call.
    ///
    /// With a `prefix`, only the first `prefix` positions of that order are returned (fewer
    /// when there are fewer elements): found without sorting the others when they are many.
    static func order<Element>(
        count: Int,
        by descriptors: [SortDescriptor<Element>],
        prefix: Int? = nil,
        element: (Int) throws -> Element
    ) rethrows -> [Int]? {
        guard let extractors = extractors(for: descriptors) else { return nil }
        return try order(
            count: count, extractors: extractors, reversed: descriptors.map { $0.order == .reverse }, prefix: prefix,
            element: element)
    }

    /// How to read the keys of `descriptors`, or `nil` when one cannot be extracted.
    static func extractors<Element>(for descriptors: [SortDescriptor<Element>]) -> [(Element) -> SortKey?]? {
        var extractors: [(Element) -> SortKey?] = []
        for descriptor in descriptors {
            guard descriptor.stringComparator == nil, let keyPath = descriptor.keyPath else { return nil }
            extractors.append(extractor(keyPath))
        }
        return extractors
    }

    /// `order(count:by:prefix:element:)` with the keys read by `extractors`, each column
    /// descending where `reversed` says so.
    static func order<Element>(
        count: Int,
        extractors: [(Element) -> SortKey?],
        reversed: [Bool],
        prefix: Int? = nil,
        element: (Int) throws -> Element
    ) rethrows -> [Int]? {
        // One flat array: the keys of element `i` are at `i * columns ..< (i + 1) * columns`.
        let columns = extractors.count
        var keys: [SortKey] = []
        keys.reserveCapacity(count * columns)
        for index in 0..<count {
            let value = try element(index)
            for extract in extractors {
                guard let key = extract(value) else { return nil }
                keys.append(key)
            }
        }
        return order(keys: keys, columns: columns, reversed: reversed, prefix: prefix)
    }

    /// The first `prefix` positions of `0..<count` in the strict order `precedes`, in order:
    /// a heap of the `prefix` best kept while the others go by (O(count · log prefix)), when
    /// `prefix` is small beside `count`; `nil` otherwise (sort them all).
    static func leading(_ prefix: Int?, of count: Int, by precedes: (Int, Int) -> Bool) -> [Int]? {
        guard let prefix, prefix >= 0, prefix <= count / 8 else { return nil }
        guard prefix > 0 else { return [] }
        // A max-heap: the position that comes last among those kept is at the root.
        var heap: [Int] = []
        heap.reserveCapacity(prefix)
        func siftDown(_ start: Int) {
            var parent = start
            while true {
                let left = parent * 2 + 1
                guard left < heap.count else { return }
                var largest = left
                if left + 1 < heap.count, precedes(heap[left], heap[left + 1]) {
                    largest = left + 1
                }
                guard precedes(heap[parent], heap[largest]) else { return }
                heap.swapAt(parent, largest)
                parent = largest
            }
        }
        for position in 0..<count {
            if heap.count < prefix {
                heap.append(position)
                var child = heap.count - 1
                while child > 0, precedes(heap[(child - 1) / 2], heap[child]) {
                    heap.swapAt(child, (child - 1) / 2)
                    child = (child - 1) / 2
                }
            } else if precedes(position, heap[0]) {
                heap[0] = position
                siftDown(0)
            }
        }
        heap.sort(by: precedes)
        return heap
    }

    /// How to read `keyPath`'s sort key: through the key path with its value type (no `Any` in
    /// between) for every non-optional type a key takes, through `init?(_:)` for the others
    /// (optionals).
    private static func extractor<Element>(_ keyPath: PartialKeyPath<Element>) -> (Element) -> SortKey? {
        switch keyPath {
        case let path as KeyPath<Element, String>: return { .string($0[keyPath: path]) }
        case let path as KeyPath<Element, Int>: return { .integer(Int64($0[keyPath: path])) }
        case let path as KeyPath<Element, Int64>: return { .integer($0[keyPath: path]) }
        case let path as KeyPath<Element, Double>: return { .double($0[keyPath: path]) }
        case let path as KeyPath<Element, Date>: return { .date($0[keyPath: path]) }
        case let path as KeyPath<Element, Int32>: return { .integer(Int64($0[keyPath: path])) }
        case let path as KeyPath<Element, Int16>: return { .integer(Int64($0[keyPath: path])) }
        case let path as KeyPath<Element, Int8>: return { .integer(Int64($0[keyPath: path])) }
        case let path as KeyPath<Element, UInt>: return { .unsigned(UInt64($0[keyPath: path])) }
        case let path as KeyPath<Element, UInt64>: return { .unsigned($0[keyPath: path]) }
        case let path as KeyPath<Element, UInt32>: return { .unsigned(UInt64($0[keyPath: path])) }
        case let path as KeyPath<Element, UInt16>: return { .unsigned(UInt64($0[keyPath: path])) }
        case let path as KeyPath<Element, UInt8>: return { .unsigned(UInt64($0[keyPath: path])) }
        case let path as KeyPath<Element, Float>: return { .double(Double($0[keyPath: path])) }
        case let path as KeyPath<Element, Decimal>: return { .decimal($0[keyPath: path]) }
        case let path as KeyPath<Element, UUID>: return { .uuid($0[keyPath: path]) }
        default: return { SortKey($0[keyPath: keyPath]) }
        }
    }

    /// The stable order of the elements whose keys `keys` holds, `columns` per element, each
    /// column ascending or, where `reversed` says so, descending.
    static func order(keys: [SortKey], columns: Int, reversed: [Bool], prefix: Int? = nil) -> [Int] {
        if columns == 1, let order = orderOfOneColumn(keys, descending: reversed[0], prefix: prefix) {
            return order
        }
        let count = columns == 0 ? 0 : keys.count / columns
        let precedes = { (left: Int, right: Int) -> Bool in
            for column in 0..<columns {
                var result = SortKey.compare(keys[left * columns + column], keys[right * columns + column])
                if reversed[column] {
                    result =
                        result == .orderedAscending
                        ? .orderedDescending : result == .orderedDescending ? .orderedAscending : .orderedSame
                }
                if result != .orderedSame {
                    return result == .orderedAscending
                }
            }
            return left < right
        }
        if let leading = leading(prefix, of: count, by: precedes) {
            return leading
        }
        var order = [Int](0..<count)
        order.sort(by: precedes)
        return order
    }

    /// `order(keys:columns:reversed:)` for one column of keys of one case: the same comparisons
    /// on the unwrapped values, without copying a `SortKey` per comparison.
    private static func orderOfOneColumn(_ keys: [SortKey], descending: Bool, prefix: Int?) -> [Int]? {
        /// The order of the values `unwrap` takes out of every key; `nil` if one is of another case.
        func order<Value: Comparable>(_ unwrap: (SortKey) -> Value?) -> [Int]? {
            var values: [Value] = []
            values.reserveCapacity(keys.count)
            for key in keys {
                guard let value = unwrap(key) else { return nil }
                values.append(value)
            }
            return SortKey.order(of: values, descending: descending, prefix: prefix)
        }
        switch keys.first {
        case .string:
            if let packed = packedASCII(keys) {
                return SortKey.order(of: packed, descending: descending, prefix: prefix)
            }
            return order { if case .string(let value) = $0 { value } else { nil } }
        case .integer: return order { if case .integer(let value) = $0 { value } else { nil } }
        case .double: return order { if case .double(let value) = $0 { value } else { nil } }
        case .date: return order { if case .date(let value) = $0 { value } else { nil } }
        case .unsigned: return order { if case .unsigned(let value) = $0 { value } else { nil } }
        case .decimal: return order { if case .decimal(let value) = $0 { value } else { nil } }
        case .uuid: return order { if case .uuid(let value) = $0 { value } else { nil } }
        default: return nil
        }
    }

    /// The string keys as `PackedASCII` values, if every key is a string of at most 16 ASCII
    /// bytes; `nil` otherwise.
    private static func packedASCII(_ keys: [SortKey]) -> [PackedASCII]? {
        var packed: [PackedASCII] = []
        packed.reserveCapacity(keys.count)
        for key in keys {
            guard case .string(var string) = key, let value = PackedASCII(&string) else { return nil }
            packed.append(value)
        }
        return packed
    }

    /// The stable order of `values`: what `compare` and the tie-break by position decide.
    private static func order<Value: Comparable>(of values: [Value], descending: Bool, prefix: Int?) -> [Int] {
        let leading = values.withUnsafeBufferPointer { values in
            SortKey.leading(prefix, of: values.count) { left, right in
                let (a, b) = (values[left], values[right])
                if descending ? a > b : a < b { return true }
                if descending ? a < b : a > b { return false }
                return left < right
            }
        }
        if let leading {
            return leading
        }
        var order = [Int](0..<values.count)
        values.withUnsafeBufferPointer { values in
            if descending {
                order.sort { left, right in
                    let (a, b) = (values[left], values[right])
                    if a > b { return true }
                    if a < b { return false }
                    return left < right
                }
            } else {
                order.sort { left, right in
                    let (a, b) = (values[left], values[right])
                    if a < b { return true }
                    if a > b { return false }
                    return left < right
                }
            }
        }
        return order
    }
}

extension Array {
    /// `sort(using:)` with ties broken by the original order.
    mutating func sortStably(using descriptors: [SortDescriptor<Element>]) {
        let indexed = [(offset: Int, element: Element)](enumerated())
        let sorted = indexed.sorted { left, right in
            for descriptor in descriptors {
                let result = descriptor.compare(left.element, right.element)
                if result != .orderedSame {
                    return result == .orderedAscending
                }
            }
            return left.offset < right.offset
        }
        self = sorted.map(\.element)
    }
}

/// A string of at most 16 ASCII bytes as two big-endian words (zero-padded) and its length:
/// ordered as the string is (Swift orders strings by their Unicode scalars, which for ASCII are
/// the bytes; a string that is a prefix of another sorts first, which the zero padding and the
/// length decide), with two integer comparisons instead of a string comparison.
struct PackedASCII: Comparable {
    let high: UInt64
    let low: UInt64
    let count: UInt8

    /// `string` packed, or `nil` if it is longer than 16 bytes or not ASCII.
    ///
    /// The bytes are copied into two zeroed words at once, checked for ASCII with one mask, and
    /// byte-swapped so that the first byte is the most significant (a loop over the bytes cost
    /// ≈ 480 instructions for a 12-byte string).
    init?(_ string: inout String) {
        guard
            let (high, low, count) = string.withUTF8({ bytes -> (UInt64, UInt64, Int)? in
                guard bytes.count <= 16 else { return nil }
                var words: (UInt64, UInt64) = (0, 0)
                if let base = bytes.baseAddress {
                    Swift.withUnsafeMutableBytes(of: &words) {
                        $0.baseAddress!.copyMemory(from: base, byteCount: bytes.count)
                    }
                }
                guard (words.0 | words.1) & 0x8080_8080_8080_8080 == 0 else { return nil }
                return (UInt64(bigEndian: words.0), UInt64(bigEndian: words.1), bytes.count)
            })
        else { return nil }
        self.high = high
        self.low = low
        self.count = UInt8(count)
    }

    static func < (lhs: PackedASCII, rhs: PackedASCII) -> Bool {
        if lhs.high != rhs.high { return lhs.high < rhs.high }
        if lhs.low != rhs.low { return lhs.low < rhs.low }
        return lhs.count < rhs.count
    }
}
