import Foundation

extension ManagedObjectContext {
    /// Posted by a context on its queue when ``save()`` starts with changes to save, before
    /// anything else happens (``ManagedObject/willSave()``, validation); `object` is the context.
    /// Observers may still change objects: the save includes their changes. Not posted for a
    /// save with nothing to save.
    public static let willSaveNotification = Notification.Name("QueueData.ManagedObjectContextWillSave")

    /// Commits the context's inserts, updates and deletes to the store, durably.
    ///
    /// In order, as in Core Data: ``processPendingChanges()``; ``willSaveNotification``; the
    /// delete rules and ``ManagedObject/willSave()`` on every inserted, updated and deleted
    /// object (again on those that changed, until a round changes nothing); validation
    /// (``ManagedObject/validateForSave()`` of inserted and updated objects); the commit; then
    /// ``ManagedObject/didSave()`` on every object written (inserted, updated and deleted),
    /// and ``didSaveNotification``, so that every other context of the manager merges the save on
    /// its own queue. When it returns, inserted objects have permanent IDs and deleted objects
    /// have left the context. Saving without changes does nothing and posts nothing; a save
    /// whose changes all turn out to be no change (values set back) posts
    /// ``willSaveNotification`` but commits nothing and posts no ``didSaveNotification``.
    ///
    /// - Throws: ``ValidationError`` listing every invalid object and property;
    ///   ``MergeConflictError`` when objects it changes were changed or deleted by another
    ///   save, or it would give two objects the same unique values, and the merge policy did
    ///   not settle it;
    ///   ``StoreError`` when the store cannot commit. On failure the context keeps all its
    ///   changes, to fix and save again, or roll back, and no other context sees them. Only an
    ///   I/O failure (`.io`, or `.closed` when the store was closed while the save waited for
    ///   the disk) can leave the save's record in the store: the write happened, but no sync
    ///   confirmed it. Load the store again before retrying such a save.
    /// - Important: Call on the context's queue.
    public func save() throws {
        checkConfined()
        try confinement.withMarkedBlock {
            try performSave()
        }
    }

