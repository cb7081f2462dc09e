import Foundation

/// The lifecycle every file-backed store shares (``JSONFileStore``, ``JournalStore``), so that
/// one copy of it holds the guarantees: the lock held while the store is open; the open
/// sequence (stale temporary files removed, a seed copied in or — written with another model —
/// held awaiting migration, the lock released when the open fails); the refusal of writes after
/// a failed write or sync; the migration that replaces the store file; the atomic replacement
/// of the store file; and the close. The store keeps what is specific to its format: how its
/// file is parsed, created and written.
///
/// A class rather than a struct: the store's format-specific steps run inside
/// ``open(for:seed:create:load:)`` and ``completeReplacement(_:switching:)`` and record
/// failures here, which a struct in the store's stored property, being modified for the whole
/// call, would not allow. Confined, like its store, to the queue of the coordinator using it.
final class StoreFileLifecycle {
    /// The store's files.
    let files: StoreFiles
    /// A store file to copy in when the store does not exist yet.
    let seedStoreURL: URL?
    /// How messages name the store: "The JSON store", "The journal".
    let storeName: String
    /// The lock file's descriptor while the store is open.
    private(set) var lockDescriptor: Int32?
    /// The first write or sync that failed since the store was opened: the store then refuses
    /// writes until it is reopened, rather than guess what the disk holds (a retried `fsync` may
    /// report success without the data on disk).
    private(set) var failure: StoreError?
    /// Whether the store holds another model's rows: commits are refused until it is migrated.
    private(set) var awaitsMigration = false
    /// Whether the open found the store at the model's version: the originals earlier
    /// migrations kept go once the coordinator has accepted the contents
    /// (``contentsAccepted()``), not before — an open it refuses keeps them.
    private var backupsMayGo = false
    /// Whether the store does not exist yet and was opened from a seed of another model, which
    /// a migration installs as the store and a refusal leaves behind untouched.
    private(set) var seedAwaitingMigration = false

    private var fileSystem: any FileSystem { files.fileSystem }

    /// - Throws: ``StoreError/Code/invalidConfiguration`` if `name` would escape the directory.
    init(
        directory: URL,
        name: String,
        fileExtension: String,
        seedStoreURL: URL?,
        storeName: String,
        fileSystem: any FileSystem
    ) throws {
        self.files = try StoreFiles(
            directory: directory, name: name, fileExtension: fileExtension, fileSystem: fileSystem)
        self.seedStoreURL = seedStoreURL
        self.storeName = storeName
    }

    /// Whether the store is open (holds its lock).
    var isOpen: Bool { lockDescriptor != nil }

    // MARK: Opening

    /// Opens the store: takes the lock, removes stale temporary files, and — when there is no
    /// store file yet — copies the seed in (or, for a seed of another model, returns it awaiting
    /// migration without copying it) or creates an empty store; then loads the store file. A
    /// failed open releases the lock, and removes a seed it copied in.
    ///
    /// Opening with the current model removes the originals earlier migrations kept.
    ///
    /// - Parameters:
    ///   - model: The model the store is opened with.
    ///   - seed: Parses a seed's bytes: its metadata, and what opening it awaiting migration
    ///     returns (called only for a seed of another model).
    ///   - create: Writes a new, empty store file.
    ///   - load: Reads the store file.
    /// - Throws: ``StoreError``: `.locked` if the store is open here or elsewhere; what the
    ///   steps throw.
    func open(
        for model: ManagedObjectModel,
        seed: ([UInt8]) throws -> (metadata: StoreMetadata, open: () throws -> StoreContents),
        create: () throws -> Void,
        load: () throws -> StoreContents
    ) throws -> StoreContents {
        guard lockDescriptor == nil else {
            throw StoreError(.locked, "\(storeName) is already open.", url: files.url)
        }
        let lock = try files.acquireLock()
        do {
            let contents = try openLocked(for: model, seed: seed, create: create, load: load)
            lockDescriptor = lock
            return contents
        } catch {
            fileSystem.close(lock)
            throw error
        }
    }

    private func openLocked(
        for model: ManagedObjectModel,
        seed parseSeed: ([UInt8]) throws -> (metadata: StoreMetadata, open: () throws -> StoreContents),
        create: () throws -> Void,
        load: () throws -> StoreContents
    ) throws -> StoreContents {
        failure = nil
        seedAwaitingMigration = false
        try files.removeStaleTemporaryFiles()
        var installedSeed = false
        if !files.exists {
            if let seedStoreURL {
                let bytes = try files.seedBytes(seedStoreURL)
                let seed = try parseSeed(bytes)
                guard seed.metadata.versionHash == model.versionHash else {
                    // A seed of another model is not copied in: migrating writes the result as
                    // the store, refusing leaves nothing behind.
                    seedAwaitingMigration = true
                    awaitsMigration = true
                    return try seed.open()
                }
                try files.install(bytes, "copy the seed store \(seedStoreURL.path) in")
                installedSeed = true
            } else {
                try create()
            }
        }
        let contents: StoreContents
        do {
            contents = try load()
        } catch {
            if installedSeed {
                files.removeInstalledSeed()
            }
            throw error
        }
        awaitsMigration = contents.metadata.versionHash != model.versionHash
        backupsMayGo = !awaitsMigration
        return contents
    }

