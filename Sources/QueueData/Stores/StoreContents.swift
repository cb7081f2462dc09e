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
    /// The file stores' format version a store of this metadata and `schema` needs: 3 when an
    /// entity has uniqueness constraints or a superentity (the model section), 2 when it has
    /// relationships, applied migration steps, or renaming identifiers (the migration
    /// section), otherwise 1. Older readers then refuse the file as newer instead of calling
    /// it damaged; other stores keep writing the older versions, byte for byte.
    func formatVersion(with schema: [EntityDescription]) -> Int {
        if schema.contains(where: { !$0.uniquenessConstraints.isEmpty || $0.superentity(in: schema) != nil }) {
            return 3
        }
        let needsMigrationSection =
            !appliedMigrationSteps.isEmpty
            || schema.contains { entity in
                entity.originalName != nil || !entity.relationships.isEmpty
                    || entity.attributes.contains { $0.originalName != nil }
            }
        return needsMigrationSection ? 2 : 1
    }
}

extension EntityDescription {
    /// The entity of `schema` this one inherits from: for a `ManagedObject` subclass, the
    /// nearest superclass's entity in `schema`; otherwise the one named `superentityName`.
    func superentity(in schema: [EntityDescription]) -> EntityDescription? {
        if classLineage.isEmpty {
            guard let superentityName, superentityName != name else { return nil }
            return schema.first { $0.name == superentityName }
        }
        for ancestor in classLineage {
            if let entity = schema.first(where: {
                $0.managedObjectClass != ManagedObject.self && ObjectIdentifier($0.managedObjectClass) == ancestor
            }) {
                return entity
            }
        }
        return nil
    }

    /// The problem with the superentities of `schema`'s entities described without a subclass,
    /// if any: one names an entity the schema lacks, or their chain is a cycle. The store
    /// readers refuse such a schema as damaged, and a model as invalid.
    static func superentityProblem(in schema: [EntityDescription]) -> String? {
        let indexes = Dictionary(schema.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        var parents = [Int?](repeating: nil, count: schema.count)
        for (index, entity) in schema.enumerated() {
            // A subclass's superentity is its superclass's entity, if the schema has one.
            guard entity.classLineage.isEmpty, let name = entity.superentityName else { continue }
            guard name != entity.name, let parent = indexes[name] else {
                return "the superentity '\(name)' of '\(entity.name)' is not another entity of the schema"
            }
            parents[index] = parent
        }
        var state = [UInt8](repeating: 0, count: schema.count)  // 0 unvisited, 1 on the path, 2 ends
        for start in schema.indices where state[start] == 0 {
            var path: [Int] = []
            var current: Int? = start
            while let index = current, state[index] != 2 {
                guard state[index] == 0 else {
                    return "the superentities of '\(schema[index].name)' form a cycle"
                }
                state[index] = 1
                path.append(index)
                current = parents[index]
            }
            for index in path {
                state[index] = 2
            }
        }
        return nil
    }

    /// `schema` (as a store recorded it) with the uniqueness constraints and superentities `model`
    /// declares, or `nil` when it records them already.
    static func recordingModel(of schema: [EntityDescription], model: ManagedObjectModel) -> [EntityDescription]? {
        var differs = false
        let recorded = schema.map { entity -> EntityDescription in
            guard let declared = model.entitiesByName[entity.name],
                !entity.recordsSameModel(as: declared, in: schema, otherSchema: model.entities)
            else { return entity }
            differs = true
            // The model's constraints name the same attributes (the version hashes are equal).
            return
                (try? entity.recording(
                    uniquenessConstraints: declared.uniquenessConstraints,
                    superentityName: declared.superentity(in: model.entities)?.name)) ?? entity
        }
        return differs ? recorded : nil
    }

    /// Whether `other` records the same uniqueness constraints (in any order) and superentity
    /// as this entity, each within its own schema.
    func recordsSameModel(
        as other: EntityDescription,
        in schema: [EntityDescription],
        otherSchema: [EntityDescription]
    ) -> Bool {
        Set(uniquenessConstraints) == Set(other.uniquenessConstraints)
            && superentity(in: schema)?.name == other.superentity(in: otherSchema)?.name
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
    /// The store's persistent history, for a store that keeps one (``PersistentStore/keepsHistory``)
    /// and has recorded it; `nil` otherwise. A store that returns a history keeps tracking it,
    /// whatever the delegate says.
    public var history: StoreHistory?
    /// Where each row is in the store's file, for errors about it (the built-in file stores).
    var rowLocator: RowLocator?
    /// The rows of each entity as a built-in file store decoded them, for the coordinator's open
    /// only (``JournalStore/open(for:packingRows:)``, ``JSONFileStore/open(for:packingRows:)``):
    /// ``rows`` is empty then. The coordinator
    /// adds them to its row blocks without an array per row; anything else reads ``rows``
    /// (see ``unpackRows()``).
    var packedRows: [String: JournalRows]?

    /// Creates store contents.
    public init(
        metadata: StoreMetadata,
        schema: [EntityDescription],
        rows: [String: [StoredRow]],
        history: StoreHistory? = nil
    ) {
        self.metadata = metadata
        self.schema = schema
        self.rows = rows
        self.history = history
    }

    /// Moves ``packedRows``, if any, into ``rows``.
    mutating func unpackRows() {
        guard let packed = packedRows else { return }
        packedRows = nil
        for (entityName, entityRows) in packed {
            rows[entityName] = entityRows.storedRows()
        }
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
        /// More new rows, where the coordinator's tables hold them (before ``inserted``'s): the
        /// journal encodes them from there; every other store, and the persistent history, gets
        /// them in ``inserted`` (see ``ChangeSet/unpackInsertedRows()``).
        var insertedReferences: [RowReference] = []

        /// Creates the changes of one entity.
        public init(entityName: String, inserted: [StoredRow] = [], updated: [RowUpdate] = [], deleted: [Int64] = []) {
            self.entityName = entityName
            self.inserted = inserted
            self.updated = updated
            self.deleted = deleted
        }

        /// Whether nothing changed.
        public var isEmpty: Bool {
            inserted.isEmpty && insertedReferences.isEmpty && updated.isEmpty && deleted.isEmpty
        }
    }

    /// The changes, one entry per entity that changed.
    public var entities: [EntityChanges]
    /// The next primary key of each entity after this change set (record these: keys are
    /// never reused).
    public var nextPrimaryKeys: [String: Int64]
    /// The change set's entry in the store's persistent history, when history is tracked: a
    /// store that keeps history (``PersistentStore/keepsHistory``) records it with the changes,
    /// all or nothing, and returns it from its next ``PersistentStore/open(for:)``. `nil` when
    /// history is not tracked.
    public var transaction: StoredTransaction?

    /// Creates a change set.
    public init(entities: [EntityChanges], nextPrimaryKeys: [String: Int64], transaction: StoredTransaction? = nil) {
        self.entities = entities
        self.nextPrimaryKeys = nextPrimaryKeys
        self.transaction = transaction
    }

    /// Moves the rows of every entity's ``EntityChanges/insertedReferences`` into its
    /// ``EntityChanges/inserted``, read into stored values.
    mutating func unpackInsertedRows() {
        for index in entities.indices where !entities[index].insertedReferences.isEmpty {
            entities[index].inserted =
                entities[index].insertedReferences.map { StoredRow(primaryKey: $0.primaryKey, values: $0.values) }
                + entities[index].inserted
            entities[index].insertedReferences = []
        }
    }
}
