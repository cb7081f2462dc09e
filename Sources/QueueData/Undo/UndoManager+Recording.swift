/// How an undo manager learns of its context's changes. Everything here runs on the context's
/// queue, called by the context.
///
/// Attribute and relationship changes are recorded as differences: the first change of an
/// object in an event (the object's first change since the context last processed its
/// changes: the only one that reaches the context, later ones take the setters' inline path)
/// copies the object's values, and processing the changes compares them with the values then.
/// Insertions and deletions are recorded as they happen.
extension UndoManager {
    // MARK: Attaching

    /// Starts recording `context`'s changes, after processing those so far (so that every
    /// object's next change reaches the context).
    func attach(to context: ManagedObjectContext) {
        if isAttached, self.context !== context {
            fatalError(
                "QueueData: this UndoManager already records context '\(self.context?.name ?? "(deallocated)")'; "
                    + "give each context an undo manager of its own.")
        }
        self.context = context
        isAttached = true
        context.confinement.withMarkedBlock {
            context.processPendingChangesOnQueue()
        }
    }

    /// Stops recording, forgetting every group.
    func detach() {
        forgetEverything()
        context = nil
        isAttached = false
        eventLevel = 0
        explicitLevel = 0
        disabledCount = 0
    }

    /// Forgets every group and everything recorded so far.
    func forgetEverything() {
        undoStack.removeAll()
        redoStack.removeAll()
        openGroup = makeGroup()
        removedBy.removeAll()
        removedObjects.removeAll()
        removedByCascade.removeAll()
        undoneInsertions.removeAll()
        insertedBy.removeAll()
        preImages.removeAll()
        preImaged.removeAll()
        permanentKeys.removeAll()
        consequenceGroup = nil
        mergedSlots.removeAll()
        deletedByMerge.removeAll()
    }

    /// Processes the context's changes (``ManagedObjectContext/processPendingChanges()``), which
    /// records them.
    func processContextChanges() {
        guard let context else { return }
        context.confinement.withMarkedBlock {
            context.processPendingChangesOnQueue()
        }
    }

    var isRecording: Bool {
        disabledCount == 0 && applying == nil
    }

    // MARK: Changes

    /// Called before the first change of `object` since the context last processed its
    /// changes (and before every change of an object pending deletion, whose inverses change
    /// without registering): keeps its values as they are.
    func willChange(_ object: ManagedObject, relationshipsOnly: Bool = false) {
        guard isRecording, preImaged.insert(ObjectIdentifier(object)).inserted else { return }
        let values = object._slotValues
        preImages.append(
            PreImage(
                object: object, values: values, baseSnapshot: object._snapshot,
                baseVersion: object._snapshotVersion, relationshipsOnly: relationshipsOnly))
    }

    /// Whether an object changed since the last processing has values other than the ones it
    /// had then.
    var hasPendingChanges: Bool {
        preImages.contains { image in
            (image.relationshipsOnly ? image.object.entity.relationshipSlots : image.values.indices).contains {
                !StoredValue.isSame(image.values[$0], image.object._value(at: $0))
            }
        }
    }

    /// Records what changed in each object since its first change in this event: called when
    /// the context processes its changes.
    func recordPendingChanges() {
        guard !preImages.isEmpty else { return }
        let images = preImages
        preImages.removeAll(keepingCapacity: true)
        preImaged.removeAll(keepingCapacity: true)
        guard isRecording else { return }
        for image in images {
            let object = image.object
            var changes: [SlotChange] = []
            let slots = image.relationshipsOnly ? object.entity.relationshipSlots : image.values.indices
            for slot in slots where !StoredValue.isSame(image.values[slot], object._value(at: slot)) {
                changes.append(SlotChange(slot: slot, old: image.values[slot], new: object._value(at: slot)))
            }
            if !changes.isEmpty {
                record(
                    .values(
                        ValuesChange(
                            object: object, changes: changes, baseSnapshot: image.baseSnapshot,
                            baseVersion: image.baseVersion)))
            }
        }
    }

    /// Records that `object` was inserted, and keeps its values as inserted: the relationships it
    /// is given in the insertion's event (its setters take the inline path then) are recorded like
    /// any other change, so that undoing the insertion takes back the object's side of the links
    /// along with the other side (recorded as changes of the related objects). Otherwise an
    /// insertion undone after a save (a deletion, to save) would keep links the related objects
    /// no longer have, and the save would apply its delete rules to them: a cascade would delete
    /// objects the group only linked to it. Its attributes, which nothing else mirrors, are left
    /// as they are (a redo brings the object back with them).
    func recordInsertion(_ object: ManagedObject) {
        guard isRecording else { return }
        willChange(object, relationshipsOnly: true)
        record(.insertion(object))
    }

    /// Records that `object` was deleted (a pending deletion, or an inserted object discarded).
    func recordDeletion(_ object: ManagedObject) {
        guard isRecording else { return }
        record(.deletion(object))
    }

    /// Adds `entry` to the group it belongs to: the group of the deletion a save's delete rules
    /// follow from, the group being recorded, or a group of its own when none is open.
    private func record(_ entry: UndoEntry) {
        if let position = consequenceGroup {
            switch position.direction {
            case .undo: append(entry, to: &undoStack[position.index], isSaveConsequence: true)
            case .redo: append(entry, to: &redoStack[position.index], isSaveConsequence: true)
            }
        } else if eventLevel + explicitLevel > 0 {
            append(entry, to: &openGroup)
        } else {
            var group = makeGroup()
            append(entry, to: &group)
            push(group)
        }
    }

