import Foundation
@_spi(StoreTool) import QueueData

/// `qd export STORE --entity E [--where EXPR] [--sort KEYS] [--limit N] --format csv|json|jsonl [-o FILE]`.
enum ExportCommand {
    static let help = """
        usage: qd export STORE --entity ENTITY --format csv|json|jsonl [--where EXPR] [--sort KEYS]
                         [--limit N] [--delimiter C] [--no-object-id] [-o FILE]

        Writes the rows of one entity and of its subentities (as the store records them), without
        the app's model: each record holds the object's ID (its x-queuedata:// URI, naming the
        object's own entity), every attribute of ENTITY and every relationship as the related
        objects' IDs (a to-many as a list). CSV follows RFC 4180 (a header row, quoted fields, nil as an
        empty field, dates in ISO 8601); JSON is one array; JSON Lines one object per line. With
        -o the file is written atomically (a temporary file, synchronized, then renamed):
        an error never leaves a partial file; -o naming the store itself or its lock file
        (under any name) is refused (exit status 2). Without -o, records go to standard output. Reads
        without the lock: safe while an app has the store open (it sees the committed saves).

          --entity ENTITY   the entity to export
          --format FORMAT   csv, json or jsonl (default: from -o's extension)
          --where EXPR      rows to keep, e.g. "rating >= 3 and country == 'PT'" (==, !=, <, <=,
                            >, >=, contains, beginswith; and, or, not, parentheses; nil). Each
                            value must fit its attribute (exit status 2 otherwise): an integer,
                            a number, a quoted string, true or false, a quoted ISO 8601 date
                            ('2026-11-24' or '2026-11-24T19:56:03Z'), a quoted UUID or URL
          --sort KEYS       order, e.g. "country,-rating" (- for descending); default: key order,
                            the entity's rows first, then each subentity's
          --limit N         at most N records
          --delimiter C     CSV field delimiter (default ,)
          --no-object-id    leave the objectID field out
          -o, --output FILE write FILE instead of standard output
        """

