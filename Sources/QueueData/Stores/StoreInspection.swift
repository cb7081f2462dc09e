import Foundation

/// Everything a store file holds and every problem it has, read without a model, without the
/// lock and without writing anything: what `qd inspect` and `qd verify` print.
///
/// Reading works while an app has the store open: a journal's records are appended and a JSON
/// document is replaced atomically, so the bytes read are a committed prefix (a record being
/// appended reads as a torn tail).
@_spi(StoreTool)
public struct StoreInspection: Sendable {
    /// The kind of store file.
    public enum Format: String, Sendable {
        case journal
        case jsonFile = "json"
    }

    /// One problem, with its place in the file.
    public struct Problem: Sendable {
        /// The byte offset, when known.
        public var offset: Int64?
        /// For the JSON document: the line of the offset.
        public var line: Int?
        /// What is wrong, and what to do.
        public var message: String
        /// `true` for what the store recovers from by itself (a torn tail): not unsound.
        public var isWarning: Bool
    }

    /// One record of a journal.
    public struct Record: Sendable {
        /// Where it starts.
        public var offset: Int64
        /// `snapshot` or `changes`.
        public var type: String
        /// Its sequence number.
        public var sequence: UInt64
        /// Its payload's length in bytes.
        public var payloadLength: Int
    }

    /// The store file.
    public let url: URL
    /// Its format.
    public let format: Format
    /// The format version the file declares (`major.minor` for a journal).
    public let formatVersion: String?
    /// The file's size in bytes.
    public let fileSize: Int64
    /// What the store holds: its committed contents (a journal's valid prefix); `nil` when
    /// unreadable.
    public let contents: StoreContents?
    /// For a journal: its valid records, in file order.
    public let records: [Record]
    /// For a journal: where a torn tail starts, and its length (set aside at the next open).
    public let tornTail: (offset: Int64, length: Int64)?
    /// Every problem found; empty for a sound store.
    public let problems: [Problem]
    /// For a journal: where the first damaged (or out-of-sequence) record starts. ``contents``
    /// holds the records before it; the valid records after it are listed in ``records`` but
    /// not read (opening the store fails there). `nil` when there is no such damage.
    public var damageOffset: Int64? = nil

    /// Whether the store has no problem that is not a warning.
    public var isSound: Bool { !problems.contains { !$0.isWarning } }

