import Foundation

/// The pure part of a commit: from a save request and the committed rows before it, what the
/// commit writes — keys for the inserted rows, conflicts settled by the merge policy, uniqueness
/// constraints enforced (upserts), inverses repaired — as one value, without touching a store or
/// any state. The coordinator runs it on its queue over its tables, records the result's change
/// set in the store, and only then adopts the result's tables; a test runs it over tables of its
/// own (CommitPlannerTests).
struct CommitPlanner {
    let model: ManagedObjectModel
    /// The coordinator's identifier, which the result's ``SaveChanges`` carry.
    let coordinatorIdentifier: UUID
    /// One key per entity (the object IDs of conflicts name them).
    let entityKeys: [EntityKey]
    /// Every committed row before the commit (appended, not necessarily durable).
    let tables: [EntityTable]
    /// The committed rows' values of every uniqueness constraint.
    let uniquenessIndexes: [UniquenessIndex]

    /// What a commit writes, computed from the request and the rows before it.
    struct Result {
        /// What the store records (without a history transaction): empty `entities` when the
        /// commit changes nothing.
        var changeSet: ChangeSet
        /// Every table after the commit.
        var tables: [EntityTable]
        /// What the saving context is told (without a durability ticket).
        var outcome: SaveOutcome
        /// The rows the commit inserted, restored or updated (listed only when there are
        /// uniqueness indexes to update), and the ones it deleted.
        var written: [(entityIndex: Int, row: CommittedRow)]
        var deleted: [RowKey]
    }