    private func performSave() throws {
        processPendingChangesOnQueue()
        var (inserts, updates, deletes) = pendingChangeLists()
        guard !inserts.isEmpty || !updates.isEmpty || !deletes.isEmpty else {
            clearPendingChanges()
            return
        }
        NotificationCenter.default.post(name: Self.willSaveNotification, object: self)
        // What the delete rules change is undone with the deletion it follows from.
        let undoManager = undoManagerValue
        undoManager?.beginSave(deleting: deletes)
        defer { undoManager?.endSaveConsequences() }
        // Deny rules refusing a deletion are failures like the others: reported together.
        let (denied, changedMore) = try callWillSave(inserts, updates, deletes)
        if changedMore {
            (inserts, updates, deletes) = pendingChangeLists()
        }
        // Validation may change, insert or delete other objects (a child updating its
        // parent's total): validate until nothing new appears, then save everything.
        var failures = denied + validationFailures(inserts + updates)
        if !changedSinceProcessing.isEmpty {
            // Validation changed something: list the changes again, and validate the objects
            // that are new to the lists, until none are.
            var validated = Set((inserts + updates).map(ObjectIdentifier.init))
            var propagated = Set(deletes.map(ObjectIdentifier.init))
            for _ in 1..<100 {
                (inserts, updates, deletes) = pendingChangeLists()
                // What validation deleted takes its delete rules along (cascades, their hooks).
                let deletedNow = deletes.filter { propagated.insert(ObjectIdentifier($0)).inserted }
                if !deletedNow.isEmpty {
                    failures += propagateDeletes(of: deletedNow)
                    (inserts, updates, deletes) = pendingChangeLists()
                    propagated.formUnion(deletes.map(ObjectIdentifier.init))
                }
                let unvalidated = (inserts + updates).filter { !validated.contains(ObjectIdentifier($0)) }
                if unvalidated.isEmpty {
                    break
                }
                validated.formUnion(unvalidated.map(ObjectIdentifier.init))
                failures += validationFailures(unvalidated)
            }
        }
        failures += validationFailures(deletes, deleting: true)
        if !failures.isEmpty {
            throw ValidationError(failures: failures)
        }
        // What validation changed is reported before the commit.
        processPendingChangesOnQueue()
        undoManager?.endSaveConsequences()

        var request = SaveRequest()
        request.author = transactionAuthor
        request.contextName = name
        // Inserted objects with a permanent ID are deletions this context saved, then undid:
        // their rows are written back under their keys.
        let restoring = inserts.filter { !$0._objectID.isTemporaryID }
        if !restoring.isEmpty {
            inserts.removeAll { !$0._objectID.isTemporaryID }
            for object in restoring {
                request.restores.append(
                    SaveRequest.Restore(
                        entityIndex: object._objectID.key.entityIndex!, primaryKey: object._objectID.rawValue,
                        baseVersion: object._snapshotVersion, snapshot: object._snapshot ?? object.entity.defaultRow,
                        values: object._columnValues))
            }
        }
        // Each entity's inserted objects' rows are copied into one block for the save (made here,
        // read by the coordinator, written by no one after): no array of values per object.
        request.inserts.reserveCapacity(inserts.count)
        var insertCounts = [Int](repeating: 0, count: model.entities.count)
        for object in inserts {
            insertCounts[object._objectID.key.entityIndex!] += 1
        }
        var insertBlocks = [RowBlock?](repeating: nil, count: model.entities.count)
        for object in inserts {
            let entityIndex = object._objectID.key.entityIndex!
            guard parent == nil else {
                // A child's save goes to its parent, which takes values.
                request.inserts.append(
                    SaveRequest.Insert(
                        entityIndex: entityIndex, temporaryKey: object._objectID.rawValue,
                        values: object._columnValues))
                continue
            }
            let block: RowBlock
            if let existing = insertBlocks[entityIndex] {
                block = existing
            } else {
                block = RowBlock(layout: object.entity.rowLayout, capacity: insertCounts[entityIndex])
                insertBlocks[entityIndex] = block
            }
            block.append(copyingRow: object._row, primaryKey: Int64(block.count), version: 1)
            request.inserts.append(
                SaveRequest.Insert(
                    entityIndex: entityIndex, temporaryKey: object._objectID.rawValue,
                    row: RowReference(block: block, index: block.count - 1)))
        }
        var savedUpdates: [ManagedObject] = []
        // Updated objects whose values are back to their committed ones: nothing to write, but
        // they had `willSave()`, so they get `didSave()` too (Core Data pairs the two).
        var unchangedUpdates: [ManagedObject] = []
        for object in updates {
            guard let committed = object._committedFields else {
                unchangedUpdates.append(object)
                continue
            }
            let layout = object.entity.rowLayout
            var slots: [Int] = []
            var values: [StoredValue] = []
            for slot in 0..<object.entity.columnCount where !layout.isSame(object._row, committed, slot: slot) {
                slots.append(slot)
                values.append(object._value(at: slot))
            }
            guard !slots.isEmpty, let snapshot = object._snapshot else {
                unchangedUpdates.append(object)
                continue
            }
            savedUpdates.append(object)
            request.updates.append(
                SaveRequest.Update(
                    entityIndex: object._objectID.key.entityIndex!, primaryKey: object._objectID.rawValue,
                    baseVersion: object._snapshotVersion, snapshot: snapshot, changedSlots: slots,
                    changedValues: values))
        }
        for object in deletes {
            request.deletes.append(
                SaveRequest.Delete(
                    entityIndex: object._objectID.key.entityIndex!, primaryKey: object._objectID.rawValue,
                    baseVersion: object._snapshotVersion, snapshot: object._snapshot ?? object.entity.defaultRow))
        }
        request.mergePolicy = mergePolicyValue
        if request.isEmpty {
            // Only updates that were undone by setting the old values back.
            for object in updates {
                object._state.remove(.updated)
            }
            clearPendingChanges()
            for object in unchangedUpdates where !object._state.contains(.detached) {
                object.didSave()
            }
            return
        }

        if parent != nil {
            // A child's save goes to its parent, not to the store.
            try pushToParent(
                request, inserts: inserts, updates: updates, savedUpdates: savedUpdates + restoring,
                unchangedUpdates: unchangedUpdates, deletes: deletes)
            return
        }
        let coordinator = self.coordinator
        let outcome = try coordinator.sync { try coordinator.commit(request) }
        if let ticket = outcome.durabilityTicket {
            // Group commit: other contexts' saves are appended while this one waits for the disk.
            try coordinator.waitUntilDurable(ticket)
        }

        // Committed: bring the objects up to date.
        var reidentified: [(ObjectID, ObjectID)] = []
        reidentified.reserveCapacity(inserts.count)
        var upserted: [(object: ManagedObject, row: CommittedRow)] = []
        for (position, (object, row)) in zip(inserts, outcome.inserted).enumerated() {
            guard outcome.upsertedInserts.isEmpty || !outcome.upsertedInserts.contains(position) else {
                upserted.append((object, row))
                continue
            }
            let entityIndex = object._objectID.key.entityIndex!
            registry[entityIndex][object._objectID.rawValue] = nil
            let permanentID = ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: row.primaryKey)
            reidentified.append((object._objectID, permanentID))
            object._objectID = permanentID
            registry[entityIndex][row.primaryKey] = object
            // The committed row has the related objects' permanent keys.
            object._takeCommittedRow(row)
            object._state = []
        }
        // Every updated, deleted or restored object takes its committed state after the save:
        // what this context wrote, or what a merge policy kept or wrote instead (the row also
        // carries other contexts' changes to attributes this one did not touch, as a merge would).
        let deletedCount = deletes.count
        for (position, object) in (deletes + savedUpdates + restoring).enumerated() {
            let key = RowKey(entityIndex: object._objectID.key.entityIndex!, primaryKey: object._objectID.rawValue)
            guard let final = outcome.finalRows[key] else { continue }
            if let row = final {
                object._takeCommittedRow(row)
                object._state = []
            } else {
                unregister(object)
                // Deleted by this save (an undo may write it back), or by another context's.
                object._state =
                    position < deletedCount ? [.deleted, .detached, .deletedBySave] : [.deleted, .detached]
            }
        }
        for object in updates {
            object._state.remove(.updated)
        }
        // Inserted objects upserted into another object (a uniqueness constraint) take its ID
        // and its row. The object registered for that ID stays registered, so that references
        // to it keep working; an inserted object that finds one leaves the context.
        // The objects the commit wrote, for `didSave()`; and the temporary IDs of upserted
        // inserts that left the context, reported as deleted.
        var saved = inserts.filter { !$0._state.contains(.detached) && !$0._objectID.isTemporaryID }
        var leftByUpsert: [ObjectID] = []
        var upsertTargets: [ObjectID] = []
        for (object, row) in upserted {
            let entityIndex = object._objectID.key.entityIndex!
            let temporaryID = object._objectID
            registry[entityIndex][object._objectID.rawValue] = nil
            object._objectID = ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: row.primaryKey)
            object._takeCommittedRow(row)
            if let registered = registry[entityIndex][row.primaryKey], registered !== object {
                registered._apply(row, keepingLocalChanges: false, byOwnSave: true)
                object._state = [.detached]
                leftByUpsert.append(temporaryID)
                upsertTargets.append(registered._objectID)
                saved.append(registered)
            } else {
                registry[entityIndex][row.primaryKey] = object
                object._state = []
                saved.append(object)
                reidentified.append((temporaryID, object._objectID))
            }
        }
        // Rows the commit changed to keep relationships consistent (or to take an upserted
        // object), beyond what this context changed: its objects for them take the committed
        // state, as a merge would. (Their number says nothing: an upsert can leave a saved
        // update's row as it was and change another.)
        let changedByCommit = takeCommittedRows(outcome.changes.updated, byOwnSave: true)
        // The saved objects' blocks are new copies where the commit wrote into a block that
        // other objects still hold: those objects move onto them, and the older copies can go.
        rebaseObjects(ontoBlocksOf: inserts)
        rebaseObjects(ontoBlocksOf: savedUpdates)
        rebaseObjects(ontoBlocksOf: restoring)
        clearPendingChanges()
        if permanentKeysForChildren != nil {
            if hasLiveChildren {
                for (temporary, permanent) in reidentified {
                    permanentKeysForChildren![temporary.rawValue] = permanent.rawValue
                }
            } else {
                permanentKeysForChildren = nil
            }
        }
        if let undoManager {
            undoManager.didSave(
                permanentKeys: reidentified.map { ($0.0.rawValue, $0.1.rawValue) }
                    + zip(leftByUpsert, upsertTargets).map { ($0.rawValue, $1.rawValue) })
        }
        saved += restoring.filter { !$0._state.contains(.detached) }
        saved += savedUpdates
        saved += unchangedUpdates.filter { !$0._state.contains(.detached) }
        saved += deletes
        // What the commit changed beyond the context's own changes (an upsert's target, the
        // other side of a repaired relationship), and the upserted inserts that left.
        postObjectsDidChange(
            ObjectsDidChange(
                updated: upsertTargets + changedByCommit, deleted: leftByUpsert, reidentified: reidentified))
        for object in saved {
            object.didSave()
        }

        postedSaveChanges = outcome.changes
        defer { postedSaveChanges = nil }
        NotificationCenter.default.post(
            name: Self.didSaveNotification, object: self, userInfo: [SaveChanges.userInfoKey: outcome.changes])
    }

    /// Applies the delete rules and calls ``ManagedObject/willSave()`` on every object the save
    /// will write, then again on the objects that changed (or were inserted or deleted) during
    /// the previous round, until a round changes nothing; reports each round's changes.
    ///
    /// - Parameters: The objects pending when the save started (the ones the lists of
    ///   `pendingChangeLists()` hold).
    /// - Returns: The failures of deny rules (nothing was deleted for them), and whether the
    ///   delete rules or `willSave()` changed, inserted or deleted anything (the pending lists
    ///   then need building again).
    /// - Throws: ``ValidationError`` when `willSave()` still changed objects after 100 rounds.
    private func callWillSave(
        _ inserts: [ManagedObject],
        _ updates: [ManagedObject],
        _ deletes: [ManagedObject]
    ) throws -> (denied: [ValidationError.Failure], changedMore: Bool) {
        var denied = propagateDeletes()
        var changedMore = !changedSinceProcessing.isEmpty
        var lists = (inserts, updates, deletes)
        if changedMore {
            // Cascades deleted more objects: they get `willSave()` in the first round too.
            processPendingChangesOnQueue()
            lists = pendingChangeLists()
        }
        for objects in [lists.0, lists.1, lists.2] {
            for object in objects where !object._state.contains(.detached) {
                object.willSave()
            }
        }
        for _ in 0..<Self.willSaveRounds {
            guard !changedSinceProcessing.isEmpty else { return (denied, changedMore) }
            changedMore = true
            denied = propagateDeletes()
            let round = changedSinceProcessing
            processPendingChangesOnQueue()
            for object in round where !object._state.contains(.detached) {
                object.willSave()
            }
        }
        throw ValidationError(
            failures: changedSinceProcessing.map { object in
                ValidationError.Failure(
                    objectID: object._objectID, entityName: object.entity.name, property: nil,
                    reason: "willSave() changed objects in each of \(Self.willSaveRounds) rounds: it must stop "
                        + "changing values once they are up to date")
            })
    }

    /// How many rounds of `willSave()` a save runs before giving up.
    static let willSaveRounds = 100

    /// The objects to insert, update and delete, each listed once.
    private func pendingChangeLists() -> (inserts: [ManagedObject], updates: [ManagedObject], deletes: [ManagedObject])
    {
        // Each object is listed once: marked in its state while the lists are built (no set
        // of identities to hash), the marks cleared before they return.
        func unique(_ objects: [ManagedObject], _ isPending: (ManagedObject) -> Bool) -> [ManagedObject] {
            var listed: [ManagedObject] = []
            listed.reserveCapacity(objects.count)
            for object in objects where isPending(object) && !object._state.contains(.listed) {
                object._state.insert(.listed)
                listed.append(object)
            }
            return listed
        }
        let lists = (
            inserts: unique(pendingInserts, Self.isPendingInsert),
            updates: unique(pendingUpdates, Self.isPendingUpdate),
            deletes: unique(pendingDeletes, Self.isPendingDelete)
        )
        for object in [lists.inserts, lists.updates, lists.deletes].joined() {
            object._state.remove(.listed)
        }
        return lists
    }

    private func validationFailures(_ objects: [ManagedObject], deleting: Bool = false) -> [ValidationError.Failure] {
        var failures: [ValidationError.Failure] = []
        for object in objects {
            if !deleting {
                let found = propertyFailures(object)
                if !found.isEmpty {
                    // (Appending an empty array still allocates a buffer for the result.)
                    failures += found
                }
            }
            if deleting {
                Self.collectFailures(of: object, into: &failures) { try $0.validateForDelete() }
                continue
            }
            Self.collectFailures(of: object, into: &failures) { try $0.validateForSave() }
            if object._state.contains(.inserted) {
                Self.collectFailures(of: object, into: &failures) { try $0.validateForInsert() }
            } else {
                Self.collectFailures(of: object, into: &failures) { try $0.validateForUpdate() }
            }
        }
        return failures
    }

    /// Runs one of `object`'s validation hooks, adding what it throws to `failures`: a
    /// ``ValidationError``'s failures (naming the object and its entity where they do not), or
    /// any other error as one failure.
    private static func collectFailures(
        of object: ManagedObject,
        into failures: inout [ValidationError.Failure],
        _ hook: (ManagedObject) throws -> Void
    ) {
        do {
            try hook(object)
        } catch let error as ValidationError {
            for failure in error.failures {
                var failure = failure
                if failure.objectID == nil {
                    failure.objectID = object._objectID
                }
                if failure.entityName.isEmpty {
                    failure.entityName = object.entity.name
                }
                failures.append(failure)
            }
        } catch {
            failures.append(
                ValidationError.Failure(
                    objectID: object._objectID, entityName: object.entity.name, property: nil,
                    reason: String(describing: error)))
        }
    }

    /// What the model itself requires of `object`: its attributes' validation closures, its
    /// required to-one relationships set, its to-many relationships' counts in range.
    private func propertyFailures(_ object: ManagedObject) -> [ValidationError.Failure] {
        let entity = object.entity
        guard !entity.attributeValidators.isEmpty || !entity.relationships.isEmpty else { return [] }
        var failures: [ValidationError.Failure] = []
        func fail(_ property: String, _ reason: String) {
            failures.append(
                ValidationError.Failure(
                    objectID: object._objectID, entityName: entity.name, property: property, reason: reason))
        }
        for (index, validate) in entity.attributeValidators.sorted(by: { $0.key < $1.key }) {
            do {
                try validate(object._value(at: index))
            } catch {
                fail(entity.columnName(index), String(describing: error))
            }
        }
        for (offset, relationship) in entity.relationships.enumerated() {
            let count = RelationshipKeys.decode(object._value(at: entity.attributes.count + offset)).count
            if !relationship.isToMany {
                if !relationship.isOptional && count == 0 {
                    fail(relationship.name, "is required")
                }
            } else if count < relationship.minCount {
                fail(
                    relationship.name,
                    "needs at least \(relationship.minCount) object\(relationship.minCount == 1 ? "" : "s") (has \(count))"
                )
            } else if let maxCount = relationship.maxCount, count > maxCount {
                fail(relationship.name, "takes at most \(maxCount) object\(maxCount == 1 ? "" : "s") (has \(count))")
            }
        }
        return failures
    }

    func clearPendingChanges() {
        notePendingObjectsAsReleaseCandidates()
        pendingInserts.removeAll()
        pendingUpdates.removeAll()
        pendingDeletes.removeAll()
    }

    /// Discards every unsaved change: inserted objects leave the context, deleted ones are
    /// restored, and updated ones take their committed values back.
    ///
    /// Posts ``objectsDidChangeNotification`` (after reporting the pending changes with
    /// ``processPendingChanges()``): the discarded inserted objects as deleted, the restored
    /// objects as refreshed.
    ///
    /// - Important: Call on the context's queue.
    public func rollback() {
        checkConfined()
        confinement.withMarkedBlock {
            processPendingChangesOnQueue()
            postObjectsDidChange(discardChanges())
            // As in Core Data: what the undo stack holds was discarded.
            undoManagerValue?.forgetEverything()
        }
    }

    /// Discards every unsaved change; returns what that changed, to report.
    private func discardChanges() -> ObjectsDidChange {
        var discarded: [ObjectID] = []
        var restored: [ObjectID] = []
        for object in pendingInserts where Self.isPendingInsert(object) {
            unregister(object)
            object._state = [.detached]
            discarded.append(object._objectID)
        }
        for object in pendingUpdates + pendingDeletes
        where !object._state.contains(.detached)
            && (object._state.contains(.updated) || object._state.contains(.deleted))
        {
            if let committed = object._committedReference {
                object._takeCommittedRow(committed)
            }
            object._resetTransientAttributes()
            object._state = []
            restored.append(object._objectID)
        }
        clearPendingChanges()
        return ObjectsDidChange(deleted: discarded, refreshed: restored)
    }

    /// Discards every unsaved change and forgets every registered object.
    ///
    /// Objects fetched before stay readable but leave the context: setting their attributes
    /// traps. Fetch again (or use ``object(with:)``) to get fresh instances. Posts
    /// ``objectsDidChangeNotification`` with ``ObjectsDidChange/invalidatedAllObjects`` (after
    /// reporting the pending changes with ``processPendingChanges()``).
    ///
    /// - Important: Call on the context's queue.
    public func reset() {
        checkConfined()
        confinement.withMarkedBlock {
            processPendingChangesOnQueue()
            _ = discardChanges()
            for entityObjects in registry {
                for object in entityObjects.values {
                    object._state = [.detached]
                }
            }
            registry = Array(repeating: [:], count: registry.count)
            awakenedValueKeys = Array(repeating: [], count: registry.count)
            releaseCandidates.removeAll()
            objectsKeptAtLastFullCheck = 0
            temporaryKeysFromParent.removeAll()
            undoManagerValue?.forgetEverything()
            postObjectsDidChange(ObjectsDidChange(invalidatedAllObjects: true))
        }
    }

    /// Updates `object` with its committed values from the store.
    ///
    /// - Parameters:
    ///   - object: A registered object of this context. Inserted objects have no committed
    ///     values and are left alone.
    ///   - mergeChanges: When `true`, unsaved changes to the object's attributes and
    ///     relationships are kept (applied on top of the committed values); when `false`, they
    ///     are discarded — a relationship change on both sides: the objects it moved return to
    ///     where they were committed (but for pending deletions, which stay out of every
    ///     owner), and those left with no change are no longer updated. A pending deletion is
    ///     kept either way.
    ///
    /// Posts an ``objectsDidChangeNotification`` with the object refreshed and, without
    /// `mergeChanges`, the objects the revert set back to their committed values (a
    /// fetched-results controller re-evaluates them all).
    ///
    /// If another context deleted the object, it leaves this context (as a merge would do: the
    /// delete rules of its deletion apply to the unsaved links made here to it).
    ///
    /// - Important: Call on the context's queue.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        checkConfined()
        guard object._confinement === confinement else {
            fatalError(
                "QueueData: refresh(_:mergeChanges:) was called on context '\(name)' with an object of "
                    + "another context ('\(object._confinement.contextName)').")
        }
        let state = object._state
        guard !state.contains(.detached), !state.contains(.inserted) else { return }
        processPendingChangesOnQueue()
        let entityIndex = object._objectID.key.entityIndex!
        let key = object._objectID.rawValue
        let coordinator = self.coordinator
        let lookup = Result {
            if parent != nil {
                return try baseRows(entityIndex: entityIndex, primaryKeys: [key])[0]
            }
            return try coordinator.sync {
                try coordinator.committedRow(entityIndex: entityIndex, primaryKey: key)
            }
        }
        guard case .success(let found) = lookup else {
            // The store is closed: nothing to refresh from, and nothing is known to be deleted.
            return
        }
        guard let row = found else {
            unregister(object)
            object._state = [.deleted, .detached]
            // Links made here to it go as a merge of its deletion lets them go.
            applyMergedDeletionRules([object])
            postObjectsDidChange(ObjectsDidChange(deleted: [object._objectID]))
            reportMergedDeletionRuleChanges()
            return
        }
        var settled: [ManagedObject] = []
        if !mergeChanges {
            // A pending deletion is kept, but its relationship changes go back like any other
            // object's (setting a deleted object's relationship traps: it is set as not deleted).
            let isPendingDeletion = state.contains(.deleted)
            if isPendingDeletion {
                object._state.remove(.deleted)
            }
            settled = revertRelationships(of: object, to: row)
            if isPendingDeletion {
                object._state.insert(.deleted)
            }
        }
        object._apply(row, keepingLocalChanges: mergeChanges)
        if !mergeChanges {
            object._resetTransientAttributes()
            object._state.remove(.updated)
            pendingUpdatesMaySettle = true
            unnoteSettled(object)
        }
        if !object._state.contains(.deleted) {
            confinement.withMarkedBlock { awake(object) }
        }
        // The objects the revert moved back to their committed values are refreshed too: no
        // later `processPendingChanges()` reports them (they hold no change any more).
        postObjectsDidChange(ObjectsDidChange(refreshed: [object._objectID] + settled.map(\._objectID)))
    }

    /// Updates every registered object with its committed values, keeping unsaved changes:
    /// ``refresh(_:mergeChanges:)`` with `true` for each (Core Data's `refreshAllObjects()`),
    /// looked up in one trip to the store.
    ///
    /// Inserted objects are left alone; objects another context deleted leave this context (as
    /// a merge would do: the delete rules of their deletion apply to the unsaved links made
    /// here to them, a cascade deleting the object linked). Posts one
    /// ``objectsDidChangeNotification`` with the refreshed and deleted objects (and, as a
    /// merge, one more with what those rules changed, if anything). Like `refresh(_:mergeChanges: true)`, a save afterwards does not
    /// conflict with what the objects were refreshed to. Objects the context no longer holds
    /// are not looked at (as in Core Data): a fetched-results controller re-evaluates the
    /// objects refreshed, but does not learn that an object it does not hold now matches its
    /// request; call its `performFetch()` for that.
    ///
    /// - Important: Call on the context's queue.
    public func refreshAllObjects() {
        checkConfined()
        processPendingChangesOnQueue()
        var keys: [Int: [Int64]] = [:]
        var objects: [Int: [ManagedObject]] = [:]
        for (entityIndex, entityObjects) in registry.enumerated() {
            for object in entityObjects.values
            where !object._state.contains(.detached) && !object._state.contains(.inserted) {
                keys[entityIndex, default: []].append(object._objectID.rawValue)
                objects[entityIndex, default: []].append(object)
            }
        }
        guard !keys.isEmpty else { return }
        let coordinator = self.coordinator
        let lookup = Result {
            if parent != nil {
                return try keys.map { entityIndex, keys in
                    (entityIndex, try baseRows(entityIndex: entityIndex, primaryKeys: keys))
                }
            }
            return try coordinator.sync {
                try keys.map { entityIndex, keys in
                    (entityIndex, try coordinator.committedRows(entityIndex: entityIndex, primaryKeys: keys))
                }
            }
        }
        guard case .success(let rows) = lookup else {
            // The store is closed: nothing to refresh from, and nothing is known to be deleted.
            return
        }
        var refreshed: [ObjectID] = []
        var deleted: [ObjectID] = []
        var gone: [ManagedObject] = []
        var reloaded: [ManagedObject] = []
        for (entityIndex, entityRows) in rows {
            for (object, found) in zip(objects[entityIndex]!, entityRows) {
                guard let row = found else {
                    unregister(object)
                    object._state = [.deleted, .detached]
                    deleted.append(object._objectID)
                    gone.append(object)
                    continue
                }
                object._apply(row, keepingLocalChanges: true)
                refreshed.append(object._objectID)
                reloaded.append(object)
            }
        }
        // Links made here to the deleted objects go as a merge of their deletion lets them go.
        if !gone.isEmpty {
            applyMergedDeletionRules(gone)
        }
        confinement.withMarkedBlock {
            for object in reloaded where !object._state.contains(.deleted) && !object._state.contains(.detached) {
                awake(object)
            }
        }
        postObjectsDidChange(ObjectsDidChange(deleted: deleted, refreshed: refreshed))
        if !gone.isEmpty {
            reportMergedDeletionRuleChanges()
        }
    }
}

