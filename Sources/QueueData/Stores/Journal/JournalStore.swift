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
/// the store.
///
/// Group commit: saves of several contexts that arrive while an `fdatasync` is in flight are
/// appended meanwhile (in commit order) and made durable together by the next one, so
/// concurrent savers share syncs. Each `save()` still returns only once its own record is
/// durable, and no context sees a save's rows before then; a failed sync fails every save it
/// was to cover. When the log outgrows the live data (more than 1 MiB and more than twice the
/// estimated snapshot size) the store compacts itself: a new file with one snapshot record
/// replaces the old one atomically. The snapshot is written and synchronized off the saving
/// path, while saves go on appending to the old journal; the first save after it is written
/// copies the records appended meanwhile into the new file, synchronizes it and renames it
/// over the journal, so no save waits for the whole store to be written. See the "Journal
/// Format" article.
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

    /// The journal (``url``), for the coordinator's error messages.
    public var storeURL: URL? { files.url }

    /// The error of the last automatic compaction, if it failed before replacing the journal.
    /// The saves were made durable in the journal; it keeps growing until a compaction succeeds.
    /// `nil` again once one does, automatic or on demand (``compact(_:)``).
    public private(set) var lastCompactionError: StoreError?

    /// The lock, the open sequence, the refusal after a failed write or sync, migration and
    /// atomic replacement, shared with ``JSONFileStore``.
    let lifecycle: StoreFileLifecycle
    var files: StoreFiles { lifecycle.files }
    private var fileSystem: any FileSystem { files.fileSystem }

    // Open state.
    private var descriptor: Int32?
    private var header: JournalFormat.Header?
    private var endOffset: Int64 = 0
    private var nextSequence: UInt64 = 0
    private var mapping: JournalPayload.SchemaMapping?
    /// The torn bytes of a journal opened with another model, set aside when it is migrated.
    private var tornTail: (offset: Int, bytes: [UInt8])?
    // What the compaction estimate needs.
    private var snapshotBytes = 0
    private var snapshotRows = 0
    private var insertBytesSinceSnapshot = 0
    private var insertedRowsSinceSnapshot = 0
    /// Whether the snapshot records other uniqueness constraints or superentities than the
    /// model declares: the next append compacts inline, writing a snapshot that records the
    /// model's.
    private var recordsOtherModel = false
    /// The automatic compaction whose snapshot is being written, if any.
    private var compaction: JournalCompaction?
    /// Whether automatic compactions write their snapshot off the saving path (tests that count
    /// file-system operations in order turn it off, making the saving append compact inline).
    var compactsInBackground = true
    /// Where automatic compactions write their snapshot.
    private let compactionQueue = DispatchQueue(label: "QueueData.JournalStore.compaction")
    /// Entered by every snapshot write of an automatic compaction: tests wait on it (from any
    /// thread) for the write to end before the save that finishes the compaction.
    let compactionWrites = DispatchGroup()

    /// Where group commit runs its synchronizations, outside the coordinator's queue: one at a
    /// time, so that a save arriving while one is in flight waits for it and is then covered by
    /// the next. Descriptors the store stops using are closed here too, after them.
    let synchronizer = DispatchQueue(label: "QueueData.JournalStore.synchronization")
    /// The serial queue the journal's synchronizations (`fdatasync`) run on: group commit.
    public var synchronizationQueue: DispatchQueue? { synchronizer }

    /// The file extension: `journal`.
    public static let fileExtension = "journal"

    /// `true`: the journal keeps a persistent history when asked to (format 4).
    public var keepsHistory: Bool { true }

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
        self.lifecycle = try StoreFileLifecycle(
            directory: directory, name: name, fileExtension: Self.fileExtension, seedStoreURL: seedStoreURL,
            storeName: "The journal", fileSystem: fileSystem)
    }

    deinit {
        close()
    }

    // MARK: Opening

    /// Opens the journal (creating it, or copying the seed in), recovers a torn tail, and
    /// returns every committed row.
    ///
    /// A journal written with another model is returned as it is, without repairing a torn
    /// tail: the coordinator migrates it with ``replaceContents(with:keepingOriginalAs:)`` or
    /// refuses it, and until then the store refuses commits. Opening with the current model
    /// removes the originals earlier migrations kept.
    ///
    /// - Throws: ``StoreError``: `.locked` if open elsewhere; `.unsupportedFormat` if the file
    ///   is not a journal or was written by a newer version; `.corrupted` with the offset;
    ///   `.io`. The journal is not modified by a failed open.
    public func open(for model: ManagedObjectModel) throws -> StoreContents {
        try open(for: model, packingRows: false)
    }

    /// ``open(for:)``; with `packingRows`, the rows are returned as the journal decoded them,
    /// in ``StoreContents/packedRows`` (for the coordinator, which adds them to its row blocks
    /// without an array per row).
    func open(for model: ManagedObjectModel, packingRows: Bool) throws -> StoreContents {
        try lifecycle.open(
            for: model,
            seed: { bytes in
                let parsed = try bytes.withUnsafeBytes { try parse($0) }
                return (
                    parsed.snapshot.metadata,
                    { try self.adopt(parsed, bytes, model: model, packingRows: packingRows) }
                )
            },
            create: { try create(for: model) },
            load: { try load(for: model, packingRows: packingRows) })
    }

    /// Writes a new journal: a header and an empty snapshot, atomically.
    private func create(for model: ManagedObjectModel) throws {
        let metadata = StoreMetadata(storeIdentifier: UUID(), versionHash: model.versionHash)
        let bytes = Self.snapshotFile(
            metadata: metadata, schema: model.entities, history: nil, sequence: 1, rowCount: { _ in 0 },
            forEachRow: { _, _ in }
        ).bytes
        try files.install(bytes, "create the journal")
    }

    private func load(for model: ManagedObjectModel, packingRows: Bool) throws -> StoreContents {
        let bytes = try files.read(files.path, "read the journal")
        return try adopt(try bytes.withUnsafeBytes { try parse($0) }, bytes, model: model, packingRows: packingRows)
    }

    /// Takes over the parsed journal `bytes`: with the current model, repairs a torn tail and
    /// opens the file for appending; with another, only remembers what a migration needs.
    private func adopt(
        _ parsed: Parsed,
        _ bytes: [UInt8],
        model: ManagedObjectModel,
        packingRows: Bool
    ) throws -> StoreContents {
        header = parsed.header
        nextSequence = parsed.nextSequence
        snapshotBytes = parsed.snapshotBytes
        snapshotRows = parsed.snapshotRows
        insertBytesSinceSnapshot = 0
        insertedRowsSinceSnapshot = 0
        recordsOtherModel = false

        if parsed.snapshot.metadata.versionHash == model.versionHash {
            if let tornOffset = parsed.tornOffset {
                try moveTornTailAside(bytes, from: tornOffset)
            }
            // The model may declare other uniqueness constraints or superentities than the
            // snapshot records (they are not part of the version hash): the first save writes a
            // new snapshot recording the model's, so the file describes itself truly once rows
            // change under them. (Opening writes nothing: the coordinator may still refuse the
            // rows under the model's constraints.)
            recordsOtherModel = EntityDescription.recordingModel(of: parsed.snapshot.schema, model: model) != nil
            let descriptor: Int32
            do {
                descriptor = try fileSystem.open(files.path, flags: O_RDWR, mode: 0)
            } catch {
                throw files.ioError(error, "open the journal for writing")
            }
            // Records a previous run wrote but never synchronized (it crashed, or was closed with
            // saves waiting for their sync) are readable from the page cache: make them durable
            // before anyone reads them, so that nobody sees rows a power loss could still take.
            do {
                try fileSystem.synchronizeData(descriptor, path: files.path)
            } catch {
                fileSystem.close(descriptor)
                throw files.ioError(error, "synchronize the journal")
            }
            self.descriptor = descriptor
            endOffset = Int64(parsed.validLength)
            mapping = JournalPayload.SchemaMapping(schema: parsed.snapshot.schema, model: model)
        } else {
            // Written with another model: the coordinator migrates it (replacing the whole
            // file, torn tail set aside then) or refuses it. Nothing is written until then.
            tornTail = lifecycle.seedAwaitingMigration ? nil : parsed.tornOffset.map { ($0, Array(bytes[$0...])) }
        }
        return Self.contents(of: parsed.snapshot, bytes: bytes, url: url, packingRows: packingRows)
    }

    /// The contents of a parsed journal, `bytes`, whose rows the contents locate by the record
    /// that last wrote them; with `packingRows`, the rows are in ``StoreContents/packedRows``.
    static func contents(
        of snapshot: JournalPayload.Snapshot,
        bytes: [UInt8],
        url: URL?,
        packingRows: Bool = false
    ) -> StoreContents {
        var rows: [String: [StoredRow]] = [:]
        var packed: [String: JournalRows] = [:]
        for (index, entity) in snapshot.schema.enumerated() {
            // In key order, as the coordinator keeps them (it then neither sorts nor hashes them).
            if packingRows {
                packed[entity.name] = snapshot.rows[index]
            } else {
                rows[entity.name] = snapshot.rows[index].storedRows()
            }
        }
        var contents = StoreContents(
            metadata: snapshot.metadata, schema: snapshot.schema, rows: rows, history: snapshot.history)
        if packingRows {
            contents.packedRows = packed
        }
        let entityIndexes = Dictionary(
            snapshot.schema.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        contents.rowLocator = RowLocator { error, entityName, primaryKey in
            // Only when there is an error to report: replay the journal again, noting the
            // last record that wrote the row.
            guard let wanted = entityIndexes[entityName] else { return }
            var found: Int?
            _ = try? bytes.withUnsafeBytes { buffer in
                try parse(buffer, url: url) { entityIndex, key, recordOffset in
                    if entityIndex == wanted && key == primaryKey {
                        found = recordOffset
                    }
                }
            }
            if let found {
                error.offset = Int64(found)
                error.message += (error.message.hasSuffix(".") ? "" : ".")
                error.message += " The row was last written by the record at offset \(found)."
            }
        }
        return contents
    }

    /// What the journal holds (or the seed it would copy in), read without taking the lock or
    /// writing anything: a torn tail is left as it is. `nil` if there is neither.
    ///
    /// - Throws: ``StoreError``: `.unsupportedFormat`, `.corrupted`, `.io`.
    public func inspect() throws -> StoreContents? {
        guard let path = lifecycle.inspectedPath else {
            return nil
        }
        let bytes = try files.read(path, "read the journal \(path)")
        return Self.contents(of: try bytes.withUnsafeBytes { try parse($0) }.snapshot, bytes: bytes, url: url)
    }

    /// What a journal holds, and where its valid prefix ends.
    struct Parsed {
        var header: JournalFormat.Header
        var snapshot: JournalPayload.Snapshot
        var validLength: Int
        var tornOffset: Int?
        var nextSequence: UInt64
        var snapshotBytes: Int
        var snapshotRows: Int
    }

    private func parse(_ bytes: UnsafeRawBufferPointer) throws -> Parsed {
        try Self.parse(bytes, url: url)
    }

    /// Parses a journal's bytes: its header, snapshot and every intact record of its valid
    /// prefix, replayed.
    ///
    /// - Parameters:
    ///   - url: The file, for errors.
    ///   - onRow: Called with the entity index, primary key and record offset of each row the
    ///     snapshot holds or a record inserts or updates, in file order (to find which record
    ///     last wrote a row).
    /// - Throws: ``StoreError`` (`.unsupportedFormat`, `.corrupted`), never a trap, whatever the
    ///   bytes.
    static func parse(
        _ bytes: UnsafeRawBufferPointer,
        url: URL?,
        onRow: ((Int, Int64, Int) -> Void)? = nil
    ) throws -> Parsed {
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

        guard header.baseSequence < JournalFormat.maximumBaseSequence else {
            throw StoreError(
                .corrupted,
                "The journal header's base sequence number \(header.baseSequence) is beyond any a journal reaches "
                    + "(\(JournalFormat.maximumBaseSequence)); the header is damaged. The file was left untouched.",
                url: url, offset: 0)
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
                            + "Restore a backup; or, to keep every save before the damage (a power failure during "
                            + "group commit can leave an earlier record unwritten and a later one written), copy the "
                            + "file aside and truncate it to \(offset) bytes.",
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
                    let recordOffset = offset
                    try JournalPayload.applyChanges(
                        &reader, schema: current.schema, to: &current.rows,
                        nextPrimaryKeys: &current.metadata.nextPrimaryKeys, history: &current.history,
                        onRow: onRow.map { onRow in { onRow($0, $1, recordOffset) } })
                    snapshot = current
                } else {
                    guard record.type == .snapshot else {
                        throw reader.error("the first record is not a snapshot")
                    }
                    let decoded = try JournalPayload.decodeSnapshot(&reader, major: header.majorVersion)
                    snapshot = decoded
                    snapshotBytes = record.payload.count
                    if let onRow {
                        for (entityIndex, rows) in decoded.rows.enumerated() {
                            rows.forEachKey { primaryKey in
                                onRow(entityIndex, primaryKey, offset)
                            }
                        }
                    }
                }
            } catch let error as BinaryDecodingError {
                throw StoreError(
                    .corrupted, "The journal's record \(expected) is malformed: \(error.message).", url: url,
                    offset: error.offset)
            }
            // Cannot overflow: the base is below 2^62, and there is at most one record per 24 bytes.
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
    private static func firstValidRecord(after offset: Int, in bytes: UnsafeRawBufferPointer, epoch: UInt64) -> Int? {
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
        try setTornBytesAside(Array(bytes[offset...]), from: offset)
        do {
            let journal = try fileSystem.open(files.path, flags: O_RDWR, mode: 0)
            defer { fileSystem.close(journal) }
            try fileSystem.truncate(journal, to: Int64(offset), path: files.path)
            try fileSystem.synchronize(journal, path: files.path)
        } catch {
            throw files.ioError(error, "truncate the journal's torn tail (at offset \(offset))")
        }
    }

    /// Writes the torn bytes (found at `offset`) to `<name>.journal.torn-<timestamp>`, durably.
    private func setTornBytesAside(_ tornBytes: [UInt8], from offset: Int) throws {
        let asidePath = files.asidePath("torn")
        do {
            let aside = try fileSystem.open(asidePath, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            do {
                try tornBytes.withUnsafeBytes { try fileSystem.writeAll(aside, $0, at: 0, path: asidePath) }
                try fileSystem.synchronize(aside, path: asidePath)
            } catch {
                fileSystem.close(aside)
                throw error
            }
            fileSystem.close(aside)
            try fileSystem.synchronizeDirectory(files.directory)
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
        if try !append(changes, resultingState: resultingState) {
            let synchronization = try pendingSynchronization()
            do {
                // On the synchronization queue, like every sync of the journal: after a sync a
                // coordinator's saves started, not beside it.
                try synchronizer.sync { try synchronization.run() }
            } catch {
                throw synchronizationFailed(error)
            }
        }
    }

    /// Appends the change set as one record without waiting for the disk (group commit): a
    /// ``StoreSynchronization`` from ``pendingSynchronization()`` makes it durable, together
    /// with every record appended before it.
    ///
    /// When the log has outgrown the live data, a compaction starts: a snapshot of the rows after
    /// this record is written off the saving path (`JournalCompaction`), and this record waits
    /// for a synchronization like any other. The first append that finds the snapshot written
    /// finishes the compaction: the records appended since are copied into the new file, which is
    /// synchronized and renamed over the journal, making this record and every earlier one
    /// durable. If the compaction fails before the rename, the failure is kept in
    /// ``lastCompactionError``, the old journal stays the store, and the record waits for a
    /// synchronization. (With `compactsInBackground` off, the append compacts inline.)
    ///
    /// - Returns: Whether the record (and every earlier one) is already durable.
    /// - Throws: ``StoreError``: `.io` when the write failed, or a compaction replaced the journal
    ///   without knowing it durable (the store then refuses commits until
    ///   reopened), `.closed` when the store is closed or refusing commits.
    public func append(_ changes: ChangeSet, resultingState: StoreState) throws -> Bool {
        try lifecycle.checkAcceptsCommits()
        guard let descriptor, let header, let mapping else {
            throw lifecycle.awaitsMigrationError
        }
        let recordsHistory = header.majorVersion >= 4
        if changes.transaction != nil && !recordsHistory {
            // History starts: the journal becomes format 4 before it records anything with a
            // transaction, so that no record of it lacks its trailer. A failed compaction fails
            // the save; the old journal is untouched.
            try compact(resultingState)
            lastCompactionError = nil
            return true
        }
        guard changes.transaction != nil || !recordsHistory else {
            throw StoreError(
                .invalidConfiguration,
                "The journal records a persistent history: every change set appended needs its transaction.",
                url: url)
        }
        let payload = JournalPayload.encodeChanges(changes, mapping: mapping)
        let record = JournalFormat.encodeRecord(
            type: .changes, sequence: nextSequence, epoch: header.epoch, payload: payload)
        do {
            try record.withUnsafeBytes { try fileSystem.writeAll(descriptor, $0, at: endOffset, path: files.path) }
        } catch {
            throw lifecycle.fail(error, "append to the journal")
        }
        endOffset += Int64(record.count)
        nextSequence += 1
        // Rows given as values and rows encoded from the tables alike.
        let inserted = changes.entities.reduce(0) { $0 + $1.inserted.count + $1.insertedReferences.count }
        if inserted > 0 {
            insertedRowsSinceSnapshot += inserted
            insertBytesSinceSnapshot += payload.count
        }
        if let compaction {
            compaction.tail.append(payload)
            if inserted > 0 {
                compaction.tailInsertedRows += inserted
                compaction.tailInsertBytes += payload.count
            }
            guard compaction.isWritten else { return false }
            self.compaction = nil
            return try finish(compaction)
        }
        guard recordsOtherModel || shouldCompact(resultingState) else { return false }
        if compactsInBackground && !recordsOtherModel {
            // The snapshot (of the rows after this record) is written off the saving path; a
            // later append finishes the compaction.
            let compaction = JournalCompaction(sequence: nextSequence, state: resultingState)
            compaction.start(
                on: compactionQueue, storeIdentifier: header.storeIdentifier, path: files.path, fileSystem: fileSystem,
                writes: compactionWrites)
            self.compaction = compaction
            return false
        }
        // The journal is only ever synchronized on the synchronization queue: two `fdatasync`s of
        // one file at once could each miss an error the other was told (Linux reports a
        // writeback error once). A compaction writes a new, synchronized file holding this
        // record and every earlier one instead.
        do {
            try compact(resultingState)
            lastCompactionError = nil
            return true
        } catch {
            let error = error as? StoreError ?? files.ioError(error, "compact the journal")
            if lifecycle.failure != nil {
                // The journal was renamed but its durability is unknown: this save is not known
                // to be durable.
                throw error
            }
            // The old journal is untouched and still the store: the record waits for the next
            // synchronization, and the log keeps growing until a compaction succeeds.
            lastCompactionError = error
            return false
        }
    }

    /// What makes every record appended so far durable: an `fdatasync` of the journal, to run on
    /// ``synchronizationQueue`` while this store goes on appending on the coordinator's queue.
    ///
    /// - Throws: ``StoreError/Code/closed`` when the store is closed or refusing commits.
    public func pendingSynchronization() throws -> StoreSynchronization {
        guard let descriptor else {
            throw lifecycle.closedError
        }
        try lifecycle.checkNotFailed()
        let synchronization = JournalSynchronization(descriptor: descriptor, path: files.path, fileSystem: fileSystem)
        return StoreSynchronization { try synchronization.run() }
    }

    /// Records that a synchronization of the journal failed: the store refuses commits from now
    /// on (a retried `fsync` may report success without the data on disk).
    ///
    /// - Returns: The error to report, naming the journal.
    public func synchronizationFailed(_ error: any Error) -> StoreError {
        lifecycle.fail(error, "synchronize the journal")
    }

    /// Closes a descriptor the store no longer uses, after any synchronization already queued
    /// on ``synchronizationQueue`` (which may still be using it).
    private func retire(_ descriptor: Int32) {
        synchronizer.async { [fileSystem] in
            fileSystem.close(descriptor)
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
        abandonCompaction()
        guard descriptor != nil, let header else {
            throw lifecycle.closedError
        }
        try lifecycle.checkAcceptsWrites()
        let (newHeader, bytes, payloadSize) = snapshotFile(of: state, storeIdentifier: header.storeIdentifier)
        do {
            try files.replaceFile(with: bytes)
        } catch {
            // The old journal is untouched and still the store.
            throw files.ioError(error, "write the compacted journal")
        }
        // The journal's name now points to the new file.
        try lifecycle.completeReplacement("switch to the compacted journal") { try switchToNewFile() }
        try didSwitch(to: newHeader, fileSize: bytes.count, payloadSize: payloadSize, state: state)
        lastCompactionError = nil
    }

    /// Finishes an automatic compaction whose snapshot is written: appends the records
    /// appended since to the new file, re-framed for it, synchronizes it, renames it over the
    /// journal and synchronizes the directory.
    ///
    /// - Returns: Whether the journal was replaced (every record appended so far is then
    ///   durable in the new file); `false` when the compaction failed before the rename (the old
    ///   journal is untouched and still the store; ``lastCompactionError`` says why).
    /// - Throws: ``StoreError`` `.io` when a step after the rename failed: whether the new
    ///   journal is durable is unknown, and the store refuses commits until reopened.
    private func finish(_ compaction: JournalCompaction) throws -> Bool {
        guard descriptor != nil else {
            compaction.abandon(fileSystem)
            throw lifecycle.closedError
        }
        let written: JournalCompaction.Written
        switch compaction.outcome {
        case .success(let value):
            written = value
        case .failure(let error):
            lastCompactionError = files.ioError(error, "write the compacted journal")
            return false
        case nil:
            preconditionFailure("QueueData: a compaction was finished before its snapshot was written")
        }
        var end = Int64(written.fileSize)
        var sequence = compaction.sequence + 1
        do {
            try files.replaceFile(withTemporary: written.temporary) {
                guard !compaction.tail.isEmpty else { return }
                let file = try fileSystem.open(written.temporary, flags: O_RDWR, mode: 0)
                defer { fileSystem.close(file) }
                for payload in compaction.tail {
                    let record = JournalFormat.encodeRecord(
                        type: .changes, sequence: sequence, epoch: written.header.epoch, payload: payload)
                    try record.withUnsafeBytes {
                        try fileSystem.writeAll(file, $0, at: end, path: written.temporary)
                    }
                    end += Int64(record.count)
                    sequence += 1
                }
                try fileSystem.synchronize(file, path: written.temporary)
            }
        } catch {
            // The old journal is untouched and still the store.
            lastCompactionError = files.ioError(error, "write the compacted journal")
            return false
        }
        // The journal's name now points to the new file.
        try lifecycle.completeReplacement("switch to the compacted journal") { try switchToNewFile() }
        let state = compaction.state
        header = written.header
        endOffset = end
        nextSequence = sequence
        mapping = JournalPayload.SchemaMapping(
            schema: state.entities, model: try ManagedObjectModel(entities: state.entities))
        snapshotBytes = written.payloadSize
        snapshotRows = state.entities.indices.reduce(0) { $0 + state.rowCount(ofEntityAt: $1) }
        insertBytesSinceSnapshot = compaction.tailInsertBytes
        insertedRowsSinceSnapshot = compaction.tailInsertedRows
        lastCompactionError = nil
        recordsOtherModel = false
        return true
    }

    /// Opens the file that now has the journal's name for appending, and retires the
    /// descriptor of the file it replaced.
    private func switchToNewFile() throws {
        let newDescriptor = try fileSystem.open(files.path, flags: O_RDWR, mode: 0)
        if let descriptor {
            retire(descriptor)
        }
        descriptor = newDescriptor
    }

    /// Abandons an automatic compaction in flight (waiting for its write, removing its file).
    private func abandonCompaction() {
        compaction?.abandon(fileSystem)
        compaction = nil
    }

    /// A journal of one snapshot record of `state`, continuing this journal's sequence with a
    /// new epoch.
    private func snapshotFile(
        of state: StoreState,
        storeIdentifier: UUID
    ) -> (header: JournalFormat.Header, bytes: [UInt8], payloadSize: Int) {
        var metadata = state.metadata
        metadata.storeIdentifier = storeIdentifier
        return Self.snapshotFile(metadata: metadata, state: state, sequence: nextSequence)
    }

    /// The bytes of a journal file of one snapshot record of `contents` (rows in ascending key
    /// order, as a snapshot requires).
    static func snapshotFileBytes(_ contents: StoreContents) -> [UInt8] {
        let rows = contents.schema.map { entity in
            (contents.rows[entity.name] ?? []).sorted { $0.primaryKey < $1.primaryKey }
        }
        return snapshotFile(
            metadata: contents.metadata, schema: contents.schema, history: contents.history, sequence: 1,
            rowCount: { rows[$0].count },
            forEachRow: { index, body in
                for row in rows[index] {
                    body(row.primaryKey, row.values)
                }
            }
        ).bytes
    }

    /// ``snapshotFile(metadata:schema:history:sequence:rowCount:forEachRow:)`` of `state`'s rows
    /// (with `metadata`), read where they live.
    static func snapshotFile(
        metadata: StoreMetadata,
        state: StoreState,
        sequence: UInt64
    ) -> (header: JournalFormat.Header, bytes: [UInt8], payloadSize: Int) {
        snapshotFile(
            metadata: metadata, schema: state.entities, history: state.history, sequence: sequence,
            payload: JournalPayload.encodeSnapshot(metadata: metadata, state: state))
    }

    /// A journal file of one snapshot record with `sequence`, in a header with a new epoch:
    /// the major version its snapshot needs (see ``JournalPayload/formatVersion(metadata:schema:)``).
    static func snapshotFile(
        metadata: StoreMetadata,
        schema: [EntityDescription],
        history: StoreHistory?,
        sequence: UInt64,
        rowCount: (Int) -> Int,
        forEachRow: (Int, (Int64, [StoredValue]) -> Void) -> Void
    ) -> (header: JournalFormat.Header, bytes: [UInt8], payloadSize: Int) {
        snapshotFile(
            metadata: metadata, schema: schema, history: history, sequence: sequence,
            payload: JournalPayload.encodeSnapshot(
                metadata: metadata, schema: schema, history: history, rowCount: rowCount, forEachRow: forEachRow))
    }

    /// A journal file of `payload`, a snapshot of `schema` (and `history`) with `metadata`.
    private static func snapshotFile(
        metadata: StoreMetadata,
        schema: [EntityDescription],
        history: StoreHistory?,
        sequence: UInt64,
        payload: [UInt8]
    ) -> (header: JournalFormat.Header, bytes: [UInt8], payloadSize: Int) {
        var header = JournalFormat.Header(
            storeIdentifier: metadata.storeIdentifier, epoch: .random(in: 0...UInt64.max), baseSequence: sequence)
        header.majorVersion = JournalPayload.formatVersion(metadata: metadata, schema: schema, history: history)
        let bytes =
            header.encoded()
            + JournalFormat.encodeRecord(type: .snapshot, sequence: sequence, epoch: header.epoch, payload: payload)
        return (header, bytes, payload.count)
    }

    /// Records that the journal is now a file of one snapshot record of `state`.
    private func didSwitch(
        to newHeader: JournalFormat.Header,
        fileSize: Int,
        payloadSize: Int,
        state: StoreState
    ) throws {
        header = newHeader
        endOffset = Int64(fileSize)
        nextSequence += 1
        mapping = JournalPayload.SchemaMapping(
            schema: state.entities, model: try ManagedObjectModel(entities: state.entities))
        snapshotBytes = payloadSize
        snapshotRows = state.entities.indices.reduce(0) { $0 + state.rowCount(ofEntityAt: $1) }
        insertBytesSinceSnapshot = 0
        insertedRowsSinceSnapshot = 0
        recordsOtherModel = false
    }

    // MARK: Migrating

    /// Replaces the journal with one snapshot record of `state` (a migration's result), keeping
    /// the original as `<name>.journal.<suffix>` until the next open with the current model; a
    /// torn tail of the original is first set aside as at any open. A crash at any point leaves
    /// the original journal or the new one, complete.
    ///
    /// - Throws: ``StoreError``: `.closed` if the store is not open, `.io`. The coordinator
    ///   closes the store after a failure; reopening finds the original or the new journal.
    public func replaceContents(with state: StoreState, keepingOriginalAs suffix: String) throws {
        abandonCompaction()
        guard header != nil else {
            throw lifecycle.closedError
        }
        try lifecycle.checkAcceptsWrites()
        if let tornTail {
            try setTornBytesAside(tornTail.bytes, from: tornTail.offset)
            self.tornTail = nil
        }
        let (newHeader, bytes, payloadSize) = snapshotFile(of: state, storeIdentifier: state.metadata.storeIdentifier)
        try lifecycle.replaceContents(
            with: bytes, keepingOriginalAs: suffix, "replace the journal with its migrated contents"
        ) { try switchToNewFile() }
        try didSwitch(to: newHeader, fileSize: bytes.count, payloadSize: payloadSize, state: state)
    }

    // MARK: Closing

    /// Closes the journal and releases its lock.
    public func close() {
        abandonCompaction()
        if let descriptor {
            retire(descriptor)
        }
        lifecycle.close()
        descriptor = nil
        header = nil
        mapping = nil
        tornTail = nil
    }
}
