import Foundation

/// The journal file's layout: a fixed header, then checksummed records.
///
/// See the "Journal Format" article for the specification.
enum JournalFormat {
    /// `\x89QDJ\r\n\x1A\n`: a high-bit byte and line endings catch text-mode mangling.
    static let magic: [UInt8] = [0x89, 0x51, 0x44, 0x4A, 0x0D, 0x0A, 0x1A, 0x0A]
    /// The newest major version this version reads and writes. Version 2 added the migration
    /// section at the end of snapshots (applied steps, renaming identifiers), version 3 the
    /// model section after it (superentities, uniqueness constraints), version 4 the persistent
    /// history (a history section after the model section, a transaction trailer in every
    /// change record); a file whose snapshot needs none of them is written as version 1, byte
    /// for byte what version 1 wrote.
    static let majorVersion: UInt16 = 4
    static let minorVersion: UInt16 = 0
    static let headerSize = 64
    static let recordHeaderSize = 24
    /// The largest payload a record may declare: larger lengths are corruption, never an
    /// allocation.
    static let maximumPayloadSize = 1 << 30
    /// The largest base sequence number a header may carry. Sequence numbers start at 1 and
    /// grow by one per save: a journal never comes near 2^62, and below it neither replaying a
    /// file (at most one record per 24 bytes) nor any number of later saves can overflow.
    static let maximumBaseSequence: UInt64 = 1 << 62

    /// The file header.
    struct Header: Equatable {
        var majorVersion: UInt16 = 1
        var minorVersion: UInt16 = JournalFormat.minorVersion
        var storeIdentifier: UUID
        /// Random per file: records carry its low 32 bits, so bytes of an older file never pass
        /// for records of this one.
        var epoch: UInt64
        /// The sequence number of the file's first record.
        var baseSequence: UInt64

        func encoded() -> [UInt8] {
            var writer = BinaryWriter(capacity: JournalFormat.headerSize)
            writer.write(contentsOf: JournalFormat.magic)
            writer.writeUInt16(majorVersion)
            writer.writeUInt16(minorVersion)
            writer.writeUInt32(0)  // flags
            writer.writeUUID(storeIdentifier)
            writer.writeUInt64(epoch)
            writer.writeUInt64(baseSequence)
            writer.write(contentsOf: repeatElement(0, count: 12))
            let crc = writer.withUnsafeBytes { CRC32C.checksum($0) }
            writer.writeUInt32(CRC32C.mask(crc))
            return writer.bytes
        }
    }

    /// Why a file is not a journal QueueData can read.
    enum HeaderProblem: Error {
        case notAJournal
        case newerVersion(UInt16, UInt16)
        case damaged(String)
    }

    static func decodeHeader(_ bytes: UnsafeRawBufferPointer) throws(HeaderProblem) -> Header {
        guard bytes.count >= magic.count, bytes.prefix(magic.count).elementsEqual(magic) else {
            throw .notAJournal
        }
        guard bytes.count >= headerSize else {
            throw .damaged("the header is truncated (\(bytes.count) of \(headerSize) bytes)")
        }
        // The checksum first: a flipped bit in the version is damage, not a newer format.
        let stored = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: headerSize - 4, as: UInt32.self))
        let computed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<(headerSize - 4)]))
        guard CRC32C.unmask(stored) == computed else {
            throw .damaged("the header checksum does not match")
        }
        var reader = BinaryReader(UnsafeRawBufferPointer(rebasing: bytes[0..<headerSize]))
        do {
            _ = try reader.readBytes(magic.count)
            let major = try reader.readUInt16()
            let minor = try reader.readUInt16()
            guard major <= majorVersion else {
                throw HeaderProblem.newerVersion(major, minor)
            }
            guard major >= 1 else {
                throw HeaderProblem.damaged("the format version 0.\(minor) does not exist")
            }
            _ = try reader.readUInt32()
            let identifier = try reader.readUUID()
            let epoch = try reader.readUInt64()
            let base = try reader.readUInt64()
            return Header(
                majorVersion: major, minorVersion: minor, storeIdentifier: identifier, epoch: epoch, baseSequence: base)
        } catch let problem as HeaderProblem {
            throw problem
        } catch {
            throw .damaged("\(error)")
        }
    }

    /// Record types. 0 is never valid, so zero-filled space is never a record.
    enum RecordType: UInt8 {
        /// Every row of the store, its schema and metadata: always the first record of a file.
        case snapshot = 1
        /// One committed save.
        case changes = 2
    }

    /// One framed record: masked CRC-32C of everything after it, payload length, type, flags,
    /// reserved, the low 32 bits of the file's epoch, the sequence number, the payload.
    static func encodeRecord(type: RecordType, sequence: UInt64, epoch: UInt64, payload: [UInt8]) -> [UInt8] {
        var writer = BinaryWriter(capacity: recordHeaderSize + payload.count)
        writer.writeUInt32(0)  // checksum, filled in below
        writer.writeUInt32(UInt32(payload.count))
        writer.write(type.rawValue)
        writer.write(0)  // flags
        writer.writeUInt16(0)  // reserved
        writer.writeUInt32(UInt32(truncatingIfNeeded: epoch))
        writer.writeUInt64(sequence)
        writer.write(contentsOf: payload)
        let crc = writer.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[4...])) }
        writer.setUInt32(CRC32C.mask(crc), at: 0)
        return writer.bytes
    }

    /// A record found in a file.
    struct Record {
        var type: RecordType
        var sequence: UInt64
        /// The payload's range in the file.
        var payload: Range<Int>
        /// Where the next record starts.
        var end: Int
    }

    /// The record at `offset`, if the bytes there are a complete, intact record of this file:
    /// its length is in bounds, its type is known, its epoch matches and its checksum matches.
    /// (The sequence number is checked by the caller.)
    static func record(at offset: Int, in bytes: UnsafeRawBufferPointer, epoch: UInt64) -> Record? {
        guard offset >= 0, bytes.count - offset >= recordHeaderSize else { return nil }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
        guard length <= maximumPayloadSize, length <= bytes.count - offset - recordHeaderSize else { return nil }
        guard let type = RecordType(rawValue: bytes[offset + 8]) else { return nil }
        let epochLow = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
        guard epochLow == UInt32(truncatingIfNeeded: epoch) else { return nil }
        let end = offset + recordHeaderSize + length
        let stored = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        let computed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<end]))
        guard CRC32C.unmask(stored) == computed else { return nil }
        let sequence = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
        return Record(type: type, sequence: sequence, payload: (offset + recordHeaderSize)..<end, end: end)
    }
}
