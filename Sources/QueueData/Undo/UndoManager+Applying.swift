import Foundation

/// How an undo manager undoes and redoes a group. Everything here runs on the context's queue.
extension UndoManager {
    /// Undoes (or redoes) the last group of the matching stack; see ``undo()``.
    func run(_ direction: Direction) -> UndoOutcome {
        let name = direction == .undo ? "undo()" : "redo()"
        guard applying == nil else {
            fatalError("QueueData: \(name) was called during an undo or redo (from an observer of its changes).")
        }
        guard explicitLevel == 0 else {
            fatalError(
                "QueueData: \(name) was called inside a group opened with beginUndoGrouping(); call "
                    + "endUndoGrouping() first.")
        }
        guard let context, isAttached else { return UndoOutcome() }
        // What the current group changed so far is a group of its own, undone first (and, as
        // any new change, it empties the redo stack).
        processContextChanges()
        sealOpenGroup()
        let popped: UndoGroup?
        switch direction {
        case .undo: popped = undoStack.popLast()
        case .redo: popped = redoStack.popLast()
        }
        guard let group = popped else { return UndoOutcome() }

        applying = direction
        let (applied, deleted) = context.confinement.withMarkedBlock {
            defer {
                // Reported as one event; nothing is recorded while applying.
                context.processPendingChangesOnQueue()
            }
            return apply(group, in: context)
        }
        applying = nil
        var opposite = makeGroup()
        opposite.actionName = group.actionName
        for recorded in applied {
            append(recorded.entry, to: &opposite, isSaveConsequence: recorded.isSaveConsequence)
        }
        if !opposite.isEmpty {
            switch direction {
            case .undo:
                redoStack.append(opposite)
            case .redo:
                undoStack.append(opposite)
                trimUndoStack()
            }
        }
        let outcome = UndoOutcome(didApply: true, actionName: group.actionName, deletedObjectIDs: deleted)
        NotificationCenter.default.post(
            name: direction == .undo ? Self.didUndoChangeNotification : Self.didRedoChangeNotification, object: self,
            userInfo: [UndoOutcome.userInfoKey: outcome])
        return outcome
    }

