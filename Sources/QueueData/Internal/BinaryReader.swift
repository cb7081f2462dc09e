import Foundation

/// Malformed binary data: what was wrong and where.
struct BinaryDecodingError: Error, CustomStringConvertible {
    /// The offset of the problem in the file.
    var offset: Int64
    var message: String

    var description: String { "\(message) at offset \(offset)" }
}

/// Reads what ``BinaryWriter`` writes, checking every length against the bytes that remain:
/// a hostile length or count fails instead of allocating.
struct BinaryReader {
    private let buffer: UnsafeRawBufferPointer
    /// The position in `buffer`.
    private(set) var position: Int
    /// The offset of `buffer` in its file, for error offsets.
    let baseOffset: Int64

    init(_ buffer: UnsafeRawBufferPointer, baseOffset: Int64 = 0) {
        self.buffer = buffer
        self.position = 0
        self.baseOffset = baseOffset
    }

    var remaining: Int { buffer.count - position }
    var isAtEnd: Bool { position == buffer.count }

    func error(_ message: String) -> BinaryDecodingError {
        BinaryDecodingError(offset: baseOffset + Int64(position), message: message)
    }

    private mutating func require(_ count: Int, _ what: String) throws {
        guard count >= 0, count <= remaining else {
            throw error("\(what) needs \(count) bytes, \(remaining) remain")
        }
    }

    mutating func readByte() throws -> UInt8 {
        try require(1, "a byte")
        defer { position += 1 }
        return buffer[position]
    }

    mutating func readUInt16() throws -> UInt16 {
        try require(2, "a 16-bit integer")
        defer { position += 2 }
        return UInt16(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: UInt16.self))
    }

    mutating func readUInt32() throws -> UInt32 {
        try require(4, "a 32-bit integer")
        defer { position += 4 }
        return UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: UInt32.self))
    }

    mutating func readUInt64() throws -> UInt64 {
        try require(8, "a 64-bit integer")
        defer { position += 8 }
        return UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: position, as: UInt64.self))
    }

    mutating func readVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte()
            if shift == 63 && byte > 1 {
                throw error("a varint overflows 64 bits")
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 {
                return result
            }
            shift += 7
            if shift > 63 {
                throw error("a varint is longer than 10 bytes")
            }
        }
    }

    mutating func readSignedVarint() throws -> Int64 {
        let raw = try readVarint()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    /// A count of elements that each take at least `minimumElementSize` bytes: never more
    /// than the remaining bytes allow.
    mutating func readCount(minimumElementSize: Int = 1, _ what: String) throws -> Int {
        let count = try readVarint()
        guard count <= UInt64(remaining / Swift.max(minimumElementSize, 1)) else {
            throw error("\(what) count \(count) exceeds the remaining \(remaining) bytes")
        }
        return Int(count)
    }

    mutating func readBytes(_ count: Int) throws -> UnsafeRawBufferPointer {
        try require(count, "a byte string")
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: buffer[position..<(position + count)])
    }

    mutating func readString() throws -> String {
        let length = try readCount("string length")
        let bytes = try readBytes(length)
        guard let string = UTF8Text.string(bytes) else {
            throw error("a string is not valid UTF-8")
        }
        return string
    }

    mutating func readOptionalString() throws -> String? {
        switch try readByte() {
        case 0: return nil
        case 1: return try readString()
        default: throw error("an optional string has an invalid marker")
        }
    }

    mutating func readUUID() throws -> UUID {
        let bytes = try readBytes(16)
        return UUID(uuid: bytes.loadUnaligned(as: uuid_t.self))
    }

    mutating func readValue() throws -> StoredValue {
        let start = position
        switch try readByte() {
        case ValueTag.null: return .null
        case ValueTag.false: return .bool(false)
        case ValueTag.true: return .bool(true)
        case ValueTag.integer: return .integer(try readSignedVarint())
        case ValueTag.double: return .double(Double(bitPattern: try readUInt64()))
        case ValueTag.string: return .string(try readString())
        case ValueTag.date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try readUInt64())))
        case ValueTag.data:
            let length = try readCount("data length")
            return .data(Data(try readBytes(length)))
        case ValueTag.uuid: return .uuid(try readUUID())
        case ValueTag.url:
            let string = try readString()
            guard let url = URL(string: string) else { throw error("'\(string)' is not a URL") }
            return .url(url)
        case ValueTag.decimal:
            let string = try readString()
            guard let decimal = Decimal(exactText: string) else {
                throw error("'\(string)' is not a decimal number")
            }
            return .decimal(decimal)
        case let tag:
            position = start
            throw error("unknown value tag \(tag)")
        }
    }
}
