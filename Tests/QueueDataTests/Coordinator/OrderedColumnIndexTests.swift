import Foundation
import Testing

@testable import QueueData

@Suite("Ordered column index")
struct OrderedColumnIndexTests {
    /// The entries of `reference` the index keeps, in the index's order (value, then key).
    static func sorted(_ reference: [Int64: StoredValue]) -> [(key: Int64, value: StoredValue)] {
        reference.filter { OrderedColumnIndex.isOrdered($0.value) }.sorted { left, right in
            if OrderedColumnIndex.precedes(left.value, right.value) {
                return true
            }
            return !OrderedColumnIndex.precedes(right.value, left.value) && left.key < right.key
        }
    }

    /// The keys a brute-force pass over `sorted` finds from `lower` while `continues`.
    static func expected(
        _ sorted: [(key: Int64, value: StoredValue)],
        from lower: StoredValue?,
        while continues: (StoredValue) -> Bool
    ) -> [Int64] {
        var keys: [Int64] = []
        for (key, value) in sorted {
            if let lower, OrderedColumnIndex.precedes(value, lower) {
                continue
            }
            guard continues(value) else { break }
            keys.append(key)
        }
        return keys
    }

    @Test(
        "random inserts and removals over several chunks and groups keep the entries sorted, and range walks match a sort",
        arguments: ["integer", "double", "string"], [false, true])
    func randomAgainstSort(kind: String, small: Bool) {
        var random = SeededGenerator(seed: 41)
        func value() -> StoredValue {
            switch kind {
            case "integer": return .integer(Int64.random(in: -300...300, using: &random))
            case "double":
                let specials: [Double] = [.nan, -0.0, 0.0, .infinity, -.infinity]
                return Int.random(in: 0..<10, using: &random) == 0
                    ? .double(specials.randomElement(using: &random)!)
                    : .double(Double(Int.random(in: -200...200, using: &random)) / 4)
            default:
                let pieces = ["a", "b", "é", "e\u{301}", "C1", "C", "", "z"]
                return .string(
                    (0..<Int.random(in: 0...3, using: &random)).map { _ in pieces.randomElement(using: &random)! }
                        .joined())
            }
        }
        // Half built at once, half inserted one by one: several chunks split and empty.
        var reference: [Int64: StoredValue] = [:]
        for key in 1...1_500 {
            reference[Int64(key)] = value()
        }
        // Small chunks and groups (4 of 4) make many of both, split and emptied on the way.
        var index = OrderedColumnIndex(
            reference.map { OrderedColumnIndex.Entry(value: $0.value, key: $0.key) },
            chunkCapacity: small ? 4 : 128, groupCapacity: small ? 4 : 256)
        var published: [(index: OrderedColumnIndex, keys: [Int64])] = []
        var shapes: Set<Int> = []
        var nextKey: Int64 = 1_501
        for step in 0..<6_000 {
            if Bool.random(using: &random) || reference.isEmpty {
                let new = value()
                reference[nextKey] = new
                index.insert(new, nextKey)
                nextKey += 1
            } else {
                let key = reference.keys.randomElement(using: &random)!
                index.remove(reference[key]!, key)
                reference[key] = nil
            }
            if step % 500 == 0 || step == 5_999 {
                let sorted = Self.sorted(reference)
                published.append((index, sorted.map(\.key)))
                shapes.insert(index.shape.groups)
                #expect(index.entries.map(\.key) == sorted.map(\.key), "step \(step)")
                #expect(index.count == sorted.count, "step \(step): the kept count")
                #expect(index.nanValues == reference.values.filter(OrderedColumnIndex.isNaN).count, "step \(step)")
                #expect(
                    index.nonASCIIStrings == reference.values.filter(OrderedColumnIndex.isNonASCIIString).count,
                    "step \(step)")
                var walked: [Int64] = []
                index.forEachEntry(descending: step % 1_000 == 0) { entry in
                    walked.append(entry.key)
                    return true
                }
                let order = step % 1_000 == 0 ? Array(sorted.map(\.key).reversed()) : sorted.map(\.key)
                #expect(walked == order, "step \(step): a walk over every entry")
                for _ in 0..<20 {
                    let lower = value()
                    let upper = value()
                    let continues = { (candidate: StoredValue) in !OrderedColumnIndex.precedes(upper, candidate) }
                    #expect(
                        index.keys(from: lower, while: continues)
                            == Self.expected(sorted, from: lower, while: continues),
                        "step \(step): from \(lower) through \(upper)")
                }
            }
        }
        #expect(index.count == reference.count)
        // Versions kept on the way (a published table's) still hold what they held.
        for (number, version) in published.enumerated() {
            #expect(version.index.entries.map(\.key) == version.keys, "version \(number)")
        }
        if small {
            #expect(shapes.count > 5, "groups split and merged: \(shapes.sorted())")
        }
    }

    @Test("strings are ordered by their UTF-8 bytes, as utf8.lexicographicallyPrecedes orders them")
    func bytesPrecedeAsUTF8() {
        var random = SeededGenerator(seed: 9)
        let pieces = ["", "a", "b", "é", "e\u{301}", "\u{0}", "ÿ", "😀", "aaaaaaaaaaaaaaaa", "Z"]
        for _ in 0..<3_000 {
            let left = (0..<Int.random(in: 0...4, using: &random)).map { _ in pieces.randomElement(using: &random)! }
                .joined()
            let right = (0..<Int.random(in: 0...4, using: &random)).map { _ in pieces.randomElement(using: &random)! }
                .joined()
            #expect(
                OrderedColumnIndex.bytesPrecede(left, right) == left.utf8.lexicographicallyPrecedes(right.utf8),
                "\(left.debugDescription) < \(right.debugDescription)")
        }
    }

    @Test("values that are not ordered (nil, booleans, data) are not kept")
    func unorderedValuesLeftOut() {
        var index = OrderedColumnIndex([])
        index.insert(.null, 1)
        index.insert(.bool(true), 2)
        index.insert(.data(Data([1])), 3)
        index.insert(.integer(4), 4)
        #expect(index.entries.map(\.key) == [4])
        index.remove(.null, 1)
        index.remove(.integer(4), 4)
        #expect(index.count == 0)
    }
}