    /// Applies `group`'s entries backward, last first.
    ///
    /// - Returns: The entries that apply the opposite way of what was done, in the order it was
    ///   done (the group for the other stack), and the objects left alone because another
    ///   context deleted them.
    private func apply(
        _ group: UndoGroup,
        in context: ManagedObjectContext
    ) -> (applied: [UndoGroup.Recorded], deleted: Set<ObjectID>) {
        var applied: [UndoEntry] = []
        // Which of `applied` apply a save's consequence the other way.
        var consequences: [Bool] = []
        // Objects a cascade removed before this group whose values it changes, and the objects
        // it removes itself.
        var freed: [ManagedObject] = []
        var removedNow = Set<ObjectIdentifier>()
        var deleted = Set<ObjectID>()
        // Objects this group brings back: references to them are kept even before they are back.
        var comingBack = Set<ObjectID>()
        for recorded in group.entries {
            if case .deletion(let object) = recorded.entry, context.canBringBack(object) {
                comingBack.insert(object._objectID)
            }
        }
        // Objects whose values or deletion changed: unchanged again if back to their committed values.
        var touched: [ManagedObject] = []
        // Unsaved objects this group takes away (no save will apply their rules).
        var discarded: [ManagedObject] = []
        var lost: [LostReference] = []
        var unplaced: [ValuesChange] = []
        for recorded in group.entries.reversed() {
            switch recorded.entry {
            case .insertion(let object):
                removedNow.insert(ObjectIdentifier(object))
                if context.removeForUndo(object) {
                    applied.append(.deletion(object))
                    if object._state.contains(.detached) {
                        discarded.append(object)
                    }
                } else if object._state.contains(.detached), let creation = insertedBy[ObjectIdentifier(object)] {
                    // Gone already through a deletion a group older than its creation holds (a
                    // save's delete rules reached it, and join the group of the deletion they
                    // follow from): the object did not exist before that group, so undoing it
                    // must not bring the object back. Not only its latest removal: an undo that
                    // `settle`s it away again adds its removal to such a group too, and the
                    // latest is then in the group that undo made (on the redo stack).
                    var removals = Set(undoStack.lazy.filter { $0.id < creation && $0.removes(object) }.map(\.id))
                    if let removal = removedBy[ObjectIdentifier(object)], removal < creation {
                        removals.insert(removal)
                    }
                    for removal in removals.sorted() {
                        forgetRemoval(of: object, inGroup: removal)
                    }
                }
            case .deletion(let object):
                if context.canBringBack(object) {
                    context.bringBackForUndo(object)
                    touched.append(object)
                    applied.append(.insertion(object))
                    deleted.formUnion(dropMissingReferences(of: object, in: context, keeping: comingBack, lost: &lost))
                } else if context.wasDeletedElsewhere(object) {
                    deleted.insert(object._objectID)
                }
            case .values(let change):
                let object = change.object
                if removedByCascade.contains(ObjectIdentifier(object)) {
                    freed.append(object)
                }
                if object._state.contains(.detached) && !comingBack.contains(object._objectID) {
                    if context.wasDeletedElsewhere(object) {
                        deleted.insert(object._objectID)
                    } else if object._state.contains(.deletedBySave) {
                        // Deleted by this context's save, in an older group: brought back with it,
                        // with the values it had before this group (below, after `settle`).
                        unplaced.append(change)
                    }
                    continue
                }
                let (done, missing) = apply(
                    change, in: context, keeping: comingBack, mirroredOnly: recorded.isSaveConsequence, lost: &lost)
                deleted.formUnion(missing)
                if let done {
                    touched.append(object)
                    applied.append(.values(done))
                }
            }
            consequences += repeatElement(recorded.isSaveConsequence, count: applied.count - consequences.count)
        }
        // Objects gone with a save's cascade whose changes here move them out of every cascade's
        // reach come back (see `bringBackFreed`) with those changes: references to them are kept,
        // not settled as lost (a sketch moved from a deleted album into a new one).
        var freedLost: [LostReference] = []
        let leaving = freed.filter { object in
            !removedNow.contains(ObjectIdentifier(object)) && unplaced.contains { $0.object === object }
                && !isReachedByCascade(object, in: context, after: unplaced)
        }
        if !leaving.isEmpty {
            for change in unplaced where leaving.contains(where: { $0 === change.object }) {
                if let done = applyToRemoved(change, skipping: []) {
                    applied.append(.values(done))
                }
            }
            unplaced.removeAll { change in leaving.contains { $0 === change.object } }
            consequences += repeatElement(false, count: applied.count - consequences.count)
            for object in bringBackFreed(leaving, in: context) {
                touched.append(object)
                applied.append(.insertion(object))
                consequences.append(true)
                deleted.formUnion(dropMissingReferences(of: object, in: context, keeping: comingBack, lost: &freedLost))
            }
            lost.removeAll { loss in
                guard !loss.deleted._state.contains(.detached) else { return false }
                if let done = restore(loss, in: context, keeping: comingBack) {
                    applied.append(.values(done))
                }
                return true
            }
            consequences += repeatElement(false, count: applied.count - consequences.count)
        }
        settle(lost, unplaced, in: context, applied: &applied)
        // The changes of objects gone with a save's deletion that `settle` did not place: the
        // object takes them back while gone, as it was before this group, so that undoing the
        // deletion's group (older) brings it back as it was then. Its side of a link is what that
        // undo restores the link from (see `apply(_:in:keeping:lost:)`).
        for change in unplaced {
            let placed = Set(
                lost.filter { $0.deleted === change.object }.map {
                    context.link(of: $0.object, column: $0.slot).inverseColumn
                })
            if let done = applyToRemoved(change, skipping: placed) {
                applied.append(.values(done))
            }
        }
        consequences += repeatElement(false, count: applied.count - consequences.count)
        for object in bringBackFreed(freed.filter { !removedNow.contains(ObjectIdentifier($0)) }, in: context) {
            touched.append(object)
            applied.append(.insertion(object))
            consequences.append(true)
            deleted.formUnion(dropMissingReferences(of: object, in: context, keeping: comingBack, lost: &freedLost))
        }
        settle(freedLost, [], in: context, applied: &applied)
        consequences += repeatElement(false, count: applied.count - consequences.count)
        // A link the group put back on one side only, because a merge changed the other side
        // since (the merge wins there: a layer another context moved into its sketch keeps that
        // sketch), is taken out again, so that both sides agree.
        for entry in applied {
            guard case .values(let change) = entry else { continue }
            for done in unmirroredLinks(of: change, in: context) {
                touched.append(done.object)
                applied.append(.values(done))
            }
        }
        consequences += repeatElement(false, count: applied.count - consequences.count)
        // Links other contexts' saves made to an object taken away here, which the group did not
        // record: the objects let go of it (they are not deleted with it: an undo never deletes
        // what another context made), and applying the other way links them again.
        for object in discarded where object._state.contains(.detached) {
            for change in detach(object, in: context) {
                touched.append(change.object)
                applied.append(.values(change))
            }
        }
        consequences += repeatElement(false, count: applied.count - consequences.count)
        // Also the objects the group changed and changed back within one event (a layer
        // inserted into a sketch and deleted again): no change of theirs was recorded, yet they
        // are updated, and undoing everything must leave nothing to save.
        for object in touched + context.pendingUpdates {
            context.clearUpdatedIfCommitted(object)
        }
        return (zip(applied, consequences).map { UndoGroup.Recorded(entry: $0, isSaveConsequence: $1) }, deleted)
    }