    /// A new empty group.
    func makeGroup() -> UndoGroup {
        defer { nextGroupID += 1 }
        return UndoGroup(id: nextGroupID)
    }

    /// Appends `entry` to `group`, noting the group of an object's latest removal.
    func append(_ entry: UndoEntry, to group: inout UndoGroup, isSaveConsequence: Bool = false) {
        switch entry {
        case .deletion(let object):
            removedBy[ObjectIdentifier(object)] = group.id
            removedObjects[object._objectID] = object
            if isSaveConsequence {
                removedByCascade.insert(ObjectIdentifier(object))
            } else {
                removedByCascade.remove(ObjectIdentifier(object))
            }
        case .insertion(let object):
            removedByCascade.remove(ObjectIdentifier(object))
            if insertedBy[ObjectIdentifier(object)] == nil {
                insertedBy[ObjectIdentifier(object)] = group.id
            }
        case .values:
            break
        }
        group.entries.append(UndoGroup.Recorded(entry: entry, isSaveConsequence: isSaveConsequence))
    }

    /// Adds a group recorded from new changes to the undo stack: the redo stack is emptied.
    private func push(_ group: UndoGroup) {
        guard !group.isEmpty else { return }
        redoStack.removeAll()
        undoStack.append(group)
        trimUndoStack()
    }

    /// Forgets the oldest groups beyond ``levelsOfUndo``.
    func trimUndoStack() {
        if levels > 0, undoStack.count > levels {
            undoStack.removeFirst(undoStack.count - levels)
        }
    }

    // MARK: Groups

    /// Opens the group of a block of the `perform` family, if ``groupsByEvent``; returns
    /// whether it did. Changes made on the queue outside any block are processed first.
    func beginEventGroup() -> Bool {
        guard groupsByEventValue, isAttached, let context else { return false }
        if !context.changedSinceProcessing.isEmpty || !preImages.isEmpty {
            processContextChanges()
        }
        eventLevel += 1
        return true
    }

    /// Closes the group of a block of the `perform` family (the context processed its changes
    /// just before).
    func endEventGroup() {
        guard eventLevel > 0 else { return }
        eventLevel -= 1
        closeGroupIfOutermost()
    }

    /// Pushes the group being recorded when no level is open any more.
    func closeGroupIfOutermost() {
        guard eventLevel + explicitLevel == 0 else { return }
        sealOpenGroup()
    }

    /// Pushes the group recorded so far, if it has anything, and starts a new one.
    func sealOpenGroup() {
        let group = openGroup
        openGroup = makeGroup()
        push(group)
    }

    // MARK: Merges

    /// Called when a merge or refresh gives `object` the committed row `values` at `version`,
    /// replacing `previous`: an undo never sets back what it changed (see ``ValuesChange``).
    func didMerge(_ object: ManagedObject, previous: [StoredValue], values: [StoredValue], version: Int64) {
        guard !undoStack.isEmpty || !redoStack.isEmpty || !openGroup.isEmpty else { return }
        for slot in values.indices where !StoredValue.isSame(previous[slot], values[slot]) {
            mergedSlots[object._objectID, default: [:]][slot] = version
        }
    }

    // MARK: Saves

    /// Called when a save starts with `deletions` pending, before its delete rules and
    /// `willSave()` run: their changes join the group that recorded the latest removal of a
    /// deleted object (on either stack; the newest one when the deletions come from several), so
    /// that one undo brings the object back with its links. Nothing changes when that group is
    /// the one being recorded.
    func beginSave(deleting deletions: [ManagedObject]) {
        isSaving = true
        guard isRecording, !deletions.isEmpty else { return }
        guard let latest = deletions.compactMap({ removedBy[ObjectIdentifier($0)] }).max(),
            latest != openGroup.id
        else { return }
        if let index = undoStack.lastIndex(where: { $0.id == latest }) {
            consequenceGroup = GroupPosition(direction: .undo, index: index)
        } else if let index = redoStack.lastIndex(where: { $0.id == latest }) {
            consequenceGroup = GroupPosition(direction: .redo, index: index)
        }
    }

    /// Called once the save's delete rules, `willSave()` and validation ran (or failed).
    func endSaveConsequences() {
        guard isSaving else { return }
        isSaving = false
        if consequenceGroup != nil, !preImages.isEmpty {
            processContextChanges()
        }
        consequenceGroup = nil
    }

    /// Called after a save committed, with the permanent keys it gave (temporary key →
    /// permanent key, upserted objects included): recorded relationship values hold the
    /// temporary keys.
    func didSave(permanentKeys newKeys: [(Int64, Int64)]) {
        for (temporary, permanent) in newKeys {
            permanentKeys[temporary] = permanent
        }
    }

    /// Called when `object`, known until now as `previous`, took a permanent ID (its parent's
    /// save gave it one, which this context adopted): the removed objects are looked up by the
    /// keys recorded values translate to, the permanent ones, so that an undo or a child's push
    /// finds this instance again instead of making another.
    func didReidentify(_ object: ManagedObject, from previous: ObjectID) {
        guard previous != object._objectID, removedObjects[previous] === object else { return }
        removedObjects[previous] = nil
        removedObjects[object._objectID] = object
    }
}