    /// The file ``PersistentStore/inspect()`` reads, without taking the lock: the store file,
    /// or the seed it would copy in; `nil` if there is neither.
    var inspectedPath: String? {
        if files.exists {
            return files.path
        }
        if let seedStoreURL, fileSystem.fileExists(seedStoreURL.path) {
            return seedStoreURL.path
        }
        return nil
    }

    // MARK: Refusing

    /// The error for a store that is not open.
    var closedError: StoreError {
        StoreError(.closed, "\(storeName) is closed.", url: files.url)
    }

    /// The error for a store that holds another model's rows.
    var awaitsMigrationError: StoreError {
        StoreError(.closed, "\(storeName) holds another model's rows; migrate it first.", url: files.url)
    }

    /// Throws ``StoreError/Code/closed`` unless the store accepts commits: it is open, holds the
    /// model's rows, and no write or sync failed since it was opened.
    func checkAcceptsCommits() throws {
        guard lockDescriptor != nil else {
            throw closedError
        }
        guard !awaitsMigration else {
            throw awaitsMigrationError
        }
        try checkNotFailed()
    }

    /// Throws ``StoreError/Code/closed`` unless the store accepts writes other than commits (a
    /// migration's, a compaction's): it is open, and no write or sync failed since it was
    /// opened.
    func checkAcceptsWrites() throws {
        guard lockDescriptor != nil else {
            throw closedError
        }
        try checkNotFailed(refusing: "writes")
    }

    /// Throws ``StoreError/Code/closed`` if an earlier write or sync failed: the store refuses
    /// to `doing` ("commits", "writes") until it is reopened.
    func checkNotFailed(refusing doing: String = "commits") throws {
        if let failure {
            throw StoreError(
                .closed, "\(storeName) refuses \(doing) after a failed write; reopen the store. (\(failure.message))",
                url: files.url, underlyingError: failure)
        }
    }

    /// Records that a write or sync failed while `doing` it: the store refuses writes from now
    /// on, until it is reopened. The first failure is the one the refusals report.
    ///
    /// - Returns: The error to report.
    func fail(_ error: any Error, _ doing: String) -> StoreError {
        let error = files.ioError(error, doing)
        if failure == nil {
            failure = error
        }
        return error
    }

    // MARK: Replacing the store file

    /// Finishes an atomic replacement once the new file has the store file's name: `switching`
    /// runs (a store that writes through a descriptor opens the new file there), then the
    /// directory is synchronized.
    ///
    /// - Throws: ``StoreError/Code/io``, recorded as a failure (`doing`): whether the new file
    ///   survives a crash is unknown, and the store refuses writes until it is reopened.
    func completeReplacement(_ doing: String, switching: () throws -> Void = {}) throws {
        do {
            try switching()
            try fileSystem.synchronizeDirectory(files.directory)
        } catch {
            throw fail(error, doing)
        }
    }

    // MARK: Migrating

    /// Replaces the store with a migration's result, `bytes`: a seed awaiting migration is
    /// written as the store (the seed, the original, stays untouched); otherwise the store file
    /// is replaced keeping the original as `<store file>.<suffix>` (see
    /// ``StoreFiles/replaceKeepingOriginal(with:backupSuffix:)``). `switching` then runs. A crash
    /// at any point leaves the original or the new store, complete.
    ///
    /// - Throws: ``StoreError/Code/io``, recorded as a failure (`doing`): the store refuses
    ///   writes until it is reopened.
    func replaceContents(
        with bytes: [UInt8],
        keepingOriginalAs suffix: String,
        _ doing: String,
        switching: () throws -> Void = {}
    ) throws {
        do {
            if seedAwaitingMigration {
                try files.install(bytes, "write the migrated seed store")
                seedAwaitingMigration = false
            } else {
                try files.replaceKeepingOriginal(with: bytes, backupSuffix: suffix)
            }
            try switching()
        } catch {
            throw fail(error, doing)
        }
        awaitsMigration = false
    }

    /// Called once the coordinator has loaded what the open returned: the originals earlier
    /// migrations kept have served their purpose. Failing to remove one is not worth failing
    /// the open.
    func contentsAccepted() {
        guard backupsMayGo else { return }
        backupsMayGo = false
        try? files.removeMigrationBackups()
    }

    // MARK: Closing

    /// Releases the lock.
    func close() {
        if let lockDescriptor {
            fileSystem.close(lockDescriptor)
        }
        lockDescriptor = nil
        seedAwaitingMigration = false
        awaitsMigration = false
    }
}