    /// Plans the commit of `request`.
    ///
    /// Every updated or deleted object whose committed version is no longer the one its
    /// context last saw is a conflict, settled by the request's merge policy.
    ///
    /// - Throws: ``MergeConflictError`` for conflicts the policy leaves failing (version or
    ///   uniqueness conflicts); ``StoreError/Code/io`` when an entity's primary keys are exhausted.
    func plan(_ request: SaveRequest) throws -> Result {
        // Keys for the inserted rows come first: relationships in this save refer to them.
        var nextKeys = tables.map(\.nextPrimaryKey)
        var insertKeys: [Int64] = []
        insertKeys.reserveCapacity(request.inserts.count)
        // Inserts are read in place, field by field (a copy of one retains its values or row).
        for position in request.inserts.indices {
            let entityIndex = request.inserts[position].entityIndex
            let key = nextKeys[entityIndex]
            guard key < Int64.max else {
                throw StoreError(.io, "The primary keys of '\(model.entities[entityIndex].name)' are exhausted.")
            }
            nextKeys[entityIndex] = key + 1
            insertKeys.append(key)
        }
        let relational = hasRelationships
        var request = request
        if relational {
            // Relationships in this save may refer to the inserted objects by temporary key.
            var permanentKeys: [Int64: Int64] = [:]
            permanentKeys.reserveCapacity(request.inserts.count)
            for (insert, key) in zip(request.inserts, insertKeys) {
                permanentKeys[insert.temporaryKey] = key
            }
            for index in request.inserts.indices {
                // Read once (from the context's row copy), translated in place, stored back.
                var values = request.inserts[index].values
                translateTemporaryKeys(
                    &values, entityIndex: request.inserts[index].entityIndex, permanentKeys: permanentKeys)
                request.inserts[index].values = values
            }
            for index in request.updates.indices {
                let update = request.updates[index]
                let translated = translatingTemporaryKeys(
                    update.objectValues, entityIndex: update.entityIndex, permanentKeys: permanentKeys)
                request.updates[index].changedValues = update.changedSlots.map { translated[$0] }
            }
            for index in request.restores.indices {
                request.restores[index].values = translatingTemporaryKeys(
                    request.restores[index].values, entityIndex: request.restores[index].entityIndex,
                    permanentKeys: permanentKeys)
            }
        }
        var plan = CommitPlan()
        // Rows written back by an undo: restored where they are still deleted; where another
        // save wrote them back meanwhile, an update of what the context last saw.
        for restore in request.restores {
            let key = RowKey(entityIndex: restore.entityIndex, primaryKey: restore.primaryKey)
            if tables[restore.entityIndex].row(for: restore.primaryKey) == nil {
                plan.restores.append((key, restore.values, restore.baseVersion))
            } else {
                let slots = restore.values.indices.filter {
                    !StoredValue.isSame(restore.values[$0], restore.snapshot[$0])
                }
                request.updates.append(
                    SaveRequest.Update(
                        entityIndex: restore.entityIndex, primaryKey: restore.primaryKey,
                        baseVersion: restore.baseVersion, snapshot: restore.snapshot, changedSlots: slots,
                        changedValues: slots.map { restore.values[$0] }))
            }
        }
        /// A conflicting object: what the context based its change on, what is committed now,
        /// and what the context wants (`nil`: delete).
        struct Conflicting {
            var key: RowKey
            var baseVersion: Int64
            var snapshot: [StoredValue]
            var current: CommittedRow?
            var objectValues: [StoredValue]?
        }
        var conflicting: [Conflicting] = []
        // Rows another save deleted that stay deleted after the policy's resolution, and which
        // rows this save writes may still refer to: those references go (see
        // ``repairInverses(rows:written:deleted:released:temporaryKey:)``).
        var released: Set<RowKey> = []

        for update in request.updates {
            let key = RowKey(entityIndex: update.entityIndex, primaryKey: update.primaryKey)
            let current = tables[update.entityIndex].row(for: update.primaryKey)
            if let current, current.version == update.baseVersion {
                plan.updates.append((key, update.objectValues, update.changedSlots))
            } else if relational, let current,
                onlyToManyChanged(entityIndex: key.entityIndex, snapshot: update.snapshot, committed: current.values)
            {
                // Only to-many relationships changed meanwhile: additions and removals merge.
                let object = update.objectValues
                var merged = current.values
                for slot in update.changedSlots {
                    merged[slot] = object[slot]
                }
                merged = mergingToMany(
                    merged, entityIndex: key.entityIndex, snapshot: update.snapshot, object: object,
                    committed: current.values)
                plan.updates.append(
                    (key, merged, merged.indices.filter { !StoredValue.isSame(merged[$0], current.values[$0]) }))
            } else {
                conflicting.append(
                    Conflicting(
                        key: key, baseVersion: update.baseVersion, snapshot: update.snapshot, current: current,
                        objectValues: update.objectValues))
            }
        }
        for delete in request.deletes {
            let key = RowKey(entityIndex: delete.entityIndex, primaryKey: delete.primaryKey)
            guard let current = tables[delete.entityIndex].row(for: delete.primaryKey) else {
                continue  // Deleted already: the goal is reached, no conflict.
            }
            if current.version == delete.baseVersion {
                plan.deletes.append(key)
            } else {
                conflicting.append(
                    Conflicting(
                        key: key, baseVersion: delete.baseVersion, snapshot: delete.snapshot, current: current,
                        objectValues: nil))
            }
        }

        if !conflicting.isEmpty {
            let policy = request.mergePolicy
            // Each conflict's outcome: nil keeps the store's version, .some(nil) deletes,
            // .some(row) writes the row.
            var outcomes: [[StoredValue]??] = []
            if policy.resolvesOnRows {
                outcomes = conflicting.map {
                    policy.resolveOnRows(snapshot: $0.snapshot, committed: $0.current?.values, object: $0.objectValues)
                }
            } else {
                let conflicts = conflicting.map {
                    conflict($0.key, $0.baseVersion, $0.snapshot, $0.current, objectValues: $0.objectValues)
                }
                let resolutions = policy.resolutions(for: conflicts)
                guard resolutions.count == conflicts.count else {
                    fatalError(
                        "QueueData: the merge policy '\(policy)' returned \(resolutions.count) resolutions "
                            + "for \(conflicts.count) conflicts; return one per conflict.")
                }
                let failed = zip(conflicts, resolutions).filter { $0.1 == .fail }.map(\.0)
                guard failed.isEmpty else {
                    throw MergeConflictError(conflicts: failed)
                }
                outcomes = zip(conflicting, resolutions).map { item, resolution in
                    switch resolution {
                    case .fail, .keepStoreVersion:
                        return nil
                    case .delete:
                        return .some(nil)
                    case .write(let values):
                        return .some(
                            policy.row(
                                writing: values, over: item.current?.values ?? item.snapshot,
                                of: model.entities[item.key.entityIndex]))
                    }
                }
            }
            let mergesToMany: Bool
            if case .overwrite = policy.kind {
                mergesToMany = false
            } else {
                mergesToMany = relational
            }
            for (item, outcome) in zip(conflicting, outcomes) {
                if relational {
                    releaseDeletedRows(
                        of: item.key, current: item.current, snapshot: item.snapshot, outcome: outcome, into: &released)
                }
                switch outcome {
                case .none:
                    break
                case .some(.none):
                    if item.current != nil {
                        plan.deletes.append(item.key)
                    }
                case .some(.some(var row)):
                    if mergesToMany, let current = item.current, let object = item.objectValues {
                        // To-many relationships both sides changed keep both sides' additions.
                        row = mergingToMany(
                            row, entityIndex: item.key.entityIndex, snapshot: item.snapshot, object: object,
                            committed: current.values)
                    }
                    if let current = item.current {
                        let changed = row.indices.filter { !StoredValue.isSame(row[$0], current.values[$0]) }
                        plan.updates.append((item.key, row, changed))
                    } else {
                        plan.restores.append((item.key, row, item.baseVersion))
                    }
                }
            }
            if relational {
                for (item, outcome) in zip(conflicting, outcomes) {
                    guard let object = item.objectValues else { continue }
                    switch outcome {
                    case .none:
                        guard let current = item.current else { continue }
                        followDiscardedToOnes(
                            of: item.key, final: current.values, object: object, snapshot: item.snapshot, plan: &plan)
                    case .some(.none):
                        continue
                    case .some(.some(let row)):
                        followDiscardedToOnes(
                            of: item.key, final: row, object: object, snapshot: item.snapshot, plan: &plan)
                    }
                }
            }
        }

        // Inserts the context made as copies of its objects' rows, in a model whose saves never
        // change an insert's values (no relationships to translate or repair, no uniqueness to
        // resolve): their rows are copied into the tables, and reach the journal from there,
        // with no array of values made per row.
        let copiesInsertedRows =
            !relational && uniquenessIndexes.isEmpty && !request.inserts.isEmpty
            && request.inserts.indices.allSatisfy { request.inserts[$0].hasRow }
        var insertedValues = copiesInsertedRows ? [] : request.inserts.map(\.values)
        var inserts = request.inserts
        var upserts: [Int: RowKey] = [:]
        if !uniquenessIndexes.isEmpty {
            upserts = try resolveUniqueness(
                &plan, insertedValues: &insertedValues, inserts: inserts, insertKeys: insertKeys,
                policy: request.mergePolicy)
            if !upserts.isEmpty {
                let kept = inserts.indices.filter { upserts[$0] == nil }
                inserts = kept.map { inserts[$0] }
                insertKeys = kept.map { insertKeys[$0] }
                insertedValues = kept.map { insertedValues[$0] }
            }
        }
        if relational {
            for restore in plan.restores {
                released.remove(restore.key)
            }
            try repairRelationships(
                &plan, insertedValues: &insertedValues, inserts: inserts, insertKeys: insertKeys, released: released)
        }
        var insertEntities: [Int] = []
        insertEntities.reserveCapacity(inserts.count)
        for position in inserts.indices {
            insertEntities.append(inserts[position].entityIndex)
        }
        var insertedRows: [CommittedRow] = []
        insertedRows.reserveCapacity(inserts.count)
        if copiesInsertedRows {
            // The values are read where the rows go (each row's reference, set below).
            for key in insertKeys {
                insertedRows.append(CommittedRow(primaryKey: key, version: 1, values: []))
            }
        } else {
            for (key, values) in zip(insertKeys, insertedValues) {
                insertedRows.append(CommittedRow(primaryKey: key, version: 1, values: values))
            }
        }

        // The change set, built in place, one array per entity: appending to a copy taken out
        // of a dictionary would copy the whole array on every append.
        var changes = model.entities.map { ChangeSet.EntityChanges(entityName: $0.name) }
        // The tables after the change, built on a copy: only the chunks it touches are copied,
        // and nothing is applied unless the store commits.
        var updatedTables = tables
        var changedRows: [(entityIndex: Int, row: CommittedRow)] = []
        var restoredRows: [(entityIndex: Int, row: CommittedRow)] = []
        // Each entity's inserted rows go after its last row, in order: where they live is known
        // without a search, once they are all appended (a reference taken earlier would hold
        // its block, and the next append to the block would copy it).
        var appendedAt = updatedTables.map(\.storedCount)
        if copiesInsertedRows {
            var sources = [[RowReference]](repeating: [], count: updatedTables.count)
            var keys = [[Int64]](repeating: [], count: updatedTables.count)
            for (position, entityIndex) in insertEntities.enumerated() {
                sources[entityIndex].append(inserts[position].row.unsafelyUnwrapped)
                keys[entityIndex].append(insertedRows[position].primaryKey)
            }
            for entityIndex in sources.indices where !sources[entityIndex].isEmpty {
                updatedTables[entityIndex].append(copying: sources[entityIndex], keys: keys[entityIndex])
            }
        } else {
            var appended = [[CommittedRow]](repeating: [], count: updatedTables.count)
            for (position, entityIndex) in insertEntities.enumerated() {
                let row = insertedRows[position]
                changes[entityIndex].inserted.append(StoredRow(primaryKey: row.primaryKey, values: row.values))
                appended[entityIndex].append(row)
            }
            for entityIndex in appended.indices where !appended[entityIndex].isEmpty {
                updatedTables[entityIndex].append(contentsOf: appended[entityIndex])
            }
        }
        for (position, entityIndex) in insertEntities.enumerated() {
            let reference = updatedTables[entityIndex].reference(atPosition: appendedAt[entityIndex])
            insertedRows[position].reference = reference
            if copiesInsertedRows {
                changes[entityIndex].insertedReferences.append(reference)
            }
            appendedAt[entityIndex] += 1
        }
        for (key, values, baseVersion) in plan.restores {
            let row = updatedTables[key.entityIndex].restore(
                primaryKey: key.primaryKey, values: values, versionAtLeast: baseVersion)
            changes[key.entityIndex].inserted.append(StoredRow(primaryKey: key.primaryKey, values: values))
            restoredRows.append((key.entityIndex, row))
        }
        for (key, values, changedSlots) in plan.updates where !changedSlots.isEmpty {
            let version = (tables[key.entityIndex].row(for: key.primaryKey)?.version ?? 0) + 1
            let row = CommittedRow(primaryKey: key.primaryKey, version: version, values: values)
            changes[key.entityIndex].updated.append(
                ChangeSet.RowUpdate(primaryKey: key.primaryKey, changedAttributes: changedSlots, values: values))
            updatedTables[key.entityIndex].replace(with: row)
            changedRows.append((key.entityIndex, row))
        }
        for key in plan.deletes {
            changes[key.entityIndex].deleted.append(key.primaryKey)
            updatedTables[key.entityIndex].remove(key.primaryKey)
        }
        // Where the updated rows live, now that nothing more is written (a reference taken
        // earlier would hold its block, and the next write to the block would copy it): the
        // saved objects and the objects that merge the save share those rows.
        for position in changedRows.indices {
            changedRows[position].row.reference = updatedTables[changedRows[position].entityIndex].reference(
                for: changedRows[position].row.primaryKey)
        }
        var nextPrimaryKeys: [String: Int64] = [:]
        for (index, key) in nextKeys.enumerated() where key != tables[index].nextPrimaryKey {
            nextPrimaryKeys[model.entities[index].name] = key
            updatedTables[index].nextPrimaryKey = key
        }
        let changeSet = ChangeSet(entities: changes.filter { !$0.isEmpty }, nextPrimaryKeys: nextPrimaryKeys)
        var finalRows: [RowKey: CommittedRow?] = [:]
        for update in request.updates {
            let key = RowKey(entityIndex: update.entityIndex, primaryKey: update.primaryKey)
            finalRows[key] = .some(updatedTables[key.entityIndex].row(for: key.primaryKey))
        }
        for delete in request.deletes {
            let key = RowKey(entityIndex: delete.entityIndex, primaryKey: delete.primaryKey)
            finalRows[key] = .some(updatedTables[key.entityIndex].row(for: key.primaryKey))
        }
        for restore in request.restores {
            let key = RowKey(entityIndex: restore.entityIndex, primaryKey: restore.primaryKey)
            finalRows[key] = .some(updatedTables[key.entityIndex].row(for: key.primaryKey))
        }
        // Every insert's row, in request order: an upserted one's is the row it went into.
        var allInsertedRows = insertedRows
        if !upserts.isEmpty {
            var rowsByKey: [RowKey: CommittedRow] = [:]
            for (entityIndex, row) in zip(insertEntities, insertedRows) {
                rowsByKey[RowKey(entityIndex: entityIndex, primaryKey: row.primaryKey)] = row
            }
            var kept = insertedRows.makeIterator()
            allInsertedRows = request.inserts.indices.map { position in
                guard let target = upserts[position] else { return kept.next()! }
                return rowsByKey[target] ?? updatedTables[target.entityIndex].row(for: target.primaryKey)!
            }
        }
        // What other contexts merge: derived here, from the same rows.
        let keys = entityKeys
        let saveChanges = SaveChanges(
            coordinatorIdentifier: coordinatorIdentifier,
            inserted: insertEntities.indices.map {
                ObjectID(key: keys[insertEntities[$0]], rawValue: insertedRows[$0].primaryKey)
            }
                + restoredRows.map { ObjectID(key: keys[$0.entityIndex], rawValue: $0.row.primaryKey) },
            updated: changedRows.map { (ObjectID(key: keys[$0.entityIndex], rawValue: $0.row.primaryKey), $0.row) },
            deleted: plan.deletes.map { ObjectID(key: keys[$0.entityIndex], rawValue: $0.primaryKey) })
        let outcome = SaveOutcome(
            inserted: allInsertedRows, upsertedInserts: Set(upserts.keys), finalRows: finalRows,
            changes: saveChanges,
            durabilityTicket: nil)
        return Result(
            changeSet: changeSet, tables: updatedTables, outcome: outcome,
            // Only the uniqueness indexes read them: no list to build and free without any.
            written: uniquenessIndexes.isEmpty
                ? [] : zip(insertEntities, insertedRows).map { ($0, $1) } + restoredRows + changedRows,
            deleted: plan.deletes)
    }

