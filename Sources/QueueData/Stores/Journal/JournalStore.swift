import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The default store: an append-only journal at `<directory>/<name>.journal`.
///
/// The file starts with a header and a snapshot record (schema, metadata and every row);
/// each save appends one checksummed record and returns after `fdatasync`. Opening reads the
/// snapshot and replays the records after it. Save cost is proportional to the change, not
/// the store. When the log outgrows the live data (more than 1 MiB and more than twice the
/// estimated snapshot size) the store compacts itself: a new file with one snapshot record
/// replaces the old one atomically. See the "Journal Format" article.
///
/// Recovery:
/// - A torn tail (the writer died mid-append: invalid bytes run to the end of the file, with
///   no valid record after them) is copied aside to `<name>.journal.torn-<timestamp>`, the
///   file is truncated to its valid prefix and synchronized, and the store opens with every
///   save before the tear.
/// - Corruption followed by valid records is not a tear: opening throws
///   ``StoreError/Code/corrupted`` with the offset, and the file is left untouched.
/// - After a failed write or `fdatasync`, the store refuses further commits until it is
///   reopened: a retried `fsync` may report success without the data on disk.
public final class JournalStore: PersistentStore {
    /// The journal file.
    public var url: URL { files.url }

    /// The error of the last automatic compaction, if it failed. The saves themselves were
    /// durable; the journal keeps growing until a compaction succeeds.
    public private(set) var lastCompactionError: StoreError?

    let files: StoreFiles
    private let seedStoreURL: URL?
    private var fileSystem: any FileSystem { files.fileSystem }

    // Open state.
    private var lockDescriptor: Int32?
    private var descriptor: Int32?
    private var header: JournalFormat.Header?
    private var endOffset: Int64 = 0
    private var nextSequence: UInt64 = 0
    private var mapping: JournalPayload.SchemaMapping?
    private var failure: StoreError?
    // What the compaction estimate needs.
    private var snapshotBytes = 0
    private var snapshotRows = 0
    private var insertBytesSinceSnapshot = 0
    private var insertedRowsSinceSnapshot = 0

    /// The file extension: `journal`.
    public static let fileExtension = "journal"

    /// A journal store at `<directory>/<name>.journal`.
    ///
    /// - Parameters:
    ///   - directory: The directory of the store's files; created (mode 0700) if missing.
    ///   - name: The store's name: a file name, without `/`.
    ///   - seedStoreURL: A journal to copy in when the store does not exist yet.
    /// - Throws: ``StoreError/Code/invalidConfiguration`` for a name that would escape the
    ///   directory.
    public convenience init(directory: URL, name: String, seedStoreURL: URL? = nil) throws {
        try self.init(directory: directory, name: name, seedStoreURL: seedStoreURL, fileSystem: POSIXFileSystem())
    }

    init(directory: URL, name: String, seedStoreURL: URL?, fileSystem: any FileSystem) throws {
        self.files = try StoreFiles(
            directory: directory, name: name, fileExtension: Self.fileExtension, fileSystem: fileSystem)
        self.seedStoreURL = seedStoreURL
    }

    deinit {
        close()
    }

    // MARK: Opening

    /// Opens the journal (creating it, or copying the seed in), recovers a torn tail, and
    /// returns every committed row.
    ///
    /// - Throws: ``StoreError``: `.locked` if open elsewhere; `.unsupportedFormat` if the file
    ///   is not a journal or was written by a newer version; `.corrupted` with the offset;
    ///   `.incompatibleModel` listing the differences; `.io`. The journal is not modified by
    ///   a failed open.
    public func open(for model: ManagedObjectModel) throws -> StoreContents {
        guard lockDescriptor == nil else {
            throw StoreError(.locked, "The journal is already open.", url: url)
        }
        let lock = try files.acquireLock()
        do {
            let contents = try openLocked(for: model)
            lockDescriptor = lock
            return contents
        } catch {
            fileSystem.close(lock)
            throw error
        }
    }

    private func openLocked(for model: ManagedObjectModel) throws -> StoreContents {
        try files.removeStaleTemporaryFiles()
        var installedSeed = false
        if !files.exists {
            installedSeed = try files.installSeed(seedStoreURL)
            if !installedSeed {
                try create(for: model)
            }
        }
        do {
            return try load(for: model)
        } catch {
            if installedSeed {
                files.removeInstalledSeed()
            }
            throw error
        }
    }

