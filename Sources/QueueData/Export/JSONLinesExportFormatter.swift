/// Writes JSON Lines: one JSON object per record, each on its own line (`\n`), as
/// ``JSONExportFormatter`` writes them, without the array around them.
///
/// The format imports back with
/// ``ManagedObjectContext/importRecords(from:format:entityName:batchSize:mergePolicy:progress:)``
/// and streams well: every line stands alone.
public struct JSONLinesExportFormatter: ExportFormatter {
    /// Creates a JSON Lines formatter.
    public init() {}

    /// Writes one object and a line feed.
    public func record(_ record: ExportRecord, fields: [ExportField], into output: inout ExportOutput) throws {
        output.appendJSONObject(record, fields: fields)
        output.append(byte: 0x0A)
    }
}
