import Foundation
import Testing

@testable import QueueData

@Suite("Relationship keys read in place")
struct RelationshipKeysTests {
    @Test("contains(_:in:) answers as decoding the keys does, for every stored form, over random values")
    func containsMatchesDecode() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<2_000 {
            let keys = (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                Int64.random(in: -20...20, using: &generator)
            }
            var data = Data()
            for key in keys {
                withUnsafeBytes(of: key.littleEndian) { data.append(contentsOf: $0) }
            }
            if round % 7 == 0 {
                data.append(0xFF)  // a stray byte: both read whole keys only
            }
            let values: [StoredValue] = [
                .data(data), .integer(keys.first ?? 0), .null, .string("3"), .data(data.dropFirst(round % 9)),
            ]
            for value in values {
                for probe in Int64(-21)...21 {
                    #expect(
                        RelationshipKeys.contains(probe, in: value) == RelationshipKeys.decode(value).contains(probe),
                        "\(value) \(probe)")
                }
            }
        }
    }
}