extension ManagedObjectContext {
    /// Sets every relationship of `object` that differs from `row` (its committed row) back to
    /// the committed value, through the setter's path, so that the objects on the other side
    /// (which the change moved) go back too: an object the change took from another owner (a
    /// to-one inverse) returns to the owner it has committed, when it has no other since and is
    /// not a pending deletion. Those left with no change at all are no longer updated.
    ///
    /// - Returns: Those objects (other than `object`, each once): back to their committed
    ///   values, they are no longer among the changes to report.
    fileprivate func revertRelationships(of object: ManagedObject, to row: CommittedRow) -> [ManagedObject] {
        let entity = object.entity
        let key = object._objectID.rawValue
        var affected: [ManagedObject] = []
        for slot in entity.attributes.count..<entity.columnCount
        where !StoredValue.isSame(object._value(at: slot), row.values[slot]) {
            let link = self.link(of: object, column: slot)
            let currentKeys = RelationshipKeys.decode(object._value(at: slot))
            let committedKeys = RelationshipKeys.decode(row.values[slot])
            let current = objects(entityIndex: link.destinationIndex, keys: currentKeys)
            let committed = objects(entityIndex: link.destinationIndex, keys: committedKeys)
            affected += current + committed
            setRelationship(of: object, column: slot, to: committed)
            if link.inverse.isOrdered {
                // Back where they were committed: the setter put the returning objects' key last.
                for target in committed where !currentKeys.contains(target._objectID.rawValue) {
                    restoreCommittedPosition(of: key, in: target, column: link.inverseColumn, link.inverse)
                }
            }
            guard !link.inverse.isToMany else { continue }
            // A pending deletion (a cascade took it) stays out of every owner: it is going.
            for target in current
            where !committedKeys.contains(target._objectID.rawValue) && !target._state.contains(.deleted) {
                guard let targetCommitted = target._committedFields,
                    case .null = target._value(at: link.inverseColumn),
                    let owner = RelationshipKeys.decode(
                        target.entity.rowLayout.value(targetCommitted, slot: link.inverseColumn)
                    ).first,
                    owner != key
                else { continue }
                let owners = objects(
                    entityIndex: self.link(of: target, column: link.inverseColumn).destinationIndex, keys: [owner])
                affected += owners
                setRelationship(of: target, column: link.inverseColumn, to: owners)
                if link.relationship.isOrdered {
                    for owner in owners {
                        restoreCommittedPosition(
                            of: target._objectID.rawValue, in: owner, column: slot, link.relationship)
                    }
                }
            }
        }
        var settled: [ManagedObject] = []
        for other in affected where other !== object && other._state.contains(.updated) {
            if let committedFields = other._committedFields,
                other.entity.rowLayout.isSameRow(other._row, committedFields, count: other.entity.columnCount)
            {
                other._state.remove(.updated)
                pendingUpdatesMaySettle = true
                unnoteSettled(other)
                settled.append(other)
            }
        }
        return settled
    }

