import Foundation

/// One save as a store records it in its persistent history: the numbers, names and keys a
/// store keeps, from which the coordinator builds the ``HistoryTransaction`` values contexts
/// see.
///
/// A ``ChangeSet`` carries one when history is tracked (``ChangeSet/transaction``); a store that
/// keeps history (``PersistentStore/keepsHistory``) records it with the change set and returns
/// it in ``StoreContents/history``.
public struct StoredTransaction: Sendable, Hashable {
    /// An updated row: its key and the names of the columns that changed.
    public struct Update: Sendable, Hashable {
        /// The row's primary key.
        public var primaryKey: Int64
        /// The names of the attributes and relationships that changed.
        public var properties: [String]

        /// Creates an update.
        public init(primaryKey: Int64, properties: [String]) {
            self.primaryKey = primaryKey
            self.properties = properties
        }
    }

    /// The changes to one entity's rows.
    public struct EntityChanges: Sendable, Hashable {
        /// The entity's name when the save was committed.
        public var entityName: String
        /// The keys of inserted rows (and of rows written back after a delete).
        public var inserted: [Int64]
        /// The updated rows.
        public var updated: [Update]
        /// The keys of deleted rows.
        public var deleted: [Int64]

        /// Creates the changes of one entity.
        public init(entityName: String, inserted: [Int64] = [], updated: [Update] = [], deleted: [Int64] = []) {
            self.entityName = entityName
            self.inserted = inserted
            self.updated = updated
            self.deleted = deleted
        }
    }

    /// The transaction number: greater than every earlier one of the store.
    public var number: Int64
    /// When the coordinator committed the save.
    public var timestamp: Date
    /// The saving context's transaction author.
    public var author: String?
    /// The saving context's name.
    public var contextName: String?
    /// The changes, one entry per entity that changed.
    public var entities: [EntityChanges]

    /// Creates a transaction.
    public init(number: Int64, timestamp: Date, author: String?, contextName: String?, entities: [EntityChanges]) {
        self.number = number
        self.timestamp = timestamp
        self.author = author
        self.contextName = contextName
        self.entities = entities
    }
}

extension StoredTransaction {
    /// The history entry of `changes`, whose columns are those of `schema`'s entities (by name).
    init(
        number: Int64,
        timestamp: Date,
        author: String?,
        contextName: String?,
        changes: ChangeSet,
        columnNames: (_ entityName: String, _ column: Int) -> String
    ) {
        self.init(
            number: number, timestamp: timestamp, author: author, contextName: contextName,
            entities: changes.entities.map { entity in
                EntityChanges(
                    entityName: entity.entityName, inserted: entity.inserted.map(\.primaryKey),
                    updated: entity.updated.map { update in
                        Update(
                            primaryKey: update.primaryKey,
                            properties: update.changedAttributes.map { columnNames(entity.entityName, $0) })
                    },
                    deleted: entity.deleted)
            })
    }
}