    /// Brings back the objects of `candidates` that a cascade removed and that no deleted
    /// object's cascade reaches any more (this group moved them out), and in turn the objects
    /// their own cascades had removed along with them.
    ///
    /// - Returns: The objects brought back.
    private func bringBackFreed(_ candidates: [ManagedObject], in context: ManagedObjectContext) -> [ManagedObject] {
        var broughtBack: [ManagedObject] = []
        var queue = Array(candidates.reversed())
        while let object = queue.popLast() {
            guard object._state.contains(.deleted), removedByCascade.contains(ObjectIdentifier(object)),
                context.canBringBack(object), !isReachedByCascade(object, in: context)
            else { continue }
            context.bringBackForUndo(object)
            removedByCascade.remove(ObjectIdentifier(object))
            broughtBack.append(object)
            for (slot, link) in links(of: object, in: context) where link.relationship.deleteRule == .cascade {
                queue += related(object, slot: slot, link: link, in: context).filter {
                    removedByCascade.contains(ObjectIdentifier($0))
                }
            }
        }
        return broughtBack
    }

    /// Whether `object` points to a deleted object (pending deletion, or deleted by this context)
    /// whose relationship to it cascades.
    private func isReachedByCascade(_ object: ManagedObject, in context: ManagedObjectContext) -> Bool {
        links(of: object, in: context).contains { slot, link in
            link.inverse.deleteRule == .cascade
                && related(object, slot: slot, link: link, in: context).contains { $0._state.contains(.deleted) }
        }
    }

    /// Whether `object` (gone with a save's deletion) would point to a deleted object whose
    /// relationship to it cascades, once it takes `unplaced`'s changes of it.
    private func isReachedByCascade(
        _ object: ManagedObject,
        in context: ManagedObjectContext,
        after unplaced: [ValuesChange]
    ) -> Bool {
        let slots = 0..<object.entity.columnCount
        let values = slots.map { object._value(at: $0) }
        defer {
            for (slot, value) in zip(slots, values) {
                object._storeValue(value, at: slot)
            }
        }
        for change in unplaced where change.object === object {
            _ = applyToRemoved(change, skipping: [])
        }
        return isReachedByCascade(object, in: context)
    }

    /// Gives `loss.object` the reference to `loss.deleted` the undo meant to restore, now that
    /// the deleted object is back (with the other references of the value that still exist).
    ///
    /// - Returns: The change made (`nil` if none).
    private func restore(
        _ loss: LostReference,
        in context: ManagedObjectContext,
        keeping comingBack: Set<ObjectID>
    ) -> ValuesChange? {
        let object = loss.object
        let link = context.link(of: object, column: loss.slot)
        let current = object._value(at: loss.slot)
        let (target, _) = context.existingReferences(
            loss.intended, previous: current, relationship: link.relationship,
            destinationIndex: link.destinationIndex, keeping: comingBack)
        guard !StoredValue.isSame(target, current) else { return nil }
        context.writeForUndo(target, to: object, at: loss.slot)
        return ValuesChange(
            object: object, changes: [SlotChange(slot: loss.slot, old: current, new: target)],
            baseSnapshot: object._snapshot, baseVersion: object._snapshotVersion)
    }

