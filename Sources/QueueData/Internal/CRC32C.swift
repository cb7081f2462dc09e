internal import CQueueDataShims

/// CRC-32C (Castagnoli), the checksum of journal records and headers.
enum CRC32C {
    /// The checksum of `bytes`.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        return qd_crc32c_extend(0, base, bytes.count)
    }

    /// The checksum of `bytes`.
    static func checksum<Bytes: ContiguousBytes>(_ bytes: Bytes) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// LevelDB's masking: a CRC stored next to the data it covers is rotated and offset, so
    /// that the CRC of a record that embeds CRCs is not trivially related to them.
    static func mask(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8
    }

    /// Reverses ``mask(_:)``.
    static func unmask(_ masked: UInt32) -> UInt32 {
        let rotated = masked &- 0xA282_EAD8
        return (rotated >> 17) | (rotated << 15)
    }
}
