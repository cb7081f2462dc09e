/// Every row of a store during a migration, as a ``MigrationStep`` reads and changes it: the
/// rows as the store held them before this migration (read-only) and the rows in the current
/// model's shape (after the inferred changes and the steps before this one).
///
/// ```swift
/// MigrationStep("split full names") { rows in
///     rows.updateRows(of: "Person") { person, original in
///         if case .string(let name)? = original?["fullName"], let space = name.firstIndex(of: " ") {
///             person.setValue(.string(String(name[..<space])), for: "givenName")
///             person.setValue(.string(String(name[space...].dropFirst())), for: "familyName")
///         }
///     }
/// }
/// ```
///
/// Entity names of the current rows must be the model's (a wrong one traps: it is a bug in the
/// step); entity names of the original rows are the store's, and an entity the store does not
/// have simply has no rows (a new store runs every step, over no rows).
public struct MigrationRows {
    /// The entities as the store wrote them, before this migration.
    public let originalSchema: [EntityDescription]
    /// The model the store is migrated to.
    public let model: ManagedObjectModel
    /// Original rows by stored entity name, sorted by primary key.
    private let originals: [String: [StoredRow]]
    private let originalEntities: [String: EntityDescription]
    /// The stored entity each model entity's rows came from, by model entity index.
    private let sourceEntityNames: [String?]
    /// Current rows by model entity index, sorted by primary key.
    var current: [[StoredRow]]
    /// The next primary key of each model entity.
    var nextPrimaryKeys: [Int64]

    init(
        originalSchema: [EntityDescription],
        originals: [String: [StoredRow]],
        model: ManagedObjectModel,
        sourceEntityNames: [String?],
        current: [[StoredRow]],
        nextPrimaryKeys: [Int64]
    ) {
        self.originalSchema = originalSchema
        self.originalEntities = Dictionary(
            originalSchema.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.originals = originals.mapValues { rows in
            rows.sorted { $0.primaryKey < $1.primaryKey }
        }
        self.model = model
        self.sourceEntityNames = sourceEntityNames
        self.current = current
        self.nextPrimaryKeys = nextPrimaryKeys
    }

    // MARK: Original rows

    /// The rows of the stored entity `entityName` as they were before this migration, in
    /// primary-key order; empty if the store had no such entity.
    ///
    /// - Complexity: O(*n*) for the entity's *n* rows.
    public func originalRows(of entityName: String) -> [MigrationRow] {
        guard let entity = originalEntities[entityName], let rows = originals[entityName] else { return [] }
        return rows.map { MigrationRow(entity: entity, primaryKey: $0.primaryKey, values: $0.values) }
    }

    /// The row of the stored entity `entityName` with `primaryKey` as it was before this
    /// migration, if there was one.
    ///
    /// - Complexity: O(log *n*).
    public func originalRow(of entityName: String, primaryKey: Int64) -> MigrationRow? {
        guard let entity = originalEntities[entityName], let rows = originals[entityName],
            let index = Self.index(of: primaryKey, in: rows)
        else { return nil }
        return MigrationRow(entity: entity, primaryKey: primaryKey, values: rows[index].values)
    }

    // MARK: Current rows

    /// The rows of the model's entity `entityName`, in primary-key order.
    ///
    /// - Precondition: The model has an entity named `entityName`.
    public func rows(of entityName: String) -> [MigrationRow] {
        let (entityIndex, entity) = modelEntity(entityName)
        return current[entityIndex].map { MigrationRow(entity: entity, primaryKey: $0.primaryKey, values: $0.values) }
    }

    /// Calls `body` with every row of the model's entity `entityName` and the same row as it
    /// was before this migration (`nil` for rows the store did not have, and rows of entities
    /// it did not have), keeping what `body` changes.
    ///
    /// - Precondition: The model has an entity named `entityName`.
    /// - Throws: What `body` throws; the rows are then left as they were.
    /// - Complexity: O(*n* log *n*) for the entity's *n* rows.
    public mutating func updateRows(
        of entityName: String,
        _ body: (_ row: inout MigrationRow, _ original: MigrationRow?) throws -> Void
    ) rethrows {
        let (entityIndex, entity) = modelEntity(entityName)
        let source = sourceEntityNames[entityIndex]
        var rows = current[entityIndex]
        for index in rows.indices {
            let primaryKey = rows[index].primaryKey
            var row = MigrationRow(entity: entity, primaryKey: primaryKey, values: rows[index].values)
            try body(&row, source.flatMap { originalRow(of: $0, primaryKey: primaryKey) })
            rows[index].values = row.values
        }
        current[entityIndex] = rows
    }

    /// Removes the rows of the model's entity `entityName` for which `shouldRemove` is true.
    ///
    /// - Precondition: The model has an entity named `entityName`.
    public mutating func removeRows(
        of entityName: String,
        where shouldRemove: (MigrationRow) throws -> Bool
    ) rethrows {
        let (entityIndex, entity) = modelEntity(entityName)
        try current[entityIndex].removeAll { row in
            try shouldRemove(MigrationRow(entity: entity, primaryKey: row.primaryKey, values: row.values))
        }
    }

    /// Adds a row to the model's entity `entityName`: the attributes `values` names get those
    /// values, the others their defaults.
    ///
    /// - Precondition: The model has an entity named `entityName` with every attribute
    ///   `values` names.
    /// - Returns: The new row's primary key.
    @discardableResult
    public mutating func insertRow(into entityName: String, _ values: [String: StoredValue] = [:]) -> Int64 {
        let (entityIndex, entity) = modelEntity(entityName)
        var row = MigrationRow(entity: entity, primaryKey: nextPrimaryKeys[entityIndex], values: entity.defaultRow)
        for (name, value) in values {
            row.setValue(value, for: name)
        }
        current[entityIndex].append(StoredRow(primaryKey: row.primaryKey, values: row.values))
        nextPrimaryKeys[entityIndex] += 1
        return row.primaryKey
    }

    private func modelEntity(_ name: String) -> (Int, EntityDescription) {
        guard let index = model.entityIndexes[name] else {
            preconditionFailure(
                "The model has no entity '\(name)' (it has \(model.entities.map(\.name).joined(separator: ", "))).")
        }
        return (index, model.entities[index])
    }

    private static func index(of primaryKey: Int64, in rows: [StoredRow]) -> Int? {
        var low = 0
        var high = rows.count
        while low < high {
            let middle = (low + high) / 2
            if rows[middle].primaryKey < primaryKey {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low < rows.count && rows[low].primaryKey == primaryKey ? low : nil
    }
}
