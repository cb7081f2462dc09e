import Foundation

extension Decimal {
    /// A decimal from the whole of `text`, as stores and imports spell it: an optional sign,
    /// digits with at most one point, an optional exponent with digits, or `NaN` (what
    /// `Decimal.nan.description` writes). `nil` for anything else — Foundation's parser stops at
    /// the first character it does not read (`12abc` would be 12), and reads `NaN` as nothing —
    /// and for a number with more significant digits than a `Decimal` holds (38), which
    /// Foundation's parser would round silently.
    init?(exactText text: String) {
        if text == "NaN" {
            self = .nan
            return
        }
        let bytes = text.utf8
        var index = bytes.startIndex
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
            index = bytes.index(after: index)
        }
        var digits = 0
        var exponentDigits = 0
        var seenPoint = false
        var seenExponent = false
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte >= 0x30 && byte <= 0x39 {
                if seenExponent {
                    exponentDigits += 1
                } else {
                    digits += 1
                }
            } else if byte == UInt8(ascii: ".") && !seenPoint && !seenExponent {
                seenPoint = true
            } else if (byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")) && !seenExponent && digits > 0 {
                seenExponent = true
                let next = bytes.index(after: index)
                if next < bytes.endIndex, bytes[next] == UInt8(ascii: "-") || bytes[next] == UInt8(ascii: "+") {
                    index = next
                }
            } else {
                return nil
            }
            index = bytes.index(after: index)
        }
        guard digits > 0, !seenExponent || exponentDigits > 0,
            let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")),
            Self.significantDigits(of: text) == Self.significantDigits(of: value.description)
        else { return nil }
        self = value
    }

    /// The significant digits of a number spelled as `init?(exactText:)` reads it (or as
    /// `description` writes it): the digits before any exponent, without the point, leading and
    /// trailing zeros.
    private static func significantDigits(of text: String) -> [UInt8] {
        let mantissa = text.utf8.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
        let digits = mantissa.filter { $0 >= 0x30 && $0 <= 0x39 }
        guard let first = digits.firstIndex(where: { $0 != 0x30 }),
            let last = digits.lastIndex(where: { $0 != 0x30 })
        else { return [] }
        return Array(digits[first...last])
    }
}
