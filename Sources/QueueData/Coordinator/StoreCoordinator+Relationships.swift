/// Relationships at commit time: temporary keys become permanent, concurrent additions to a
/// to-many relationship merge instead of conflicting, and both sides of every relationship
/// the commit changes end up pointing at each other.
extension StoreCoordinator {
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
        let entity = model.entities[entityIndex]
        guard !entity.relationships.isEmpty else { return values }
        var values = values
        for (offset, relationship) in entity.relationships.enumerated() {
            let column = entity.attributes.count + offset
            let keys = RelationshipKeys.decode(values[column])
            guard keys.contains(where: { $0 < 0 }) else { continue }
            let translated = keys.compactMap { $0 < 0 ? permanentKeys[$0] : $0 }
            values[column] = RelationshipKeys.encode(translated, for: relationship)
        }
        return values
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
    ///   - temporaryKeys: The temporary key of each inserted row, for error messages.
    /// - Throws: ``ValidationError`` when a row would refer to a row that does not exist (deleted
    ///   by another save).
    func repairInverses(
        rows: inout [RowKey: [StoredValue]],
        written: inout [RowKey],
        deleted: Set<RowKey>,
        temporaryKeys: [RowKey: Int64]
    ) throws {
        func current(_ key: RowKey) -> [StoredValue]? {
            if deleted.contains(key) { return nil }
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
        func edit(_ key: RowKey, _ column: Int, _ relationship: RelationshipDescription, _ change: ([Int64]) -> [Int64])
        {
            guard let values = current(key) else { return }
            let keys = RelationshipKeys.decode(values[column])
            let changed = change(keys)
            if changed != keys {
                set(key, column, RelationshipKeys.encode(changed, for: relationship))
            }
        }

        for key in written {
            let entity = model.entities[key.entityIndex]
            guard !entity.relationships.isEmpty, let after = rows[key] else { continue }
            let before = tables[key.entityIndex].row(for: key.primaryKey)?.values
            for (offset, link) in model.relationshipLinks[key.entityIndex].enumerated() {
                let column = entity.attributes.count + offset
                let old = before.map { RelationshipKeys.decode($0[column]) } ?? []
                let new = RelationshipKeys.decode(rows[key]?[column] ?? after[column])
                guard old != new else { continue }
                let oldSet = Set(old)
                let newSet = Set(new)
                for target in old where !newSet.contains(target) {
                    edit(
                        RowKey(entityIndex: link.destinationIndex, primaryKey: target), link.inverseColumn, link.inverse
                    ) {
                        $0.filter { $0 != key.primaryKey }
                    }
                }
                for target in new where !oldSet.contains(target) {
                    let targetKey = RowKey(entityIndex: link.destinationIndex, primaryKey: target)
                    guard let targetValues = current(targetKey) else {
                        let destination = model.entities[link.destinationIndex]
                        throw ValidationError(failures: [
                            ValidationError.Failure(
                                objectID: ObjectID(
                                    key: entityKeys[key.entityIndex],
                                    rawValue: temporaryKeys[key] ?? key.primaryKey),
                                entityName: entity.name, property: link.relationship.name,
                                reason: "refers to \(destination.name) \(target), which was deleted by another save")
                        ])
                    }
                    if link.inverse.isToMany {
                        edit(targetKey, link.inverseColumn, link.inverse) {
                            $0.contains(key.primaryKey) ? $0 : $0 + [key.primaryKey]
                        }
                    } else {
                        let previous = RelationshipKeys.decode(targetValues[link.inverseColumn]).first
                        guard previous != key.primaryKey else { continue }
                        set(targetKey, link.inverseColumn, .integer(key.primaryKey))
                        if let previous {
                            edit(RowKey(entityIndex: key.entityIndex, primaryKey: previous), column, link.relationship)
                            {
                                $0.filter { $0 != target }
                            }
                        }
                    }
                }
            }
        }
        // References to deleted rows go away with them.
        for key in deleted {
            guard let values = tables[key.entityIndex].row(for: key.primaryKey)?.values else { continue }
            let entity = model.entities[key.entityIndex]
            for (offset, link) in model.relationshipLinks[key.entityIndex].enumerated() {
                for target in RelationshipKeys.decode(values[entity.attributes.count + offset]) {
                    edit(
                        RowKey(entityIndex: link.destinationIndex, primaryKey: target), link.inverseColumn, link.inverse
                    ) {
                        $0.filter { $0 != key.primaryKey }
                    }
                }
            }
        }
    }
}
