import Foundation
import QueueData

@testable import QueueData

/// A manager on a journal store in `directory`, through `fileSystem` when given.
///
/// - Parameters:
///   - backgroundCompaction: Whether automatic compactions write their snapshot off the saving
///     path (the store's default); `false` compacts inside the save that finds it due, for
///     tests that count file-system operations in order.
///   - onStore: Called with each store the manager opens.
func journalManager(
    _ directory: TemporaryDirectory,
    name: String = "Store",
    fileSystem: (any FileSystem)? = nil,
    seed: URL? = nil,
    model: ManagedObjectModel = testModel,
    migrates: Bool = true,
    steps: [MigrationStep] = [],
    onProgress: (@Sendable (MigrationProgress) -> Void)? = nil,
    backgroundCompaction: Bool = true,
    tracksHistory: Bool = false,
    onStore: (@Sendable (JournalStore) -> Void)? = nil
) -> ContextManager {
    let url = directory.url
    let fileSystem: any FileSystem = fileSystem ?? POSIXFileSystem()
    return ContextManager(
        delegate: TestStoreDelegate(
            model: model,
            storeType: .custom { _ in
                let store = try JournalStore(directory: url, name: name, seedStoreURL: seed, fileSystem: fileSystem)
                store.compactsInBackground = backgroundCompaction
                onStore?(store)
                return store
            }, migrates: migrates, steps: steps, onProgress: onProgress, tracksHistory: tracksHistory))
}

/// A manager on a JSON store in `directory`, through `fileSystem` when given.
func jsonManager(
    _ directory: TemporaryDirectory,
    name: String = "Store",
    fileSystem: (any FileSystem)? = nil,
    seed: URL? = nil,
    model: ManagedObjectModel = testModel,
    migrates: Bool = true,
    steps: [MigrationStep] = [],
    onProgress: (@Sendable (MigrationProgress) -> Void)? = nil,
    tracksHistory: Bool = false
) -> ContextManager {
    let url = directory.url
    let fileSystem: any FileSystem = fileSystem ?? POSIXFileSystem()
    return ContextManager(
        delegate: TestStoreDelegate(
            model: model,
            storeType: .custom { _ in
                try JSONFileStore(directory: url, name: name, seedStoreURL: seed, fileSystem: fileSystem)
            }, migrates: migrates, steps: steps, onProgress: onProgress, tracksHistory: tracksHistory))
}

/// Inserts one destination per save, named `names` in order.
func saveOneByOne(_ manager: ContextManager, _ names: [String]) throws {
    let context = try manager.createContext()
    try context.performAndWait {
        for name in names {
            context.insert(Destination.self).name = name
            try context.save()
        }
    }
}

/// The names of the stored destinations, in primary-key order.
func storedNames(_ manager: ContextManager) throws -> [String] {
    let context = try manager.createContext()
    return try context.performAndWait { try context.fetch(FetchRequest<Destination>()).map(\.name) }
}

/// The start offsets of a journal's records, and the file's end.
func recordOffsets(_ bytes: [UInt8]) -> [Int] {
    var offsets: [Int] = []
    var offset = JournalFormat.headerSize
    while offset + JournalFormat.recordHeaderSize <= bytes.count {
        offsets.append(offset)
        let length = bytes.withUnsafeBytes {
            Int(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
        }
        offset += JournalFormat.recordHeaderSize + length
    }
    return offsets
}

/// The bytes of a store file of `kind` ("journal" or "json") holding `contents`, as a hand edit
/// (or another tool) could write it.
func storeFileBytes(_ contents: StoreContents, kind: String) -> [UInt8] {
    if kind == "journal" {
        return JournalStore.snapshotFileBytes(contents)
    }
    let rows = contents.schema.map { contents.rows[$0.name] ?? [] }
    return JSONDocumentWriter.document(
        metadata: contents.metadata, schema: contents.schema, rowCount: { rows[$0].count },
        forEachRow: { index, body in rows[index].forEach { body($0.primaryKey, $0.values) } })
}
