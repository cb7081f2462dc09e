import Foundation
import Testing

@testable import QueueData

/// Sort keys order as `SortDescriptor` orders their values.
@Suite("Sort keys")
struct SortKeyTests {
    @Test("short ASCII strings packed into words order as the strings do, and others are not packed")
    func packedASCIIOrdersAsStrings() {
        var generator = SeededGenerator(seed: 41)
        // Few letters, NULs and prefixes of each other: many ties and near-ties.
        let alphabet: [Character] = ["\u{0}", "a", "b", "B", " ", "~", "0"]
        func random() -> String {
            String(
                (0..<Int.random(in: 0...17, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
        }
        for _ in 0..<20_000 {
            var lhs = random()
            var rhs =
                Bool.random(using: &generator)
                ? String(lhs.prefix(Int.random(in: 0...lhs.count, using: &generator))) : random()
            if Bool.random(using: &generator) {
                swap(&lhs, &rhs)
            }
            let (left, right) = (lhs, rhs)
            guard let packedLeft = PackedASCII(&lhs), let packedRight = PackedASCII(&rhs) else {
                #expect(left.utf8.count > 16 || right.utf8.count > 16)
                continue
            }
            #expect(
                (packedLeft < packedRight) == (left < right), "\(left.debugDescription) < \(right.debugDescription)")
            #expect((packedLeft == packedRight) == (left == right))
        }
        var accented = "é"
        var long = String(repeating: "a", count: 17)
        #expect(PackedASCII(&accented) == nil)
        #expect(PackedASCII(&long) == nil)
        // A byte beyond ASCII in either word, or in the last place, refuses the string.
        for var string in ["abcdefghij\u{80}", "abcdefgh\u{7F}\u{E9}", "\u{E9}abcdefghijklmn", "abcdefghijklmn\u{E9}"] {
            #expect(PackedASCII(&string) == nil, "\(string.debugDescription)")
        }
        var longest = "abcdefghijklmnop"
        var shorter = "abcdefghijklmno"
        #expect(PackedASCII(&shorter)! < PackedASCII(&longest)!)
    }

    /// The positions of `strings` sorted by Swift's `<` (or `>`), ties by position: the reference.
    static func stringOrder(_ strings: [String], descending: Bool) -> [Int] {
        strings.indices.sorted { left, right in
            if strings[left] != strings[right] {
                return descending ? strings[left] > strings[right] : strings[left] < strings[right]
            }
            return left < right
        }
    }

    @Test(
        "large one-column orders of short ASCII strings, many sharing their first bytes, agree with sorting the strings",
        arguments: [false, true])
    func packedStringOrders(descending: Bool) {
        var generator = SeededGenerator(seed: descending ? 13 : 14)
        for round in 0..<60 {
            // Shared leading parts of every length (down to none, and up to the whole 16 bytes),
            // so that runs of equal leading bits are long, short, or absent; NULs and prefixes.
            let stems = ["", "a", "user_", "user_00", "abcdefghijklmn", "abcdefghijklmnop", "\u{0}", "~~~~~~~~"]
            let alphabet: [Character] = ["\u{0}", "0", "1", "a", "b", "z", "~", " "]
            let count = Int.random(in: 0...(round % 4 == 0 ? 5_000 : 300), using: &generator)
            let strings = (0..<count).map { _ -> String in
                var string = stems.randomElement(using: &generator)!
                for _ in 0..<Int.random(in: 0...6, using: &generator) where string.utf8.count < 16 {
                    string.append(alphabet.randomElement(using: &generator)!)
                }
                return string
            }
            let order = SortKey.order(keys: strings.map(SortKey.string), columns: 1, reversed: [descending])
            let expected = Self.stringOrder(strings, descending: descending)
            #expect(order == expected, "round \(round), \(count) strings")
        }
    }

    @Test("one-column string orders agree with sorting the strings, packed or not", arguments: [false, true])
    func stringOrders(descending: Bool) {
        var generator = SeededGenerator(seed: descending ? 3 : 4)
        for round in 0..<200 {
            let pool = ["", "a", "ab", "abc", "b", "B", "a\u{0}", "zz", "é", String(repeating: "q", count: 20)]
            let strings = (0..<Int.random(in: 0...40, using: &generator)).map { _ in
                // Every other round only ASCII of up to 16 bytes: the packed path.
                round % 2 == 0
                    ? pool.prefix(8).randomElement(using: &generator)! : pool.randomElement(using: &generator)!
            }
            let order = SortKey.order(keys: strings.map(SortKey.string), columns: 1, reversed: [descending])
            let expected = Self.stringOrder(strings, descending: descending)
            #expect(order == expected, "round \(round): \(strings)")
        }
    }

    @Test(
        "one-column orders of integers, doubles (NaN, ±0) and dates agree with sorting positions by the same comparison",
        arguments: [false, true])
    func plainValueOrders(descending: Bool) {
        var generator = SeededGenerator(seed: descending ? 21 : 22)
        /// The positions sorted by `<` / `>` of the values, ties (and NaN, which is neither) by position.
        func reference<Value: Comparable>(_ values: [Value]) -> [Int] {
            values.indices.sorted { left, right in
                let (a, b) = (values[left], values[right])
                if descending ? a > b : a < b { return true }
                if descending ? a < b : a > b { return false }
                return left < right
            }
        }
        for round in 0..<300 {
            // Up to a few thousand values, so that the sort's merging paths run too.
            let count =
                round % 10 == 0
                ? Int.random(in: 500...3_000, using: &generator) : Int.random(in: 0...60, using: &generator)
            let integers = (0..<count).map { _ in Int64.random(in: -3...3, using: &generator) }
            let doubles = (0..<count).map { _ in
                [0.0, -0.0, 1.5, -2, .nan, .infinity].randomElement(using: &generator)!
            }
            let dates = doubles.map { Date(timeIntervalSinceReferenceDate: $0) }
            let reversed = [descending]
            #expect(
                SortKey.order(keys: integers.map(SortKey.integer), columns: 1, reversed: reversed)
                    == reference(integers),
                "round \(round): integers")
            #expect(
                SortKey.order(keys: doubles.map(SortKey.double), columns: 1, reversed: reversed) == reference(doubles),
                "round \(round): doubles")
            #expect(
                SortKey.order(keys: dates.map(SortKey.date), columns: 1, reversed: reversed) == reference(dates),
                "round \(round): dates")
        }
    }

    @Test(
        "the first positions of an order, found without sorting the rest, are the full order's first positions",
        arguments: [1, 2])
    func leadingPositions(columns: Int) {
        var generator = SeededGenerator(seed: UInt64(10 + columns))
        for round in 0..<300 {
            let count = Int.random(in: 0...600, using: &generator)
            // Few distinct values: many ties, which keep their positions' order.
            var keys: [SortKey] = []
            for _ in 0..<count {
                keys.append(.integer(Int64.random(in: 0..<7, using: &generator)))
                if columns == 2 {
                    keys.append(.string(["a", "b", "", "ab"].randomElement(using: &generator)!))
                }
            }
            let reversed = (0..<columns).map { _ in Bool.random(using: &generator) }
            let full = SortKey.order(keys: keys, columns: columns, reversed: reversed)
            for prefix in [0, 1, 3, count / 8, count / 8 + 1, count] {
                let leading = SortKey.order(keys: keys, columns: columns, reversed: reversed, prefix: prefix)
                // A prefix small beside the count is all that comes back; otherwise the full order.
                let expected = prefix <= count / 8 ? Array(full.prefix(prefix)) : full
                #expect(leading == expected, "round \(round): \(count) keys, prefix \(prefix), \(reversed)")
            }
        }
    }
}
