/// Turns the records of an export into a file's bytes, through four hooks: a header before the
/// first record, each record, a delimiter between two records, and a footer after the last.
///
/// QueueData ships ``CSVExportFormatter``, ``JSONExportFormatter`` and
/// ``JSONLinesExportFormatter``. A formatter of your own implements ``record(_:fields:into:)``
/// and whichever other hook it needs (each does nothing by default):
///
/// ```swift
/// struct NamesFormatter: ExportFormatter {
///     func record(_ record: ExportRecord, fields: [ExportField], into output: inout ExportOutput) throws {
///         if let index = fields.firstIndex(where: { $0.name == "name" }) {
///             output.appendText(record.values[index], of: fields[index])
///         }
///         output.append("\n")
///     }
/// }
/// ```
///
/// A formatter runs on the export's private queue and sees only `Sendable` values
/// (``ExportRecord``), never a managed object. Throwing from a hook stops the export: no file
/// is left under the destination's name.
public protocol ExportFormatter: Sendable {
    /// Writes what comes before the first record (a CSV header row, a JSON array's `[`).
    /// Called once, also when no record follows.
    func header(for fields: [ExportField], into output: inout ExportOutput) throws

    /// Writes one record: one value per field, in the fields' order.
    func record(_ record: ExportRecord, fields: [ExportField], into output: inout ExportOutput) throws

    /// Writes what separates a record from the next (a JSON array's `,`).
    func delimiter(into output: inout ExportOutput)

    /// Writes what comes after the last record (a JSON array's `]`). Called once.
    func footer(for fields: [ExportField], into output: inout ExportOutput) throws
}

extension ExportFormatter {
    /// Writes nothing.
    public func header(for fields: [ExportField], into output: inout ExportOutput) throws {}

    /// Writes nothing.
    public func delimiter(into output: inout ExportOutput) {}

    /// Writes nothing.
    public func footer(for fields: [ExportField], into output: inout ExportOutput) throws {}
}
