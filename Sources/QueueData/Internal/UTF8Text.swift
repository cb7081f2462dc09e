/// Strings from UTF-8 bytes read from files, refusing invalid UTF-8, without the generic
/// `String(validating:as:)`, which costs two runtime metadata look-ups per call (≈ 650
/// instructions, more than the decoding of a short name).
enum UTF8Text {
    /// The string `bytes` encode, or `nil` when they are not valid UTF-8.
    ///
    /// ASCII takes one pass. Other text is decoded with `String(decoding:as:)`, which replaces
    /// each invalid sequence with U+FFFD: the bytes were valid exactly when the string's UTF-8
    /// is the same bytes (a replacement never equals the invalid sequence it replaces).
    static func string(_ bytes: UnsafeRawBufferPointer) -> String? {
        let string = String(decoding: bytes, as: UTF8.self)
        if !bytes.contains(where: { $0 >= 0x80 }) {
            return string
        }
        return string.utf8.elementsEqual(bytes) ? string : nil
    }
}
