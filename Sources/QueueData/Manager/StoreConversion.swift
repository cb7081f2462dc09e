import Foundation

/// Writes a store's rows as a store of another type or place: the work of
/// ``ContextManager/migratePersistentStore(to:directory:name:)``.
///
/// A file store is written under a temporary name beside its destination (as a new store,
/// then replaced with the rows), closed, read back and compared with the rows, and only then
/// given its name — by a hard link, which fails rather than replace a file that appeared
/// meanwhile — and the directory synchronized. A crash at any point leaves no store under the
/// destination's name, or a complete one; the source is never modified.
enum StoreConversion {
    /// Writes `state` (rows of `model`) as a store of `type` with `configuration`.
    ///
    /// - Returns: The new store's main file (`nil` for a store without one).
    /// - Throws: ``StoreError``: `.invalidConfiguration` if a store exists at the destination;
    ///   `.io`; `.corrupted` if what was written does not read back as `state`. Nothing is left
    ///   under the destination's name then.
    static func write(
        _ state: StoreState,
        model: ManagedObjectModel,
        as type: StoreType,
        configuration: StoreConfiguration,
        fileSystem: any FileSystem = POSIXFileSystem()
    ) throws -> URL? {
        let destination = try checkDestination(type, configuration: configuration, fileSystem: fileSystem)
        guard let finalURL = destination.storeURL else {
            // No single file to rename into place: written where it is.
            try fill(destination, with: state, model: model)
            return nil
        }
        var temporaryConfiguration = configuration
        temporaryConfiguration.name = "\(configuration.name).converting-\(UInt32.random(in: 0...UInt32.max))"
        temporaryConfiguration.seedStoreURL = nil
        let temporary = try type.makeStore(temporaryConfiguration)
        guard let temporaryURL = temporary.storeURL else {
            throw StoreError(.invalidConfiguration, "The destination store names no file.", url: finalURL)
        }
        let directory = temporaryURL.deletingLastPathComponent().path
        let leftovers = [
            temporaryURL.path, "\(temporaryURL.path).pre-migration-conversion",
            "\(directory)/\(temporaryConfiguration.name).lock",
        ]
        defer {
            for path in leftovers where fileSystem.fileExists(path) {
                try? fileSystem.remove(path)
            }
            try? fileSystem.synchronizeDirectory(directory)
        }
        try fill(temporary, with: state, model: model)
        // Read back by a new instance, as the next open would.
        let reader = try type.makeStore(temporaryConfiguration)
        guard let written = try reader.inspect() else {
            throw StoreError(.io, "The converted store vanished before it could be checked.", url: temporaryURL)
        }
        if let difference = difference(between: written, and: state)
            ?? (reader.keepsHistory && written.history != state.history ? "the persistent history differs" : nil)
        {
            throw StoreError(
                .corrupted, "The converted store does not read back as the original: \(difference). Nothing was kept.",
                url: temporaryURL)
        }
        do {
            try fileSystem.link(temporaryURL.path, to: finalURL.path)
            try fileSystem.synchronizeDirectory(finalURL.deletingLastPathComponent().path)
        } catch {
            throw StoreError(
                .io, "Could not give the converted store its name \(finalURL.path): \(error).", url: finalURL,
                underlyingError: error)
        }
        return finalURL
    }

    /// The store of `type` at `configuration`'s place, checked before anything is written or
    /// closed: its name is valid and no store exists there.
    ///
    /// - Throws: ``StoreError/Code/invalidConfiguration`` otherwise.
    @discardableResult
    static func checkDestination(
        _ type: StoreType,
        configuration: StoreConfiguration,
        fileSystem: any FileSystem = POSIXFileSystem()
    ) throws -> any PersistentStore {
        let destination = try type.makeStore(configuration)
        if let url = destination.storeURL, fileSystem.fileExists(url.path) {
            throw StoreError(
                .invalidConfiguration,
                "A store already exists at \(url.path): move it aside, or convert to another name or directory.",
                url: url)
        }
        return destination
    }

    /// Opens `store` (creating it) and replaces its contents with `state`, then closes it.
    private static func fill(_ store: any PersistentStore, with state: StoreState, model: ManagedObjectModel) throws {
        defer { store.close() }
        _ = try store.open(for: model)
        try store.replaceContents(with: state, keepingOriginalAs: "pre-migration-conversion")
    }

    /// The first difference between the contents a store read back and the state written, or
    /// `nil` if they hold the same metadata, schema and rows.
    static func difference(between contents: StoreContents, and state: StoreState) -> String? {
        let metadata = contents.metadata
        guard metadata.storeIdentifier == state.metadata.storeIdentifier else { return "the store identifier differs" }
        guard metadata.versionHash == state.metadata.versionHash else { return "the model version hash differs" }
        guard metadata.appliedMigrationSteps == state.metadata.appliedMigrationSteps else {
            return "the applied migration steps differ"
        }
        for (name, next) in state.metadata.nextPrimaryKeys where (metadata.nextPrimaryKeys[name] ?? 1) < next {
            return "the next primary key of \(name) went back"
        }
        guard contents.schema.map(\.name) == state.entities.map(\.name) else { return "the entities differ" }
        for (index, entity) in state.entities.enumerated() {
            let rows = (contents.rows[entity.name] ?? []).sorted { $0.primaryKey < $1.primaryKey }
            guard rows.count == state.rowCount(ofEntityAt: index) else {
                return "\(entity.name) has \(rows.count) rows instead of \(state.rowCount(ofEntityAt: index))"
            }
            var position = 0
            var mismatch: String?
            state.forEachRow(ofEntityAt: index) { primaryKey, values in
                guard mismatch == nil else { return }
                let row = rows[position]
                position += 1
                if row.primaryKey != primaryKey || row.values.count != values.count
                    || !zip(row.values, values).allSatisfy({ StoredValue.isSame($0, $1) })
                {
                    mismatch = "the row \(primaryKey) of \(entity.name) differs"
                }
            }
            if let mismatch {
                return mismatch
            }
        }
        return nil
    }
}
