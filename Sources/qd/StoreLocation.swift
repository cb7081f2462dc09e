import Foundation
@_spi(StoreTool) import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// A store file named on the command line: `<directory>/<name>.journal` or `<name>.json`.
struct StoreLocation {
    let url: URL
    let directory: URL
    let name: String
    let type: StoreType
    let kind: String

    /// The store at `path`.
    ///
    /// - Throws: ``ToolFailure`` (usage) when the extension is neither `journal` nor `json`.
    init(_ path: String) throws {
        url = URL(fileURLWithPath: path).standardizedFileURL
        directory = url.deletingLastPathComponent()
        name = url.deletingPathExtension().lastPathComponent
        switch url.pathExtension {
        case "journal":
            type = .journal
            kind = "journal"
        case "json":
            type = .jsonFile
            kind = "json"
        default:
            throw ToolFailure(
                .usage,
                "\(path) is not a store file: qd works on <name>.journal (journal store) and <name>.json (JSON store) files."
            )
        }
        guard !name.isEmpty else {
            throw ToolFailure(.usage, "\(path) names no store.")
        }
    }

    /// The lock file beside the store.
    var lockURL: URL { directory.appendingPathComponent("\(name).lock") }

    /// Which process holds the store's lock, from `/proc/locks`: "process 123 (TravelImport)";
    /// `nil` when nobody does (or the system does not say).
    var lockHolder: String? {
        var information = stat()
        guard stat(lockURL.path, &information) == 0,
            let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8)
        else { return nil }
        let inode = UInt64(information.st_ino)
        for line in locks.split(separator: "\n") {
            // "1: FLOCK  ADVISORY  WRITE 12345 08:01:1234567 0 EOF"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]) else { continue }
            let device = fields[5].split(separator: ":")
            guard device.count == 3, UInt64(device[2]) == inode else { continue }
            let command =
                (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            return "process \(pid) (\(command))"
        }
        return nil
    }

    /// Whether the store file exists.
    var exists: Bool { FileManager.default.fileExists(atPath: url.path) }

    /// Whether `path` names one of the store's own files: the store file or its lock file,
    /// under any name (a symbolic or hard link is the same file). Writing there would destroy
    /// the store, or replace the lock file an app holds (the next opener would not see the
    /// lock).
    func isOwnFile(_ path: String) -> Bool {
        let candidate = URL(fileURLWithPath: path).standardizedFileURL
        for own in [url, lockURL] {
            if own.path == candidate.path {
                return true
            }
            if let ownIdentity = Self.identity(of: own.path), let identity = Self.identity(of: candidate.path),
                ownIdentity == identity
            {
                return true
            }
        }
        return false
    }

    /// The device and inode of the file at `path` (following symbolic links), if it exists.
    private static func identity(of path: String) -> [UInt64]? {
        var information = stat()
        guard stat(path, &information) == 0 else { return nil }
        return [UInt64(information.st_dev), UInt64(information.st_ino)]
    }

    /// A manager on this store, with the model its own schema describes (uniqueness
    /// constraints included), and `uniquenessConstraints` added to it by entity name.
    func manager(uniquenessConstraints: [String: [[String]]] = [:]) throws -> ContextManager {
        guard exists else {
            throw ToolFailure(.unreadable, "\(url.path) does not exist.")
        }
        let contents: StoreContents
        do {
            contents = try StoreInspection.contents(of: url)
        } catch let error as StoreError {
            throw ToolFailure(.unreadable, "cannot read \(url.path): \(error.message)")
        }
        var entities = contents.schema
        if !uniquenessConstraints.isEmpty {
            entities = try entities.map { entity in
                guard let constraints = uniquenessConstraints[entity.name] else { return entity }
                return try EntityDescription(
                    name: entity.name, attributes: entity.attributes, relationships: entity.relationships,
                    uniquenessConstraints: entity.uniquenessConstraints + constraints,
                    superentityName: entity.superentityName, originalName: entity.originalName)
            }
        }
        let model: ManagedObjectModel
        do {
            model = try ManagedObjectModel(entities: entities)
        } catch {
            throw ToolFailure(.unreadable, "the schema recorded in \(url.path) is not a valid model: \(error)")
        }
        return ContextManager(
            delegate: ToolDelegate(model: model, type: type, directory: directory, name: name))
    }

    /// A failure for a store error of a writing command: a held lock names its holder.
    func failure(_ error: any Error, doing: String) -> ToolFailure {
        if let error = error as? StoreError {
            if error.code == .locked {
                let holder = lockHolder.map { " by \($0)" } ?? " by another process"
                return ToolFailure(
                    .locked,
                    "\(url.path) is held\(holder) through its lock \(lockURL.path): \(doing) needs the store to "
                        + "itself. Close the app (or let it finish) and run again; reading commands (inspect, "
                        + "verify, export) work meanwhile.")
            }
            switch error.code {
            case .corrupted, .unsupportedFormat, .incompatibleModel:
                return ToolFailure(.unreadable, "cannot \(doing) \(url.path): \(error)")
            default:
                return ToolFailure(.failed, "cannot \(doing) \(url.path): \(error)")
            }
        }
        return ToolFailure(.failed, "cannot \(doing) \(url.path): \(error)")
    }
}

/// The configuration of a manager `qd` opens: the store's own schema as the model.
struct ToolDelegate: ContextManagerDelegate {
    let model: ManagedObjectModel
    let type: StoreType
    let directory: URL
    let name: String

    var managedObjectModel: ManagedObjectModel { model }
    var persistentStoreName: String { name }
    var persistentStoreType: StoreType { type }
    var storeDirectory: URL { directory }
    var shouldUseAutomaticLightweightMigration: Bool { false }
}
