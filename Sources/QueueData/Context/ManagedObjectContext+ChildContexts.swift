import Dispatch
import Foundation

extension ManagedObjectContext {
    /// Makes a child context on a new private serial queue: a scratchpad whose ``save()``
    /// pushes its changes into this context instead of the store.
    ///
    /// See ``newChildContext(for:)``.
    ///
    /// - Important: Call on the context's queue.
    public func newChildContext() -> ManagedObjectContext {
        checkConfined()
        return makeChild(queue: DispatchQueue(label: "QueueData.ChildContext.\(UUID().uuidString.prefix(8))"))
    }

    /// Makes a child context confined to `queue`: a scratchpad whose ``save()`` pushes its
    /// changes into this context (its ``parent``) instead of the store.
    ///
    /// As Core Data's nested contexts:
    /// - Fetches, ``object(with:)`` and relationships of the child read what the parent has at
    ///   that moment: the store's rows with the parent's unsaved inserts and updates, without
    ///   its pending deletions. (The child copies them as values on the parent's queue.)
    ///   Objects the child already holds keep their values until it refreshes them.
    /// - The child's ``save()`` runs `willSave()`, the delete rules and validation as any
    ///   save, then hands the inserts, updates and deletions to the parent, where they become
    ///   the parent's unsaved changes (its next ``save()`` makes them durable). Nothing reaches
    ///   the store, and no ``didSaveNotification`` is posted; the parent posts
    ///   ``objectsDidChangeNotification`` for the push, on its queue. Objects keep their IDs across
    ///   the push: a temporary ID of the child names the same inserted object in the parent.
    /// - When the parent changed an object since the child read it, the child's
    ///   ``mergePolicy`` decides (``MergePolicy/error``, the default, throws
    ///   ``MergeConflictError`` and pushes nothing).
    /// - The child merges no other context's saves; it sees them through its parent when it
    ///   reads.
    /// - To throw the child's changes away, drop it (or call ``reset()`` or ``rollback()``):
    ///   nothing reaches the parent until the child saves.
    ///
    /// The child keeps its parent alive. It reads from and saves into the parent with
    /// `parent.queue.sync` (or directly, when the parent's queue is already the current one), so
    /// it must never be used from a block the parent's queue is waiting on (other than through
    /// `performAndWait`, which runs inline). Batched and asynchronous fetches read through the
    /// parent like ``fetch(_:)``. An export of a child exports the store's committed objects,
    /// not the parent's unsaved changes; `importRecords` traps on a child (it saves to the
    /// store): use it on the parent.
    ///
    /// - Parameter queue: A serial queue; it may be the parent's queue.
    /// - Important: Call on the context's queue.
    public func newChildContext(for queue: DispatchQueue) -> ManagedObjectContext {
        checkConfined()
        return makeChild(queue: queue)
    }

    private func makeChild(queue: DispatchQueue) -> ManagedObjectContext {
        if permanentKeysForChildren == nil {
            permanentKeysForChildren = [:]
        }
        let child = ManagedObjectContext(
            queue: queue, name: nil, coordinator: coordinator, observesSaves: false, parent: self, onDeinit: {})
        children.removeAll { $0.context == nil }
        children.append(WeakChild(context: child))
        return child
    }

    /// Whether a child made of this context is still alive (one that is gone needs no keys).
    var hasLiveChildren: Bool {
        children.removeAll { $0.context == nil }
        return !children.isEmpty
    }

    // MARK: Reading through the parent

    /// Runs `body` on the parent's queue, in its confinement: inline when that queue is current
    /// (a child on its parent's queue, or a parent block waiting in the child's
    /// `performAndWait`), otherwise with `parent.queue.sync`.
    ///
    /// - Parameter asEvent: Whether `body` is a block of the parent as `perform`'s are (an undo
    ///   group, and the parent's pending changes processed at its end): for a push.
    func withParent<Result>(
        asEvent: Bool = false,
        _ body: (ManagedObjectContext) throws -> Result
    ) throws -> Result {
        let parent = self.parent!
        // Closed since this context's work began (an asynchronous fetch's private context in
        // flight, which does not share its parent's validity): QueueData's own work throws,
        // it does not trap.
        func closed() -> StoreError {
            StoreError(.closed, "The manager was closed while '\(name)' was reading through its parent.")
        }
        guard parent.confinement.isValid else { throw closed() }
        func enter() throws -> Result {
            if asEvent {
                return try parent.confinement.withContextBlock { try body(parent) }
            }
            return try parent.confinement.withMarkedBlock { try body(parent) }
        }
        if parent.confinement.isCurrent {
            return try enter()
        }
        // A parent queue waiting on this one would deadlock: trap instead.
        dispatchPrecondition(condition: .notOnQueue(parent.queue))
        return try parent.queue.sync {
            guard parent.confinement.isValid else { throw closed() }
            parent.checkConfined()
            return try enter()
        }
    }

