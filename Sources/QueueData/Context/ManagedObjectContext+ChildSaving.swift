import Foundation

extension ManagedObjectContext {
    /// Hands a child's validated save to its parent, then brings the child's objects up to
    /// date as after a save: inserted and updated objects take their values as their snapshot
    /// (inserted objects keep their temporary IDs, which the parent's objects share), deleted
    /// ones leave the context.
    ///
    /// - Throws: ``MergeConflictError`` when the parent changed objects since the child read
    ///   them and the merge policy did not settle it; nothing was pushed.
    func pushToParent(
        _ request: SaveRequest,
        inserts: [ManagedObject],
        updates: [ManagedObject],
        savedUpdates: [ManagedObject],
        unchangedUpdates: [ManagedObject],
        deletes: [ManagedObject]
    ) throws {
        // A deleted object's relationships as the child left them (a deletion's own changes
        // are not updates), so that the parent's delete rules see what the child's did.
        let deletedValues = deletes.map {
            $0._columnValues
        }
        let pending = temporaryKeysFromParent
        // A block of the parent: its observers learn of the push at once, and its undo manager
        // records the push as one group.
        let adopted = try withParent(asEvent: true) { parent in
            try parent.applyChildSave(request, deletedValues: deletedValues)
            return parent.permanentKeys(for: pending)
        }
        for object in inserts where !object._state.contains(.detached) {
            temporaryKeysFromParent.append((object._objectID.key.entityIndex!, object._objectID.rawValue))
        }
        for object in inserts + savedUpdates where !object._state.contains(.detached) {
            object._setSnapshot(object._columnValues, version: Swift.max(object._snapshotVersion, 1))
            object._state = []
        }
        for object in updates {
            object._state.remove(.updated)
        }
        for object in deletes {
            unregister(object)
            object._state = [.deleted, .detached, .deletedBySave]
        }
        clearPendingChanges()
        for object in inserts + savedUpdates + deletes {
            object.didSave()
        }
        for object in unchangedUpdates where !object._state.contains(.detached) {
            object.didSave()
        }
        adoptPermanentKeys(adopted)
    }

    /// What a pushed change does to one object of the parent.
    private enum ChildWrite {
        /// `values` as the policy decided them; `child` is what the child read and what it
        /// left (`nil` for a restore), for its to-many changes to apply over this context's.
        case write(entityIndex: Int, key: Int64, values: [StoredValue], child: ChildValues?)
        case delete(entityIndex: Int, key: Int64, values: [StoredValue]?)
        /// An object the child brought back (an undone deletion) whose row this context's own
        /// save deleted since: inserted again under its key, for the next save to write back.
        case restore(SaveRequest.Restore)
    }

    /// An updated object as the child read it and as it left it, in this context's keys, and
    /// this context's values of it before the push changed any object (`nil`: unknown).
    private struct ChildValues {
        var snapshot: [StoredValue]
        var object: [StoredValue]
        var current: [StoredValue]?
    }

