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

    /// The value of the attribute or relationship named `name`, or `nil` if the entity has no
    /// such property (an optional attribute without a value holds ``StoredValue/null``; a
    /// relationship holds related primary keys, see ``relatedKeys(_:)``).
    public subscript(_ name: String) -> StoredValue? {
        entity.column(named: name).map { values[$0] }
    }

    /// The primary keys the relationship named `name` holds (empty if there is no such
    /// relationship).
    public func relatedKeys(_ name: String) -> [Int64] {
        entity.column(ofRelationship: name).map { RelationshipKeys.decode(values[$0]) } ?? []
    }

    /// Sets the attribute named `name` to `value`.
    ///
    /// The value must fit the attribute (checked when the step returns: a misfit fails the
    /// migration with ``StoreError/Code/migrationFailed``).
    ///
    /// - Precondition: The entity has an attribute named `name`.
    public mutating func setValue(_ value: StoredValue, for name: String) {
        guard let index = entity.column(named: name), index < entity.attributes.count else {
            preconditionFailure(
                "The entity '\(entity.name)' has no attribute '\(name)' (set relationships with "
                    + "setRelatedKeys(_:for:)) "
                    + "(it has \(entity.attributes.map(\.name).joined(separator: ", "))).")
        }
        values[index] = value
    }

    /// Points the relationship named `name` to the rows with `keys` (at most one for a
    /// to-one). Keep both sides consistent: set the inverse too; the migration fails on rows
    /// that do not point back.
    ///
    /// - Precondition: The entity has a relationship named `name`.
    public mutating func setRelatedKeys(_ keys: [Int64], for name: String) {
        guard let column = entity.column(ofRelationship: name), let relationship = entity.relationship(named: name)
        else {
            preconditionFailure("The entity '\(entity.name)' has no relationship '\(name)'.")
        }
        values[column] = RelationshipKeys.encode(keys, for: relationship)
    }

    /// Every attribute value, by attribute name.
    public var valuesByName: [String: StoredValue] {
        Dictionary(uniqueKeysWithValues: zip(entity.attributes.map(\.name), values))
    }
}