    /// Reads and checks the store file at `url`: framing, checksums and sequence numbers of
    /// every journal record, the JSON document's grammar, then every row's values, every
    /// relationship's references and inverses, the primary-key counters, and the uniqueness
    /// constraints the store records.
    ///
    /// - Throws: ``StoreError/Code/io`` when the file cannot be read;
    ///   ``StoreError/Code/unsupportedFormat`` when it is neither a journal nor a JSON store.
    public static func inspect(_ url: URL) throws -> StoreInspection {
        let fileSystem = POSIXFileSystem()
        let bytes: [UInt8]
        do {
            bytes = try fileSystem.readFile(url.path)
        } catch {
            throw StoreError(
                .io, "Could not read \(url.path): \(error). Check the path and its permissions.", url: url,
                underlyingError: error)
        }
        if bytes.starts(with: JournalFormat.magic) {
            return inspectJournal(bytes, url: url)
        }
        if bytes.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) == UInt8(ascii: "{") {
            return inspectDocument(bytes, url: url)
        }
        throw StoreError(
            .unsupportedFormat,
            "\(url.path) is neither a QueueData journal nor a JSON store (its first bytes are neither the journal's "
                + "magic nor '{').", url: url, offset: 0)
    }

    /// The committed contents of the store file at `url`, decoded without the checks of
    /// ``inspect(_:)`` (for reading every row, as `qd export` does): a journal's valid prefix,
    /// or the JSON document.
    ///
    /// - Throws: ``StoreError``: `.io`, `.unsupportedFormat`, `.corrupted` with the offset.
    public static func contents(of url: URL) throws -> StoreContents {
        let bytes: [UInt8]
        do {
            bytes = try POSIXFileSystem().readFile(url.path)
        } catch {
            throw StoreError(
                .io, "Could not read \(url.path): \(error). Check the path and its permissions.", url: url,
                underlyingError: error)
        }
        if bytes.starts(with: JournalFormat.magic) {
            let parsed = try bytes.withUnsafeBytes { try JournalStore.parse($0, url: url) }
            return JournalStore.contents(of: parsed.snapshot, bytes: bytes, url: url)
        }
        return try JSONFileStore.decode(bytes, url: url)
    }

    // MARK: Journal

    private static func inspectJournal(_ bytes: [UInt8], url: URL) -> StoreInspection {
        var problems: [Problem] = []
        var records: [Record] = []
        var torn: (Int64, Int64)?
        var version: String?
        let decoded = bytes.withUnsafeBytes { buffer in
            Result { () throws(JournalFormat.HeaderProblem) in try JournalFormat.decodeHeader(buffer) }
        }
        let header: JournalFormat.Header
        switch decoded {
        case .success(let value):
            header = value
            version = "\(header.majorVersion).\(header.minorVersion)"
        case .failure(let error):
            let reason: String
            switch error {
            case .notAJournal: reason = "the file is not a journal"
            case .newerVersion(let major, let minor):
                reason = "the journal was written by a newer format (\(major).\(minor)); use a newer qd"
            case .damaged(let why): reason = "the header is damaged: \(why)"
            }
            problems.append(Problem(offset: 0, line: nil, message: reason, isWarning: false))
            return StoreInspection(
                url: url, format: .journal, formatVersion: nil, fileSize: Int64(bytes.count), contents: nil,
                records: [], tornTail: nil, problems: problems)
        }
        // Framing: every record's length, type, epoch, checksum and sequence, past any damage.
        var firstDamage: Int?
        bytes.withUnsafeBytes { buffer in
            var offset = JournalFormat.headerSize
            var expected = header.baseSequence
            while offset < buffer.count {
                if let record = JournalFormat.record(at: offset, in: buffer, epoch: header.epoch) {
                    if record.sequence != expected {
                        problems.append(
                            Problem(
                                offset: Int64(offset), line: nil,
                                message:
                                    "record sequence number \(record.sequence), expected \(expected): a record is "
                                    + "missing or out of place", isWarning: false))
                        firstDamage = firstDamage ?? offset
                    }
                    records.append(
                        Record(
                            offset: Int64(offset), type: record.type == .snapshot ? "snapshot" : "changes",
                            sequence: record.sequence, payloadLength: record.payload.count))
                    expected = record.sequence &+ 1
                    offset = record.end
                    continue
                }
                var next = offset + 1
                while next + JournalFormat.recordHeaderSize <= buffer.count,
                    JournalFormat.record(at: next, in: buffer, epoch: header.epoch) == nil
                {
                    next += 1
                }
                if next + JournalFormat.recordHeaderSize > buffer.count {
                    torn = (Int64(offset), Int64(buffer.count - offset))
                    problems.append(
                        Problem(
                            offset: Int64(offset), line: nil,
                            message:
                                "torn tail: \(buffer.count - offset) bytes of an unfinished append (the writer "
                                + "stopped mid-write); the next open sets them aside and keeps every record before",
                            isWarning: true))
                    break
                }
                problems.append(
                    Problem(
                        offset: Int64(offset), line: nil,
                        message:
                            "damaged record (\(diagnose(offset, buffer, epoch: header.epoch))), followed by a valid "
                            + "record at offset \(next): not a torn write; opening the store fails here",
                        isWarning: false))
                firstDamage = firstDamage ?? offset
                offset = next
            }
        }
        // Contents: the records replayed, up to the first damage.
        var contents: StoreContents?
        let prefix = firstDamage.map { Array(bytes[..<$0]) } ?? bytes
        do {
            let parsed = try prefix.withUnsafeBytes { try JournalStore.parse($0, url: url) }
            contents = JournalStore.contents(of: parsed.snapshot, bytes: prefix, url: url)
        } catch let error as StoreError {
            problems.append(Problem(offset: error.offset, line: nil, message: error.message, isWarning: false))
        } catch {
            problems.append(Problem(offset: nil, line: nil, message: "\(error)", isWarning: false))
        }
        if let contents {
            problems += check(contents, url: url)
        }
        return StoreInspection(
            url: url, format: .journal, formatVersion: version, fileSize: Int64(bytes.count), contents: contents,
            records: records, tornTail: torn, problems: problems, damageOffset: firstDamage.map(Int64.init))
    }

    /// Why the bytes at `offset` are not a record of this journal.
    private static func diagnose(_ offset: Int, _ bytes: UnsafeRawBufferPointer, epoch: UInt64) -> String {
        guard bytes.count - offset >= JournalFormat.recordHeaderSize else { return "a truncated record header" }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
        guard length <= bytes.count - offset - JournalFormat.recordHeaderSize else {
            return "its length \(length) runs past the end of the file"
        }
        guard JournalFormat.RecordType(rawValue: bytes[offset + 8]) != nil else {
            return "unknown record type \(bytes[offset + 8])"
        }
        let epochLow = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
        guard epochLow == UInt32(truncatingIfNeeded: epoch) else { return "the epoch is not this file's" }
        return "the checksum does not match"
    }

    // MARK: JSON document

    private static func inspectDocument(_ bytes: [UInt8], url: URL) -> StoreInspection {
        var problems: [Problem] = []
        var contents: StoreContents?
        var version: String?
        do {
            contents = try JSONFileStore.decode(bytes, url: url)
            version = bytes.withUnsafeBytes { buffer in
                (try? JSONDocumentReader.read(buffer)).map { String($0.formatVersion) }
            }
        } catch let error as StoreError {
            problems.append(Problem(offset: error.offset, line: error.line, message: error.message, isWarning: false))
        } catch {
            problems.append(Problem(offset: nil, line: nil, message: "\(error)", isWarning: false))
        }
        if let contents {
            problems += check(contents, url: url)
        }
        return StoreInspection(
            url: url, format: .jsonFile, formatVersion: version, fileSize: Int64(bytes.count), contents: contents,
            records: [], tornTail: nil, problems: problems)
    }

    // MARK: Rows

    /// Every problem of the rows: values that do not fit their attributes, references to rows
    /// that do not exist, inverses that do not point back, counters at or below a key.
    static func check(_ contents: StoreContents, url: URL) -> [Problem] {
        var problems: [Problem] = []
        func problem(_ entity: String, _ key: Int64, _ message: String) {
            var error = StoreError(.corrupted, message, url: url)
            contents.rowLocator?.locate(&error, entity, key)
            problems.append(Problem(offset: error.offset, line: error.line, message: error.message, isWarning: false))
        }
        let entities = Dictionary(contents.schema.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var rowsByKey: [String: [Int64: [StoredValue]]] = [:]
        for entity in contents.schema {
            var seen = Set<Int64>()
            var byKey: [Int64: [StoredValue]] = [:]
            for row in contents.rows[entity.name] ?? [] {
                if !seen.insert(row.primaryKey).inserted {
                    problem(entity.name, row.primaryKey, "\(entity.name) row \(row.primaryKey) appears twice")
                }
                byKey[row.primaryKey] = row.values
            }
            rowsByKey[entity.name] = byKey
            if let maximum = seen.max(), (contents.metadata.nextPrimaryKeys[entity.name] ?? 1) <= maximum {
                problem(
                    entity.name, maximum,
                    "the next primary key of \(entity.name) (\(contents.metadata.nextPrimaryKeys[entity.name] ?? 1)) is "
                        + "not above its largest key \(maximum): a new object would reuse a key")
            }
        }
        for entity in contents.schema {
            for row in contents.rows[entity.name] ?? [] {
                guard row.values.count == entity.columnCount else {
                    problem(
                        entity.name, row.primaryKey,
                        "\(entity.name) row \(row.primaryKey) has \(row.values.count) values for \(entity.columnCount) columns"
                    )
                    continue
                }
                for (index, attribute) in entity.attributes.enumerated()
                where !row.values[index].fits(attribute.type, isOptional: attribute.isOptional) {
                    problem(
                        entity.name, row.primaryKey,
                        "\(entity.name) row \(row.primaryKey): \(attribute.name) holds \(row.values[index]), which is "
                            + "not a \(attribute.type.rawValue)\(attribute.isOptional ? "?" : "")")
                }
                for relationship in entity.relationships {
                    guard let column = entity.column(ofRelationship: relationship.name) else { continue }
                    let value = row.values[column]
                    let shapeIsRight: Bool
                    switch value {
                    case .null: shapeIsRight = !relationship.isToMany
                    case .integer: shapeIsRight = !relationship.isToMany
                    case .data(let data): shapeIsRight = relationship.isToMany && data.count % 8 == 0
                    default: shapeIsRight = false
                    }
                    guard shapeIsRight else {
                        problem(
                            entity.name, row.primaryKey,
                            "\(entity.name) row \(row.primaryKey): \(relationship.name) holds \(value), which is not a "
                                + (relationship.isToMany ? "list of keys" : "key"))
                        continue
                    }
                    guard let destination = entities[relationship.destinationEntityName],
                        let inverseColumn = destination.column(ofRelationship: relationship.inverseName)
                    else { continue }
                    for key in RelationshipKeys.decode(value) {
                        guard let target = rowsByKey[destination.name]?[key] else {
                            problem(
                                entity.name, row.primaryKey,
                                "\(entity.name) row \(row.primaryKey): \(relationship.name) refers to \(destination.name) "
                                    + "row \(key), which does not exist")
                            continue
                        }
                        guard inverseColumn < target.count,
                            RelationshipKeys.contains(row.primaryKey, in: target[inverseColumn])
                        else {
                            problem(
                                entity.name, row.primaryKey,
                                "\(entity.name) row \(row.primaryKey): \(relationship.name) refers to "
                                    + "\(destination.name) row \(key), whose \(relationship.inverseName) does not "
                                    + "point back")
                            continue
                        }
                    }
                }
            }
        }
        checkUniqueness(contents, problem: problem)
        return problems
    }

    /// Reports the rows that break a uniqueness constraint the store records. A constraint binds the
    /// entity declaring it and its subentities declaring it too, across all of them (as the
    /// coordinator enforces it); a row with `nil` in a constrained attribute is not bound.
    private static func checkUniqueness(_ contents: StoreContents, problem: (String, Int64, String) -> Void) {
        let schema = contents.schema
        /// The entity and its superentities, nearest first (a cycle cannot reach here: the
        /// readers refuse it; the bound only guards against a custom store's schema).
        func lineage(_ entity: EntityDescription) -> [EntityDescription] {
            var chain = [entity]
            while chain.count <= schema.count, let parent = chain.last!.superentity(in: schema) {
                chain.append(parent)
            }
            return chain
        }
        var groups: [String: (root: String, names: [String], members: [EntityDescription])] = [:]
        var order: [String] = []
        for entity in schema {
            for constraint in entity.uniquenessConstraints {
                let root = lineage(entity).last { $0.uniquenessConstraints.contains(constraint) } ?? entity
                let identifier = ([root.name] + constraint).joined(separator: "\u{0}")
                if groups[identifier] == nil {
                    groups[identifier] = (root.name, constraint, [])
                    order.append(identifier)
                }
                groups[identifier]!.members.append(entity)
            }
        }
        for identifier in order {
            let group = groups[identifier]!
            var holders: [[StoredValue]: (entity: String, key: Int64)] = [:]
            for entity in group.members {
                let columns = group.names.compactMap { entity.index(ofAttribute: $0) }
                guard columns.count == group.names.count else { continue }
                for row in (contents.rows[entity.name] ?? []).sorted(by: { $0.primaryKey < $1.primaryKey })
                where row.values.count == entity.columnCount {
                    let values = columns.map { row.values[$0] }
                    if values.contains(.null) {
                        continue
                    }
                    if let holder = holders[values] {
                        let shared = zip(group.names, values).map { "\($0) = \($1)" }.joined(separator: ", ")
                        problem(
                            entity.name, row.primaryKey,
                            "\(entity.name) row \(row.primaryKey) and \(holder.entity) row \(holder.key) share "
                                + "\(shared), which the uniqueness constraint (\(group.names.joined(separator: ", "))) "
                                + "of \(group.root) forbids")
                    } else {
                        holders[values] = (entity.name, row.primaryKey)
                    }
                }
            }
        }
    }
}
