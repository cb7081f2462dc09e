/// Relationships at commit time: temporary keys become permanent, concurrent additions to a
/// to-many relationship merge instead of conflicting, and both sides of every relationship
/// the commit changes end up pointing at each other.
extension CommitPlanner {
    /// Whether any entity of the model has relationships (otherwise none of this runs).
    var hasRelationships: Bool {
        model.entities.contains { !$0.relationships.isEmpty }
    }

    /// `values` of an entity with the relationships' temporary keys replaced by the permanent
    /// keys this commit gives the inserted objects; keys of objects that are not part of the
    /// save (inserted, then discarded) are dropped.
    func translatingTemporaryKeys(
        _ values: [StoredValue],
        entityIndex: Int,
        permanentKeys: [Int64: Int64]
    ) -> [StoredValue] {
        var values = values
        translateTemporaryKeys(&values, entityIndex: entityIndex, permanentKeys: permanentKeys)
        return values
    }

    /// `translatingTemporaryKeys(_:entityIndex:permanentKeys:)` in place: an array held only
    /// by the caller is changed without a copy.
    func translateTemporaryKeys(_ values: inout [StoredValue], entityIndex: Int, permanentKeys: [Int64: Int64]) {
        let entity = model.entities[entityIndex]
        guard !entity.relationships.isEmpty else { return }
        for (offset, relationship) in entity.relationships.enumerated() {
            let column = entity.attributes.count + offset
            if !relationship.isToMany, case .integer(let key) = values[column] {
                // A to-one: one look-up, no arrays.
                if key < 0 {
                    values[column] = permanentKeys[key].map { .integer($0) } ?? .null
                }
                continue
            }
            let keys = RelationshipKeys.decode(values[column])
            guard keys.contains(where: { $0 < 0 }) else { continue }
            let translated = keys.compactMap { $0 < 0 ? permanentKeys[$0] : $0 }
            values[column] = RelationshipKeys.encode(translated, for: relationship)
        }
    }

    /// The key a to-one relationship's stored value holds: `.some(nil)` for none, `nil` when
    /// the value is not in a to-one's form (the general path then reads it as a list).
    static func toOneKey(_ value: StoredValue) -> Int64?? {
        switch value {
        case .integer(let key): return .some(key)
        case .null: return .some(nil)
        default: return nil
        }
    }

    /// Whether the only columns another save changed since `snapshot` are to-many
    /// relationships: additions and removals there merge, so such rows are not conflicts.
    func onlyToManyChanged(entityIndex: Int, snapshot: [StoredValue], committed: [StoredValue]) -> Bool {
        let entity = model.entities[entityIndex]
        for column in snapshot.indices where !StoredValue.isSame(snapshot[column], committed[column]) {
            guard column >= entity.attributes.count,
                entity.relationships[column - entity.attributes.count].isToMany
            else { return false }
        }
        return true
    }

    /// `values` with each to-many relationship both sides changed since `snapshot` merged:
    /// the committed objects, plus the ones this side added, minus the ones it removed.
    func mergingToMany(
        _ values: [StoredValue],
        entityIndex: Int,
        snapshot: [StoredValue],
        object: [StoredValue],
        committed: [StoredValue]
    ) -> [StoredValue] {
        let entity = model.entities[entityIndex]
        var values = values
        for (offset, relationship) in entity.relationships.enumerated() where relationship.isToMany {
            let column = entity.attributes.count + offset
            guard !StoredValue.isSame(object[column], snapshot[column]),
                !StoredValue.isSame(committed[column], snapshot[column])
            else { continue }
            values[column] = RelationshipKeys.merged(
                snapshot: snapshot[column], object: object[column], committed: committed[column],
                relationship: relationship)
        }
        return values
    }

