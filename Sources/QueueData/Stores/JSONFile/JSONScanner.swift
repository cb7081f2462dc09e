import Foundation

/// A strict JSON scanner over the bytes of a document (RFC 8259), reporting the byte offset
/// of every problem.
struct JSONScanner {
    struct Failure: Error {
        var offset: Int
        var message: String
    }

    let bytes: UnsafeRawBufferPointer
    var position = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    func failure(_ message: String, at offset: Int? = nil) -> Failure {
        Failure(offset: offset ?? position, message: message)
    }

    var isAtEnd: Bool { position >= bytes.count }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    /// The next non-whitespace byte, without consuming it.
    /// The next byte that is not whitespace (the scanner moves up to it).
    @inline(__always)
    mutating func peek() throws -> UInt8 {
        // Inline when the next byte is not whitespace (every whitespace byte is at most 0x20).
        if position < bytes.count, bytes[position] > 0x20 {
            return bytes[position]
        }
        return try peekPastWhitespace()
    }

    private mutating func peekPastWhitespace() throws -> UInt8 {
        skipWhitespace()
        guard position < bytes.count else { throw failure("unexpected end of the document") }
        return bytes[position]
    }

    /// Whether `key`'s bytes are `name`'s.
    @inline(__always)
    static func isSame(_ key: UnsafeRawBufferPointer, _ name: [UInt8]) -> Bool {
        guard key.count == name.count else { return false }
        guard let base = key.baseAddress, !name.isEmpty else { return true }
        return name.withUnsafeBytes { memcmp(base, $0.baseAddress!, key.count) == 0 }
    }

    mutating func expect(_ byte: UInt8) throws {
        guard try peek() == byte else {
            throw failure("expected '\(Character(Unicode.Scalar(byte)))'")
        }
        position += 1
    }

    /// Consumes `byte` if it comes next.
    mutating func consume(_ byte: UInt8) throws -> Bool {
        if try peek() == byte {
            position += 1
            return true
        }
        return false
    }

    mutating func expectLiteral(_ literal: StaticString) throws {
        let length = literal.utf8CodeUnitCount
        guard bytes.count - position >= length,
            literal.withUTF8Buffer({ UnsafeRawBufferPointer($0).elementsEqual(bytes[position..<(position + length)]) })
        else { throw failure("expected '\(literal)'") }
        position += length
    }

    // MARK: Objects and arrays

    /// Calls `body` for each member of an object, with its key and the scanner positioned at
    /// the value.
    ///
    /// A key that appears twice is an error at the second one: a reader that let the last one
    /// win would open a document with an extra `"rows": {}` as empty, and the next save would
    /// write it so.
    mutating func forEachMember(_ body: (inout JSONScanner, String) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        if try consume(UInt8(ascii: "}")) {
            return
        }
        var keys = Set<String>()
        while true {
            skipWhitespace()
            let keyOffset = position
            let key = try string()
            guard keys.insert(key).inserted else {
                throw failure("the member \"\(key)\" appears twice in one object", at: keyOffset)
            }
            try expect(UInt8(ascii: ":"))
            try body(&self, key)
            if try consume(UInt8(ascii: ",")) {
                continue
            }
            try expect(UInt8(ascii: "}"))
            return
        }
    }

    /// Calls `body` for each element of an array, with the scanner positioned at the element.
    mutating func forEachElement(_ body: (inout JSONScanner) throws -> Void) throws {
        try expect(UInt8(ascii: "["))
        if try consume(UInt8(ascii: "]")) {
            return
        }
        while true {
            try body(&self)
            if try consume(UInt8(ascii: ",")) {
                continue
            }
            try expect(UInt8(ascii: "]"))
            return
        }
    }

