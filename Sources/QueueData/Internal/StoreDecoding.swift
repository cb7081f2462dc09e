import Foundation

/// The built-in file stores' decoders, run on bytes without touching a file: the entry points
/// of the fuzz targets in `Fuzz/` (`@_spi(Fuzzing) import QueueData`).
///
/// Each either returns the contents the bytes hold or throws a ``StoreError``, whatever the
/// bytes: a trap, a hang or unbounded memory on any input is a bug.
@_spi(Fuzzing)
public enum StoreDecoding {
    /// The contents of a journal file's bytes (its valid prefix, as opening reads it).
    ///
    /// - Throws: ``StoreError``: `.unsupportedFormat`, `.corrupted`.
    public static func decodeJournal(_ bytes: [UInt8]) throws -> StoreContents {
        let parsed = try bytes.withUnsafeBytes { try JournalStore.parse($0, url: nil) }
        return JournalStore.contents(of: parsed.snapshot, bytes: bytes, url: nil)
    }

    /// The contents of a JSON store document's bytes.
    ///
    /// - Throws: ``StoreError``: `.unsupportedFormat`, `.corrupted`.
    public static func decodeJSONDocument(_ bytes: [UInt8]) throws -> StoreContents {
        try JSONFileStore.decode(bytes, url: nil)
    }

    /// The bytes of a journal file holding `contents` (one snapshot record), for seed corpora
    /// and for fixing up fuzzed payloads.
    public static func encodeJournal(_ contents: StoreContents) -> [UInt8] {
        JournalStore.snapshotFileBytes(contents)
    }

    /// A journal file's bytes with every record's checksum recomputed and its sequence number
    /// set to follow the header's base sequence, so that a fuzzed file reaches the payload
    /// decoders instead of stopping at the framing. Bytes too short for a header come back
    /// unchanged.
    public static func fixingJournalFraming(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= JournalFormat.headerSize else { return bytes }
        var fixed = bytes
        // The header's checksum.
        let headerCRC = fixed.withUnsafeBytes {
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(JournalFormat.headerSize - 4)]))
        }
        fixed.withUnsafeMutableBytes {
            $0.storeBytes(
                of: CRC32C.mask(headerCRC).littleEndian, toByteOffset: JournalFormat.headerSize - 4, as: UInt32.self)
        }
        let epoch = fixed.withUnsafeBytes {
            UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
        }
        var sequence = fixed.withUnsafeBytes {
            UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 40, as: UInt64.self))
        }
        var offset = JournalFormat.headerSize
        while fixed.count - offset >= JournalFormat.recordHeaderSize {
            let declared = fixed.withUnsafeBytes {
                Int(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
            }
            let length = min(declared, fixed.count - offset - JournalFormat.recordHeaderSize)
            fixed.withUnsafeMutableBytes { buffer in
                buffer.storeBytes(of: UInt32(length).littleEndian, toByteOffset: offset + 4, as: UInt32.self)
                buffer.storeBytes(
                    of: UInt32(truncatingIfNeeded: epoch).littleEndian, toByteOffset: offset + 12, as: UInt32.self)
                buffer.storeBytes(of: sequence.littleEndian, toByteOffset: offset + 16, as: UInt64.self)
                let end = offset + JournalFormat.recordHeaderSize + length
                let crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[(offset + 4)..<end]))
                buffer.storeBytes(of: CRC32C.mask(crc).littleEndian, toByteOffset: offset, as: UInt32.self)
            }
            sequence &+= 1
            offset += JournalFormat.recordHeaderSize + length
        }
        return fixed
    }
}
