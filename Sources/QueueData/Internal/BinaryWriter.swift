import Foundation

/// Appends little-endian integers, LEB128 varints and tagged values to a byte buffer: the
/// encoding of journal records.
///
/// The buffer is its own, not an array: each write checks the room left once and stores
/// through a pointer (an array's `append` checks uniqueness and capacity for every byte, and
/// that was a third of the cost of encoding a saved row). Not copyable, so that no copy can
/// share the buffer; ``bytes`` copies what was written out.
struct BinaryWriter: ~Copyable {
    private var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// How many bytes were written.
    private(set) var count = 0

    init(capacity: Int = 0) {
        self.capacity = Swift.max(capacity, 32)
        storage = .allocate(capacity: self.capacity)
    }

    deinit {
        storage.deallocate()
    }

    /// The bytes written, as an array.
    var bytes: [UInt8] {
        [UInt8](UnsafeBufferPointer(start: storage, count: count))
    }

    /// Calls `body` with the bytes written so far.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: storage, count: count))
    }

    /// Where the next `extra` bytes go, with room for them made first.
    @inline(__always)
    private mutating func room(for extra: Int) -> UnsafeMutablePointer<UInt8> {
        if _slowPath(extra > capacity &- count) {
            grow(toHold: count + extra)
        }
        return storage + count
    }

    /// Moves the bytes to a buffer of at least `needed` bytes, at least twice as large.
    @inline(never)
    private mutating func grow(toHold needed: Int) {
        let newCapacity = Swift.max(needed, capacity * 2)
        let newStorage = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newStorage.initialize(from: storage, count: count)
        storage.deallocate()
        storage = newStorage
        capacity = newCapacity
    }

    mutating func write(_ byte: UInt8) {
        room(for: 1).pointee = byte
        count += 1
    }

    mutating func write<Bytes: Sequence>(contentsOf other: Bytes) where Bytes.Element == UInt8 {
        let handled: Void? = other.withContiguousStorageIfAvailable { write(buffer: UnsafeRawBufferPointer($0)) }
        if handled == nil {
            for byte in other {
                write(byte)
            }
        }
    }

    /// Appends the bytes of `buffer`.
    mutating func write(buffer: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        UnsafeMutableRawPointer(room(for: buffer.count)).copyMemory(from: base, byteCount: buffer.count)
        count += buffer.count
    }

    /// Appends the `size` low bytes of `value`, least significant first.
    @inline(__always)
    private mutating func writeLittleEndian(_ value: UInt64, size: Int) {
        let target = room(for: 8)
        UnsafeMutableRawPointer(target).storeBytes(of: value.littleEndian, as: UInt64.self)
        count += size
    }

    mutating func writeUInt16(_ value: UInt16) {
        writeLittleEndian(UInt64(value), size: 2)
    }

    mutating func writeUInt32(_ value: UInt32) {
        writeLittleEndian(UInt64(value), size: 4)
    }

    mutating func writeUInt64(_ value: UInt64) {
        writeLittleEndian(value, size: 8)
    }

    /// Overwrites four bytes at `offset` (for lengths and checksums known after the fact).
    mutating func setUInt32(_ value: UInt32, at offset: Int) {
        precondition(offset >= 0 && offset + 4 <= count, "QueueData: overwriting bytes not written")
        UnsafeMutableRawPointer(storage + offset).storeBytes(of: value.littleEndian, as: UInt32.self)
    }

    /// LEB128: seven bits per byte, low bits first.
    @inline(__always)
    mutating func writeVarint(_ value: UInt64) {
        var value = value
        let target = room(for: 10)
        var index = 0
        while value >= 0x80 {
            target[index] = UInt8(truncatingIfNeeded: value) | 0x80
            value >>= 7
            index += 1
        }
        target[index] = UInt8(value)
        count += index + 1
    }

    /// Zigzag, then LEB128: small negative numbers stay small.
    mutating func writeSignedVarint(_ value: Int64) {
        writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            writeVarint(UInt64(utf8.count))
            write(buffer: UnsafeRawBufferPointer(utf8))
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
        Swift.withUnsafeBytes(of: uuid.uuid) { write(buffer: $0) }
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
            write(contentsOf: data)
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
