import Foundation
import Testing

@testable import QueueData

/// The JSON store reads every double as `Double(_:)` (`strtod`) reads it, bit for bit, whether
/// its fast path or `Double(_:)` itself does the reading.
@Suite("JSON numbers")
struct JSONNumberTests {
    /// The scanner's reading of `text`, and `Double(_:)`'s.
    private func readings(_ text: String) throws -> (scanner: Double, reference: Double?) {
        let bytes = Array(text.utf8)
        let value = try bytes.withUnsafeBytes { buffer in
            var scanner = JSONScanner(buffer)
            return try scanner.double()
        }
        return (value, Double(text))
    }

    private func expectSame(_ text: String, _ comment: String = "") throws {
        let (value, reference) = try readings(text)
        #expect(value.bitPattern == reference?.bitPattern, "\(text) \(comment)")
    }

    @Test("crafted numbers: the edges of the fast path and beyond it")
    func crafted() throws {
        let texts = [
            "0", "-0", "0.0", "-0.0", "1", "-1", "0.1", "0.2", "0.3", "1e22", "1e23", "1e-22", "1e-23",
            "9007199254740992", "9007199254740993", "-9007199254740993", "18014398509481984",
            "123456789012345678", "1234567890123456789", "12345678901234567890", "0.000000000000000000001",
            "4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308", "123.456e-3", "123.456E+3",
            "1.0e-05", "5e-01", "1234.56", "-99.99", "3.141592653589793", "2.718281828459045",
            "0.1e22", "10000000000000000000000e-22", "1e0", "1E+0", "1e-0", "0e9999", "1e-9999",
            "0.30000000000000004", "100000000000000000000000",
        ]
        for text in texts {
            try expectSame(text)
        }
    }

    @Test("what Double.description writes, for random doubles of every magnitude", arguments: [1, 2, 3])
    func descriptions(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        for _ in 0..<30_000 {
            let value: Double
            switch random.next() % 3 {
            case 0: value = Double(bitPattern: random.next())
            case 1: value = Double(Int64(bitPattern: random.next()) % 100_000_000) / 100
            default: value = Double(random.next() % 10_000) * pow(10, Double(Int(random.next() % 60) - 30))
            }
            guard value.isFinite else { continue }
            let (read, _) = try readings(value.description)
            #expect(read.bitPattern == value.bitPattern, "\(value.description) (seed \(seed))")
        }
    }

    @Test("random decimal texts, as a hand-edited file may hold them", arguments: [4, 5])
    func randomTexts(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        func digits(_ count: Int) -> String {
            String((0..<count).map { _ in Character(String(random.next() % 10)) })
        }
        for _ in 0..<30_000 {
            var text = random.next() % 2 == 0 ? "-" : ""
            let integer = digits(Int(random.next() % 20) + 1)
            // No leading zeros in JSON's integer part.
            text += integer.count > 1 && integer.first == "0" ? "1" + integer.dropFirst() : integer
            if random.next() % 2 == 0 {
                text += "." + digits(Int(random.next() % 20) + 1)
            }
            if random.next() % 2 == 0 {
                text += ["e", "E"][Int(random.next() % 2)] + ["", "+", "-"][Int(random.next() % 3)]
                text += String(random.next() % 40)
            }
            try expectSame(text)
        }
    }
}