    /// Runs ``repairInverses(rows:written:deleted:released:temporaryKey:)`` over the plan and the
    /// inserted rows, and takes its result back into them.
    private func repairRelationships(
        _ plan: inout CommitPlan,
        insertedValues: inout [[StoredValue]],
        inserts: [SaveRequest.Insert],
        insertKeys: [Int64],
        released: Set<RowKey>
    ) throws {
        var rows = PlannedRows(
            entityCount: tables.count,
            inserts: zip(inserts, zip(insertKeys, insertedValues)).lazy.map { insert, keyAndValues in
                (insert.entityIndex, keyAndValues.0, keyAndValues.1)
            })
        var written: [RowKey] = []
        written.reserveCapacity(inserts.count + plan.restores.count + plan.updates.count)
        for (insert, key) in zip(inserts, insertKeys) {
            written.append(RowKey(entityIndex: insert.entityIndex, primaryKey: key))
        }
        /// The temporary key of an inserted row, for error messages (found by a search: only a
        /// failing commit asks).
        func temporaryKey(_ rowKey: RowKey) -> Int64? {
            zip(inserts, insertKeys).first { $0.entityIndex == rowKey.entityIndex && $1 == rowKey.primaryKey }?
                .0.temporaryKey
        }
        for restore in plan.restores {
            rows[restore.key] = restore.values
            written.append(restore.key)
        }
        for update in plan.updates {
            rows[update.key] = update.values
            written.append(update.key)
        }
        try repairInverses(
            rows: &rows, written: &written, deleted: Set(plan.deletes), released: released, temporaryKey: temporaryKey)
        for (index, (insert, key)) in zip(inserts, insertKeys).enumerated() {
            insertedValues[index] = rows[RowKey(entityIndex: insert.entityIndex, primaryKey: key)]!
        }
        for index in plan.restores.indices {
            plan.restores[index].values = rows[plan.restores[index].key]!
        }
        let restored = Set(plan.restores.map(\.key))
        plan.updates = written.filter { !rows.isInserted($0) && !restored.contains($0) }.compactMap { key in
            guard let values = rows[key], let current = tables[key.entityIndex].row(for: key.primaryKey) else {
                return nil
            }
            return (key, values, values.indices.filter { !StoredValue.isSame(values[$0], current.values[$0]) })
        }
    }