    /// Takes a child's save as this context's own unsaved changes (on this context's queue).
    /// Checks every object first, so that a conflict the policy does not settle changes nothing.
    func applyChildSave(_ request: SaveRequest, deletedValues: [[StoredValue]]) throws {
        let policy = request.mergePolicy
        var writes: [ChildWrite] = []
        var conflicts: [MergeConflict] = []
        var conflictWrites:
            [(
                entityIndex: Int, key: Int64, current: [StoredValue]?, snapshot: [StoredValue],
                object: [StoredValue]?, deleted: [StoredValue]?
            )] = []

        /// Looks at one pushed change: without a conflict it is taken as is; with one, the
        /// policy decides (or the conflict is kept for a custom policy or `.error`).
        func consider(
            entityIndex: Int,
            key: Int64,
            snapshot: [StoredValue],
            object: [StoredValue]?,
            deleted: [StoredValue]? = nil
        ) {
            let key = translated(key)
            // The child may not have read since this context saved objects it knows by their
            // temporary keys: compare under the permanent ones.
            let entity = model.entities[entityIndex]
            let snapshot = translatedRelationships(snapshot, entity: entity)
            let object = object.map { translatedRelationships($0, entity: entity) }
            let current = currentValues(entityIndex: entityIndex, key: key)
            // A deletion leaves this context's own links made since the child read the object
            // in place, for this context's delete rules to reach them.
            let deleted = deleted.map {
                mergedRelationships(
                    translatedRelationships($0, entity: entity), snapshot: snapshot, current: current, entity: entity)
            }
            let unchanged =
                current.map { current in
                    !current.indices.contains { !StoredValue.isSame(current[$0], snapshot[$0]) }
                } ?? (object == nil)
            if unchanged {
                if let object {
                    writes.append(
                        .write(
                            entityIndex: entityIndex, key: key, values: object,
                            child: ChildValues(snapshot: snapshot, object: object, current: current)))
                } else {
                    writes.append(.delete(entityIndex: entityIndex, key: key, values: deleted))
                }
                return
            }
            if policy.resolvesOnRows {
                switch policy.resolveOnRows(snapshot: snapshot, committed: current, object: object) {
                case nil: break
                case .some(nil): writes.append(.delete(entityIndex: entityIndex, key: key, values: deleted))
                case .some(let row?):
                    writes.append(
                        .write(
                            entityIndex: entityIndex, key: key, values: row,
                            child: object.map { ChildValues(snapshot: snapshot, object: $0, current: current) }))
                }
                return
            }
            func named(_ values: [StoredValue]) -> [String: StoredValue] {
                Dictionary(uniqueKeysWithValues: values.indices.map { (entity.columnName($0), values[$0]) })
            }
            conflicts.append(
                MergeConflict(
                    objectID: ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: key),
                    snapshotVersion: 0, committedVersion: current == nil ? nil : 0,
                    snapshotValues: named(snapshot), committedValues: current.map(named),
                    objectValues: object.map(named), isWithParent: true))
            conflictWrites.append((entityIndex, key, current, snapshot, object, deleted))
        }

        for update in request.updates {
            consider(
                entityIndex: update.entityIndex, key: update.primaryKey, snapshot: update.snapshot,
                object: update.objectValues)
        }
        // An unsaved object the child pushes as inserted while this context holds it pending
        // deletion (the child deleted it, pushed, undid the deletion and pushed again, before
        // anyone saved: its key is still temporary): this context's instance comes back, as a
        // restore of a live object does, instead of a second instance of the key.
        var inserts: [SaveRequest.Insert] = []
        for insert in request.inserts {
            let key = translated(insert.temporaryKey)
            if let object = registry[insert.entityIndex][key], object._state.contains(.deleted),
                !object._state.contains(.detached)
            {
                writes.append(.write(entityIndex: insert.entityIndex, key: key, values: insert.values, child: nil))
            } else {
                inserts.append(insert)
            }
        }
        for restore in request.restores {
            if liveObject(entityIndex: restore.entityIndex, key: translated(restore.primaryKey)) == nil {
                writes.append(.restore(restore))
            } else {
                writes.append(
                    .write(
                        entityIndex: restore.entityIndex, key: restore.primaryKey, values: restore.values, child: nil))
            }
        }
        for (delete, values) in zip(request.deletes, deletedValues) {
            consider(
                entityIndex: delete.entityIndex, key: delete.primaryKey, snapshot: delete.snapshot, object: nil,
                deleted: values)
        }
        if !conflicts.isEmpty {
            var failed: [MergeConflict] = []
            for (conflict, (resolution, item)) in zip(
                conflicts, zip(policy.resolutions(for: conflicts), conflictWrites))
            {
                switch resolution {
                case .fail:
                    failed.append(conflict)
                case .keepStoreVersion:
                    break
                case .delete:
                    writes.append(.delete(entityIndex: item.entityIndex, key: item.key, values: item.deleted))
                case .write(let values):
                    let row = policy.row(
                        writing: values, over: item.current ?? item.snapshot, of: model.entities[item.entityIndex])
                    writes.append(
                        .write(
                            entityIndex: item.entityIndex, key: item.key, values: row,
                            child: item.object.map {
                                ChildValues(snapshot: item.snapshot, object: $0, current: item.current)
                            }))
                }
            }
            if !failed.isEmpty {
                throw MergeConflictError(conflicts: failed)
            }
        }