    /// The row slot and link of each of `object`'s relationships.
    private func links(
        of object: ManagedObject,
        in context: ManagedObjectContext
    ) -> [(slot: Int, link: RelationshipLink)] {
        object.entity.relationshipSlots.map { ($0, context.link(of: object, column: $0)) }
    }

    /// The objects `object`'s relationship at `slot` points to that this context holds or
    /// removed (registered, or gone with this context's deletion).
    private func related(
        _ object: ManagedObject,
        slot: Int,
        link: RelationshipLink,
        in context: ManagedObjectContext
    ) -> [ManagedObject] {
        let entityKey = context.coordinator.entityKeys[link.destinationIndex]
        return RelationshipKeys.decode(translated(object._value(at: slot), link.relationship)).compactMap { key in
            context.registry[link.destinationIndex][key] ?? removedObjects[ObjectID(key: entityKey, rawValue: key)]
        }
    }

    /// Sets `change`'s slots back to their old values, where nothing else changed them since.
    ///
    /// `mirroredOnly`: the change is a save's delete rules taking objects the save deleted out of
    /// `object`'s relationships. Each deleted object kept its side of those links, and an undo of a
    /// later group that changed it while it was gone (undone before this one) changed that side
    /// only: a link comes back only if the deleted object's side still has it.
    ///
    /// - Returns: The change that sets them again (`nil` if nothing changed), and the objects
    ///   references were not restored to because another context deleted them (those this
    ///   context's own saves deleted go to `lost`).
    private func apply(
        _ change: ValuesChange,
        in context: ManagedObjectContext,
        keeping comingBack: Set<ObjectID>,
        mirroredOnly: Bool,
        lost: inout [LostReference]
    ) -> (ValuesChange?, Set<ObjectID>) {
        let object = change.object
        let entity = object.entity
        let committed = object._snapshot
        var done = ValuesChange(
            object: object, changes: [], baseSnapshot: committed, baseVersion: object._snapshotVersion)
        let merged = mergedSlots[object._objectID]
        var deleted = Set<ObjectID>()
        for slotChange in change.changes {
            let slot = slotChange.slot
            let relationship = entity.relationship(atSlot: slot)
            // Compared with the recorded values in the same keys: an object that left the context
            // with a save (deleted) still holds the temporary keys of objects that save inserted.
            let current = relationship.map { translated(object._value(at: slot), $0) } ?? object._value(at: slot)
            var target: StoredValue
            let old = relationship.map { translated(slotChange.old, $0) } ?? slotChange.old
            let new = relationship.map { translated(slotChange.new, $0) } ?? slotChange.new
            if StoredValue.isSame(current, new) {
                target = old
                // The change was made over a committed value that a merge replaced since: the
                // committed value now is what is under the change (never the one merged away).
                if let mergedAt = merged?[slot], mergedAt > change.baseVersion,
                    relationship.map({ !$0.isToMany }) ?? true, let base = change.baseSnapshot, let committed,
                    StoredValue.isSame(old, base[slot])
                {
                    target = committed[slot]
                }
            } else if let relationship, relationship.isToMany {
                // Changed since (a merge): the objects this change added leave, those it removed
                // come back, and the others stay.
                target = RelationshipKeys.merged(
                    snapshot: new, object: old, committed: current, relationship: relationship)
                // Changed since also by this context's own save: the delete rules of a deletion
                // it saved take the object out of the relationship, recorded in the deletion's
                // (older) group. An ordered relationship gets back the order the change replaced.
                if relationship.isOrdered {
                    target = Self.ordered(target, current: current, old: old, relationship)
                }
            } else {
                // Changed since: the newer value stands.
                continue
            }
            if relationship != nil, mirroredOnly {
                target = mirrored(target, previous: current, of: object, slot: slot, in: context)
            }
            if let relationship {
                let (kept, missing) = context.existingReferences(
                    target, previous: current, relationship: relationship,
                    destinationIndex: context.link(of: object, column: slot).destinationIndex, keeping: comingBack)
                if !missing.isEmpty {
                    deleted.formUnion(sortMissing(missing, of: object, slot: slot, intended: target, lost: &lost))
                }
                target = kept
            }
            guard !StoredValue.isSame(target, current) else { continue }
            context.writeForUndo(target, to: object, at: slot)
            done.changes.append(SlotChange(slot: slot, old: current, new: target))
        }
        return (done.changes.isEmpty ? nil : done, deleted)
    }

