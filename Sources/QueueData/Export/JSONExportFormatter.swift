/// Writes one JSON array with an object per record, keyed by field name in the fields' order
/// (valid for any JSON parser, `python3 -m json.tool` among them).
///
/// Values take their JSON form (``ExportOutput/appendJSON(_:of:)``): `null` for `nil`, dates
/// as ISO 8601 strings, binary data as Base64 strings, transformable attributes as the JSON
/// they hold, relationships as object ID URI strings (a to-many as an array of them).
public struct JSONExportFormatter: ExportFormatter {
    /// Creates a JSON formatter.
    public init() {}

    /// Writes `[`.
    public func header(for fields: [ExportField], into output: inout ExportOutput) throws {
        output.append("[\n")
    }

    /// Writes one object.
    public func record(_ record: ExportRecord, fields: [ExportField], into output: inout ExportOutput) throws {
        output.appendJSONObject(record, fields: fields)
    }

    /// Writes `,` and a line break.
    public func delimiter(into output: inout ExportOutput) {
        output.append(",\n")
    }

    /// Writes `]`.
    public func footer(for fields: [ExportField], into output: inout ExportOutput) throws {
        output.append("\n]\n")
    }
}

extension ExportOutput {
    /// Appends `record` as one JSON object on one line, keyed by field name.
    mutating func appendJSONObject(_ record: ExportRecord, fields: [ExportField]) {
        append(byte: UInt8(ascii: "{"))
        for (index, field) in fields.enumerated() {
            if index > 0 {
                append(byte: UInt8(ascii: ","))
            }
            appendJSONString(field.name)
            append(byte: UInt8(ascii: ":"))
            appendJSON(record.values[index], of: field)
        }
        append(byte: UInt8(ascii: "}"))
    }
}