    /// Takes `object`, which a refresh just set back to its committed values, off the changes
    /// the next ``processPendingChanges()`` reports, where the revert listed it: it holds no
    /// change, and its next change must register it as updated again (a change to an object
    /// listed since the last ``processPendingChanges()`` registers nothing).
    fileprivate func unnoteSettled(_ object: ManagedObject) {
        let state = object._state
        guard state.contains(.noted), !state.contains(.updated), !state.contains(.inserted),
            !state.contains(.deleted)
        else { return }
        object._state.subtract(ObjectState.eventBits)
        changedSinceProcessing.removeAll { $0 === object }
    }

    /// Moves `key`, which a revert just added back (last) to `owner`'s ordered relationship at
    /// `column`, to where `owner`'s committed value has it: before the first object that
    /// follows it there and is still held (last when none is).
    private func restoreCommittedPosition(
        of key: Int64, in owner: ManagedObject, column: Int, _ relationship: RelationshipDescription
    ) {
        guard let committedFields = owner._committedFields else { return }
        let committed = RelationshipKeys.decode(owner.entity.rowLayout.value(committedFields, slot: column))
        guard let position = committed.firstIndex(of: key) else { return }
        var keys = RelationshipKeys.decode(owner._value(at: column))
        guard let current = keys.firstIndex(of: key) else { return }
        keys.remove(at: current)
        let held = Set(keys)
        let next = committed[(position + 1)...].first { held.contains($0) }
        keys.insert(key, at: next.flatMap { keys.firstIndex(of: $0) } ?? keys.endIndex)
        let value = RelationshipKeys.encode(keys, for: relationship)
        owner._updateInverse(at: column) { stored in
            guard !StoredValue.isSame(stored, value) else { return false }
            stored = value
            return true
        }
    }
}

