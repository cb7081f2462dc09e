extension ManagedObjectContext {
    /// The context's undo manager: `nil` (the default, as in Core Data) records nothing and
    /// costs nothing.
    ///
    /// Setting one processes the context's changes so far (they are not undoable) and starts
    /// recording; setting another, or `nil`, stops the previous one and forgets its groups.
    /// Traps if the undo manager already records another context.
    ///
    /// - Important: Call on the context's queue.
    public var undoManager: UndoManager? {
        get {
            checkConfined()
            return undoManagerValue
        }
        set {
            checkConfined()
            guard newValue !== undoManagerValue else { return }
            undoManagerValue?.detach()
            undoManagerValue = nil
            if let newValue {
                newValue.attach(to: self)
                undoManagerValue = newValue
            }
        }
    }

    /// Undoes the last group of the context's ``undoManager`` (see ``UndoManager/undo()``);
    /// does nothing without one.
    ///
    /// - Important: Call on the context's queue.
    @discardableResult
    public func undo() -> UndoOutcome {
        checkConfined()
        return undoManagerValue?.undo() ?? UndoOutcome()
    }

    /// Redoes the last undone group of the context's ``undoManager`` (see
    /// ``UndoManager/redo()``); does nothing without one.
    ///
    /// - Important: Call on the context's queue.
    @discardableResult
    public func redo() -> UndoOutcome {
        checkConfined()
        return undoManagerValue?.redo() ?? UndoOutcome()
    }

    // MARK: What undoing does to objects

    /// Whether an undo can bring `object` back: it is pending deletion, or it left the context
    /// because it deleted it (an inserted object discarded, or a deletion it saved) and no
    /// other instance took its place.
    func canBringBack(_ object: ManagedObject) -> Bool {
        let state = object._state
        guard state.contains(.deleted), let entityIndex = object._objectID.key.entityIndex else { return false }
        guard state.contains(.detached) else { return true }
        guard object._objectID.isTemporaryID || state.contains(.deletedBySave) else { return false }
        return registry[entityIndex][object._objectID.rawValue] == nil
    }

    /// The instance of `objectID` that left the context with a deletion it saved, when its
    /// undo manager still names it (an undo can bring it back: no other instance took its
    /// place).
    func instanceGoneForUndo(_ objectID: ObjectID) -> ManagedObject? {
        guard let object = undoManagerValue?.removedObjects[objectID], object._state.contains(.deletedBySave),
            canBringBack(object)
        else { return nil }
        return object
    }

    /// Whether `object` left the context because another context deleted it.
    func wasDeletedElsewhere(_ object: ManagedObject) -> Bool {
        let state = object._state
        return state.contains(.deleted) && state.contains(.detached) && !state.contains(.deletedBySave)
            && !object._objectID.isTemporaryID
    }

    /// Brings back an object ``canBringBack(_:)`` accepts: a pending deletion is cancelled; an
    /// object that left is inserted again (under its temporary ID, or under its permanent ID,
    /// to be written back by the next save).
    func bringBackForUndo(_ object: ManagedObject) {
        let state = object._state
        pendingListsMayRepeat = true
        if !state.contains(.detached) {
            object._state.remove(.deleted)
            if state.contains(.updated) {
                pendingUpdates.append(object)
            }
            noteChangedForUndo(object)
            return
        }
        if object._objectID.isTemporaryID, !adoptedPermanentKeys.isEmpty {
            adoptPermanentKeys(ofGone: object)
        }
        registry[object._objectID.key.entityIndex!][object._objectID.rawValue] = object
        object._state = [.inserted, .noted, .insertedInEvent]
        pendingInserts.append(object)
        changedSinceProcessing.append(object)
    }

    /// Removes `object` as an undone insertion: an inserted object is discarded, a saved one
    /// is deleted (by the next save). Unlike ``delete(_:)``, no rule applies: the related
    /// objects' own recorded changes are undone with it.
    ///
    /// - Returns: Whether it removed the object (`false`: it was gone or being deleted already).
    func removeForUndo(_ object: ManagedObject) -> Bool {
        let state = object._state
        if state.contains(.detached) || state.contains(.deleted) {
            return false
        }
        pendingListsMayRepeat = true
        if state.contains(.inserted) {
            unregister(object)
            object._state = ObjectState([.deleted, .detached, .noted]).union(state.intersection(.insertedInEvent))
                .union(object._objectID.isTemporaryID ? [] : .deletedBySave)
            if !state.contains(.noted) {
                changedSinceProcessing.append(object)
            }
            return true
        }
        pendingDeletes.append(object)
        noteChangedForUndo(object)
        object._state.insert(.deleted)
        return true
    }

    /// Makes `object` unchanged when an undo or redo left it with exactly its committed values
    /// (its transient attributes, which are never saved, do not count): nothing to save.
    func clearUpdatedIfCommitted(_ object: ManagedObject) {
        let state = object._state
        guard state.contains(.updated), !state.contains(.inserted), !state.contains(.deleted),
            !state.contains(.detached), let committed = object._snapshot
        else { return }
        for slot in 0..<object.entity.columnCount where !StoredValue.isSame(object._value(at: slot), committed[slot]) {
            return
        }
        object._state.remove(.updated)
        pendingUpdatesMaySettle = true
    }

    /// Lists `object` for the next ``processPendingChanges()``.
    private func noteChangedForUndo(_ object: ManagedObject) {
        if !object._state.contains(.noted) {
            object._state.insert(.noted)
            changedSinceProcessing.append(object)
        }
    }

    /// Writes `value` at `slot` of `object` as a change of the context (an object pending
    /// deletion or gone takes it without becoming updated, as its inverses do).
    func writeForUndo(_ value: StoredValue, to object: ManagedObject, at slot: Int) {
        let state = object._state
        if state.contains(.deleted) || state.contains(.detached) {
            object._storeValue(value, at: slot)
        } else {
            object._setValue(value, at: slot)
        }
    }

    /// `value` of `relationship` without the objects that no longer exist, among those
    /// `previous` did not hold: neither registered, nor coming back (`keeping`), nor committed;
    /// and without those a merged deletion's rules deleted here, while pending deletion.
    ///
    /// - Returns: The value kept, and the IDs of saved objects left out (another context
    ///   deleted them). Inserted objects discarded, and objects a merged deletion's rules
    ///   deleted here, are left out without being named.
    func existingReferences(
        _ value: StoredValue,
        previous: StoredValue,
        relationship: RelationshipDescription,
        destinationIndex: Int,
        keeping comingBack: Set<ObjectID>
    ) -> (StoredValue, Set<ObjectID>) {
        let keys = RelationshipKeys.decode(value)
        guard !keys.isEmpty else { return (value, []) }
        let before = Set(RelationshipKeys.decode(previous))
        let entityKey = coordinator.entityKeys[destinationIndex]
        // Objects a merged deletion's rules deleted (a layer in a sketch another context
        // deleted) are not pointed at again while pending deletion: no undo takes that deletion
        // back, and their own side of the link is gone.
        let deletedByMerge = undoManagerValue?.deletedByMerge ?? []
        var pendingDeletion = Set<Int64>()
        let unknown = keys.filter { key in
            let id = ObjectID(key: entityKey, rawValue: key)
            guard !before.contains(key), !comingBack.contains(id) else { return false }
            guard let registered = registry[destinationIndex][key] else { return true }
            if registered._state.contains(.deleted), deletedByMerge.contains(id) {
                pendingDeletion.insert(key)
            }
            return false
        }
        guard !unknown.isEmpty || !pendingDeletion.isEmpty else { return (value, []) }
        let saved = unknown.filter { $0 > 0 }
        var gone = Set(unknown.filter { $0 < 0 }).union(pendingDeletion)
        if !saved.isEmpty {
            let coordinator = self.coordinator
            guard
                let rows = try? coordinator.sync({
                    try coordinator.committedRows(entityIndex: destinationIndex, primaryKeys: saved)
                })
            else {
                // The store is closed: nothing is known to be deleted.
                return (value, [])
            }
            for (key, row) in zip(saved, rows) where row == nil {
                gone.insert(key)
            }
        }
        guard !gone.isEmpty else { return (value, []) }
        let kept = RelationshipKeys.encode(keys.filter { !gone.contains($0) }, for: relationship)
        let named = gone.filter { $0 > 0 && !pendingDeletion.contains($0) }
        return (kept, Set(named.map { ObjectID(key: entityKey, rawValue: $0) }))
    }
}
