/// Uniqueness constraints at commit time: an inserted object whose unique values another
/// object holds is upserted into it (trump policies) or refused (``MergePolicy/error``), and an
/// update that would duplicate values is refused.
extension CommitPlanner {
    /// Settles the inserts of a commit whose unique values are held by another object, then
    /// checks that no constraint is left violated.
    ///
    /// Under the trump policies an inserted object that collides with one object (committed,
    /// or inserted earlier in the same save) of its own entity is upserted into it: the two
    /// rows are merged as the policy merges a conflict (the inserted object's values against
    /// the entity's defaults), its to-many relationships joined, and every reference to the
    /// inserted object now points at the other.
    ///
    /// - Parameters:
    ///   - plan: The planned updates (upsert targets are added) and deletes (their values are
    ///     free for others to take).
    ///   - insertedValues: The inserted rows (inserts merged into an earlier insert change it).
    ///   - inserts: The request's inserts.
    ///   - insertKeys: The primary keys given to the inserts.
    ///   - policy: The save's merge policy.
    /// - Returns: The row each upserted insert went into, by insert index.
    /// - Throws: ``MergeConflictError`` with every constraint conflict left.
    func resolveUniqueness(
        _ plan: inout CommitPlan,
        insertedValues: inout [[StoredValue]],
        inserts: [SaveRequest.Insert],
        insertKeys: [Int64],
        policy: MergePolicy
    ) throws -> [Int: RowKey] {
        let constrained = Set(uniquenessIndexes.flatMap(\.columns.keys))
        guard
            inserts.contains(where: { constrained.contains($0.entityIndex) })
                || plan.updates.contains(where: { constrained.contains($0.key.entityIndex) })
                || plan.restores.contains(where: { constrained.contains($0.key.entityIndex) })
        else { return [:] }

        let deleted = Set(plan.deletes)
        var updatePositions: [RowKey: Int] = [:]
        for (position, update) in plan.updates.enumerated() {
            updatePositions[update.key] = position
        }
        // Inserts by row key, for upserts into an earlier insert and for error messages: built
        // only when one is needed.
        var insertPositionsCache: [RowKey: Int]?
        func insertPosition(_ key: RowKey) -> Int? {
            if insertPositionsCache == nil {
                var positions: [RowKey: Int] = [:]
                positions.reserveCapacity(inserts.count)
                for (position, insert) in inserts.enumerated() {
                    positions[RowKey(entityIndex: insert.entityIndex, primaryKey: insertKeys[position])] = position
                }
                insertPositionsCache = positions
            }
            return insertPositionsCache![key]
        }
        /// A committed row's values once the plan is applied (`nil`: deleted).
        func planned(_ key: RowKey) -> [StoredValue]? {
            if deleted.contains(key) { return nil }
            if let position = updatePositions[key] { return plan.updates[position].values }
            return tables[key.entityIndex].row(for: key.primaryKey)?.values
        }

        var upserts: [Int: RowKey] = [:]
        if policy.upsertsOnConstraintConflicts {
            // Values taken by the inserts kept so far, per index.
            var taken = [[UniquenessIndex.Values: RowKey]](repeating: [:], count: uniquenessIndexes.count)
            for (position, insert) in inserts.enumerated() where constrained.contains(insert.entityIndex) {
                let key = RowKey(entityIndex: insert.entityIndex, primaryKey: insertKeys[position])
                var target: RowKey?
                var isAmbiguous = false
                for (indexPosition, index) in uniquenessIndexes.enumerated() {
                    guard let values = index.values(of: insertedValues[position], entityIndex: insert.entityIndex)
                    else { continue }
                    var holder = taken[indexPosition][values]
                    if holder == nil, let existing = index.rows[values], let row = planned(existing),
                        index.values(of: row, entityIndex: existing.entityIndex) == values
                    {
                        holder = existing
                    }
                    if let holder {
                        isAmbiguous = isAmbiguous || (target != nil && target != holder)
                        target = holder
                    }
                }
                guard let target, !isAmbiguous, target.entityIndex == insert.entityIndex else {
                    // Kept as an insert: a collision with two objects, or with an object of
                    // another entity of the hierarchy, is left to the check below.
                    for (indexPosition, index) in uniquenessIndexes.enumerated() {
                        if let values = index.values(of: insertedValues[position], entityIndex: insert.entityIndex) {
                            taken[indexPosition][values] = taken[indexPosition][values] ?? key
                        }
                    }
                    continue
                }
                let entity = model.entities[insert.entityIndex]
                let object = insertedValues[position]
                // An insert's key is never a committed row's.
                let earlierInsert =
                    tables[target.entityIndex].row(for: target.primaryKey) == nil ? insertPosition(target) : nil
                let base = earlierInsert.map { insertedValues[$0] } ?? planned(target)!
                var merged = policy.upsertedRow(
                    existing: base, inserted: object, attributeCount: entity.attributes.count,
                    defaults: entity.defaultRow)
                var mergesToMany = hasRelationships
                if case .overwrite = policy.kind {
                    mergesToMany = false  // The inserted object's relationships replace the others.
                }
                if mergesToMany {
                    merged = mergingToMany(
                        merged, entityIndex: insert.entityIndex, snapshot: entity.defaultRow, object: object,
                        committed: base)
                }
                if let earlierInsert {
                    insertedValues[earlierInsert] = merged
                } else if let update = updatePositions[target] {
                    plan.updates[update].values = merged
                } else {
                    updatePositions[target] = plan.updates.count
                    plan.updates.append((target, merged, []))
                }
                upserts[position] = target
            }
            if !upserts.isEmpty && hasRelationships {
                redirectReferences(
                    upserts: upserts, plan: &plan, insertedValues: &insertedValues, inserts: inserts,
                    insertKeys: insertKeys)
            }
            // The changed slots of the rows upserts went into (and of those redirected).
            for (position, update) in plan.updates.enumerated() where !upserts.isEmpty {
                if let current = tables[update.key.entityIndex].row(for: update.key.primaryKey) {
                    plan.updates[position].changedSlots = update.values.indices.filter {
                        !StoredValue.isSame(update.values[$0], current.values[$0])
                    }
                }
            }
        }

        // What is left must hold every constraint.
        var written: [(key: RowKey, values: [StoredValue])] = []
        for (position, insert) in inserts.enumerated() where upserts[position] == nil {
            written.append(
                (RowKey(entityIndex: insert.entityIndex, primaryKey: insertKeys[position]), insertedValues[position]))
        }
        written += plan.updates.map { ($0.key, $0.values) }
        written += plan.restores.map { ($0.key, $0.values) }
        // Rows of the commit that the index may hold with their old values (inserts are new).
        let rewritten = Set(plan.updates.map(\.key) + plan.restores.map(\.key))
        /// The object ID of a row as the saving context knows it.
        func objectID(_ key: RowKey) -> ObjectID {
            let rawValue = insertPosition(key).map { inserts[$0].temporaryKey } ?? key.primaryKey
            return ObjectID(key: entityKeys[key.entityIndex], rawValue: rawValue)
        }
        var conflicts: [ConstraintConflict] = []
        for index in uniquenessIndexes {
            var seen: [UniquenessIndex.Values: RowKey] = [:]
            seen.reserveCapacity(written.count)
            for (key, values) in written {
                guard let constrainedValues = index.values(of: values, entityIndex: key.entityIndex) else { continue }
                var holder = seen[constrainedValues]
                if holder == nil, let existing = index.rows[constrainedValues], existing != key,
                    !deleted.contains(existing), !rewritten.contains(existing)
                {
                    holder = existing
                }
                if let holder {
                    conflicts.append(
                        ConstraintConflict(
                            entityName: index.entityName, attributeNames: index.attributeNames,
                            values: constrainedValues.array, objectID: objectID(key),
                            conflictingObjectID: objectID(holder)))
                } else {
                    seen[constrainedValues] = key
                }
            }
        }
        guard conflicts.isEmpty else {
            throw MergeConflictError(conflicts: [], constraintConflicts: conflicts)
        }
        return upserts
    }