extension ManagedObject {
    /// Takes a newer committed row: attributes changed locally keep their values when
    /// `keepingLocalChanges`, the others take the committed ones. `byOwnSave`: the row is what
    /// the context's own save made of it (an undo may set it back), not another context's.
    final func _apply(_ row: CommittedRow, keepingLocalChanges: Bool, byOwnSave: Bool = false) {
        let count = entity.columnCount
        let layout = entity.rowLayout
        let previous = _committedReference
        // An object sharing its committed row has no local changes; one with its own row may
        // have set every value back.
        if keepingLocalChanges, let old = _committedFields, _stateBits & ObjectState._ownsRow != 0,
            !layout.isSameRow(_row, old, count: count)
        {
            let attributeCount = entity.attributes.count
            for slot in 0..<count {
                if layout.isSame(_row, old, slot: slot) {
                    _storeValue(row.values[slot], at: slot)
                } else if slot >= attributeCount, entity.relationships[slot - attributeCount].isToMany {
                    // Unsaved additions and removals apply on top of the newer committed set.
                    _storeValue(
                        RelationshipKeys.merged(
                            snapshot: layout.value(old, slot: slot), object: _value(at: slot),
                            committed: row.values[slot], relationship: entity.relationships[slot - attributeCount]),
                        at: slot)
                }
            }
            if let reference = row.reference, reference.version == row.version {
                _committed = reference.block
                _committedIndex = UInt16(truncatingIfNeeded: reference.index)
            } else {
                _setSnapshot(row.values, version: row.version)
            }
        } else {
            _takeCommittedRow(row)
        }
        if !byOwnSave, let previous, let undoManager = _confinement.context?.undoManagerValue {
            undoManager.didMerge(self, previous: previous.values, values: row.values, version: row.version)
        }
        // Unchanged once its columns hold the committed values, unless a transient attribute
        // still holds a change (which no save or merge touches: only a save or a rollback settles
        // it, as in Core Data).
        if _state.contains(.updated), let committed = _committedFields, layout.isSameRow(_row, committed, count: count),
            _transientsHoldDefaults
        {
            _state.remove(.updated)
            _confinement.context?.pendingUpdatesMaySettle = true
        }
    }
}