    /// The changes a commit makes, once conflicts are resolved.
    struct CommitPlan {
        var updates: [(key: RowKey, values: [StoredValue], changedSlots: [Int])] = []
        var restores: [(key: RowKey, values: [StoredValue], baseVersion: Int64)] = []
        var deletes: [RowKey] = []
    }

    /// Where the policy did not keep the context's change of a conflicting row's to-one
    /// relationship (a to-one is one property, like an attribute), takes back what the context
    /// changed on the other side of it in the rows this save writes: the objects it pointed the
    /// relationship to no longer hold the row, and the one the kept value names holds it.
    /// Without this, the inverses repaired from those rows carried the discarded change back
    /// into the conflicting row.
    private func followDiscardedToOnes(
        of key: RowKey, final: [StoredValue], object: [StoredValue], snapshot: [StoredValue],
        plan: inout CommitPlan
    ) {
        let entity = model.entities[key.entityIndex]
        for (offset, link) in model.relationshipLinks[key.entityIndex].enumerated() where !link.relationship.isToMany {
            let column = entity.attributes.count + offset
            guard !StoredValue.isSame(object[column], snapshot[column]),
                !StoredValue.isSame(final[column], object[column])
            else { continue }
            let kept = RelationshipKeys.decode(final[column]).first
            for target in RelationshipKeys.decode(object[column]) + RelationshipKeys.decode(snapshot[column]) {
                let targetKey = RowKey(entityIndex: link.destinationIndex, primaryKey: target)
                guard let index = plan.updates.firstIndex(where: { $0.key == targetKey }) else { continue }
                var values = plan.updates[index].values
                let holds = target == kept
                if link.inverse.isToMany {
                    var keys = RelationshipKeys.decode(values[link.inverseColumn])
                    if holds {
                        if !keys.contains(key.primaryKey) {
                            keys.append(key.primaryKey)
                        }
                    } else {
                        keys.removeAll { $0 == key.primaryKey }
                    }
                    values[link.inverseColumn] = RelationshipKeys.encode(keys, for: link.inverse)
                } else if holds {
                    values[link.inverseColumn] = .integer(key.primaryKey)
                } else if RelationshipKeys.decode(values[link.inverseColumn]).first == key.primaryKey {
                    values[link.inverseColumn] =
                        tables[link.destinationIndex].row(for: target)?.values[link.inverseColumn] ?? .null
                }
                plan.updates[index].values = values
            }
        }
    }