    static func run(_ arguments: [String]) throws -> ExitStatus {
        let parsed = try Arguments(
            arguments,
            valued: ["--entity", "--where", "--sort", "--format", "-o", "--output", "--limit", "--delimiter"],
            flags: ["--no-object-id"])
        if parsed.wantsHelp {
            printOutput(help)
            return .success
        }
        guard parsed.positional.count == 1 else { throw ToolFailure(.usage, "export takes one store file.") }
        guard let entityName = parsed.options["--entity"] else { throw ToolFailure(.usage, "export needs --entity.") }
        let location = try StoreLocation(parsed.positional[0])
        let output = parsed.options["-o"] ?? parsed.options["--output"]
        let formatName = parsed.options["--format"] ?? output.map { URL(fileURLWithPath: $0).pathExtension }
        let formatter: any ExportFormatter
        switch formatName {
        case "csv":
            let delimiter = parsed.options["--delimiter"] ?? ","
            guard delimiter.count == 1, let character = delimiter.first, character.isASCII,
                !"\"\r\n".contains(character)
            else {
                throw ToolFailure(.usage, "--delimiter must be one ASCII character other than a quote or a line break.")
            }
            formatter = CSVExportFormatter(delimiter: character)
        case "json": formatter = JSONExportFormatter()
        case "jsonl": formatter = JSONLinesExportFormatter()
        default: throw ToolFailure(.usage, "export needs --format csv, json or jsonl.")
        }
        var limit = Int.max
        if let text = parsed.options["--limit"] {
            guard let value = Int(text), value >= 0 else { throw ToolFailure(.usage, "--limit needs a number.") }
            limit = value
        }
        guard location.exists else { throw ToolFailure(.unreadable, "\(location.url.path) does not exist.") }
        if let output, location.isOwnFile(output) {
            throw ToolFailure(
                .usage, "-o \(output) is the store's own file: export writes another file, never the store it reads.")
        }
        let contents: StoreContents
        do {
            contents = try StoreInspection.contents(of: location.url)
        } catch let error as StoreError {
            throw ToolFailure(.unreadable, "cannot read \(location.url.path): \(error)")
        }
        guard let entity = contents.schema.first(where: { $0.name == entityName }) else {
            throw ToolFailure(
                .usage,
                "the store has no entity '\(entityName)'; it has \(contents.schema.map(\.name).joined(separator: ", "))."
            )
        }
        let filter = try parsed.options["--where"].map { try RowFilter.parse($0, entity: entity) }
        let order = try parsed.options["--sort"].map { try RowOrder($0, entity: entity) }
        // The entity's rows, then each subentity's, each in key order; filtered and sorted by
        // the entity's columns (a subentity's row projected onto them by name).
        let fields = ExportField.fields(of: entity, includesObjectID: !parsed.flags.contains("--no-object-id"))
        var builders: [ExportRecordBuilder] = []
        var rows: [ExportedRow] = []
        let members =
            [entity] + contents.schema.filter { $0 !== entity && descends($0, from: entity, in: contents.schema) }
        for member in members {
            let builder = builders.count
            builders.append(
                ExportRecordBuilder(entity: member, fields: fields, storeIdentifier: contents.metadata.storeIdentifier))
            let columns =
                entity.attributes.map { member.index(ofAttribute: $0.name) }
                + entity.relationships.map { relationship in
                    member.relationships.firstIndex { $0.name == relationship.name }.map {
                        member.attributes.count + $0
                    }
                }
            for row in (contents.rows[member.name] ?? []).sorted(by: { $0.primaryKey < $1.primaryKey }) {
                let projected =
                    member === entity
                    ? row.values
                    : columns.map { column in
                        column.flatMap { $0 < row.values.count ? row.values[$0] : nil } ?? .null
                    }
                rows.append(ExportedRow(row: row, projected: projected, builder: builder))
            }
        }
        if let filter {
            rows = rows.filter { filter.matches($0.projected) }
        }
        if let order {
            // Stable: ties keep key order.
            rows = rows.enumerated().sorted { left, right in
                if order.precedes(left.element.projected, right.element.projected) { return true }
                if order.precedes(right.element.projected, left.element.projected) { return false }
                return left.offset < right.offset
            }.map(\.element)
        }
        if rows.count > limit {
            rows.removeSubrange(limit...)
        }
        func record(_ exported: ExportedRow) -> ExportRecord {
            builders[exported.builder].record(primaryKey: exported.row.primaryKey, values: exported.row.values)
        }
        let progress = ProgressBar("export")
        defer { progress.finish() }
        guard let output else {
            try writeToStandardOutput(rows, record: record, fields: fields, formatter: formatter, progress: progress)
            return .success
        }
        let destination = URL(fileURLWithPath: output)
        do {
            let writer = try ExportWriter(destination: destination, fields: fields, formatter: formatter)
            for (index, row) in rows.enumerated() {
                try writer.write(record(row))
                if index % 4096 == 0 {
                    progress.update(index, of: rows.count)
                }
            }
            let result = try writer.finish()
            progress.finish()
            printError(
                "qd: exported \(result.recordCount) \(entityName) records (\(result.byteCount) bytes) to \(result.url.path)"
            )
        } catch let error as StoreError {
            throw ToolFailure(.failed, "cannot write \(destination.path): \(error)")
        }
        return .success
    }

    /// A row to export: the stored row, its values in the exported entity's column order, and
    /// the builder of its own entity.
    private struct ExportedRow {
        var row: StoredRow
        var projected: [StoredValue]
        var builder: Int
    }

    /// Whether `entity` inherits (directly or not) from `ancestor`, as `schema` records it.
    private static func descends(
        _ entity: EntityDescription,
        from ancestor: EntityDescription,
        in schema: [EntityDescription]
    ) -> Bool {
        var current = entity
        for _ in schema.indices {
            guard let parent = schema.first(where: { $0.name == current.superentityName }) else { return false }
            if parent === ancestor {
                return true
            }
            current = parent
        }
        return false
    }

    private static func writeToStandardOutput(
        _ rows: [ExportedRow],
        record: (ExportedRow) -> ExportRecord,
        fields: [ExportField],
        formatter: any ExportFormatter,
        progress: ProgressBar
    ) throws {
        var output = ExportOutput()
        let standardOutput = FileHandle.standardOutput
        func flush() {
            standardOutput.write(Data(output.bytes))
            output = ExportOutput()
        }
        try formatter.header(for: fields, into: &output)
        for (index, row) in rows.enumerated() {
            if index > 0 {
                formatter.delimiter(into: &output)
            }
            try formatter.record(record(row), fields: fields, into: &output)
            if output.bytes.count >= 1 << 16 {
                flush()
                progress.update(index, of: rows.count)
            }
        }
        try formatter.footer(for: fields, into: &output)
        flush()
    }
}
