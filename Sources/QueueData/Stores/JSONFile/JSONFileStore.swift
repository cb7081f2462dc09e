import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A store kept as one readable JSON document at `<directory>/<name>.json`.
///
/// The document holds the format's name and version, the metadata, the schema and every row,
/// grouped by entity, one row per line, in a fixed key order, so that diffs of the file are
/// meaningful and other tools can read and write it (see the "JSON Store Format" article).
///
/// Every save rewrites the document durably and atomically: a new file in the same directory
/// (created exclusively, mode 0600) is written and `fsync`ed, renamed over the document, and
/// the directory is `fsync`ed. A crash leaves the old document or the new one, never a mix;
/// temporary files a crash leaves behind are removed at the next open, never promoted. The
/// cost of a save grows with the store: that is the trade-off for a readable file.
public final class JSONFileStore: PersistentStore {
    /// The document.
    public var url: URL { files.url }

    /// The document (``url``), for the coordinator's error messages.
    public var storeURL: URL? { files.url }

    /// The file extension: `json`.
    public static let fileExtension = "json"

    /// The lock, the open sequence, the refusal after a failed write, migration and atomic
    /// replacement, shared with ``JournalStore``.
    let lifecycle: StoreFileLifecycle
    var files: StoreFiles { lifecycle.files }

    /// A JSON store at `<directory>/<name>.json`.
    ///
    /// - Parameters:
    ///   - directory: The directory of the store's files; created (mode 0700) if missing.
    ///   - name: The store's name: a file name, without `/`.
    ///   - seedStoreURL: A JSON store document to copy in when the store does not exist yet.
    /// - Throws: ``StoreError/Code/invalidConfiguration`` for a name that would escape the
    ///   directory.
    public convenience init(directory: URL, name: String, seedStoreURL: URL? = nil) throws {
        try self.init(directory: directory, name: name, seedStoreURL: seedStoreURL, fileSystem: POSIXFileSystem())
    }

    init(directory: URL, name: String, seedStoreURL: URL?, fileSystem: any FileSystem) throws {
        self.lifecycle = try StoreFileLifecycle(
            directory: directory, name: name, fileExtension: Self.fileExtension, seedStoreURL: seedStoreURL,
            storeName: "The JSON store", fileSystem: fileSystem)
    }

    deinit {
        close()
    }

    /// Opens the document (creating it, or copying the seed in) and returns its rows.
    ///
    /// - Throws: ``StoreError``: `.locked` if open elsewhere; `.unsupportedFormat` for a file
    ///   that is not a QueueData JSON store or was written by a newer version; `.corrupted`
    ///   with the offset for a damaged one (empty, truncated, invalid JSON or values); `.io`.
    ///   The document is never modified by a failed open.
    ///
    /// A document written with another model is returned as it is: the coordinator migrates
    /// it with ``replaceContents(with:keepingOriginalAs:)`` or refuses it. Opening with the
    /// current model removes the originals earlier migrations kept.
    public func open(for model: ManagedObjectModel) throws -> StoreContents {
        try open(for: model, packingRows: false)
    }

    /// ``open(for:)``; with `packingRows`, the rows are returned as the document was read, in
    /// ``StoreContents/packedRows`` (for the coordinator, which adds them to its row blocks
    /// without an array per row).
    func open(for model: ManagedObjectModel, packingRows: Bool) throws -> StoreContents {
        try lifecycle.open(
            for: model,
            seed: { [url] bytes in
                let seed = try Self.decode(bytes, url: url, packingRows: packingRows)
                return (seed.metadata, { seed })
            },
            create: {
                let empty = StoreContents.empty(for: model)
                try write(
                    JSONDocumentWriter.document(
                        metadata: empty.metadata, schema: model.entities, rowCount: { _ in 0 }, forEachRow: { _, _ in })
                )
            },
            load: { try decode(path: files.path, packingRows: packingRows) })
    }

