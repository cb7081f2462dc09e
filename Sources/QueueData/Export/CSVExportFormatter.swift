/// Writes CSV as RFC 4180 has it: a header row of field names, then one row per record,
/// lines ending in CRLF.
///
/// A field that holds the delimiter, a quote, a carriage return or a line feed is quoted, its
/// quotes doubled; an empty string is written as `""` and `nil` as nothing, so the two stay
/// apart — with a single field, a `nil` row is an empty line, which QueueData's importer reads
/// back as a record of one `nil` field (other CSV readers may skip it). Values take their text form (``ExportOutput/appendText(_:of:)``): dates in ISO 8601
/// UTC, binary data in Base64, relationships as object ID URIs (a to-many's separated by
/// spaces).
public struct CSVExportFormatter: ExportFormatter {
    /// The byte between fields: `,` by default (`;` and tab are common too).
    public let delimiter: UInt8
    /// Whether the first row names the fields.
    public let includesHeader: Bool
    /// The end of each row: CRLF, as RFC 4180 says, or `"\n"`.
    public let lineEnding: String

    /// Creates a CSV formatter.
    ///
    /// - Parameters:
    ///   - delimiter: The field delimiter: an ASCII character other than `"`, CR and LF. Any
    ///     other traps: it would make a file no reader can split.
    ///   - includesHeader: Whether to write a header row.
    ///   - lineEnding: The end of each row: `"\r\n"` or `"\n"`.
    public init(delimiter: Character = ",", includesHeader: Bool = true, lineEnding: String = "\r\n") {
        guard let byte = delimiter.asciiValue, byte != UInt8(ascii: "\""), byte != 0x0A, byte != 0x0D else {
            preconditionFailure(
                "QueueData: the CSV delimiter \(String(reflecting: delimiter)) cannot be used: pick an ASCII "
                    + "character other than a quote, CR or LF, such as \",\", \";\" or \"\\t\".")
        }
        precondition(
            lineEnding == "\r\n" || lineEnding == "\n",
            "QueueData: a CSV line ending must be \"\\r\\n\" or \"\\n\", not \(String(reflecting: lineEnding)).")
        self.delimiter = byte
        self.includesHeader = includesHeader
        self.lineEnding = lineEnding
    }

    /// Writes the header row, when ``includesHeader``.
    public func header(for fields: [ExportField], into output: inout ExportOutput) throws {
        guard includesHeader else { return }
        for (index, field) in fields.enumerated() {
            if index > 0 {
                output.append(byte: delimiter)
            }
            appendField(Array(field.name.utf8), isNil: false, into: &output)
        }
        output.append(lineEnding)
    }

    /// Writes one row.
    public func record(_ record: ExportRecord, fields: [ExportField], into output: inout ExportOutput) throws {
        var scratch = ExportOutput()
        for (index, field) in fields.enumerated() {
            if index > 0 {
                output.append(byte: delimiter)
            }
            scratch.bytes.removeAll(keepingCapacity: true)
            let present = scratch.appendText(record.values[index], of: field)
            appendField(scratch.bytes, isNil: !present, into: &output)
        }
        output.append(lineEnding)
    }

    /// Appends one field, quoted when it must be (or when it is an empty string).
    private func appendField(_ text: [UInt8], isNil: Bool, into output: inout ExportOutput) {
        if isNil {
            return
        }
        let needsQuotes =
            text.isEmpty
            || text.contains { $0 == delimiter || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
        guard needsQuotes else {
            output.append(contentsOf: text)
            return
        }
        output.append(byte: UInt8(ascii: "\""))
        for byte in text {
            if byte == UInt8(ascii: "\"") {
                output.append(byte: byte)
            }
            output.append(byte: byte)
        }
        output.append(byte: UInt8(ascii: "\""))
    }
}
