import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files of one file-backed store: `<directory>/<name>.<extension>`, the lock file
/// `<name>.lock` beside it, and temporary files `<name>.<extension>.tmp-*`.
struct StoreFiles {
    let fileSystem: any FileSystem
    let directory: String
    let name: String
    let fileExtension: String

    /// The store file's path.
    var path: String { "\(directory)/\(name).\(fileExtension)" }
    /// The store file's URL.
    var url: URL { URL(fileURLWithPath: path) }
    var lockPath: String { "\(directory)/\(name).lock" }

    /// - Throws: ``StoreError/Code/invalidConfiguration`` if `name` would escape the directory.
    init(directory: URL, name: String, fileExtension: String, fileSystem: any FileSystem) throws {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else {
            throw StoreError(
                .invalidConfiguration,
                "The store name '\(name)' is invalid: it must be a file name, without '/', and not '.' or '..'.")
        }
        self.fileSystem = fileSystem
        self.directory = directory.standardizedFileURL.path
        self.name = name
        self.fileExtension = fileExtension
    }

    /// The error for a failed system call.
    func ioError(_ error: any Error, _ doing: String) -> StoreError {
        if let error = error as? StoreError {
            return error
        }
        return StoreError(.io, "Could not \(doing): \(error)", url: url, underlyingError: error)
    }

