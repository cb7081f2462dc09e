import Foundation
import Testing

@testable import QueueData

/// `Decimal(exactText:)` reads a whole number exactly, or refuses it: never rounded.
@Suite("Decimal text")
struct DecimalTextTests {
    @Test("numbers of up to 38 significant digits read exactly; more are refused, never rounded")
    func significantDigits() {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        func digits(_ count: Int) -> String {
            // A non-zero first and last digit: every one of them is significant.
            String(
                (0..<count).map { index in
                    let digit =
                        index == 0 || index == count - 1
                        ? Int.random(in: 1...9, using: &random) : Int.random(in: 0...9, using: &random)
                    return Character(String(digit))
                })
        }
        for round in 0..<2_000 {
            let count = Int.random(in: 1...60, using: &random)
            var text = digits(count)
            let point = Int.random(in: 0...count, using: &random)
            if point < count {
                text.insert(".", at: text.index(text.startIndex, offsetBy: point))
            }
            if Bool.random(using: &random) {
                text = "00" + text
            }
            if Bool.random(using: &random) {
                text += "e\(Int.random(in: -40...40, using: &random))"
            }
            if Bool.random(using: &random) {
                text = "-" + text
            }
            let value = Decimal(exactText: text)
            if count <= 38 {
                #expect(
                    value == Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")),
                    "seed \(seed), round \(round): \(text)")
                #expect(value != nil, "seed \(seed), round \(round): \(text)")
            } else if count > 39 {
                #expect(value == nil, "seed \(seed), round \(round): \(text) read as \(String(describing: value))")
            }
            if let value {
                // Read back from what a store writes: the same value.
                #expect(Decimal(exactText: value.description) == value, "seed \(seed), round \(round): \(text)")
            }
        }
        #expect(
            Decimal(exactText: "1" + String(repeating: "0", count: 60))
                == Decimal(sign: .plus, exponent: 60, significand: 1))
        #expect(Decimal(exactText: "0.0") == 0)
    }
}