    /// Adds to `released` the rows another save deleted that a settled conflict leaves deleted
    /// and this save may still refer to: the conflicting row itself when the policy kept the
    /// store's version of a row deleted there (the deletion stands), and the rows the written
    /// row's relationships held when the context last saw it that are deleted now (a policy
    /// writing the context's whole object cannot bring them back).
    private func releaseDeletedRows(
        of key: RowKey, current: CommittedRow?, snapshot: [StoredValue], outcome: [StoredValue]??,
        into released: inout Set<RowKey>
    ) {
        switch outcome {
        case .none:
            if current == nil {
                released.insert(key)
            }
        case .some(.none):
            break
        case .some(.some(let row)):
            let entity = model.entities[key.entityIndex]
            for (offset, link) in model.relationshipLinks[key.entityIndex].enumerated() {
                let column = entity.attributes.count + offset
                guard !StoredValue.isSame(row[column], .null) else { continue }
                let held = RelationshipKeys.decode(snapshot[column])
                for target in RelationshipKeys.decode(row[column])
                where held.contains(target) && tables[link.destinationIndex].row(for: target) == nil {
                    released.insert(RowKey(entityIndex: link.destinationIndex, primaryKey: target))
                }
            }
        }
    }

    private func conflict(
        _ key: RowKey,
        _ baseVersion: Int64,
        _ snapshot: [StoredValue],
        _ current: CommittedRow?,
        objectValues: [StoredValue]?
    ) -> MergeConflict {
        let entity = model.entities[key.entityIndex]
        func named(_ values: [StoredValue]) -> [String: StoredValue] {
            Dictionary(uniqueKeysWithValues: values.indices.map { (entity.columnName($0), values[$0]) })
        }
        return MergeConflict(
            objectID: ObjectID(key: entityKeys[key.entityIndex], rawValue: key.primaryKey),
            snapshotVersion: baseVersion, committedVersion: current?.version, snapshotValues: named(snapshot),
            committedValues: current.map { named($0.values) }, objectValues: objectValues.map(named))
    }
}