    /// Sets `change`'s slots of an object a save of this context deleted back to their old
    /// values, where nothing changed them since, except `skipping` (relationship slots `settle`
    /// placed): the object keeps them until an undo brings it back. References are not checked:
    /// they are when it comes back.
    ///
    /// - Returns: The change that sets them again (`nil` if nothing changed).
    private func applyToRemoved(_ change: ValuesChange, skipping: Set<Int>) -> ValuesChange? {
        let object = change.object
        let entity = object.entity
        var done = ValuesChange(
            object: object, changes: [], baseSnapshot: object._snapshot, baseVersion: object._snapshotVersion)
        for slotChange in change.changes where !skipping.contains(slotChange.slot) {
            let slot = slotChange.slot
            let relationship = entity.relationship(atSlot: slot)
            let current = relationship.map { translated(object._value(at: slot), $0) } ?? object._value(at: slot)
            let old = relationship.map { translated(slotChange.old, $0) } ?? slotChange.old
            let new = relationship.map { translated(slotChange.new, $0) } ?? slotChange.new
            var target: StoredValue
            if StoredValue.isSame(current, new) {
                target = old
            } else if let relationship, relationship.isToMany {
                target = RelationshipKeys.merged(
                    snapshot: new, object: old, committed: current, relationship: relationship)
                if relationship.isOrdered {
                    target = Self.ordered(target, current: current, old: old, relationship)
                }
            } else {
                continue
            }
            guard !StoredValue.isSame(target, current) else { continue }
            object._storeValue(target, at: slot)
            done.changes.append(SlotChange(slot: slot, old: current, new: target))
        }
        return done.changes.isEmpty ? nil : done
    }

    /// `value` of `object`'s relationship at `slot` without the objects `previous` did not hold
    /// that this context removed and whose side of the link no longer points to `object`.
    private func mirrored(
        _ value: StoredValue,
        previous: StoredValue,
        of object: ManagedObject,
        slot: Int,
        in context: ManagedObjectContext
    ) -> StoredValue {
        let link = context.link(of: object, column: slot)
        let entityKey = context.coordinator.entityKeys[link.destinationIndex]
        let before = Set(RelationshipKeys.decode(previous))
        let keys = RelationshipKeys.decode(value)
        let unmirrored = keys.filter { key in
            guard !before.contains(key), let removed = removedObjects[ObjectID(key: entityKey, rawValue: key)] else {
                return false
            }
            let back = RelationshipKeys.decode(translated(removed._value(at: link.inverseColumn), link.inverse))
            return !back.contains(object._objectID.rawValue)
        }
        guard !unmirrored.isEmpty else { return value }
        return RelationshipKeys.encode(keys.filter { !unmirrored.contains($0) }, for: link.relationship)
    }

    /// Removes from the relationships of `object` (just brought back) the objects that no
    /// longer exist.
    private func dropMissingReferences(
        of object: ManagedObject,
        in context: ManagedObjectContext,
        keeping comingBack: Set<ObjectID>,
        lost: inout [LostReference]
    ) -> Set<ObjectID> {
        let entity = object.entity
        var deleted = Set<ObjectID>()
        for (offset, relationship) in entity.relationships.enumerated() {
            let slot = entity.attributes.count + offset
            let current = object._value(at: slot)
            let value = translated(current, relationship)
            let (kept, missing) = context.existingReferences(
                value, previous: .null, relationship: relationship,
                destinationIndex: context.link(of: object, column: slot).destinationIndex, keeping: comingBack)
            deleted.formUnion(sortMissing(missing, of: object, slot: slot, intended: value, lost: &lost))
            if !StoredValue.isSame(kept, current) {
                context.writeForUndo(kept, to: object, at: slot)
            }
        }
        return deleted
    }

    /// A reference an undo could not restore because this context's own save deleted the object
    /// it pointed to.
    struct LostReference {
        let object: ManagedObject
        let slot: Int
        /// The value the undo meant to give the slot (with the deleted object).
        let intended: StoredValue
        let deleted: ManagedObject
    }