    /// Writes a new journal: a header and an empty snapshot, atomically.
    private func create(for model: ManagedObjectModel) throws {
        let metadata = StoreMetadata(storeIdentifier: UUID(), versionHash: model.versionHash)
        let header = JournalFormat.Header(
            storeIdentifier: metadata.storeIdentifier, epoch: .random(in: 0...UInt64.max), baseSequence: 1)
        let payload = JournalPayload.encodeSnapshot(
            metadata: metadata, schema: model.entities, rowCount: { _ in 0 }, forEachRow: { _, _ in })
        let bytes =
            header.encoded()
            + JournalFormat.encodeRecord(type: .snapshot, sequence: 1, epoch: header.epoch, payload: payload)
        do {
            try bytes.withUnsafeBytes {
                try fileSystem.replaceAtomically(files.path, directory: files.directory, with: $0)
            }
        } catch {
            throw files.ioError(error, "create the journal")
        }
    }

    private func load(for model: ManagedObjectModel) throws -> StoreContents {
        let bytes: [UInt8]
        do {
            bytes = try fileSystem.readFile(files.path)
        } catch {
            throw files.ioError(error, "read the journal")
        }
        let parsed = try bytes.withUnsafeBytes { try parse($0) }
        let snapshot = parsed.snapshot

        // Decide about the model before writing anything.
        guard snapshot.metadata.versionHash == model.versionHash else {
            throw SchemaComparison.incompatibleModelError(
                stored: snapshot.schema, storedHash: snapshot.metadata.versionHash, model: model, url: url)
        }
        if let tornOffset = parsed.tornOffset {
            try moveTornTailAside(bytes, from: tornOffset)
        }
        do {
            descriptor = try fileSystem.open(files.path, flags: O_RDWR, mode: 0)
        } catch {
            throw files.ioError(error, "open the journal for writing")
        }
        header = parsed.header
        endOffset = Int64(parsed.validLength)
        nextSequence = parsed.nextSequence
        mapping = JournalPayload.SchemaMapping(schema: snapshot.schema, model: model)
        failure = nil
        snapshotBytes = parsed.snapshotBytes
        snapshotRows = parsed.snapshotRows
        insertBytesSinceSnapshot = 0
        insertedRowsSinceSnapshot = 0

        var rows: [String: [StoredRow]] = [:]
        for (index, entity) in snapshot.schema.enumerated() {
            rows[entity.name] = snapshot.rows[index].map { StoredRow(primaryKey: $0.key, values: $0.value) }
        }
        return StoreContents(metadata: snapshot.metadata, schema: snapshot.schema, rows: rows)
    }

    /// What a journal holds, and where its valid prefix ends.
    private struct Parsed {
        var header: JournalFormat.Header
        var snapshot: JournalPayload.Snapshot
        var validLength: Int
        var tornOffset: Int?
        var nextSequence: UInt64
        var snapshotBytes: Int
        var snapshotRows: Int
    }

