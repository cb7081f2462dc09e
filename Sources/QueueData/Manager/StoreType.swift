import Foundation

/// Where a ``ContextManager`` keeps its data: returned by
/// ``ContextManagerDelegate/persistentStoreType``; changing it swaps the backend in one line.
public struct StoreType: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case journal
        case jsonFile
        case inMemory
        /// One in-memory store, loaded again and again: where
        /// ``ContextManager/migratePersistentStore(to:directory:name:)`` put the rows.
        case inMemoryStore(InMemoryStore)
        case custom(@Sendable (StoreConfiguration) throws -> any PersistentStore)
    }

    let kind: Kind

    /// A ``JournalStore`` at `<storeDirectory>/<name>.journal`: an append-only, crash-safe
    /// journal whose saves cost what they change. The default.
    public static let journal = StoreType(kind: .journal)

    /// A ``JSONFileStore`` at `<storeDirectory>/<name>.json`: one readable, diffable JSON
    /// document, rewritten by every save.
    public static let jsonFile = StoreType(kind: .jsonFile)

    /// A new, empty ``InMemoryStore`` for each load: for tests and caches.
    public static let inMemory = StoreType(kind: .inMemory)

    /// Your own store: `makeStore` is called once per load with the delegate's configuration,
    /// and may throw ``StoreError`` (for example `.invalidConfiguration`).
    ///
    /// ```swift
    /// var persistentStoreType: StoreType { .custom { configuration in MyStore(configuration) } }
    /// ```
    public static func custom(_ makeStore: @escaping @Sendable (StoreConfiguration) throws -> any PersistentStore)
        -> StoreType
    {
        StoreType(kind: .custom(makeStore))
    }

    func makeStore(_ configuration: StoreConfiguration) throws -> any PersistentStore {
        switch kind {
        case .journal:
            return try JournalStore(
                directory: configuration.directory, name: configuration.name, seedStoreURL: configuration.seedStoreURL)
        case .jsonFile:
            return try JSONFileStore(
                directory: configuration.directory, name: configuration.name, seedStoreURL: configuration.seedStoreURL)
        case .inMemory:
            return InMemoryStore()
        case .inMemoryStore(let store):
            return store
        case .custom(let makeStore):
            return try makeStore(configuration)
        }
    }

    /// `journal`, `jsonFile`, `inMemory` or `custom`.
    public var description: String {
        switch kind {
        case .journal: return "journal"
        case .jsonFile: return "jsonFile"
        case .inMemory, .inMemoryStore: return "inMemory"
        case .custom: return "custom"
        }
    }
}

/// What a store factory needs to know, read from the delegate when the store loads.
public struct StoreConfiguration: Sendable {
    /// The store's name (``ContextManagerDelegate/persistentStoreName``).
    public var name: String
    /// The directory of the store's files (``ContextManagerDelegate/storeDirectory``).
    public var directory: URL
    /// Whether the store may migrate older data to the model automatically.
    public var shouldUseAutomaticLightweightMigration: Bool
    /// A store to copy in when none exists yet (``ContextManagerDelegate/seedStoreURL``).
    public var seedStoreURL: URL?
}
