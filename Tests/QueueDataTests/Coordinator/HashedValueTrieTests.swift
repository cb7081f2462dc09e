import Foundation
import Testing

@testable import QueueData

@Suite("Hashed value trie")
struct HashedValueTrieTests {
    /// The keys as a sorted list, whatever their case (they are in no particular order).
    static func list(_ keys: HashedValueTrie.Keys?) -> [Int64]? {
        switch keys {
        case nil: return nil
        case .one(let key): return [key]
        case .several(let keys): return keys.sorted()
        }
    }

    /// The values the rounds use: integers, and strings with two canonically equivalent
    /// spellings (`==`, one hash) of "é".
    static let values: [StoredValue] =
        (0..<300).map { StoredValue.integer(Int64($0)) }
        + ["", "a", "é", "e\u{301}", "ab", "aé", "ae\u{301}", "SKU-1", "SKU-2"].map { StoredValue.string($0) }

    /// Hashes that force the trie's rare shapes: full collisions, paths down to the last level
    /// (hashes differing only in their lowest bits, which the last levels take), both.
    static func hash(_ shape: String, _ value: StoredValue) -> UInt64 {
        let real = HashedValueTrie.hash(of: value)
        switch shape {
        case "collisions": return real & 0x7
        case "deep": return real & 0xFF
        case "high": return (real & 0xFF) << 56
        case "sparse": return real & 0xF00F_0000_0000_3F0F
        default: return real
        }
    }

    @Test(
        "random sets, changes and removals match a dictionary, and earlier versions keep their contents",
        arguments: ["real", "collisions", "deep", "high", "sparse"])
    func randomAgainstDictionary(shape: String) {
        var random = SeededGenerator(seed: 77)
        var trie = HashedValueTrie()
        var reference: [StoredValue: [Int64]] = [:]
        var versions: [(trie: HashedValueTrie, reference: [StoredValue: [Int64]])] = []

        func check(_ trie: HashedValueTrie, _ reference: [StoredValue: [Int64]], _ round: Int) {
            for value in Self.values {
                let found = Self.list(trie.keys(for: value, hash: Self.hash(shape, value)))
                #expect(found == reference[value]?.sorted(), "round \(round): \(value)")
            }
            let entries = trie.entries
            #expect(entries.count == reference.count, "round \(round)")
            for entry in entries {
                #expect(Self.list(entry.keys) == reference[entry.value]?.sorted(), "round \(round): \(entry.value)")
            }
        }

        for round in 0..<4_000 {
            let value = Self.values.randomElement(using: &random)!
            let hash = Self.hash(shape, value)
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4:
                let keys: [Int64] = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                    Int64.random(in: 1...1_000, using: &random)
                }
                trie.setKeys(keys.count == 1 ? .one(keys[0]) : .several(keys), for: value, hash: hash)
                reference[value] = keys
            case 4..<7:
                let key = Int64.random(in: 1...1_000, using: &random)
                trie.modifyKeys(for: value, hash: hash) { keys in
                    switch keys {
                    case nil: keys = .one(key)
                    case .one(let other): keys = .several([other, key])
                    case .several(var several):
                        keys = nil
                        several.append(key)
                        keys = .several(several)
                    }
                }
                reference[value, default: []].append(key)
            default:
                trie.setKeys(nil, for: value, hash: hash)
                reference[value] = nil
            }
            if round % 97 == 0 {
                check(trie, reference, round)
                versions.append((trie, reference))
            }
        }
        // Empty it, then fill it again: removals give child nodes' entries back to their parents.
        for value in Self.values {
            trie.setKeys(nil, for: value, hash: Self.hash(shape, value))
        }
        reference = [:]
        check(trie, reference, -1)
        for (position, value) in Self.values.enumerated() {
            trie.setKeys(.one(Int64(position)), for: value, hash: Self.hash(shape, value))
            reference[value] = [Int64(position)]
        }
        check(trie, reference, -2)
        // Built at once from pairs (several rows of some values) it holds the same.
        var pairs: [(value: StoredValue, key: Int64)] = []
        reference = [:]
        for key in Int64(1)...1_500 {
            let value = Self.values.randomElement(using: &random)!
            pairs.append((value, key))
            reference[value, default: []].append(key)
        }
        let built = HashedValueTrie(pairs, hashing: { Self.hash(shape, $0) })
        check(built, reference, -3)
        #expect(HashedValueTrie(pairs).entries.count == reference.count)
        // Every version taken on the way still holds exactly what it held.
        for (number, version) in versions.enumerated() {
            check(version.trie, version.reference, 10_000 + number)
        }
    }

    @Test("the index keeps many rows of one value without losing any, and lookups compare values with ==")
    func manyRowsOfOneValue() {
        var index = ColumnIndex(column: 0)
        for key in 1...2_000 {
            index.insert(.string(key % 2 == 0 ? "é" : "e\u{301}"), Int64(key))
            index.insert(.integer(Int64(key % 7)), Int64(key))
        }
        #expect(index.lookUp(.string("é")).sorted() == (1...2_000).map(Int64.init))
        #expect(index.lookUp(.integer(3)).sorted() == (1...2_000).filter { $0 % 7 == 3 }.map(Int64.init))
        let published = index
        for key in stride(from: 1, through: 2_000, by: 2) {
            index.remove(.string("e\u{301}"), Int64(key))
        }
        #expect(index.lookUp(.string("é")).sorted() == (1...1_000).map { Int64($0 * 2) })
        #expect(published.lookUp(.string("é")).count == 2_000)
        #expect(index.lookUp(.string("x")).isEmpty)
    }
}
