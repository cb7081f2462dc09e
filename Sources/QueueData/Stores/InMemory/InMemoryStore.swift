import Dispatch
import Foundation

/// A store that keeps its rows in memory, for tests and caches.
///
/// It keeps a persistent history when asked to (``ContextManagerDelegate/tracksPersistentHistory``).
/// Its contents live as long as the store object: reopening the same instance (for example
/// through ``StoreType/custom(_:)`` returning it again) finds every committed row, while
/// ``StoreType/inMemory`` gives each load a new, empty store. Only one manager can have an
/// instance open at a time; a second gets ``StoreError/Code/locked``.
///
/// `@unchecked Sendable`: all state lives on a private serial queue, so one instance can be
/// captured by store factories and handed from manager to manager.
public final class InMemoryStore: PersistentStore, @unchecked Sendable {
    private let queue = DispatchQueue(label: "QueueData.InMemoryStore")
    // Confined to `queue`:
    private var metadata: StoreMetadata?
    private var schema: [EntityDescription] = []
    private var rows: [String: [Int64: [StoredValue]]] = [:]
    private var history: StoreHistory?
    private var isOpen = false

    /// Creates an empty in-memory store.
    public init() {}

    /// Returns the rows committed so far; a new store records `model`'s version hash.
    ///
    /// - Throws: ``StoreError/Code/locked`` if the store is already open.
    public func open(for model: ManagedObjectModel) throws -> StoreContents {
        try queue.sync {
            guard !isOpen else {
                throw StoreError(.locked, "This in-memory store is already open in another manager; close it first.")
            }
            if metadata == nil {
                let empty = StoreContents.empty(for: model)
                metadata = empty.metadata
                schema = empty.schema
            }
            isOpen = true
            return currentContents()!
        }
    }

    /// Everything the store holds; `nil` before it was first opened. Call on `queue`.
    private func currentContents() -> StoreContents? {
        guard let metadata else { return nil }
        var contents: [String: [StoredRow]] = [:]
        for (entityName, entityRows) in rows {
            contents[entityName] = entityRows.map { StoredRow(primaryKey: $0.key, values: $0.value) }
        }
        return StoreContents(metadata: metadata, schema: schema, rows: contents, history: history)
    }

    /// `true`: the store keeps the history it is given, in memory.
    public var keepsHistory: Bool { true }

    /// Keeps `state`'s history (a purge); the rows are already as compact as they get.
    ///
    /// - Throws: ``StoreError/Code/closed`` if the store is not open.
    public func compact(_ state: StoreState) throws {
        try queue.sync {
            guard isOpen else {
                throw StoreError(.closed, "The in-memory store is closed.")
            }
            history = state.history
        }
    }

    /// What the store holds; `nil` if it was never opened.
    public func inspect() throws -> StoreContents? {
        queue.sync { currentContents() }
    }

    /// Replaces every row, the schema and the metadata with `state` (a migration's result). An
    /// in-memory store keeps no original: `suffix` is ignored.
    ///
    /// - Throws: ``StoreError/Code/closed`` if the store is not open.
    public func replaceContents(with state: StoreState, keepingOriginalAs suffix: String) throws {
        try queue.sync {
            guard isOpen else {
                throw StoreError(.closed, "The in-memory store is closed.")
            }
            var newRows: [String: [Int64: [StoredValue]]] = [:]
            for (index, entity) in state.entities.enumerated() {
                var entityRows: [Int64: [StoredValue]] = [:]
                entityRows.reserveCapacity(state.rowCount(ofEntityAt: index))
                state.forEachRow(ofEntityAt: index) { primaryKey, values in
                    entityRows[primaryKey] = values
                }
                newRows[entity.name] = entityRows
            }
            metadata = state.metadata
            schema = state.entities
            rows = newRows
            history = state.history
        }
    }

    /// Applies the change set to the rows in memory.
    ///
    /// - Throws: ``StoreError/Code/closed`` if the store is not open.
    public func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        try queue.sync {
            guard isOpen, var metadata else {
                throw StoreError(.closed, "The in-memory store is closed.")
            }
            for entity in changes.entities {
                // Moved out of `rows` (so mutated in place, not copied) and back: one look-up
                // by name per entity instead of one per row.
                var table = rows.removeValue(forKey: entity.entityName) ?? [:]
                table.reserveCapacity(table.count + entity.inserted.count)
                for row in entity.inserted {
                    table[row.primaryKey] = row.values
                }
                for update in entity.updated {
                    table[update.primaryKey] = update.values
                }
                for primaryKey in entity.deleted {
                    table[primaryKey] = nil
                }
                rows[entity.entityName] = table
            }
            metadata.nextPrimaryKeys.merge(changes.nextPrimaryKeys) { Swift.max($0, $1) }
            self.metadata = metadata
            if let transaction = changes.transaction {
                history = history ?? StoreHistory()
                history!.append(transaction)
            }
        }
    }

    /// Closes the store; its rows stay in memory for a later ``open(for:)``.
    public func close() {
        queue.sync { isOpen = false }
    }
}