    /// The contents of the JSON store document at `path`.
    private func decode(path: String, packingRows: Bool = false) throws -> StoreContents {
        try Self.decode(try files.read(path, "read the JSON store \(path)"), url: url, packingRows: packingRows)
    }

    /// The contents of a JSON store document, `bytes`, read from `url`; with `packingRows`, the
    /// rows are in ``StoreContents/packedRows``.
    ///
    /// - Throws: ``StoreError`` (`.unsupportedFormat`, `.corrupted` with its line and column),
    ///   never a trap, whatever the bytes.
    static func decode(_ bytes: [UInt8], url: URL?, packingRows: Bool = false) throws -> StoreContents {
        let document: JSONDocumentReader.Document
        do {
            document = try Self.read(bytes)
        } catch .notAStoreDocument(let reason) {
            throw StoreError(
                .unsupportedFormat, "The file is not a QueueData JSON store: \(reason).", url: url, offset: 0)
        } catch .newerVersion(let version) {
            throw StoreError(
                .unsupportedFormat,
                "The JSON store was written by a newer version of QueueData (format version \(version); this "
                    + "version reads \(JSONDocumentWriter.formatVersion)). Open it with that version.", url: url)
        } catch .malformed(let message, let offset) {
            var error = StoreError(
                .corrupted, "The JSON store is damaged: \(message). The file was left untouched.", url: url)
            bytes.withUnsafeBytes { error.locate(offset, inText: $0) }
            throw error
        }
        var contents = StoreContents(metadata: document.metadata, schema: document.schema, rows: [:])
        contents.packedRows = document.rows
        if !packingRows {
            contents.unpackRows()
        }
        contents.rowLocator = .text(bytes: bytes, places: document.rowPlaces)
        return contents
    }

    /// What the document holds (or the seed it would copy in), read without taking the lock or
    /// writing anything; `nil` if there is neither.
    ///
    /// - Throws: ``StoreError``: `.unsupportedFormat`, `.corrupted`, `.io`.
    public func inspect() throws -> StoreContents? {
        try lifecycle.inspectedPath.map { try decode(path: $0) }
    }

    /// Replaces the document with `state` (a migration's result), keeping the original as
    /// `<name>.json.<suffix>` until the next open with the current model. A crash at any point
    /// leaves the original document or the new one, complete.
    ///
    /// - Throws: ``StoreError``: `.closed` if the store is not open, `.io`.
    public func replaceContents(with state: StoreState, keepingOriginalAs suffix: String) throws {
        try lifecycle.checkAcceptsWrites()
        let document = JSONDocumentWriter.document(metadata: state.metadata, schema: state.entities, state: state)
        try lifecycle.replaceContents(
            with: document, keepingOriginalAs: suffix, "replace the JSON store with its migrated contents")
    }

    private static func read(_ bytes: [UInt8]) throws(JSONDocumentReader.Problem) -> JSONDocumentReader.Document {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONDocumentReader.Problem) in try JSONDocumentReader.read(buffer) }
        }
        return try result.get()
    }

    /// Rewrites the document with every row after the change set.
    ///
    /// - Throws: ``StoreError``: `.io` when the new document could not be written (the old one
    ///   is intact, or — if only the directory's `fsync` failed — the new one may be); the store
    ///   then refuses commits with `.closed` until it is reopened.
    public func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        try lifecycle.checkAcceptsCommits()
        try write(
            JSONDocumentWriter.document(
                metadata: resultingState.metadata, schema: resultingState.entities, state: resultingState))
    }

    private func write(_ document: [UInt8]) throws {
        do {
            try files.replaceFile(with: document)
        } catch {
            // The old document is untouched and still the store; still, like after any failed
            // write, refuse commits until reopened rather than guess what the disk holds.
            throw lifecycle.fail(error, "write the JSON store")
        }
        // The new document is in place, but whether the rename survives a crash is unknown
        // until the directory is synchronized.
        try lifecycle.completeReplacement("synchronize the JSON store's directory")
    }

    /// Releases the store's lock.
    public func close() {
        lifecycle.close()
    }
}