    /// Of the objects missing from a value `object`'s `slot` was to take, those another
    /// context deleted; the ones this context's own saves deleted are added to `lost`.
    private func sortMissing(
        _ missing: Set<ObjectID>,
        of object: ManagedObject,
        slot: Int,
        intended: StoredValue,
        lost: inout [LostReference]
    ) -> Set<ObjectID> {
        var elsewhere = Set<ObjectID>()
        for id in missing where !undoneInsertions.contains(id) {
            if let gone = removedObjects[id], gone._state.contains(.deletedBySave), gone._state.contains(.detached) {
                lost.append(LostReference(object: object, slot: slot, intended: intended, deleted: gone))
            } else {
                elsewhere.insert(id)
            }
        }
        return elsewhere
    }

    /// Settles the references to objects this context's own saves deleted, as that save would
    /// have had the reference been there: the deleted object's delete rule applies to the
    /// object (a cascade deletes it; otherwise the reference is just left out). Both, and the
    /// reference on each side, join the group of the deleted object's removal, so that undoing
    /// that group brings everything back together. The deleted object's side takes the change
    /// the group being undone recorded for it, if any (`unplaced`: it has the order), or else
    /// gets the object added.
    private func settle(
        _ lost: [LostReference],
        _ unplaced: [ValuesChange],
        in context: ManagedObjectContext,
        applied: inout [UndoEntry]
    ) {
        for loss in lost {
            let object = loss.object
            let deleted = loss.deleted
            let link = context.link(of: object, column: loss.slot)
            var entries: [UndoGroup.Recorded] = []
            if link.inverse.deleteRule == .cascade, context.removeForUndo(object) {
                applied.append(.deletion(object))
                entries.append(UndoGroup.Recorded(entry: .deletion(object), isSaveConsequence: false))
                // The save would have cascaded on from the object: to what its own cascades reach
                // (objects this group brings back with it, say).
                var queue = [object]
                var removed = [object]
                while let source = queue.popLast() {
                    for (slot, link) in links(of: source, in: context) where link.relationship.deleteRule == .cascade {
                        for target in related(source, slot: slot, link: link, in: context)
                        where context.removeForUndo(target) {
                            applied.append(.deletion(target))
                            entries.append(UndoGroup.Recorded(entry: .deletion(target), isSaveConsequence: false))
                            queue.append(target)
                            removed.append(target)
                        }
                    }
                }
                // And the objects that stay stop pointing to the ones removed (an object brought
                // back under its permanent ID is discarded: no save applies its rules).
                for gone in removed where gone._state.contains(.detached) {
                    for change in detach(gone, in: context) {
                        applied.append(.values(change))
                        // As a save's nullify: the link comes back only while the removed
                        // object's side still has it (see `apply(_:in:keeping:mirroredOnly:lost:)`).
                        entries.append(UndoGroup.Recorded(entry: .values(change), isSaveConsequence: true))
                    }
                }
            }
            entries.append(
                UndoGroup.Recorded(
                    entry: .values(
                        ValuesChange(
                            object: object,
                            changes: [
                                SlotChange(slot: loss.slot, old: loss.intended, new: object._value(at: loss.slot))
                            ],
                            baseSnapshot: object._snapshot, baseVersion: object._snapshotVersion)),
                    isSaveConsequence: false))
            let inverseSlot = link.inverseColumn
            let keys = RelationshipKeys.decode(translated(deleted._value(at: inverseSlot), link.inverse))
            let key = object._objectID.rawValue
            let recorded = unplaced.lazy.filter { $0.object === deleted }.flatMap(\.changes)
                .first { $0.slot == inverseSlot }
            if let recorded {
                entries.append(
                    UndoGroup.Recorded(
                        entry: .values(
                            ValuesChange(
                                object: deleted, changes: [recorded], baseSnapshot: deleted._snapshot,
                                baseVersion: deleted._snapshotVersion)),
                        isSaveConsequence: false))
            } else if !keys.contains(key) {
                let linked = RelationshipKeys.encode(link.inverse.isToMany ? keys + [key] : [key], for: link.inverse)
                entries.append(
                    UndoGroup.Recorded(
                        entry: .values(
                            ValuesChange(
                                object: deleted,
                                changes: [
                                    SlotChange(slot: inverseSlot, old: linked, new: deleted._value(at: inverseSlot))
                                ],
                                baseSnapshot: deleted._snapshot, baseVersion: deleted._snapshotVersion)),
                        isSaveConsequence: false))
            }
            appendToRemovalGroup(of: deleted, entries)
        }
    }

