import Foundation

@testable import QueueData

/// A custom store with group commit, written the simplest way: a JSON Lines log (a header,
/// then one change set per line) appended in phase one and synchronized with one `fdatasync`
/// in phase two, on its own synchronization queue. It shows that group commit is the
/// protocol's, not the journal's, and runs through the conformance suite (faults included).
final class AppendLogStore: PersistentStore {
    private struct Header: Codable {
        var storeIdentifier: UUID
        var versionHash: String
        var entities: [Entity]
    }

    private struct Entity: Codable {
        var name: String
        var attributes: [CodableFileStore.Attribute]
    }

    private struct Change: Codable {
        var entity: String
        var inserted: [Row]
        var updated: [Row]
        var deleted: [Int64]
    }

    private struct Row: Codable {
        var primaryKey: Int64
        var values: [CodableFileStore.Value]
    }

    private struct Line: Codable {
        var changes: [Change]
        var nextPrimaryKeys: [String: Int64]
    }

    let path: String
    private let fileSystem: any FileSystem
    private let queue = DispatchQueue(label: "AppendLogStore.synchronization")
    private var descriptor: Int32?
    private var end: Int64 = 0
    private var failure: StoreError?

    init(path: String, fileSystem: any FileSystem) {
        self.path = path
        self.fileSystem = fileSystem
    }

    var storeURL: URL? { URL(fileURLWithPath: path) }
    var synchronizationQueue: DispatchQueue? { queue }

    func open(for model: ManagedObjectModel) throws -> StoreContents {
        if !fileSystem.fileExists(path) {
            let header = Header(
                storeIdentifier: UUID(), versionHash: model.versionHash,
                entities: model.entities.map {
                    Entity(name: $0.name, attributes: $0.attributes.map(CodableFileStore.Attribute.init))
                })
            let bytes = Array(try JSONEncoder().encode(header)) + [0x0A]
            try io("create") {
                try bytes.withUnsafeBytes {
                    try fileSystem.replaceAtomically(
                        path, directory: (path as NSString).deletingLastPathComponent, with: $0)
                }
            }
        }
        let bytes = try io("read") { try fileSystem.readFile(path) }
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        // A last line without its newline was torn by a crash before its sync: never acknowledged.
        lines.removeLast()
        guard let first = lines.first, let header = try? JSONDecoder().decode(Header.self, from: Data(first)) else {
            throw StoreError(.corrupted, "The log has no header.", url: storeURL)
        }
        var rows: [String: [Int64: [StoredValue]]] = [:]
        var nextPrimaryKeys: [String: Int64] = [:]
        for line in lines.dropFirst() {
            guard let decoded = try? JSONDecoder().decode(Line.self, from: Data(line)) else {
                throw StoreError(.corrupted, "A line of the log is damaged.", url: storeURL)
            }
            for change in decoded.changes {
                for row in change.inserted + change.updated {
                    rows[change.entity, default: [:]][row.primaryKey] = row.values.map(\.stored)
                }
                for key in change.deleted {
                    rows[change.entity]?[key] = nil
                }
            }
            nextPrimaryKeys.merge(decoded.nextPrimaryKeys) { max($0, $1) }
        }
        let valid = lines.reduce(0) { $0 + $1.count + 1 }
        let descriptor = try io("open") { try fileSystem.open(path, flags: O_RDWR, mode: 0) }
        do {
            try fileSystem.truncate(descriptor, to: Int64(valid), path: path)
            try fileSystem.synchronizeData(descriptor, path: path)
        } catch {
            fileSystem.close(descriptor)
            throw StoreError(.io, "Could not recover the log: \(error)", url: storeURL, underlyingError: error)
        }
        self.descriptor = descriptor
        end = Int64(valid)
        failure = nil
        return StoreContents(
            metadata: StoreMetadata(
                storeIdentifier: header.storeIdentifier, versionHash: header.versionHash,
                nextPrimaryKeys: nextPrimaryKeys),
            schema: try header.entities.map {
                try EntityDescription(name: $0.name, attributes: $0.attributes.map(\.description))
            },
            rows: rows.mapValues { $0.map { StoredRow(primaryKey: $0.key, values: $0.value) } })
    }

    func append(_ changes: ChangeSet, resultingState: StoreState) throws -> Bool {
        guard let descriptor else { throw StoreError(.closed, "The log is closed.", url: storeURL) }
        if let failure {
            throw StoreError(
                .closed, "The log refuses commits after a failed write.", url: storeURL, underlyingError: failure)
        }
        let line = Line(
            changes: changes.entities.map { entity in
                Change(
                    entity: entity.entityName,
                    inserted: entity.inserted.map {
                        Row(primaryKey: $0.primaryKey, values: $0.values.map(CodableFileStore.Value.init))
                    },
                    updated: entity.updated.map {
                        Row(primaryKey: $0.primaryKey, values: $0.values.map(CodableFileStore.Value.init))
                    },
                    deleted: entity.deleted)
            }, nextPrimaryKeys: changes.nextPrimaryKeys)
        let bytes = Array(try JSONEncoder().encode(line)) + [0x0A]
        do {
            try bytes.withUnsafeBytes { try fileSystem.writeAll(descriptor, $0, at: end, path: path) }
        } catch {
            let error = StoreError(.io, "Could not append to the log: \(error)", url: storeURL, underlyingError: error)
            failure = error
            throw error
        }
        end += Int64(bytes.count)
        return false
    }

    func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        if try !append(changes, resultingState: resultingState) {
            let synchronization = try pendingSynchronization()
            do {
                try queue.sync { try synchronization.run() }
            } catch {
                throw synchronizationFailed(error)
            }
        }
    }

    func pendingSynchronization() throws -> StoreSynchronization {
        guard let descriptor else { throw StoreError(.closed, "The log is closed.", url: storeURL) }
        if let failure {
            throw StoreError(
                .closed, "The log refuses commits after a failed write.", url: storeURL, underlyingError: failure)
        }
        let (fileSystem, path) = (self.fileSystem, self.path)
        return StoreSynchronization { try fileSystem.synchronizeData(descriptor, path: path) }
    }

    func synchronizationFailed(_ error: any Error) -> StoreError {
        let error = StoreError(.io, "Could not synchronize the log: \(error)", url: storeURL, underlyingError: error)
        failure = failure ?? error
        return error
    }

    func close() {
        guard let descriptor else { return }
        self.descriptor = nil
        // After any synchronization already queued, which may still use it.
        queue.async { [fileSystem] in fileSystem.close(descriptor) }
    }

    private func io<T>(_ doing: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw StoreError(.io, "Could not \(doing) the log: \(error)", url: storeURL, underlyingError: error)
        }
    }
}
