import Foundation

@_spi(StoreTool)
extension StoreInspection {
    /// Writes the store file at `source` as a store of `type` at `<directory>/<name>` — what
    /// `qd convert` does — without opening the source as a store: its committed contents are
    /// read as ``contents(of:)`` reads them (a journal's valid prefix; a torn tail is left where
    /// it is, not set aside), under the source's lock so that no writer changes it meanwhile,
    /// and the source's file is never written. The new store is written as
    /// ``ContextManager/migratePersistentStore(to:directory:name:)`` writes it: under a
    /// temporary name, read back and compared, then given its name.
    ///
    /// - Parameters:
    ///   - source: A journal or JSON store file (`<name>.journal` or `<name>.json`).
    ///   - type: The new store's type.
    ///   - directory: The new store's directory.
    ///   - name: The new store's name.
    /// - Returns: The new store's file (`nil` for a store without one).
    /// - Throws: ``StoreError``: `.locked` when another manager or process holds the source;
    ///   as ``contents(of:)`` when it cannot be read; `.corrupted` when its schema or rows are
    ///   not valid; `.invalidConfiguration` when a store exists at the destination; `.io`.
    @discardableResult
    public static func convert(_ source: URL, to type: StoreType, directory: URL, name: String) throws -> URL? {
        let fileSystem = POSIXFileSystem()
        let files = try StoreFiles(
            directory: source.deletingLastPathComponent(), name: source.deletingPathExtension().lastPathComponent,
            fileExtension: source.pathExtension, fileSystem: fileSystem)
        let lock = try files.acquireLock()
        defer { fileSystem.close(lock) }
        let contents = try contents(of: source)
        let model: ManagedObjectModel
        do {
            model = try ManagedObjectModel(entities: contents.schema)
        } catch {
            throw StoreError(
                .corrupted, "The schema recorded in \(source.path) is not a valid model: \(error)", url: source,
                underlyingError: error)
        }
        let tables = try StoreCoordinator.loadTables(contents, model: model)
        let state = StoreCoordinator.state(
            of: tables, metadata: contents.metadata, model: model, history: contents.history)
        return try StoreConversion.write(
            state, model: model, as: type,
            configuration: StoreConfiguration(
                name: name, directory: directory, shouldUseAutomaticLightweightMigration: false, seedStoreURL: nil),
            fileSystem: fileSystem)
    }
}