    /// Makes both sides of the links `change` changed agree where a merge kept one side (the
    /// merge wins): a key the change added whose object (live, here) does not point back is
    /// taken out again; a key it removed whose object still points back is put back (or, for a
    /// to-one that points elsewhere now, that object lets go).
    ///
    /// - Returns: The changes made.
    private func unmirroredLinks(of change: ValuesChange, in context: ManagedObjectContext) -> [ValuesChange] {
        let object = change.object
        guard !object._state.contains(.detached), !object._state.contains(.deleted) else { return [] }
        var done = ValuesChange(
            object: object, changes: [], baseSnapshot: object._snapshot, baseVersion: object._snapshotVersion)
        var others: [ValuesChange] = []
        let key = object._objectID.rawValue
        for slotChange in change.changes {
            guard let relationship = object.entity.relationship(atSlot: slotChange.slot) else { continue }
            let link = context.link(of: object, column: slotChange.slot)
            let oldKeys = RelationshipKeys.decode(translated(slotChange.old, relationship))
            let before = Set(oldKeys)
            let current = object._value(at: slotChange.slot)
            var keys = RelationshipKeys.decode(translated(current, relationship))
            let now = Set(keys)
            func live(_ keys: [Int64]) -> [ManagedObject] {
                context.objects(entityIndex: link.destinationIndex, keys: keys).filter {
                    !$0._state.contains(.deleted) && !$0._state.contains(.detached)
                }
            }
            func pointsBack(_ target: ManagedObject) -> Bool {
                RelationshipKeys.decode(translated(target._value(at: link.inverseColumn), link.inverse)).contains(key)
            }
            let stray = Set(
                live(keys.filter { !before.contains($0) }).filter { !pointsBack($0) }.map(\._objectID.rawValue))
            keys.removeAll { stray.contains($0) }
            for target in live(oldKeys.filter { !now.contains($0) }) where pointsBack(target) {
                if relationship.isToMany || keys.isEmpty {
                    keys.append(target._objectID.rawValue)
                } else {
                    let before = target._value(at: link.inverseColumn)
                    let after = RelationshipKeys.encode(
                        RelationshipKeys.decode(translated(before, link.inverse)).filter { $0 != key },
                        for: link.inverse)
                    context.writeForUndo(after, to: target, at: link.inverseColumn)
                    others.append(
                        ValuesChange(
                            object: target, changes: [SlotChange(slot: link.inverseColumn, old: before, new: after)],
                            baseSnapshot: target._snapshot, baseVersion: target._snapshotVersion))
                }
            }
            let value = RelationshipKeys.encode(keys, for: relationship)
            guard !StoredValue.isSame(value, current) else { continue }
            context.writeForUndo(value, to: object, at: slotChange.slot)
            done.changes.append(SlotChange(slot: slotChange.slot, old: current, new: value))
        }
        return (done.changes.isEmpty ? [] : [done]) + others
    }

    /// Makes the objects that stay stop pointing to `gone` (taken away, and never to be saved:
    /// no save applies its rules).
    ///
    /// - Returns: The changes made.
    private func detach(_ gone: ManagedObject, in context: ManagedObjectContext) -> [ValuesChange] {
        var changes: [ValuesChange] = []
        for (slot, link) in links(of: gone, in: context) {
            for target in related(gone, slot: slot, link: link, in: context) where !target._state.contains(.deleted) {
                let column = link.inverseColumn
                let before = target._value(at: column)
                let keys = RelationshipKeys.decode(translated(before, link.inverse))
                guard keys.contains(gone._objectID.rawValue) else { continue }
                let after = RelationshipKeys.encode(keys.filter { $0 != gone._objectID.rawValue }, for: link.inverse)
                context.writeForUndo(after, to: target, at: column)
                changes.append(
                    ValuesChange(
                        object: target, changes: [SlotChange(slot: column, old: before, new: after)],
                        baseSnapshot: target._snapshot, baseVersion: target._snapshotVersion))
            }
        }
        return changes
    }

