import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes records through an ``ExportFormatter`` to a file, atomically: the bytes stream to a
/// temporary file beside the destination (64 KiB at a time, so memory stays flat however many
/// records there are), which ``finish()`` synchronizes and renames over the destination, then
/// synchronizes the directory. Until then the destination is untouched, and a failure, a
/// ``cancel()`` or a crash never leaves a partial file under its name.
///
/// The exports of ``ManagedObjectContext`` use one; use one directly to export records you
/// build yourself. Not `Sendable`: use it from one queue at a time.
public final class ExportWriter {
    /// The fields of every record.
    public let fields: [ExportField]
    /// Where the file goes once finished.
    public let destination: URL
    /// How many records were written so far.
    public private(set) var recordCount = 0

    private let formatter: any ExportFormatter
    private let fileSystem: any FileSystem
    private let directory: String
    private var temporary: (path: String, descriptor: Int32)?
    private var output = ExportOutput()
    private var written: Int64 = 0
    private static let chunkSize = 64 * 1024

    /// Starts an export to `destination`: creates the temporary file and writes the header.
    ///
    /// - Throws: ``StoreError/Code/io`` when the temporary file cannot be created beside
    ///   `destination` (a missing directory, permissions); what the formatter's header throws.
    public convenience init(destination: URL, fields: [ExportField], formatter: any ExportFormatter) throws {
        try self.init(destination: destination, fields: fields, formatter: formatter, fileSystem: POSIXFileSystem())
    }

    init(destination: URL, fields: [ExportField], formatter: any ExportFormatter, fileSystem: any FileSystem) throws {
        self.fields = fields
        self.destination = destination.standardizedFileURL
        self.formatter = formatter
        self.fileSystem = fileSystem
        self.directory = self.destination.deletingLastPathComponent().path
        do {
            // The export is the user's file, not the store's: the usual 0666 & ~umask.
            temporary = try fileSystem.createTemporaryFile(beside: self.destination.path, mode: 0o666)
        } catch {
            throw Self.ioError(error, "create a temporary file beside \(self.destination.path)", self.destination)
        }
        do {
            try formatter.header(for: fields, into: &output)
            try flushIfNeeded()
        } catch {
            cancel()
            throw error
        }
    }

    deinit {
        cancel()
    }

    /// Writes one record (after the formatter's delimiter, from the second record on).
    ///
    /// - Throws: What the formatter throws; ``StoreError/Code/io`` when the write failed. The
    ///   export is cancelled then.
    public func write(_ record: ExportRecord) throws {
        guard temporary != nil else {
            preconditionFailure("QueueData: ExportWriter.write(_:) after finish() or cancel(); start a new writer.")
        }
        do {
            if recordCount > 0 {
                formatter.delimiter(into: &output)
            }
            try formatter.record(record, fields: fields, into: &output)
            recordCount += 1
            try flushIfNeeded()
        } catch {
            cancel()
            throw error
        }
    }

    /// Writes the footer, synchronizes the file and renames it over ``destination``, then
    /// synchronizes the directory: the file is complete and durable under its name.
    ///
    /// - Throws: What the formatter's footer throws; ``StoreError/Code/io``. The destination is
    ///   untouched then.
    public func finish() throws -> ExportResult {
        guard let temporary else {
            preconditionFailure("QueueData: ExportWriter.finish() after finish() or cancel(); start a new writer.")
        }
        do {
            try formatter.footer(for: fields, into: &output)
            try flush()
            try fileSystem.synchronize(temporary.descriptor, path: temporary.path)
        } catch {
            cancel()
            throw error is StoreError ? error : Self.ioError(error, "write \(temporary.path)", destination)
        }
        fileSystem.close(temporary.descriptor)
        self.temporary = nil
        do {
            try fileSystem.moveIntoPlace(temporary.path, over: destination.path, directory: directory)
        } catch {
            throw Self.ioError(error, "move the export into place", destination)
        }
        return ExportResult(url: destination, recordCount: recordCount, byteCount: written)
    }

    /// Abandons the export: removes the temporary file, leaving the destination as it was.
    /// Does nothing once finished.
    public func cancel() {
        guard let temporary else { return }
        self.temporary = nil
        fileSystem.close(temporary.descriptor)
        try? fileSystem.remove(temporary.path)
    }

    private func flushIfNeeded() throws {
        if output.bytes.count >= Self.chunkSize {
            try flush()
        }
    }

    private func flush() throws {
        guard let temporary, !output.bytes.isEmpty else { return }
        do {
            try output.bytes.withUnsafeBytes {
                try fileSystem.writeAll(temporary.descriptor, $0, at: written, path: temporary.path)
            }
        } catch {
            throw Self.ioError(error, "write \(temporary.path)", destination)
        }
        written += Int64(output.bytes.count)
        output.bytes.removeAll(keepingCapacity: true)
    }

    private static func ioError(_ error: any Error, _ doing: String, _ url: URL) -> StoreError {
        if let error = error as? StoreError {
            return error
        }
        return StoreError(
            .io, "Could not \(doing): \(error). Check that the directory exists and is writable.", url: url,
            underlyingError: error)
    }
}
