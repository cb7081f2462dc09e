/// Fills an entity's table with the rows a store returned at open, checking each against the
/// model (see ``StoreCoordinator/loadTables(_:model:)``).
///
/// Keys arrive in increasing order as a rule, which rules duplicates out, and the rows go
/// straight into the table's blocks; from the first key that does not, every key is checked
/// against a set of those seen, and the rest are sorted in at the end. (A struct changed by its
/// mutating method: state captured by a nested function would be checked for exclusive access
/// dynamically on every row.)
struct TableLoader {
    let entity: EntityDescription
    /// The number of columns of the entity's schema as the store wrote it.
    let storedColumnCount: Int
    /// The store's next primary key of the entity: every key is below it.
    let nextKey: Int64
    let locator: RowLocator?
    private var previousKey: Int64 = 0
    private var seen: Set<Int64>?
    private var table: EntityTable
    private var outOfOrder: [CommittedRow] = []

    init(entity: EntityDescription, storedColumnCount: Int, nextKey: Int64, locator: RowLocator?) {
        self.entity = entity
        self.storedColumnCount = storedColumnCount
        self.nextKey = nextKey
        self.locator = locator
        table = EntityTable(layout: entity.rowLayout)
    }

    /// Checks a row the store wrote with `storedCount` values, and adds it to the table:
    /// `values`, in the model's column order.
    ///
    /// - Throws: ``StoreError/Code/corrupted``, with the row's place when the store knows it, if
    ///   the row's key is duplicated, not positive or not below the next key, its width is not
    ///   the schema's, or a value does not fit its attribute or relationship.
    mutating func take(_ primaryKey: Int64, storedCount: Int, values: UnsafeBufferPointer<StoredValue>) throws {
        var isNew = true
        if seen == nil, primaryKey > previousKey {
            previousKey = primaryKey
        } else {
            if seen == nil {
                var keys = Set<Int64>(minimumCapacity: table.liveCount + 1)
                table.snapshot.forEachLiveRow { keys.insert($0.primaryKey) }
                seen = keys
            }
            isNew = seen!.insert(primaryKey).inserted
        }
        guard primaryKey > 0, primaryKey < Int64.max, isNew, storedCount == storedColumnCount else {
            throw refusal(
                primaryKey,
                "Row \(primaryKey) of '\(entity.name)' is duplicated, has a non-positive key, "
                    + "or has \(storedCount) values for \(storedColumnCount) columns.")
        }
        guard primaryKey < nextKey else {
            throw refusal(
                primaryKey,
                "Row \(primaryKey) of '\(entity.name)' has a key at or above the store's next primary key "
                    + "(\(nextKey)): keys would be handed out twice.")
        }
        for (value, attribute) in zip(values, entity.attributes)
        where !value.fits(attribute.type, isOptional: attribute.isOptional) {
            throw refusal(
                primaryKey,
                "Row \(primaryKey) of '\(entity.name)' holds \(value) in '\(attribute.name)', "
                    + "which is of type \(attribute.type.rawValue).")
        }
        for (column, check) in entity.attributeDecodingChecks {
            do {
                try check(values[column])
            } catch {
                let attribute = entity.attributes[column]
                throw refusal(
                    primaryKey,
                    "Row \(primaryKey) of '\(entity.name)' holds a value in '\(attribute.name)' that does not "
                        + "decode as its declared type \(attribute.valueTypeName ?? "(transformable)"): \(error)")
            }
        }
        for (value, relationship) in zip(values[entity.attributes.count...], entity.relationships)
        where !relationship.accepts(value) || RelationshipKeys.decode(value).contains(where: { $0 <= 0 }) {
            throw refusal(
                primaryKey,
                "Row \(primaryKey) of '\(entity.name)' holds \(value) in the relationship "
                    + "'\(relationship.name)', which is not a valid reference.")
        }
        if seen == nil {
            table.append(primaryKey: primaryKey, values: values)
        } else {
            outOfOrder.append(CommittedRow(primaryKey: primaryKey, version: 1, values: Array(values)))
        }
    }

    /// The table of every row taken, in key order, handing out keys from the next key on.
    consuming func finish() -> EntityTable {
        guard !outOfOrder.isEmpty else {
            table.nextPrimaryKey = Swift.max(table.nextPrimaryKey, nextKey)
            return table
        }
        var rows: [CommittedRow] = []
        table.snapshot.forEachLiveRow { rows.append($0.committedRow) }
        return EntityTable(layout: entity.rowLayout, rows: rows + outOfOrder, nextPrimaryKey: nextKey)
    }

    /// A refusal of the row with `primaryKey`, with its place in the file when the store knows it.
    private func refusal(_ primaryKey: Int64, _ message: String) -> StoreError {
        var error = StoreError(.corrupted, message)
        locator?.locate(&error, entity.name, primaryKey)
        return error
    }
}