    /// The rows of `entityIndexes` as a child of this context reads them (on this context's
    /// queue when it is a parent): the committed rows, and by primary key the rows this
    /// context and its ancestors changed (a deleted row has version 0).
    func baseView(of entityIndexes: [Int]) throws -> ([TableSnapshot], [[Int64: CommittedRow]]) {
        let pending = temporaryKeysFromParent
        let (view, adopted) = try withParent { parent in
            (try parent.view(ofEntities: entityIndexes), parent.permanentKeys(for: pending))
        }
        adoptPermanentKeys(adopted)
        return view
    }

    /// What ``baseView(of:)`` reads, on the parent's queue.
    private func view(ofEntities entityIndexes: [Int]) throws -> ([TableSnapshot], [[Int64: CommittedRow]]) {
        var (snapshots, overlays): ([TableSnapshot], [[Int64: CommittedRow]])
        if parent != nil {
            (snapshots, overlays) = try baseView(of: entityIndexes)
        } else {
            let coordinator = coordinator
            snapshots = try coordinator.sync { try coordinator.snapshots(of: entityIndexes) }
            overlays = Array(repeating: [:], count: entityIndexes.count)
        }
        var positions: [Int: Int] = [:]
        for (position, entityIndex) in entityIndexes.enumerated() where positions[entityIndex] == nil {
            positions[entityIndex] = position
        }
        for object in pendingInserts + pendingUpdates + pendingDeletes {
            guard let position = positions[object._objectID.key.entityIndex!],
                let row = Self.childRow(of: object)
            else { continue }
            let key = object._objectID.rawValue
            // An update of an object whose row another context's save deleted (a merge not taken
            // yet): the store holds no row for it, and this context's own fetches skip it, so a
            // child's must too (its positive keys missing from the snapshot are read as inserts).
            if key > 0, !row.isDeleted, !Self.isPendingInsert(object), overlays[position][key] == nil,
                !snapshots[position].contains(primaryKey: key)
            {
                continue
            }
            overlays[position][key] = row
        }
        return (snapshots, overlays)
    }

    /// The rows with `primaryKeys` as a child of this context reads them (`nil`: no such
    /// object, or deleted).
    func baseRows(entityIndex: Int, primaryKeys: [Int64]) throws -> [CommittedRow?] {
        let pending = temporaryKeysFromParent
        let (rows, adopted) = try withParent { parent in
            (try parent.rows(entityIndex: entityIndex, primaryKeys: primaryKeys), parent.permanentKeys(for: pending))
        }
        adoptPermanentKeys(adopted)
        return rows
    }

    /// What ``baseRows(entityIndex:primaryKeys:)`` reads, on the parent's queue.
    private func rows(entityIndex: Int, primaryKeys: [Int64]) throws -> [CommittedRow?] {
        // Temporary keys this context has saved since a child read them: their rows.
        let primaryKeys =
            permanentKeysForChildren.map { saved in primaryKeys.map { saved[$0] ?? $0 } } ?? primaryKeys
        var rows = [CommittedRow?](repeating: nil, count: primaryKeys.count)
        var unknown: [Int] = []
        for (position, key) in primaryKeys.enumerated() {
            if let object = registry[entityIndex][key], let row = Self.childRow(of: object) {
                rows[position] = row.isDeleted ? nil : row
            } else {
                unknown.append(position)
            }
        }
        guard !unknown.isEmpty else { return rows }
        let keys = unknown.map { primaryKeys[$0] }
        let found: [CommittedRow?]
        if parent != nil {
            found = try baseRows(entityIndex: entityIndex, primaryKeys: keys)
        } else {
            let coordinator = coordinator
            found = try coordinator.sync {
                try coordinator.committedRows(entityIndex: entityIndex, primaryKeys: keys.filter { $0 > 0 })
            }
            var positive = found.makeIterator()
            for (position, key) in zip(unknown, keys) where key > 0 {
                rows[position] = positive.next() ?? nil
            }
            return rows
        }
        for (position, row) in zip(unknown, found) {
            rows[position] = row
        }
        return rows
    }

    /// The permanent keys this context's saves gave to `temporary` keys (on its queue).
    func permanentKeys(
        for temporary: [(entityIndex: Int, key: Int64)]
    ) -> [(entityIndex: Int, temporary: Int64, permanent: Int64)] {
        guard !temporary.isEmpty, let saved = permanentKeysForChildren, !saved.isEmpty else { return [] }
        return temporary.compactMap { item in saved[item.key].map { (item.entityIndex, item.key, $0) } }
    }

