import Foundation

/// Appends little-endian integers, LEB128 varints and tagged values to a byte buffer: the
/// encoding of journal records.
struct BinaryWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    var count: Int { bytes.count }

    mutating func write(_ byte: UInt8) {
        bytes.append(byte)
    }

    mutating func write<Bytes: Sequence>(contentsOf other: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: other)
    }

    mutating func writeUInt16(_ value: UInt16) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func writeUInt32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func writeUInt64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Overwrites four bytes at `offset` (for lengths and checksums known after the fact).
    mutating func setUInt32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { source in
            for index in 0..<4 {
                bytes[offset + index] = source[index]
            }
        }
    }

    /// LEB128: seven bits per byte, low bits first.
    mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Zigzag, then LEB128: small negative numbers stay small.
    mutating func writeSignedVarint(_ value: Int64) {
        writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            writeVarint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func writeOptionalString(_ string: String?) {
        if let string {
            write(1)
            writeString(string)
        } else {
            write(0)
        }
    }

    mutating func writeUUID(_ uuid: UUID) {
        withUnsafeBytes(of: uuid.uuid) { bytes.append(contentsOf: $0) }
    }

    /// A tag byte and the payload of `value`.
    mutating func writeValue(_ value: StoredValue) {
        switch value {
        case .null:
            write(ValueTag.null)
        case .bool(let flag):
            write(flag ? ValueTag.true : ValueTag.false)
        case .integer(let integer):
            write(ValueTag.integer)
            writeSignedVarint(integer)
        case .double(let double):
            write(ValueTag.double)
            writeUInt64(double.bitPattern)
        case .string(let string):
            write(ValueTag.string)
            writeString(string)
        case .date(let date):
            write(ValueTag.date)
            writeUInt64(date.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let data):
            write(ValueTag.data)
            writeVarint(UInt64(data.count))
            bytes.append(contentsOf: data)
        case .uuid(let uuid):
            write(ValueTag.uuid)
            writeUUID(uuid)
        case .url(let url):
            write(ValueTag.url)
            writeString(url.absoluteString)
        case .decimal(let decimal):
            write(ValueTag.decimal)
            writeString(decimal.description)
        }
    }
}

/// The tag byte of each ``StoredValue`` case in the binary encoding.
enum ValueTag {
    static let null: UInt8 = 0
    static let `false`: UInt8 = 1
    static let `true`: UInt8 = 2
    static let integer: UInt8 = 3
    static let double: UInt8 = 4
    static let string: UInt8 = 5
    static let date: UInt8 = 6
    static let data: UInt8 = 7
    static let uuid: UInt8 = 8
    static let url: UInt8 = 9
    static let decimal: UInt8 = 10
}
