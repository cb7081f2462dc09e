import Foundation

extension ManagedObjectContext {
    /// Posted by a context on its queue after each successful save; `object` is the context
    /// and `userInfo[SaveChanges.userInfoKey]` the ``SaveChanges``.
    public static let didSaveNotification = Notification.Name("QueueData.ManagedObjectContextDidSave")

    /// Posted by a context on its queue, synchronously, when objects it holds changed; `object`
    /// is the context and `userInfo[ObjectsDidChange.userInfoKey]` the ``ObjectsDidChange``.
    ///
    /// It is posted for the context's own inserts, updates and deletes by
    /// ``processPendingChanges()`` (at the end of each `perform`-family block, at the start of
    /// `save()`, and when you call it), after a merge of another context's save that inserted
    /// objects or changed or deleted objects this context holds, after a save whose commit
    /// changed objects beyond what the context had set (an upsert, a relationship repaired on
    /// the other side), and by ``refresh(_:mergeChanges:)``, ``rollback()`` and ``reset()``.
    /// Never for a change that changed nothing.
    public static let objectsDidChangeNotification = Notification.Name("QueueData.ManagedObjectContextObjectsDidChange")

    /// Registers the observer that merges saves of other contexts of the same coordinator.
    ///
    /// The observer runs on the poster's thread: it only extracts the `Sendable` payload and
    /// hops to this context's queue. It holds the context weakly, and `deinit` removes it.
    func startObservingSaves() {
        let coordinatorIdentifier = coordinator.identifier
        observer = NotificationCenter.default.addObserver(
            forName: Self.didSaveNotification, object: nil, queue: nil
        ) { [weak self] notification in
            // `as? ManagedObjectContext`, not `as AnyObject?`: bridging `Any` to `AnyObject` costs
            // ≈ 3,200 instructions on Linux, and this runs for every context on every save.
            let saver = notification.object as? ManagedObjectContext
            guard let self, saver !== self else { return }
            // Posted by a save running here: its changes without the `userInfo` look-up and cast
            // (≈ 3,600 instructions per context per save); a notification posted again later,
            // or elsewhere, is read from `userInfo`.
            let changes: SaveChanges
            if let saver, saver.confinement._isMarkedCurrent(), let posted = saver.postedSaveChanges {
                changes = posted
            } else if let decoded = SaveChanges(notification) {
                changes = decoded
            } else {
                return
            }
            guard changes.coordinatorIdentifier == coordinatorIdentifier else { return }
            self.queue.async { [weak self] in
                guard let self, self.confinement.isValid else { return }
                self.confinement.withMarkedBlock {
                    if self.mergesAutomaticallyValue {
                        self.merge(changes)
                    }
                }
            }
        }
    }

    /// Merges a save of another context into this one (when automatic merging is off).
    ///
    /// Updated objects take the new committed values of the attributes they have not changed
    /// locally (local unsaved edits stay); deleted objects leave the context, and their delete
    /// rules apply to the links this context made to them and has not saved (a cascade deletes
    /// the linking object, any other rule lets it go; not an undoable action); inserted objects
    /// become fetchable. Values older than what the context already has are ignored, so saves
    /// that update objects may be merged in any order; a deletion is not: it removes the object
    /// whenever it is merged, even after a later save that brought the object back (an undo of
    /// the deletion, saved). Merge saves that delete objects in the order they were posted, or
    /// catch up with ``mergeChanges(from:)``, which reads objects as they are now. Posts
    /// ``objectsDidChangeNotification`` when something changed, then, when delete rules changed
    /// objects here, another with those changes (as ``processPendingChanges()`` reports them).
    ///
    /// - Parameter notification: A ``didSaveNotification``; other notifications are ignored.
    /// - Important: Call on the context's queue.
    public func mergeChanges(fromContextDidSave notification: Notification) {
        checkConfined()
        guard let changes = SaveChanges(notification) else { return }
        confinement.withMarkedBlock {
            merge(changes)
        }
    }

    /// Gives the registered objects among `rows` their committed rows when they are newer than
    /// what the objects hold, keeping unsaved local edits: how a merge takes another context's
    /// save, and how a save takes what its own commit changed beyond the context's changes (the
    /// other side of a repaired relationship, an upsert's target).
    ///
    /// - Returns: The IDs of the objects that took a row.
    func takeCommittedRows(_ rows: [(ObjectID, CommittedRow)], byOwnSave: Bool) -> [ObjectID] {
        var taken: [ObjectID] = []
        var applied: [ManagedObject] = []
        for (objectID, row) in rows {
            guard let entityIndex = entityIndex(of: objectID),
                let object = registry[entityIndex][objectID.rawValue],
                row.version > object._snapshotVersion
            else { continue }
            object._apply(row, keepingLocalChanges: true, byOwnSave: byOwnSave)
            taken.append(object._objectID)
            applied.append(object)
        }
        rebaseObjects(ontoBlocksOf: applied)
        return taken
    }

    /// Moves the objects whose committed rows live in an older copy of the block each of
    /// `objects` now holds its committed row in, onto that block (see
    /// ``rebaseObjects(onto:entityIndex:)``). Objects that follow one another in a block take it
    /// once.
    func rebaseObjects<Objects: Sequence<ManagedObject>>(ontoBlocksOf objects: Objects) {
        var last: RowBlock?
        for object in objects {
            guard let block = object._committed, block !== last, let entityIndex = object._objectID.key.entityIndex,
                entityIndex < registry.count
            else { continue }
            last = block
            rebaseObjects(onto: block, entityIndex: entityIndex)
        }
    }