    /// Gives a child's objects the permanent IDs its parent's save gave them, and updates
    /// every reference to them (on the child's queue).
    func adoptPermanentKeys(_ adopted: [(entityIndex: Int, temporary: Int64, permanent: Int64)]) {
        guard !adopted.isEmpty else { return }
        var reidentified: [(ObjectID, ObjectID)] = []
        var gone: [ManagedObject] = []
        for (entityIndex, temporary, permanent) in adopted {
            adoptedPermanentKeys[temporary] = permanent
            // This context's own children may know the object by its temporary ID too.
            permanentKeysForChildren?[temporary] = permanent
            guard let object = registry[entityIndex][temporary] else {
                // An object that left with a deletion this context pushed, which its undo manager
                // can bring back: it takes the permanent ID too (below, once every key is known),
                // so that a child bringing it back, by either key, finds it.
                let temporaryID = ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: temporary)
                if let removed = undoManagerValue?.removedObjects[temporaryID], removed._objectID == temporaryID {
                    gone.append(removed)
                }
                continue
            }
            registry[entityIndex][temporary] = nil
            let temporaryID = object._objectID
            object._objectID = ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: permanent)
            registry[entityIndex][permanent] = object
            reidentified.append((temporaryID, object._objectID))
            undoManagerValue?.didReidentify(object, from: temporaryID)
        }
        let done = Set(adopted.map(\.temporary))
        temporaryKeysFromParent.removeAll { done.contains($0.key) }
        let keys = adoptedPermanentKeys
        func renamed(_ value: StoredValue, _ relationship: RelationshipDescription) -> StoredValue? {
            let old = RelationshipKeys.decode(value)
            guard old.contains(where: { $0 < 0 && keys[$0] != nil }) else { return nil }
            return RelationshipKeys.encode(old.map { keys[$0] ?? $0 }, for: relationship)
        }
        // The same relationships, under the new keys: not a change.
        for (entityIndex, objects) in registry.enumerated() {
            let entity = model.entities[entityIndex]
            guard !entity.relationships.isEmpty else { continue }
            for object in objects.values {
                for (offset, relationship) in entity.relationships.enumerated() {
                    let slot = entity.attributes.count + offset
                    if let value = renamed(object._value(at: slot), relationship) {
                        object._storeValue(value, at: slot)
                    }
                    if var snapshot = object._snapshot, let value = renamed(snapshot[slot], relationship) {
                        snapshot[slot] = value
                        object._setSnapshot(snapshot, version: object._snapshotVersion)
                    }
                }
            }
        }
        for object in gone {
            adoptPermanentKeys(ofGone: object)
        }
        undoManagerValue?.didSave(permanentKeys: adopted.map { ($0.temporary, $0.permanent) })
        if !reidentified.isEmpty {
            postObjectsDidChange(ObjectsDidChange(reidentified: reidentified))
        }
    }

    /// Gives `object`, which left this context before it adopted the permanent keys of the
    /// objects it knew by temporary ones (see ``adoptPermanentKeys(_:)``), those keys: its own
    /// ID and the keys its relationships and snapshot hold. An undo bringing it back then
    /// registers it as the parent now knows it (a save it pushed since), and its links resolve.
    func adoptPermanentKeys(ofGone object: ManagedObject) {
        let keys = adoptedPermanentKeys
        if let permanent = keys[object._objectID.rawValue] {
            let temporaryID = object._objectID
            object._objectID = ObjectID(key: temporaryID.key, rawValue: permanent)
            undoManagerValue?.didReidentify(object, from: temporaryID)
        }
        func renamed(_ value: StoredValue, _ relationship: RelationshipDescription) -> StoredValue? {
            let old = RelationshipKeys.decode(value)
            guard old.contains(where: { $0 < 0 && keys[$0] != nil }) else { return nil }
            return RelationshipKeys.encode(old.map { keys[$0] ?? $0 }, for: relationship)
        }
        let entity = object.entity
        for (offset, relationship) in entity.relationships.enumerated() {
            let slot = entity.attributes.count + offset
            if let value = renamed(object._value(at: slot), relationship) {
                object._storeValue(value, at: slot)
            }
            if var snapshot = object._snapshot, let value = renamed(snapshot[slot], relationship) {
                snapshot[slot] = value
                object._setSnapshot(snapshot, version: object._snapshotVersion)
            }
        }
    }

    /// What a child reads for `object` of its parent when the parent changed it: its current
    /// values (version 0 when it is deleted); `nil` when the parent has no change to it.
    static func childRow(of object: ManagedObject) -> CommittedRow? {
        let state = object._state
        guard !state.contains(.detached) else { return nil }
        if state.contains(.deleted) {
            return CommittedRow(primaryKey: object._objectID.rawValue, version: 0, values: [])
        }
        guard state.contains(.inserted) || state.contains(.updated) else { return nil }
        return CommittedRow(
            primaryKey: object._objectID.rawValue, version: Swift.max(object._snapshotVersion, 1),
            values: object._columnValues)
    }
}

/// A child of a context, not kept alive by it (a child keeps its parent alive instead).
struct WeakChild {
    weak var context: ManagedObjectContext?
}