        // Nothing can fail from here on.
        var insertedObjects: [ManagedObject] = []
        for insert in inserts {
            let entity = model.entities[insert.entityIndex]
            let values = translatedRelationships(insert.values, entity: entity)
            let attributeCount = entity.attributes.count
            // Made with no links, as an insertion in this context starts: the undo manager keeps
            // its relationships as inserted, and the links are then its changes, so that undoing
            // the push takes back its side of them along with the other side (a cascade rule
            // would otherwise delete, at the next save, objects the push only linked to it).
            let unlinked = Array(values[..<attributeCount]) + entity.defaultRow[attributeCount...]
            let object: ManagedObject
            if let gone = instanceGoneForUndo(
                ObjectID(key: coordinator.entityKeys[insert.entityIndex], rawValue: translated(insert.temporaryKey)))
            {
                // An unsaved object the child brings back after this context pushed (saved) its
                // deletion to its own parent: this context's instance comes back, as a restore's
                // does, so that undoing that deletion later finds it (and a second instance of
                // the ID never exists).
                object = gone
                object._load(unlinked)
                object._resetTransientAttributes()
            } else {
                object = ManagedObject._make(
                    entity: entity, confinement: confinement,
                    objectID: ObjectID(key: coordinator.entityKeys[insert.entityIndex], rawValue: insert.temporaryKey),
                    values: unlinked)
            }
            object._state = [.inserted, .noted, .insertedInEvent]
            registry[insert.entityIndex][object._objectID.rawValue] = object
            pendingInserts.append(object)
            changedSinceProcessing.append(object)
            undoManagerValue?.recordInsertion(object)
            for column in attributeCount..<values.count {
                object._storeValue(values[column], at: column)
            }
            insertedObjects.append(object)
        }
        // Objects the child brings back after this context saved their deletion, before the
        // writes: the objects they point to point back (a write of one may list them).
        for write in writes {
            if case .restore(let restore) = write {
                insertedObjects.append(restoreForPush(restore))
            }
        }
        // The objects the inserted ones point to point back, even where the policy kept this
        // context's version of them.
        for object in insertedObjects {
            let attributeCount = object.entity.attributes.count
            for column in attributeCount..<(attributeCount + object.entity.relationships.count) {
                let link = self.link(of: object, column: column)
                let keys = RelationshipKeys.decode(object._value(at: column))
                for target in objects(entityIndex: link.destinationIndex, keys: keys) {
                    pointBack(target, to: object, column: column, link: link)
                }
            }
        }
        for write in writes {
            switch write {
            case .write(let entityIndex, let key, let values, let child):
                guard let object = liveObject(entityIndex: entityIndex, key: key) else { continue }
                let values = translatedRelationships(values, entity: object.entity)
                if object._state.contains(.deleted) {
                    // The child's version wins over the parent's pending deletion: for the undo
                    // manager, the object comes back (undoing the push deletes it again), with
                    // its values as they were before the push.
                    undoManagerValue?.willChange(object)
                    undoManagerValue?.recordInsertion(object)
                    object._state.remove(.deleted)
                    pendingListsMayRepeat = true
                    if !object._state.contains(.updated) {
                        object._state.insert(.updated)
                        pendingUpdates.append(object)
                    }
                }
                let attributeCount = object.entity.attributes.count
                for slot in 0..<attributeCount where !StoredValue.isSame(object._value(at: slot), values[slot]) {
                    object._setValue(values[slot], at: slot)
                }
                for slot in attributeCount..<values.count {
                    applyRelationship(of: object, column: slot, decided: values[slot], child: child)
                }
            case .delete(let entityIndex, let key, let values):
                guard let object = liveObject(entityIndex: entityIndex, key: key) else { continue }
                if let values, !object._state.contains(.deleted) {
                    let values = translatedRelationships(values, entity: object.entity)
                    let attributeCount = object.entity.attributes.count
                    for slot in attributeCount..<values.count
                    where !StoredValue.isSame(object._value(at: slot), values[slot]) {
                        unlinkFromDeletedObjects(object, column: slot, keeping: values[slot])
                        object._setValue(values[slot], at: slot)
                    }
                }
                delete(object, preparing: false)
            case .restore:
                break  // Done before the writes, with the insertions.
            }
        }
    }

    /// Sets `object`'s relationship at `column` as a pushed write decides, keeping every
    /// inverse in step (the other side of each link follows, whatever the child pushed for it).
    ///
    /// A to-one takes the value the policy `decided`. A to-many takes the child's changes since
    /// it read the object (`child`), added and removed over this context's current value, so
    /// that links this context made since are kept as the child's are, whichever side the
    /// policy took: the objects on the other side are pushed separately, and could not agree
    /// with a whole list chosen for one side.
    private func applyRelationship(
        of object: ManagedObject,
        column: Int,
        decided: StoredValue,
        child: ChildValues?
    ) {
        let link = self.link(of: object, column: column)
        let current = object._value(at: column)
        var target = decided
        if link.relationship.isToMany, let child {
            if StoredValue.isSame(child.object[column], child.snapshot[column]) {
                return  // The child left it alone: this context's value stands.
            }
            // Compared with this context's value before the push: the push's own changes to the
            // other sides (an inserted object pointing back, a to-one set) are the child's, and
            // must not make the child's order look like a merge with this context's.
            if !StoredValue.isSame(child.current?[column] ?? current, child.snapshot[column]) {
                target = RelationshipKeys.merged(
                    snapshot: child.snapshot[column], object: child.object[column], committed: current,
                    relationship: link.relationship)
            } else {
                target = child.object[column]
            }
        }
        guard !StoredValue.isSame(current, target) else { return }
        let keys = RelationshipKeys.decode(target)
        setRelationship(of: object, column: column, to: objects(entityIndex: link.destinationIndex, keys: keys))
    }

    /// Takes `object` out of the inverse relationships of the objects its `column` leaves that
    /// this context deleted: the child could not see them to do it, and the delete rules of this
    /// context's save would otherwise still find `object` there (a cascade would delete it).
    private func unlinkFromDeletedObjects(_ object: ManagedObject, column: Int, keeping newValue: StoredValue) {
        let kept = Set(RelationshipKeys.decode(newValue))
        let link = self.link(of: object, column: column)
        for key in RelationshipKeys.decode(object._value(at: column)) where !kept.contains(key) {
            guard let target = registry[link.destinationIndex][key], Self.isPendingDelete(target) else { continue }
            removeKey(object._objectID.rawValue, from: target, column: link.inverseColumn, relationship: link.inverse)
        }
    }

    /// The relationships of an object the child deleted, as `deleted` has them, with the
    /// child's changes since it read them (`snapshot`) applied over this context's `current`
    /// ones: an object this context linked to it since stays linked (the child never saw it,
    /// and this context's delete rules must still reach it).
    private func mergedRelationships(
        _ deleted: [StoredValue],
        snapshot: [StoredValue],
        current: [StoredValue]?,
        entity: EntityDescription
    ) -> [StoredValue] {
        guard let current else { return deleted }
        var merged = deleted
        for (offset, relationship) in entity.relationships.enumerated() {
            let slot = entity.attributes.count + offset
            guard !StoredValue.isSame(current[slot], snapshot[slot]) else { continue }
            guard !StoredValue.isSame(deleted[slot], snapshot[slot]) else {
                merged[slot] = current[slot]
                continue
            }
            guard relationship.isToMany else { continue }
            let before = RelationshipKeys.decode(snapshot[slot])
            let after = RelationshipKeys.decode(deleted[slot])
            let removed = Set(before).subtracting(after)
            var keys = RelationshipKeys.decode(current[slot]).filter { !removed.contains($0) }
            for key in after where !before.contains(key) && !keys.contains(key) {
                keys.append(key)
            }
            merged[slot] = RelationshipKeys.encode(keys, for: relationship)
        }
        return merged
    }

    /// The key this context knows an object by: a temporary key it has since saved maps to
    /// the permanent one.
    private func translated(_ key: Int64) -> Int64 {
        guard key < 0, let permanentKeysForChildren else { return key }
        return permanentKeysForChildren[key] ?? key
    }

    /// `values` with the temporary keys this context has since saved replaced by permanent ones.
    private func translatedRelationships(_ values: [StoredValue], entity: EntityDescription) -> [StoredValue] {
        guard let permanentKeysForChildren, !permanentKeysForChildren.isEmpty, !entity.relationships.isEmpty else {
            return values
        }
        var values = values
        for (offset, relationship) in entity.relationships.enumerated() {
            let slot = entity.attributes.count + offset
            let keys = RelationshipKeys.decode(values[slot])
            guard keys.contains(where: { $0 < 0 && permanentKeysForChildren[$0] != nil }) else { continue }
            values[slot] = RelationshipKeys.encode(keys.map(translated), for: relationship)
        }
        return values
    }

    /// This context's current values of an object (`nil` when it is deleted or unknown).
    private func currentValues(entityIndex: Int, key: Int64) -> [StoredValue]? {
        if let object = registry[entityIndex][key], !object._state.contains(.detached) {
            guard !object._state.contains(.deleted) else { return nil }
            return object._columnValues
        }
        if parent != nil {
            return ((try? baseRows(entityIndex: entityIndex, primaryKeys: [key])) ?? []).first??.values
        }
        guard key > 0 else { return nil }
        let coordinator = self.coordinator
        let row = try? coordinator.sync {
            try coordinator.committedRow(entityIndex: entityIndex, primaryKey: key)
        }
        return (row ?? nil)?.values
    }

    /// Brings back an object the child pushes again after this context saved its deletion (the
    /// child undid it): inserted again under its permanent key, with its links set after the
    /// undo manager noted it (see the pushed insertions).
    private func restoreForPush(_ restore: SaveRequest.Restore) -> ManagedObject {
        let entity = model.entities[restore.entityIndex]
        let objectID = ObjectID(
            key: coordinator.entityKeys[restore.entityIndex], rawValue: translated(restore.primaryKey))
        let values = translatedRelationships(restore.values, entity: entity)
        let attributeCount = entity.attributes.count
        // Without links first, as a pushed insertion is made (see `applyChildSave`).
        let unlinked = Array(values[..<attributeCount]) + entity.defaultRow[attributeCount...]
        let snapshot = translatedRelationships(restore.snapshot, entity: entity)
        let object: ManagedObject
        if let gone = instanceGoneForUndo(objectID) {
            // The instance this context's saved deletion took away, which its undo groups name:
            // the same object comes back, so that undoing that deletion later finds it (and a
            // second instance of the ID never exists).
            object = gone
            object._setSnapshot(snapshot, version: restore.baseVersion)
            object._load(unlinked)
            object._resetTransientAttributes()
        } else {
            object = ManagedObject._make(
                entity: entity, confinement: confinement, objectID: objectID, values: unlinked)
            object._setSnapshot(snapshot, version: restore.baseVersion)
        }
        object._state = [.inserted, .noted, .insertedInEvent]
        registry[restore.entityIndex][objectID.rawValue] = object
        pendingInserts.append(object)
        changedSinceProcessing.append(object)
        undoManagerValue?.recordInsertion(object)
        for column in attributeCount..<values.count {
            object._storeValue(values[column], at: column)
        }
        return object
    }

    /// This context's object for `key`, registered (deleted ones included), or `nil` when it
    /// has none and neither its parent nor the store has the row.
    private func liveObject(entityIndex: Int, key: Int64) -> ManagedObject? {
        if let object = registry[entityIndex][key], !object._state.contains(.detached) {
            return object
        }
        return object(with: ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: key))
    }
}
