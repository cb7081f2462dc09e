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
            var rows = JournalRows(reservingCapacity: 8)
            var reference: [Int64: [StoredValue]] = [:]
            // A snapshot: ascending keys with gaps (and, rarely, one out of order).
            var key: Int64 = 0
            for _ in 0..<Int(random.next() % 40) {
                key += Int64(1 + random.next() % 5)
                let appended = random.next() % 50 == 0 ? key - Int64(random.next() % 4) : key
                let row: [StoredValue] = [.integer(Int64(random.next() % 1000))]
                rows.append(row, forKey: appended)
                reference[appended] = row
            }
            // Records: operations on keys around and above those.
            for _ in 0..<Int(random.next() % 80) {
                let target = Int64(random.next() % UInt64(key + 20))
                switch random.next() % 5 {
                case 0, 1:
                    let row: [StoredValue] = [.string("r\(round)-\(random.next() % 100)")]
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
                    rows[key] = [.integer(key)]
                    reference[key] = [.integer(key)]
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
        }
    }
}