    /// Takes out of the group `groupID` (on either stack) the removal of `object`, whose
    /// insertion was undone, and the changes recorded for it there; references to it are left
    /// out from then on, as to an object that never was.
    private func forgetRemoval(of object: ManagedObject, inGroup groupID: Int) {
        func forget(in group: inout UndoGroup) {
            group.entries.removeAll { recorded in
                switch recorded.entry {
                case .deletion(let removed), .insertion(let removed): return removed === object
                case .values(let change): return change.object === object
                }
            }
        }
        if let index = undoStack.lastIndex(where: { $0.id == groupID }) {
            forget(in: &undoStack[index])
        } else if let index = redoStack.lastIndex(where: { $0.id == groupID }) {
            forget(in: &redoStack[index])
        }
        if removedBy[ObjectIdentifier(object)] == groupID {
            removedBy[ObjectIdentifier(object)] = nil
        }
        removedByCascade.remove(ObjectIdentifier(object))
        undoneInsertions.insert(object._objectID)
    }

    /// Appends `entries` to the group of the latest removal of `object`, if it is still on a
    /// stack; returns whether it was.
    @discardableResult
    private func appendToRemovalGroup(of object: ManagedObject, _ entries: [UndoGroup.Recorded]) -> Bool {
        guard let groupID = removedBy[ObjectIdentifier(object)] else { return false }
        if let index = undoStack.lastIndex(where: { $0.id == groupID }) {
            for recorded in entries {
                append(recorded.entry, to: &undoStack[index], isSaveConsequence: recorded.isSaveConsequence)
            }
        } else if let index = redoStack.lastIndex(where: { $0.id == groupID }) {
            for recorded in entries {
                append(recorded.entry, to: &redoStack[index], isSaveConsequence: recorded.isSaveConsequence)
            }
        } else {
            return false
        }
        return true
    }

    /// The keys of `target`, an ordered relationship's value made from `current` by putting back
    /// some keys of `old`: the keys kept stay in their order, and each key put back goes right
    /// after the key before it in `old` (the first, when none of those is there).
    ///
    /// - Complexity: O(*n*²) in the number of keys.
    static func ordered(
        _ target: StoredValue,
        current: StoredValue,
        old: StoredValue,
        _ relationship: RelationshipDescription
    ) -> StoredValue {
        let keys = RelationshipKeys.decode(target)
        let before = Set(RelationshipKeys.decode(current))
        var result = keys.filter { before.contains($0) }
        var putBack = Set(keys.filter { !before.contains($0) })
        var cursor = 0
        for key in RelationshipKeys.decode(old) {
            if let index = result.firstIndex(of: key) {
                cursor = index + 1
            } else if putBack.remove(key) != nil {
                result.insert(key, at: cursor)
                cursor += 1
            }
        }
        result += keys.filter { putBack.contains($0) }
        return RelationshipKeys.encode(result, for: relationship)
    }

    /// `value` of `relationship` with the temporary keys of objects saved since replaced by
    /// their permanent keys.
    func translated(_ value: StoredValue, _ relationship: RelationshipDescription) -> StoredValue {
        guard !permanentKeys.isEmpty else { return value }
        switch value {
        case .integer(let key) where key < 0:
            return permanentKeys[key].map { .integer($0) } ?? value
        case .data:
            let keys = RelationshipKeys.decode(value)
            guard keys.contains(where: { $0 < 0 && permanentKeys[$0] != nil }) else { return value }
            return RelationshipKeys.encode(keys.map { $0 < 0 ? permanentKeys[$0] ?? $0 : $0 }, for: relationship)
        default:
            return value
        }
    }
}

extension EntityDescription {
    /// The relationship at row slot `slot`, or `nil` for an attribute (transient or not).
    func relationship(atSlot slot: Int) -> RelationshipDescription? {
        let offset = slot - attributes.count
        guard offset >= 0, offset < relationships.count else { return nil }
        return relationships[offset]
    }

    /// The row slots of the relationships.
    var relationshipSlots: Range<Int> {
        attributes.count..<(attributes.count + relationships.count)
    }
}