    /// Creates the directory if needed and takes the store's exclusive lock.
    ///
    /// - Returns: The lock file's descriptor: closing it releases the lock.
    /// - Throws: ``StoreError/Code/locked`` if another manager or process holds it.
    func acquireLock() throws -> Int32 {
        let descriptor: Int32
        do {
            try fileSystem.makeDirectories(directory)
            descriptor = try fileSystem.open(lockPath, flags: O_RDWR | O_CREAT, mode: 0o600)
        } catch {
            throw ioError(error, "create the lock file \(lockPath)")
        }
        do {
            guard try lockWithRetry(descriptor) else {
                fileSystem.close(descriptor)
                throw StoreError(
                    .locked,
                    "The store is open in another manager or process (\(lockPath) is locked). Close it there first.",
                    url: url)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            fileSystem.close(descriptor)
            throw ioError(error, "lock \(lockPath)")
        }
        return descriptor
    }

    /// Takes the lock, retrying for up to 100 ms: an `flock` belongs to the open file
    /// description, and a child process another thread is spawning holds a copy of every
    /// descriptor until it `exec`s — so a store closed and reopened right then looks locked for
    /// a moment. A store open elsewhere still reports `.locked`, 100 ms later.
    private func lockWithRetry(_ descriptor: Int32) throws -> Bool {
        for attempt in 0..<50 {
            if try fileSystem.lockExclusively(descriptor, path: lockPath) {
                return true
            }
            if attempt < 49 {
                usleep(2_000)
            }
        }
        return false
    }

    /// Removes temporary files a crash left behind: they are never promoted to be the store.
    func removeStaleTemporaryFiles() throws {
        try removeFiles(named: "\(name).\(fileExtension)\(temporarySuffix)", "remove stale temporary files")
    }

    /// Removes the files of the directory whose names start with `prefix`.
    private func removeFiles(named prefix: String, _ doing: String) throws {
        do {
            for entry in try fileSystem.contentsOfDirectory(directory) where entry.hasPrefix(prefix) {
                try fileSystem.remove("\(directory)/\(entry)")
            }
        } catch {
            throw ioError(error, "\(doing) in \(directory)")
        }
    }

    /// Whether the store file exists.
    var exists: Bool { fileSystem.fileExists(path) }

    /// The bytes of the file at `path` (the store file, or a seed to inspect).
    ///
    /// - Throws: ``StoreError/Code/io``, saying what failed: could not `doing`.
    func read(_ path: String, _ doing: String) throws -> [UInt8] {
        do {
            return try fileSystem.readFile(path)
        } catch {
            throw ioError(error, doing)
        }
    }

    /// The bytes of `seed`, to copy in when there is no store yet.
    ///
    /// - Throws: ``StoreError/Code/invalidConfiguration`` if the seed cannot be read.
    func seedBytes(_ seed: URL) throws -> [UInt8] {
        do {
            return try fileSystem.readFile(seed.path)
        } catch {
            throw StoreError(
                .invalidConfiguration, "The seed store \(seed.path) cannot be read: \(error)", url: seed,
                underlyingError: error)
        }
    }

    /// Writes `bytes` as the store, which does not exist yet, durably and atomically (a new file
    /// written, synchronized and renamed into place, the directory synchronized): how a new
    /// store is created, a seed copied in, or a migrated seed installed (the seed itself is the
    /// original, and stays untouched).
    ///
    /// - Throws: ``StoreError/Code/io``, saying what failed: could not `doing`.
    func install(_ bytes: [UInt8], _ doing: String) throws {
        do {
            try bytes.withUnsafeBytes { try fileSystem.replaceAtomically(path, directory: directory, with: $0) }
        } catch {
            throw ioError(error, doing)
        }
    }

    /// The name migration keeps the original under: `<store file>.<suffix>`.
    func backupPath(_ suffix: String) -> String {
        "\(path).\(suffix)"
    }

    /// Removes the originals earlier migrations kept (`<store file>.pre-migration-*`): called
    /// once a store opens with the current model.
    func removeMigrationBackups() throws {
        try removeFiles(named: "\(name).\(fileExtension).pre-migration-", "remove earlier migration backups")
    }

    /// Replaces the store file with `bytes` for a migration, keeping the original as
    /// `<store file>.<backupSuffix>`: the new file is written and synchronized, the original
    /// gets its second name (a hard link, or a synchronized copy where links are not supported)
    /// and the directory is synchronized, then the new file
    /// is renamed over the store and the directory synchronized again. A crash at any point
    /// leaves the original store or the new one, complete (temporary files are removed at the
    /// next open), and the original's bytes are never touched.
    func replaceKeepingOriginal(with bytes: [UInt8], backupSuffix: String) throws {
        let backup = backupPath(backupSuffix)
        do {
            let temporary = try bytes.withUnsafeBytes { try fileSystem.writeTemporaryFile(beside: path, $0) }
            try replaceFile(withTemporary: temporary) {
                if fileSystem.fileExists(backup) {
                    try fileSystem.remove(backup)
                }
                try keepOriginal(as: backup)
                try fileSystem.synchronizeDirectory(directory)
            }
        } catch {
            throw ioError(error, "write the migrated store")
        }
        do {
            try fileSystem.synchronizeDirectory(directory)
        } catch {
            throw ioError(error, "synchronize the directory of the migrated store")
        }
    }

    /// Writes `bytes` to a new temporary file beside the store file (created exclusively, mode
    /// 0600, synchronized) and renames it over the store file: the first half of an atomic
    /// replacement, which ``StoreFileLifecycle/completeReplacement(_:switching:)`` finishes.
    ///
    /// - Throws: The error of the write or the rename; the store file is then untouched and
    ///   still the store, and the temporary file removed.
    func replaceFile(with bytes: [UInt8]) throws {
        let temporary = try bytes.withUnsafeBytes { try fileSystem.writeTemporaryFile(beside: path, $0) }
        try replaceFile(withTemporary: temporary)
    }

    /// Renames the temporary file `temporary` over the store file, once `prepare` has finished
    /// it (written the rest, synchronized it): the first half of an atomic replacement, which
    /// ``StoreFileLifecycle/completeReplacement(_:switching:)`` finishes.
    ///
    /// - Throws: The error of `prepare` or of the rename; the store file is then untouched and
    ///   still the store, and `temporary` removed.
    func replaceFile(withTemporary temporary: String, preparing prepare: () throws -> Void = {}) throws {
        do {
            try prepare()
            try fileSystem.rename(temporary, to: path)
        } catch {
            try? fileSystem.remove(temporary)
            throw error
        }
    }

    /// Gives the store file a second name, `backup`: a hard link, or — on file systems without
    /// them (FAT, some network and FUSE mounts) — a synchronized copy.
    private func keepOriginal(as backup: String) throws {
        do {
            try fileSystem.link(path, to: backup)
        } catch {
            let bytes = try fileSystem.readFile(path)
            let copy = try bytes.withUnsafeBytes { try fileSystem.writeTemporaryFile(beside: backup, $0) }
            do {
                try fileSystem.rename(copy, to: backup)
            } catch {
                try? fileSystem.remove(copy)
                throw error
            }
        }
    }

    /// Removes a store file this open created (a seed that turned out unreadable), so that a
    /// failed open leaves the directory as it was.
    func removeInstalledSeed() {
        try? fileSystem.remove(path)
        try? fileSystem.synchronizeDirectory(directory)
    }

    /// A name for a file that keeps bytes moved aside: `<store file>.<label>-<UTC timestamp>`.
    func asidePath(_ label: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let base = "\(path).\(label)-\(formatter.string(from: Date()))"
        var candidate = base
        var counter = 1
        while fileSystem.fileExists(candidate) {
            counter += 1
            candidate = "\(base)-\(counter)"
        }
        return candidate
    }
}