    /// Points every object of this context whose committed row is in `block` at its key and
    /// version, but which still holds an older copy of the block, at the row in `block`.
    ///
    /// A save that writes a row copies its block when anything else holds the block (every
    /// object of the block's rows does): without this, each object kept the copy it last took
    /// alive, and a context holding its objects while saving them one at a time kept a block
    /// (of 128 rows then) per saved object (10,000 one-object saves of distinct objects of a
    /// 10,000-row store: 52 MB more resident). Moved here, the objects read the same values (a row's version
    /// changes with its values) and the older copy goes once no other context holds it.
    func rebaseObjects(onto block: RowBlock, entityIndex: Int) {
        // A block the commit made (rows appended past the last block) has no older copy.
        guard block.isCopy else { return }
        // Rebasing changes objects, never the map: read through one copy of it.
        let objects = registry[entityIndex]
        for index in 0..<block.count where block.isLive(index) {
            let key = block.key(index)
            guard let object = objects[key], let current = object._committed, current !== block else { continue }
            let currentIndex = Int(object._committedIndex)
            guard currentIndex < current.count, current.key(currentIndex) == key,
                current.version(currentIndex) == block.version(index)
            else { continue }
            object._rebase(onto: block, index: index)
        }
    }

    /// Applies the delete rules of objects another context's save deleted to the objects here
    /// that still point to them — links this context made and has not saved (a layer it put into
    /// a sketch the other context deleted): a cascade deletes the object (an unsaved insert is
    /// discarded), any other rule lets it go, as Core Data's merge deletes the object in the
    /// receiving context. Links the other save knew about arrived with its rows already.
    /// Nothing here becomes an undoable action.
    func applyMergedDeletionRules(_ gone: [ManagedObject]) {
        let undoManager = undoManagerValue
        undoManager?.disabledCount += 1
        defer { undoManager?.disabledCount -= 1 }
        let deletionsBefore = pendingDeletes.count
        defer {
            if let undoManager, pendingDeletes.count > deletionsBefore {
                for object in pendingDeletes[deletionsBefore...] where Self.isPendingDelete(object) {
                    undoManager.deletedByMerge.insert(object._objectID)
                }
            }
        }
        var cascaded: [ManagedObject] = []
        for object in gone {
            let key = object._objectID.rawValue
            let entity = object.entity
            guard !entity.relationships.isEmpty, let entityIndex = object._objectID.key.entityIndex else { continue }
            for (offset, link) in model.relationshipLinks[entityIndex].enumerated() {
                let keys = RelationshipKeys.decode(object._value(at: entity.attributes.count + offset))
                for targetKey in keys {
                    guard let target = registry[link.destinationIndex][targetKey],
                        RelationshipKeys.contains(key, in: target._value(at: link.inverseColumn))
                    else { continue }
                    removeKey(key, from: target, column: link.inverseColumn, relationship: link.inverse)
                    if link.relationship.deleteRule == .cascade, !target._state.contains(.deleted) {
                        delete(target, preparing: false)
                        if Self.isPendingDelete(target) {
                            cascaded.append(target)
                        }
                    }
                }
            }
        }
        if !cascaded.isEmpty {
            _ = propagateDeletes(of: cascaded, preparing: false)
        }
    }

    func merge(_ changes: SaveChanges) {
        // The context's own changes so far are reported first, in the order they happened.
        processPendingChangesOnQueue()
        let updated = takeCommittedRows(changes.updated, byOwnSave: false)
        var deleted: [ObjectID] = []
        var gone: [ManagedObject] = []
        for objectID in changes.deleted {
            guard let entityIndex = entityIndex(of: objectID),
                let object = registry[entityIndex][objectID.rawValue]
            else { continue }
            unregister(object)
            object._state = [.deleted, .detached]
            deleted.append(objectID)
            gone.append(object)
        }
        let appliesDeletionRules = gone.contains(where: { !$0.entity.relationships.isEmpty })
        if appliesDeletionRules {
            applyMergedDeletionRules(gone)
        }
        let visible = ObjectsDidChange(
            inserted: changes.inserted, updated: updated, deleted: deleted, mergedSave: changes)
        if !changeObservers.isEmpty {
            notifyChangeObservers(visible)
        }
        // Nothing to post when the save touched nothing this context holds and inserted
        // nothing (NotificationCenter posts contend on one lock across all queues).
        if !visible.isEmpty {
            NotificationCenter.default.post(
                name: Self.objectsDidChangeNotification, object: self,
                userInfo: [ObjectsDidChange.userInfoKey: visible])
        }
        if appliesDeletionRules {
            reportMergedDeletionRuleChanges()
        }
    }

    /// Reports what the delete rules of a merge changed here (objects a cascade deleted, links
    /// let go) right after the merge, not at the context's next event: a merge runs in a block
    /// of its own, and until then a fetched-results controller would show objects a fetch no
    /// longer gives. Not an undoable action, as the rules' changes are not.
    func reportMergedDeletionRuleChanges() {
        let undoManager = undoManagerValue
        undoManager?.disabledCount += 1
        defer { undoManager?.disabledCount -= 1 }
        processPendingChangesOnQueue()
    }
}
