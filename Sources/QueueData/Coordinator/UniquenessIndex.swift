/// One uniqueness constraint and the committed rows' values for it: which row holds each
/// combination of values.
///
/// A constraint declared on an entity also binds its subentities (they inherit the attributes
/// and the declaration), across all of them: an entity and its subentities share one index.
/// A row with `nil` (or a NaN) in any of the constraint's attributes is not constrained (as
/// with SQL's `UNIQUE`): any number of rows may leave a unique attribute unset.
struct UniquenessIndex: Sendable {
    /// The entity that declares the constraint (the topmost one in its hierarchy).
    let entityName: String
    /// The constrained attributes, in declaration order.
    let attributeNames: [String]
    /// The constrained attributes' slots in each entity the constraint binds, by entity index.
    let columns: [Int: [Int]]
    /// The row holding each combination of values.
    var rows: [Values: RowKey] = [:]

    /// A row's values for a constraint: one value needs no array.
    enum Values: Hashable, Sendable {
        case one(StoredValue)
        case several([StoredValue])

        /// The values, in the constraint's order.
        var array: [StoredValue] {
            switch self {
            case .one(let value): return [value]
            case .several(let values): return values
            }
        }
    }

    /// The constrained values of `values`, a row of the entity at `entityIndex`; `nil` when
    /// one of them is `nil` (the row is not constrained) or the constraint does not bind the
    /// entity.
    func values(of values: [StoredValue], entityIndex: Int) -> Values? {
        values.withUnsafeBufferPointer { buffer in self.values(entityIndex: entityIndex) { buffer[$0] } }
    }

    /// ``values(of:entityIndex:)`` of a committed row where it lives.
    func values(of row: RowReference, entityIndex: Int) -> Values? {
        let layout = row.block.layout
        let fields = row.fields
        return values(entityIndex: entityIndex) { layout.value(fields, slot: $0) }
    }

    /// The constraint's values of a row whose values `value` reads by column.
    private func values(entityIndex: Int, _ value: (Int) -> StoredValue) -> Values? {
        guard let columns = columns[entityIndex] else { return nil }
        if columns.count == 1 {
            let single = value(columns[0])
            if Self.isUnconstrained(single) {
                return nil
            }
            return .one(single)
        }
        var result: [StoredValue] = []
        result.reserveCapacity(columns.count)
        for column in columns {
            let columnValue = value(column)
            if Self.isUnconstrained(columnValue) {
                return nil
            }
            result.append(columnValue)
        }
        return .several(result)
    }

    /// Whether `value` leaves a row unconstrained: `nil`, and a NaN (a `Double`, or a `Date`
    /// whose interval is NaN), which equals nothing, itself included — SQLite stores it as
    /// `NULL`. (Kept in `rows`, a NaN could never be found again to be removed: each save of
    /// one added an entry for good.)
    private static func isUnconstrained(_ value: StoredValue) -> Bool {
        switch value {
        case .null: return true
        case .double(let double): return double.isNaN
        case .date(let date): return date.timeIntervalSinceReferenceDate.isNaN
        default: return false
        }
    }

    /// The indexes of every constraint of `model`, empty (without rows).
    static func indexes(for model: ManagedObjectModel) -> [UniquenessIndex] {
        let entities = model.entities
        var indexes: [UniquenessIndex] = []
        var positions: [String: Int] = [:]
        for (entityIndex, entity) in entities.enumerated() {
            for (constraint, columns) in zip(entity.uniquenessConstraints, entity.uniquenessColumns) {
                // The topmost entity of the hierarchy declaring the same constraint names the index.
                let root =
                    ([entity] + model.ancestors(of: entity)).last { $0.uniquenessConstraints.contains(constraint) }
                    ?? entity
                let identifier = ([root.name] + constraint).joined(separator: "\u{0}")
                if let position = positions[identifier] {
                    var merged = indexes[position].columns
                    merged[entityIndex] = columns
                    indexes[position] = UniquenessIndex(
                        entityName: root.name, attributeNames: constraint, columns: merged)
                } else {
                    positions[identifier] = indexes.count
                    indexes.append(
                        UniquenessIndex(
                            entityName: root.name, attributeNames: constraint, columns: [entityIndex: columns]))
                }
            }
        }
        return indexes
    }
}