    /// Points every relationship of the commit's rows at the rows the upserted inserts went
    /// into instead of at the inserts.
    private func redirectReferences(
        upserts: [Int: RowKey],
        plan: inout CommitPlan,
        insertedValues: inout [[StoredValue]],
        inserts: [SaveRequest.Insert],
        insertKeys: [Int64]
    ) {
        var redirections: [Int: [Int64: Int64]] = [:]
        for (position, target) in upserts {
            redirections[inserts[position].entityIndex, default: [:]][insertKeys[position]] = target.primaryKey
        }
        func redirect(_ values: inout [StoredValue], entityIndex: Int) {
            let entity = model.entities[entityIndex]
            for (offset, link) in model.relationshipLinks[entityIndex].enumerated() {
                guard let redirection = redirections[link.destinationIndex] else { continue }
                let column = entity.attributes.count + offset
                let keys = RelationshipKeys.decode(values[column])
                guard keys.contains(where: { redirection[$0] != nil }) else { continue }
                var seen = Set<Int64>()
                let redirected = keys.map { redirection[$0] ?? $0 }.filter { seen.insert($0).inserted }
                values[column] = RelationshipKeys.encode(redirected, for: link.relationship)
            }
        }
        for position in insertedValues.indices {
            redirect(&insertedValues[position], entityIndex: inserts[position].entityIndex)
        }
        for position in plan.updates.indices {
            redirect(&plan.updates[position].values, entityIndex: plan.updates[position].key.entityIndex)
        }
        for position in plan.restores.indices {
            redirect(&plan.restores[position].values, entityIndex: plan.restores[position].key.entityIndex)
        }
    }
}