    /// Skips any value and returns its byte range.
    @discardableResult
    mutating func skipValue(depth: Int = 0) throws -> Range<Int> {
        guard depth < 512 else { throw failure("values are nested too deeply") }
        let first = try peek()
        let start = position
        switch first {
        case UInt8(ascii: "{"):
            try forEachMember { scanner, _ in try scanner.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            try forEachElement { scanner in try scanner.skipValue(depth: depth + 1) }
        case UInt8(ascii: "\""):
            _ = try string()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        default:
            _ = try numberRange()
        }
        return start..<position
    }

    // MARK: Scalars

    /// Whether the next value is `null` (consumed if so).
    mutating func consumeNull() throws -> Bool {
        if try peek() == UInt8(ascii: "n") {
            try expectLiteral("null")
            return true
        }
        return false
    }

    mutating func bool() throws -> Bool {
        switch try peek() {
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return true
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return false
        default:
            throw failure("expected true or false")
        }
    }

    /// The range of a number, validated against the JSON grammar.
    mutating func numberRange() throws -> Range<Int> {
        skipWhitespace()
        let start = position
        func digits() -> Int {
            let first = position
            while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
                position += 1
            }
            return position - first
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") {
            position += 1
        }
        let integerStart = position
        let integerDigits = digits()
        guard integerDigits > 0 else { throw failure("expected a number", at: start) }
        guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else {
            throw failure("numbers must not have leading zeros", at: start)
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw failure("expected digits after the decimal point") }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() > 0 else { throw failure("expected digits in the exponent") }
        }
        return start..<position
    }

    /// An integer without fraction or exponent, in `Int64` range.
    mutating func integer() throws -> Int64 {
        let range = try numberRange()
        var index = range.lowerBound
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative {
            index += 1
        }
        var magnitude: UInt64 = 0
        while index < range.upperBound {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                throw failure("expected an integer", at: range.lowerBound)
            }
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { throw failure("the integer is too large", at: range.lowerBound) }
            magnitude = sum
            index += 1
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else {
                throw failure("the integer is too large", at: range.lowerBound)
            }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw failure("the integer is too large", at: range.lowerBound) }
        return Int64(magnitude)
    }

    /// A floating-point number; `"NaN"`, `"Infinity"` and `"-Infinity"` strings stand for the
    /// values JSON numbers cannot express.
    mutating func double() throws -> Double {
        if try peek() == UInt8(ascii: "\"") {
            let start = position
            switch try string() {
            case "NaN": return .nan
            case "Infinity": return .infinity
            case "-Infinity": return -.infinity
            default: throw failure("expected a number", at: start)
            }
        }
        let range = try numberRange()
        if let value = Self.exactDouble(UnsafeRawBufferPointer(rebasing: bytes[range])) {
            return value
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        guard let value = Double(text) else { throw failure("'\(text)' is not a number", at: range.lowerBound) }
        // A number too large for a Double parses as infinity: the format spells infinities as
        // strings, so such a number is out of range, not infinite.
        guard value.isFinite else {
            throw failure("'\(text)' is out of the range of a 64-bit floating-point number", at: range.lowerBound)
        }
        return value
    }

    /// The powers of ten a `Double` holds exactly.
    private static let exactPowersOfTen: [Double] = (0...22).map { power in
        var value = 1.0
        for _ in 0..<power { value *= 10 }
        return value
    }

    /// The value of `number` (a number the JSON grammar accepts) when it can be had with one
    /// exact operation, `nil` otherwise (then `Double(_:)` parses it): Clinger's fast path. When
    /// the decimal significand (all its digits, at most 19) is at most 2^53 and the decimal
    /// exponent is within ±22, both the significand and the power of ten are exact doubles, and
    /// one multiplication or division rounds once — to the value `strtod` gives. Most stored
    /// values take it (`Double.description` writes the shortest digits that round-trip); it
    /// costs a few dozen instructions where `strtod` cost about 700 a value.
    static func exactDouble(_ number: UnsafeRawBufferPointer) -> Double? {
        var index = 0
        let negative = number.first == UInt8(ascii: "-")
        if negative {
            index += 1
        }
        var significand: UInt64 = 0
        var digitCount = 0
        var fractionDigits = 0
        var inFraction = false
        while index < number.count {
            let byte = number[index]
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                digitCount += 1
                guard digitCount <= 19 else { return nil }
                significand = significand &* 10 &+ UInt64(byte &- UInt8(ascii: "0"))
                fractionDigits += inFraction ? 1 : 0
            } else {
                break  // The exponent's "e" or "E".
            }
            index += 1
        }
        var exponent = 0
        if index < number.count {
            index += 1
            var exponentNegative = false
            if number[index] == UInt8(ascii: "-") || number[index] == UInt8(ascii: "+") {
                exponentNegative = number[index] == UInt8(ascii: "-")
                index += 1
            }
            var exponentDigits = 0
            while index < number.count {
                exponentDigits += 1
                guard exponentDigits <= 4 else { return nil }
                exponent = exponent * 10 + Int(number[index] &- UInt8(ascii: "0"))
                index += 1
            }
            if exponentNegative {
                exponent = -exponent
            }
        }
        exponent -= fractionDigits
        guard significand <= 1 << 53, exponent >= -22, exponent <= 22 else { return nil }
        var value = Double(significand)
        if exponent < 0 {
            value /= exactPowersOfTen[-exponent]
        } else {
            value *= exactPowersOfTen[exponent]
        }
        return negative ? -value : value
    }

    /// A string, unescaped; invalid UTF-8 or escapes are errors.
    mutating func string() throws -> String {
        guard try peek() == UInt8(ascii: "\"") else { throw failure("expected a string") }
        let start = position
        position += 1
        let contentStart = position
        // Fast path: no escapes.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let content = UnsafeRawBufferPointer(rebasing: bytes[contentStart..<position])
                position += 1
                return try Self.makeString(content, start: start)
            }
            if byte == UInt8(ascii: "\\") {
                break
            }
            guard byte >= 0x20 else { throw failure("control characters must be escaped in strings") }
            position += 1
        }
        guard position < bytes.count else { throw failure("unterminated string", at: start) }
        var utf8 = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[contentStart..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard let string = utf8.withUnsafeBytes({ UTF8Text.string($0) }) else {
                    throw failure("the string is not valid UTF-8", at: start)
                }
                return string
            case UInt8(ascii: "\\"):
                position += 1
                guard position < bytes.count else { break }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""): utf8.append(0x22)
                case UInt8(ascii: "\\"): utf8.append(0x5C)
                case UInt8(ascii: "/"): utf8.append(0x2F)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hexQuad()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard bytes.count - position >= 6, bytes[position] == UInt8(ascii: "\\"),
                            bytes[position + 1] == UInt8(ascii: "u")
                        else { throw failure("unpaired surrogate in a string") }
                        position += 2
                        let low = try hexQuad()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate in a string") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw failure("unpaired surrogate in a string")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw failure("invalid \\u escape") }
                    utf8.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    throw failure("invalid escape in a string")
                }
            default:
                guard byte >= 0x20 else { throw failure("control characters must be escaped in strings") }
                utf8.append(byte)
                position += 1
            }
        }
        throw failure("unterminated string", at: start)
    }

    /// A string from UTF-8 bytes, refusing invalid UTF-8.
    private static func makeString(_ content: UnsafeRawBufferPointer, start: Int) throws -> String {
        guard let string = UTF8Text.string(content) else {
            throw Failure(offset: start, message: "the string is not valid UTF-8")
        }
        return string
    }

    /// The raw bytes of the key of an object member, when it has no escapes (the scanner is
    /// left after the colon); `nil` after reading an escaped key, which `string()` then
    /// returns in `escapedKey`.
    mutating func rawKey(escapedKey: inout String?) throws -> UnsafeRawBufferPointer? {
        guard try peek() == UInt8(ascii: "\"") else { throw failure("expected a string") }
        let start = position + 1
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20
        {
            end += 1
        }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            position = end + 1
            try expect(UInt8(ascii: ":"))
            return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        }
        escapedKey = try string()
        try expect(UInt8(ascii: ":"))
        return nil
    }

    private mutating func hexQuad() throws -> UInt32 {
        guard bytes.count - position >= 4 else { throw failure("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("invalid hexadecimal digit in a \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }
}
