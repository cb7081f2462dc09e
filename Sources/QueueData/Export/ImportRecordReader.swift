import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads the records of a file to import, a chunk at a time (memory stays flat however large the
/// file): JSON Lines lines (parsed by the importer, which knows the attributes' types), or CSV rows as fields that remember whether they were quoted (an
/// empty quoted field is an empty string, an empty unquoted one `nil`). Blank lines are
/// skipped, except in a CSV file whose header has a single column, where an empty line is a
/// record of one `nil` field.
///
/// Any bytes give records or an ``ImportError`` naming the line, never a trap.
struct ImportRecordReader {
    /// One CSV field.
    struct Field {
        var text: String
        var quoted: Bool
    }

    /// One record: its first line, and its fields (CSV) or its object (JSON Lines).
    enum Record {
        case fields(line: Int, [Field])
        case object(line: Int, [UInt8])
    }

    let url: URL
    let format: ImportFormat
    private let fileSystem: any FileSystem
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var position = 0
    private var fileOffset: Int64 = 0
    private var atEnd = false
    /// The line the next record starts on.
    private var line = 1
    /// For CSV: the number of fields of the first row, the header, once read.
    private var headerColumnCount: Int?
    private static let chunkSize = 1 << 20

    /// Opens `url`.
    ///
    /// - Throws: ``StoreError/Code/io`` when the file cannot be opened.
    init(url: URL, format: ImportFormat, fileSystem: any FileSystem = POSIXFileSystem()) throws {
        self.url = url
        self.format = format
        self.fileSystem = fileSystem
        do {
            descriptor = try fileSystem.open(url.path, flags: O_RDONLY, mode: 0)
        } catch {
            throw StoreError(
                .io, "Could not open \(url.path) to import it: \(error).", url: url, underlyingError: error)
        }
    }

    /// Closes the file.
    func close() {
        fileSystem.close(descriptor)
    }

    /// The next record, or `nil` at the end of the file.
    ///
    /// - Throws: ``ImportError/Code/malformedRecord``; ``StoreError/Code/io`` when reading fails.
    mutating func next() throws -> Record? {
        switch format.kind {
        case .jsonLines: return try nextObject()
        case .csv(let delimiter): return try nextRow(delimiter: delimiter)
        }
    }

    private func malformed(_ message: String, line: Int) -> ImportError {
        ImportError(.malformedRecord, message, url: url, line: line)
    }

    /// Reads another chunk into the buffer, dropping what was consumed; `false` at the end.
    private mutating func fill() throws -> Bool {
        guard !atEnd else { return false }
        if position > 0 {
            buffer.removeSubrange(0..<position)
            position = 0
        }
        let (fileSystem, descriptor, offset, path) = (self.fileSystem, self.descriptor, fileOffset, url.path)
        let chunk: [UInt8]
        do {
            chunk = try [UInt8](unsafeUninitializedCapacity: Self.chunkSize) { bytes, initialized in
                initialized = try fileSystem.read(
                    descriptor, into: UnsafeMutableRawBufferPointer(bytes), at: offset, path: path)
            }
        } catch {
            throw StoreError(.io, "Could not read \(url.path): \(error).", url: url, underlyingError: error)
        }
        let count = chunk.count
        buffer.append(contentsOf: chunk)
        fileOffset += Int64(count)
        if count == 0 {
            atEnd = true
        }
        return count > 0
    }

    // MARK: JSON Lines

    private mutating func nextObject() throws -> Record? {
        while true {
            if position == buffer.count {
                guard try fill() else { return nil }
            }
            // Find the end of the line, reading more as needed.
            var searchFrom = position
            var end: Int
            while true {
                if let newline = buffer[searchFrom...].firstIndex(of: 0x0A) {
                    end = newline
                    break
                }
                let scanned = buffer.count - position
                guard try fill() else {
                    end = buffer.count
                    break
                }
                searchFrom = position + scanned
            }
            let lineNumber = line
            let bytes = buffer[position..<end]
            position = Swift.min(end + 1, buffer.count)
            line += 1
            var content = bytes
            if content.last == 0x0D {
                content = content.dropLast()
            }
            if content.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                continue
            }
            let object = Array(content)
            return .object(line: lineNumber, object)
        }
    }

    // MARK: CSV

    private mutating func nextRow(delimiter: UInt8) throws -> Record? {
        while true {
            if position == buffer.count {
                guard try fill() else { return nil }
            }
            switch try parseRow(delimiter: delimiter) {
            case .complete(let fields, let consumed, let lines):
                let lineNumber = line
                position = consumed
                line += lines
                if fields.count == 1 && fields[0].text.isEmpty && !fields[0].quoted && headerColumnCount != 1 {
                    continue  // A blank line.
                }
                // With a single column, an empty line is a record whose one field is nil: how an
                // export writes it, so it must read back.
                if headerColumnCount == nil {
                    headerColumnCount = fields.count
                }
                return .fields(line: lineNumber, fields)
            case .needsMore:
                // At the end of the file, the row is parsed again as the last one.
                _ = try fill()
            }
        }
    }

    private enum RowParse {
        case complete([Field], consumed: Int, lines: Int)
        case needsMore
    }

    /// Parses the row at `position`; `.needsMore` if the buffer ends before it does (and the
    /// file has more).
    private func parseRow(delimiter: UInt8) throws -> RowParse {
        var fields: [Field] = []
        var index = position
        var lines = 0
        var field: [UInt8] = []
        func finish(_ bytes: [UInt8], quoted: Bool) throws -> Field {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw malformed("A field is not valid UTF-8.", line: line + lines)
            }
            return Field(text: text, quoted: quoted)
        }
        while true {
            // The start of a field.
            field.removeAll(keepingCapacity: true)
            if index < buffer.count, buffer[index] == UInt8(ascii: "\"") {
                index += 1
                while true {
                    guard index < buffer.count else {
                        if atEnd {
                            throw malformed(
                                "The file ends inside a quoted field: a closing quote is missing.", line: line)
                        }
                        return .needsMore
                    }
                    let byte = buffer[index]
                    if byte == UInt8(ascii: "\"") {
                        if index + 1 < buffer.count, buffer[index + 1] == UInt8(ascii: "\"") {
                            field.append(byte)
                            index += 2
                            continue
                        }
                        if index + 1 == buffer.count && !atEnd {
                            return .needsMore
                        }
                        index += 1
                        break
                    }
                    if byte == 0x0A {
                        lines += 1
                    }
                    field.append(byte)
                    index += 1
                }
                fields.append(try finish(field, quoted: true))
                guard index < buffer.count else {
                    if atEnd {
                        return .complete(fields, consumed: index, lines: lines + 1)
                    }
                    return .needsMore
                }
                let next = buffer[index]
                if next == delimiter {
                    index += 1
                    continue
                }
                if next == 0x0A {
                    return .complete(fields, consumed: index + 1, lines: lines + 1)
                }
                if next == 0x0D {
                    guard index + 1 < buffer.count || atEnd else { return .needsMore }
                    let skip = index + 1 < buffer.count && buffer[index + 1] == 0x0A ? 2 : 1
                    return .complete(fields, consumed: index + skip, lines: lines + 1)
                }
                throw malformed(
                    "A quoted field is followed by text instead of a delimiter or the end of the row; "
                        + "quotes inside a field must be doubled.", line: line + lines)
            }
            while index < buffer.count {
                let byte = buffer[index]
                if byte == delimiter || byte == 0x0A || byte == 0x0D {
                    break
                }
                if byte == UInt8(ascii: "\"") {
                    throw malformed(
                        "A quote appears inside an unquoted field; quote the field and double its quotes.",
                        line: line + lines)
                }
                field.append(byte)
                index += 1
            }
            guard index < buffer.count else {
                if atEnd {
                    fields.append(try finish(field, quoted: false))
                    return .complete(fields, consumed: index, lines: lines + 1)
                }
                return .needsMore
            }
            fields.append(try finish(field, quoted: false))
            let byte = buffer[index]
            if byte == delimiter {
                index += 1
                continue
            }
            if byte == 0x0A {
                return .complete(fields, consumed: index + 1, lines: lines + 1)
            }
            guard index + 1 < buffer.count || atEnd else { return .needsMore }
            let skip = index + 1 < buffer.count && buffer[index + 1] == 0x0A ? 2 : 1
            return .complete(fields, consumed: index + skip, lines: lines + 1)
        }
    }
}