    private func parse(_ bytes: UnsafeRawBufferPointer) throws -> Parsed {
        let header: JournalFormat.Header
        do {
            header = try JournalFormat.decodeHeader(bytes)
        } catch .notAJournal {
            throw StoreError(
                .unsupportedFormat,
                "The file is not a QueueData journal (its first bytes are not the journal's magic).",
                url: url, offset: 0)
        } catch .newerVersion(let major, let minor) {
            throw StoreError(
                .unsupportedFormat,
                "The journal was written by a newer version of QueueData (format \(major).\(minor); this version "
                    + "reads \(JournalFormat.majorVersion).x). Open it with that version.", url: url, offset: 0)
        } catch .damaged(let reason) {
            throw StoreError(.corrupted, "The journal header is damaged: \(reason).", url: url, offset: 0)
        }

        var offset = JournalFormat.headerSize
        var expected = header.baseSequence
        var snapshot: JournalPayload.Snapshot?
        var snapshotBytes = 0
        var tornOffset: Int?
        while offset < bytes.count {
            guard let record = JournalFormat.record(at: offset, in: bytes, epoch: header.epoch),
                record.sequence == expected
            else {
                if let valid = firstValidRecord(after: offset, in: bytes, epoch: header.epoch) {
                    throw StoreError(
                        .corrupted,
                        "The journal is damaged at offset \(offset): the record there is invalid, but a valid record "
                            + "follows at offset \(valid). This is not a torn write; the file was left untouched. "
                            + "Restore a backup, or copy the file aside and remove it to start over.",
                        url: url, offset: Int64(offset))
                }
                tornOffset = offset
                break
            }
            var reader = BinaryReader(
                UnsafeRawBufferPointer(rebasing: bytes[record.payload]), baseOffset: Int64(record.payload.lowerBound))
            do {
                if var current = snapshot {
                    guard record.type == .changes else {
                        throw reader.error("a snapshot record follows the first record")
                    }
                    // Take the rows out, so that applying the changes does not copy them.
                    snapshot = nil
                    try JournalPayload.applyChanges(
                        &reader, schema: current.schema, to: &current.rows,
                        nextPrimaryKeys: &current.metadata.nextPrimaryKeys)
                    snapshot = current
                } else {
                    guard record.type == .snapshot else {
                        throw reader.error("the first record is not a snapshot")
                    }
                    snapshot = try JournalPayload.decodeSnapshot(&reader)
                    snapshotBytes = record.payload.count
                }
            } catch let error as BinaryDecodingError {
                throw StoreError(
                    .corrupted, "The journal's record \(expected) is malformed: \(error.message).", url: url,
                    offset: error.offset)
            }
            expected += 1
            offset = record.end
        }
        guard let snapshot else {
            throw StoreError(
                .corrupted, "The journal has no valid snapshot record after its header.", url: url,
                offset: Int64(JournalFormat.headerSize))
        }
        guard snapshot.metadata.storeIdentifier == header.storeIdentifier,
            (try? ManagedObjectModel(entities: snapshot.schema).versionHash) == snapshot.metadata.versionHash
        else {
            throw StoreError(
                .corrupted, "The journal's snapshot disagrees with its header or its own schema.", url: url,
                offset: Int64(JournalFormat.headerSize))
        }
        return Parsed(
            header: header, snapshot: snapshot, validLength: offset, tornOffset: tornOffset, nextSequence: expected,
            snapshotBytes: snapshotBytes, snapshotRows: snapshot.rows.reduce(0) { $0 + $1.count })
    }

    /// The offset of the first intact record of this file after `offset`, whatever its
    /// sequence number.
    private func firstValidRecord(after offset: Int, in bytes: UnsafeRawBufferPointer, epoch: UInt64) -> Int? {
        var candidate = offset + 1
        while candidate + JournalFormat.recordHeaderSize <= bytes.count {
            if JournalFormat.record(at: candidate, in: bytes, epoch: epoch) != nil {
                return candidate
            }
            candidate += 1
        }
        return nil
    }

    /// Copies the torn bytes to `<name>.journal.torn-<timestamp>`, then truncates the journal
    /// to its valid prefix, durably, before anything is appended.
    private func moveTornTailAside(_ bytes: [UInt8], from offset: Int) throws {
        let asidePath = files.asidePath("torn")
        do {
            let aside = try fileSystem.open(asidePath, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            do {
                try bytes.withUnsafeBytes { buffer in
                    try fileSystem.writeAll(
                        aside, UnsafeRawBufferPointer(rebasing: buffer[offset...]), at: 0, path: asidePath)
                }
                try fileSystem.synchronize(aside, path: asidePath)
            } catch {
                fileSystem.close(aside)
                throw error
            }
            fileSystem.close(aside)
            try fileSystem.synchronizeDirectory(files.directory)
            let journal = try fileSystem.open(files.path, flags: O_RDWR, mode: 0)
            defer { fileSystem.close(journal) }
            try fileSystem.truncate(journal, to: Int64(offset), path: files.path)
            try fileSystem.synchronize(journal, path: files.path)
        } catch {
            throw files.ioError(error, "set the journal's torn tail aside (at offset \(offset))")
        }
    }

    // MARK: Committing

    /// Appends the change set as one record and returns after `fdatasync`.
    ///
    /// - Throws: ``StoreError``: `.io` when the write or the sync failed (the store then refuses
    ///   commits until reopened), `.closed` when the store is closed or refusing commits.
    public func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        guard let descriptor, let header, let mapping else {
            throw StoreError(.closed, "The journal is closed.", url: url)
        }
        if let failure {
            throw StoreError(
                .closed, "The journal refuses commits after a failed write; reopen the store. (\(failure.message))",
                url: url, underlyingError: failure)
        }
        let payload = JournalPayload.encodeChanges(changes, mapping: mapping)
        let record = JournalFormat.encodeRecord(
            type: .changes, sequence: nextSequence, epoch: header.epoch, payload: payload)
        do {
            try record.withUnsafeBytes { try fileSystem.writeAll(descriptor, $0, at: endOffset, path: files.path) }
            try fileSystem.synchronizeData(descriptor, path: files.path)
        } catch {
            let error = files.ioError(error, "append to the journal")
            failure = error
            throw error
        }
        endOffset += Int64(record.count)
        nextSequence += 1
        let inserted = changes.entities.reduce(0) { $0 + $1.inserted.count }
        if inserted > 0 {
            insertedRowsSinceSnapshot += inserted
            insertBytesSinceSnapshot += payload.count
        }
        if shouldCompact(resultingState) {
            do {
                try compact(resultingState)
                lastCompactionError = nil
            } catch {
                // The save is durable; a failed compaction only means the log keeps growing.
                lastCompactionError = error as? StoreError ?? files.ioError(error, "compact the journal")
            }
        }
    }

