/// One row as a ``MigrationStep`` sees it: an entity's row, its primary key, and its values
/// by attribute name.
///
/// Rows of ``MigrationRows/originalRows(of:)`` follow the schema the store was written with;
/// rows of ``MigrationRows/rows(of:)`` and ``MigrationRows/updateRows(of:_:)`` follow the
/// current model.
public struct MigrationRow: Sendable {
    /// The entity the row belongs to (as stored, for original rows).
    public let entity: EntityDescription
    /// The row's primary key: the same before and after migration, so original and migrated
    /// rows of one object share it.
    public let primaryKey: Int64
    var values: [StoredValue]

    init(entity: EntityDescription, primaryKey: Int64, values: [StoredValue]) {
        self.entity = entity
        self.primaryKey = primaryKey
        self.values = values
    }

    /// The value of the attribute named `name`, or `nil` if the entity has no such attribute
    /// (an optional attribute without a value holds ``StoredValue/null``).
    public subscript(_ name: String) -> StoredValue? {
        entity.index(ofAttribute: name).map { values[$0] }
    }

    /// Sets the attribute named `name` to `value`.
    ///
    /// The value must fit the attribute (checked when the step returns: a misfit fails the
    /// migration with ``StoreError/Code/migrationFailed``).
    ///
    /// - Precondition: The entity has an attribute named `name`.
    public mutating func setValue(_ value: StoredValue, for name: String) {
        guard let index = entity.index(ofAttribute: name) else {
            preconditionFailure(
                "The entity '\(entity.name)' has no attribute '\(name)' "
                    + "(it has \(entity.attributes.map(\.name).joined(separator: ", "))).")
        }
        values[index] = value
    }

    /// Every value, by attribute name.
    public var valuesByName: [String: StoredValue] {
        Dictionary(uniqueKeysWithValues: zip(entity.attributes.map(\.name), values))
    }
}
