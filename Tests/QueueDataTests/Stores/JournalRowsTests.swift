import Foundation
import Testing

@testable import QueueData

/// The journal's row collection behaves as a dictionary by primary key that hands its rows out
/// in key order.
@Suite("Journal rows")
struct JournalRowsTests {
    @Test("random appends, inserts above and below, updates, deletes and reinserts match a dictionary")
    func matchesADictionary() {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        for round in 0..<300 {
            var rows = JournalRows(columns: 2, reservingCapacity: 8)
            var reference: [Int64: [StoredValue]] = [:]
            // A snapshot: ascending keys with gaps (and, rarely, one out of order).
            var key: Int64 = 0
            for _ in 0..<Int(random.next() % 40) {
                key += Int64(1 + random.next() % 5)
                let appended = random.next() % 50 == 0 ? key - Int64(random.next() % 4) : key
                let row: [StoredValue] = [.integer(Int64(random.next() % 1000)), .string("s\(appended)")]
                if random.next() % 2 == 0 {
                    rows.append(row, forKey: appended)
                } else {
                    // Decoded value by value, as the journal reads a snapshot; a read that fails
                    // part-way adds nothing.
                    var values = row.makeIterator()
                    if random.next() % 8 == 0 {
                        var reads = 0
                        #expect(throws: BinaryDecodingError.self) {
                            try rows.append(forKey: appended) {
                                reads += 1
                                guard reads < 2 else { throw BinaryDecodingError(offset: 0, message: "torn") }
                                return values.next()!
                            }
                        }
                        #expect(rows[appended] == reference[appended], "round \(round) (seed \(seed))")
                        continue
                    }
                    rows.append(forKey: appended) { values.next()! }
                }
                reference[appended] = row
            }
            // Records: operations on keys around and above those.
            for _ in 0..<Int(random.next() % 80) {
                let target = Int64(random.next() % UInt64(key + 20))
                switch random.next() % 5 {
                case 0, 1:
                    let row: [StoredValue] = [.string("r\(round)-\(random.next() % 100)"), .null]
                    rows[target] = row
                    reference[target] = row
                case 2:
                    if var row = rows[target] {
                        row[0] = .integer(-1)
                        rows[target] = row
                        reference[target] = row
                    }
                case 3:
                    rows[target] = nil
                    reference[target] = nil
                default:
                    // Inserts with ever higher keys, as the coordinator hands them out.
                    key += Int64(1 + random.next() % 3)
                    rows[key] = [.integer(key), .bool(true)]
                    reference[key] = [.integer(key), .bool(true)]
                }
                #expect(rows[target] == reference[target], "round \(round) (seed \(seed))")
            }
            let stored = rows.storedRows()
            let expected = reference.sorted { $0.key < $1.key }
            #expect(stored.map(\.primaryKey) == expected.map(\.key), "round \(round) (seed \(seed))")
            #expect(stored.map(\.values) == expected.map(\.value), "round \(round) (seed \(seed))")
            #expect(rows.count == reference.count, "round \(round) (seed \(seed))")
            var keys: [Int64] = []
            rows.forEachKey { keys.append($0) }
            #expect(keys.sorted() == expected.map(\.key), "round \(round) (seed \(seed))")
            // The flat rows, in key order: every row when none went below the highest key.
            var flat: [StoredRow] = []
            rows.forEachRowInKeyOrder { flat.append(StoredRow(primaryKey: $0, values: Array($1))) }
            #expect(flat == stored.filter { row in flat.contains { $0.primaryKey == row.primaryKey } })
            #expect(flat.map(\.primaryKey) == flat.map(\.primaryKey).sorted())
            if rows.isInKeyOrder {
                #expect(flat == stored, "round \(round) (seed \(seed))")
            }
        }
    }
}