    /// Makes both sides of every relationship the commit changes point at each other, on the
    /// rows it writes (adding rows it did not plan to write when their inverse must change),
    /// and removes references to rows it deletes.
    ///
    /// - Parameters:
    ///   - rows: The new values of every row the commit inserts, updates or restores; rows
    ///     whose inverses change are added.
    ///   - written: Those rows' keys, in order (rows added here are appended).
    ///   - deleted: The rows the commit deletes.
    ///   - released: Rows another save deleted that stay deleted after the merge policy settled
    ///     this save's conflicts: a written row that refers to one lets it go (as a merge of that
    ///     deletion would) instead of failing.
    ///   - temporaryKey: The temporary key of an inserted row, for error messages.
    /// - Throws: ``ValidationError`` when a row would refer to a row that does not exist (deleted
    ///   by another save).
    func repairInverses(
        rows: inout PlannedRows,
        written: inout [RowKey],
        deleted: Set<RowKey>,
        released: Set<RowKey> = [],
        temporaryKey: (RowKey) -> Int64?
    ) throws {
        // To-many columns being edited, decoded once: a parent with many children written in
        // one save is edited once per child, and re-encoding its keys each time is quadratic.
        var edited: [ColumnKey: EditedKeys] = [:]
        func current(_ key: RowKey) -> [StoredValue]? {
            if !deleted.isEmpty && deleted.contains(key) { return nil }
            return rows[key] ?? tables[key.entityIndex].row(for: key.primaryKey)?.values
        }
        func set(_ key: RowKey, _ column: Int, _ value: StoredValue) {
            guard var values = current(key) else { return }
            if rows[key] == nil {
                written.append(key)
            }
            values[column] = value
            rows[key] = values
        }
        /// The keys `key`'s relationship at `column` holds now (only to-many columns are
        /// edited in place).
        func keys(_ key: RowKey, _ column: Int, isToMany: Bool) -> [Int64] {
            if isToMany, !edited.isEmpty, let keys = edited[ColumnKey(row: key, column: column)] {
                return keys.resolved
            }
            return current(key).map { RelationshipKeys.decode($0[column]) } ?? []
        }
        /// Runs `body` on the decoded keys of `key`'s to-many at `column`, decoding them the
        /// first time only (kept even when `body` changes nothing, since the next edit of the
        /// same column is likely: one per child of a parent), and changing them in place.
        func editKeys(_ key: RowKey, _ column: Int, _ body: (inout EditedKeys) -> Void) {
            let columnKey = ColumnKey(row: key, column: column)
            if let index = edited.index(forKey: columnKey) {
                body(&edited.values[index])
                return
            }
            guard let values = current(key) else { return }
            var keys = EditedKeys(RelationshipKeys.decode(values[column]))
            body(&keys)
            edited[columnKey] = keys
        }
        /// Removes `target` from `key`'s relationship at `column`.
        func remove(_ target: Int64, from key: RowKey, _ column: Int, _ relationship: RelationshipDescription) {
            if relationship.isToMany {
                editKeys(key, column) { _ = $0.members.remove(target) }
            } else if let values = current(key), RelationshipKeys.decode(values[column]).first == target {
                set(key, column, .null)
            }
        }
        /// Adds `target` to `key`'s to-many relationship at `column` (at the end if ordered).
        func add(_ target: Int64, to key: RowKey, _ column: Int) {
            editKeys(key, column) { keys in
                if keys.members.insert(target).inserted {
                    keys.order.append(target)
                }
            }
        }

        for key in written {
            let entity = model.entities[key.entityIndex]
            guard !entity.relationships.isEmpty, rows[key] != nil else { continue }
            // An inserted row has no committed values (and looking them up would cost a search).
            let before = rows.isInserted(key) ? nil : tables[key.entityIndex].row(for: key.primaryKey)?.values
            for (offset, link) in model.relationshipLinks[key.entityIndex].enumerated() {
                let column = entity.attributes.count + offset
                /// Makes `target`, which joined `key`'s relationship, point back at it.
                func join(_ target: Int64) throws {
                    let targetKey = RowKey(entityIndex: link.destinationIndex, primaryKey: target)
                    guard let targetValues = current(targetKey) else {
                        if !released.isEmpty, released.contains(targetKey) {
                            remove(target, from: key, column, link.relationship)
                            return
                        }
                        let destination = model.entities[link.destinationIndex]
                        throw ValidationError(failures: [
                            ValidationError.Failure(
                                objectID: ObjectID(
                                    key: entityKeys[key.entityIndex],
                                    rawValue: temporaryKey(key) ?? key.primaryKey),
                                entityName: entity.name, property: link.relationship.name,
                                reason: "refers to \(destination.name) \(target), which was deleted by another save")
                        ])
                    }
                    if link.inverse.isToMany {
                        add(key.primaryKey, to: targetKey, link.inverseColumn)
                    } else {
                        let previous = RelationshipKeys.decode(targetValues[link.inverseColumn]).first
                        guard previous != key.primaryKey else { return }
                        set(targetKey, link.inverseColumn, .integer(key.primaryKey))
                        if let previous {
                            remove(
                                target, from: RowKey(entityIndex: key.entityIndex, primaryKey: previous), column,
                                link.relationship)
                        }
                    }
                }
                if !link.relationship.isToMany, let oldKey = Self.toOneKey(before.map { $0[column] } ?? .null),
                    let newKey = Self.toOneKey(current(key)?[column] ?? .null)
                {
                    // A to-one holding one key or none on both sides: compared as keys, no arrays.
                    guard oldKey != newKey else { continue }
                    if let oldKey {
                        remove(
                            key.primaryKey, from: RowKey(entityIndex: link.destinationIndex, primaryKey: oldKey),
                            link.inverseColumn, link.inverse)
                    }
                    if let newKey {
                        try join(newKey)
                    }
                    continue
                }
                let old = before.map { RelationshipKeys.decode($0[column]) } ?? []
                let new = keys(key, column, isToMany: link.relationship.isToMany)
                guard old != new else { continue }
                // Sets only for long lists: a to-one's (or a new row's) are one key or none.
                let oldSet = old.count > 8 ? Set(old) : []
                let newSet = new.count > 8 ? Set(new) : []
                func isOld(_ target: Int64) -> Bool { old.count > 8 ? oldSet.contains(target) : old.contains(target) }
                func isNew(_ target: Int64) -> Bool { new.count > 8 ? newSet.contains(target) : new.contains(target) }
                for target in old where !isNew(target) {
                    remove(
                        key.primaryKey, from: RowKey(entityIndex: link.destinationIndex, primaryKey: target),
                        link.inverseColumn, link.inverse)
                }
                for target in new where !isOld(target) {
                    try join(target)
                }
            }
        }
        // References to deleted rows go away with them.
        // Each relationship value is read in place (no array of the row's values), and rows
        // deleted too are passed over (a cascade deletes both sides).
        for key in deleted {
            guard let reference = tables[key.entityIndex].reference(for: key.primaryKey) else { continue }
            let entity = model.entities[key.entityIndex]
            for (offset, link) in model.relationshipLinks[key.entityIndex].enumerated() {
                let value = reference.block.layout.value(reference.fields, slot: entity.attributes.count + offset)
                func detach(from target: Int64) {
                    let targetKey = RowKey(entityIndex: link.destinationIndex, primaryKey: target)
                    guard !deleted.contains(targetKey) else { return }
                    remove(key.primaryKey, from: targetKey, link.inverseColumn, link.inverse)
                }
                if case .integer(let target) = value {
                    detach(from: target)
                } else {
                    for target in RelationshipKeys.decode(value) {
                        detach(from: target)
                    }
                }
            }
        }
        // The edited to-many columns, encoded once each.
        for (columnKey, keys) in edited {
            let entity = model.entities[columnKey.row.entityIndex]
            let relationship = entity.relationships[columnKey.column - entity.attributes.count]
            let value = RelationshipKeys.encode(keys.resolved, for: relationship)
            if let values = current(columnKey.row), !StoredValue.isSame(values[columnKey.column], value) {
                set(columnKey.row, columnKey.column, value)
            }
        }
    }
}

/// One column of one row.
private struct ColumnKey: Hashable {
    var row: RowKey
    var column: Int
}

/// The keys of a to-many relationship being edited: additions append to `order`, removals
/// only leave `members`, and `resolved` puts them together.
private struct EditedKeys {
    /// The keys in order, including removed ones (and, after a removal and an addition, the
    /// same key twice: its last place counts).
    var order: [Int64]
    /// The keys held now.
    var members: Set<Int64>

    init(_ keys: [Int64]) {
        order = keys
        members = Set(keys)
    }

    /// The keys held now, in order.
    var resolved: [Int64] {
        guard order.count != members.count else { return order }
        var seen = Set<Int64>()
        var result: [Int64] = []
        for key in order.reversed() where members.contains(key) && seen.insert(key).inserted {
            result.append(key)
        }
        return result.reversed()
    }
}
