import Foundation

/// One row as a store keeps it: a primary key and one value per column (each attribute, then
/// each relationship).
public struct StoredRow: Sendable, Hashable {
    /// The row's primary key, unique within its entity and never reused.
    public var primaryKey: Int64
    /// The values, in the order of the columns of the entity's schema: its attributes, then
    /// its relationships (see ``EntityDescription/relationships``).
    public var values: [StoredValue]

    /// Creates a row.
    public init(primaryKey: Int64, values: [StoredValue]) {
        self.primaryKey = primaryKey
        self.values = values
    }
}

/// What a store records about itself.
public struct StoreMetadata: Sendable, Hashable {
    /// The store's identity: part of every ``ObjectID`` of its objects.
    public var storeIdentifier: UUID
    /// The ``ManagedObjectModel/versionHash`` of the model the store was written with.
    public var versionHash: String
    /// The next primary key of each entity: keys are never reused, even after deletes.
    public var nextPrimaryKeys: [String: Int64]
    /// The names of the custom migration steps already applied, in order: each runs once.
    public var appliedMigrationSteps: [String]

    /// Creates metadata.
    public init(
        storeIdentifier: UUID,
        versionHash: String,
        nextPrimaryKeys: [String: Int64] = [:],
        appliedMigrationSteps: [String] = []
    ) {
        self.storeIdentifier = storeIdentifier
        self.versionHash = versionHash
        self.nextPrimaryKeys = nextPrimaryKeys
        self.appliedMigrationSteps = appliedMigrationSteps
    }
}

extension StoreMetadata {
    /// Whether a store of this metadata and `schema` needs the file stores' newer format
    /// (version 2): it has relationships, applied migration steps, or renaming identifiers.
    /// Older readers then refuse the file as newer instead of calling it damaged; other stores
    /// keep writing version 1, byte for byte.
    func needsNewerFormat(with schema: [EntityDescription]) -> Bool {
        !appliedMigrationSteps.isEmpty
            || schema.contains { entity in
                entity.originalName != nil || !entity.relationships.isEmpty
                    || entity.attributes.contains { $0.originalName != nil }
            }
    }
}

/// Everything a store holds, as ``PersistentStore/open(for:)`` returns it.
public struct StoreContents: Sendable {
    /// The store's metadata.
    public var metadata: StoreMetadata
    /// The entities as the store wrote them: the column order of each entity's rows.
    public var schema: [EntityDescription]
    /// The rows of each entity, by entity name.
    public var rows: [String: [StoredRow]]
    /// Where each row is in the store's file, for errors about it (the built-in file stores).
    var rowLocator: RowLocator?

    /// Creates store contents.
    public init(metadata: StoreMetadata, schema: [EntityDescription], rows: [String: [StoredRow]]) {
        self.metadata = metadata
        self.schema = schema
        self.rows = rows
    }

    /// The contents of a new, empty store for `model`, with a fresh store identifier.
    public static func empty(for model: ManagedObjectModel) -> StoreContents {
        StoreContents(
            metadata: StoreMetadata(storeIdentifier: UUID(), versionHash: model.versionHash),
            schema: model.entities, rows: [:])
    }
}

/// The changes of one save, as the coordinator hands them to a store: permanent primary keys
/// assigned, values in the order of the model's columns (attributes, then relationships).
public struct ChangeSet: Sendable {
    /// An updated row: which columns changed, and the row's values after the change.
    public struct RowUpdate: Sendable, Hashable {
        /// The row's primary key.
        public var primaryKey: Int64
        /// The indexes of the columns (attributes, then relationships) that changed, ascending.
        public var changedAttributes: [Int]
        /// All values of the row after the change.
        public var values: [StoredValue]

        /// Creates an update.
        public init(primaryKey: Int64, changedAttributes: [Int], values: [StoredValue]) {
            self.primaryKey = primaryKey
            self.changedAttributes = changedAttributes
            self.values = values
        }
    }

    /// The changes to one entity.
    public struct EntityChanges: Sendable {
        /// The entity's name.
        public var entityName: String
        /// New rows.
        public var inserted: [StoredRow]
        /// Changed rows.
        public var updated: [RowUpdate]
        /// Primary keys of deleted rows.
        public var deleted: [Int64]

        /// Creates the changes of one entity.
        public init(entityName: String, inserted: [StoredRow] = [], updated: [RowUpdate] = [], deleted: [Int64] = []) {
            self.entityName = entityName
            self.inserted = inserted
            self.updated = updated
            self.deleted = deleted
        }

        /// Whether nothing changed.
        public var isEmpty: Bool {
            inserted.isEmpty && updated.isEmpty && deleted.isEmpty
        }
    }

    /// The changes, one entry per entity that changed.
    public var entities: [EntityChanges]
    /// The next primary key of each entity after this change set (record these: keys are
    /// never reused).
    public var nextPrimaryKeys: [String: Int64]

    /// Creates a change set.
    public init(entities: [EntityChanges], nextPrimaryKeys: [String: Int64]) {
        self.entities = entities
        self.nextPrimaryKeys = nextPrimaryKeys
    }
}