    /// Whether the log has outgrown the live data: more than 1 MiB, and more than twice the
    /// estimated size of a snapshot of the current rows.
    private func shouldCompact(_ state: StoreState) -> Bool {
        guard endOffset > 1 << 20 else { return false }
        let rows = state.entities.indices.reduce(0) { $0 + state.rowCount(ofEntityAt: $1) }
        let knownRows = snapshotRows + insertedRowsSinceSnapshot
        let averageRowSize = knownRows > 0 ? Double(snapshotBytes + insertBytesSinceSnapshot) / Double(knownRows) : 64
        let liveEstimate = averageRowSize * Double(rows) + 4096
        return Double(endOffset) > 2 * liveEstimate
    }

    // MARK: Compacting

    /// Rewrites the journal as one snapshot record of `state`, atomically: a new file is
    /// written and synchronized, renamed over the journal, and the directory synchronized. A
    /// crash at any point leaves either the old journal or the new one, both complete.
    ///
    /// - Throws: ``StoreError``. If the rename happened but its durability is unknown, the
    ///   store refuses commits until reopened.
    public func compact(_ state: StoreState) throws {
        guard let descriptor, let header else {
            throw StoreError(.closed, "The journal is closed.", url: url)
        }
        if let failure {
            throw StoreError(
                .closed, "The journal refuses writes after a failed write; reopen the store.", url: url,
                underlyingError: failure)
        }
        let newHeader = JournalFormat.Header(
            storeIdentifier: header.storeIdentifier, epoch: .random(in: 0...UInt64.max), baseSequence: nextSequence)
        let payload = JournalPayload.encodeSnapshot(
            metadata: state.metadata, schema: state.entities, rowCount: state.rowCount(ofEntityAt:),
            forEachRow: { index, body in state.forEachRow(ofEntityAt: index, body) })
        let bytes =
            newHeader.encoded()
            + JournalFormat.encodeRecord(
                type: .snapshot, sequence: nextSequence, epoch: newHeader.epoch, payload: payload)

        let temporary = "\(files.path)\(temporarySuffix)\(UInt64.random(in: 0...UInt64.max).hexadecimalString)"
        do {
            let output = try fileSystem.open(temporary, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            do {
                try bytes.withUnsafeBytes { try fileSystem.writeAll(output, $0, at: 0, path: temporary) }
                try fileSystem.synchronize(output, path: temporary)
            } catch {
                fileSystem.close(output)
                throw error
            }
            fileSystem.close(output)
            try fileSystem.rename(temporary, to: files.path)
        } catch {
            // The old journal is untouched and still the store.
            try? fileSystem.remove(temporary)
            throw files.ioError(error, "write the compacted journal")
        }
        // The journal's name now points to the new file.
        do {
            let newDescriptor = try fileSystem.open(files.path, flags: O_RDWR, mode: 0)
            fileSystem.close(descriptor)
            self.descriptor = newDescriptor
            try fileSystem.synchronizeDirectory(files.directory)
        } catch {
            let error = files.ioError(error, "switch to the compacted journal")
            failure = error
            throw error
        }
        self.header = newHeader
        endOffset = Int64(bytes.count)
        nextSequence += 1
        mapping = JournalPayload.SchemaMapping(
            schema: state.entities, model: try ManagedObjectModel(entities: state.entities))
        snapshotBytes = payload.count
        snapshotRows = state.entities.indices.reduce(0) { $0 + state.rowCount(ofEntityAt: $1) }
        insertBytesSinceSnapshot = 0
        insertedRowsSinceSnapshot = 0
    }

    // MARK: Closing

    /// Closes the journal and releases its lock.
    public func close() {
        if let descriptor {
            fileSystem.close(descriptor)
        }
        if let lockDescriptor {
            fileSystem.close(lockDescriptor)
        }
        descriptor = nil
        lockDescriptor = nil
        header = nil
        mapping = nil
    }
}
