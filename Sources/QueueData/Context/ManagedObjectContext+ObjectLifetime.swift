extension ManagedObjectContext {
    /// Whether the context keeps every object it registered (default `false`), as Core Data's
    /// `retainsRegisteredObjects`.
    ///
    /// When `false`, the context holds its objects with pending changes (inserted, updated or
    /// deleted) strongly until they are saved or rolled back, and the others as if weakly: an
    /// object without changes that nothing outside the context references any more is let go,
    /// and fetching it again (or ``object(with:)``) makes a new instance holding its current
    /// committed values. While anything references an object, the context returns that same
    /// instance, so identity comparisons keep working.
    ///
    /// Objects are let go at the end of a block the context runs — `perform`,
    /// `performAndWait`, `enqueue`, `try await perform`, `performChanges` (the outermost one
    /// when they nest) — as Core Data's objects go when the event's autorelease pool drains,
    /// never in the middle of one: inside a block, an object fetched and dropped is still
    /// registered (``registeredObjects``, ``registeredObject(for:)``) and a fetch returns it
    /// again. A context holding up to 256 objects checks them all at the end of every block,
    /// so an object goes at the end of the first block after the last reference to it did.
    /// One holding more checks the objects registered, saved or rolled back since its last
    /// check, and all of them again once it has registered, saved or rolled back a quarter as
    /// many as it kept then (an object it kept because something referenced it, and that
    /// nothing does any more, goes then), so memory follows what the app holds and the
    /// checks cost a constant per object. Code that runs on the queue outside these blocks (a
    /// block submitted to the queue directly) lets go of nothing until the next one; a long
    /// import inside one block keeps what it registered until the block ends.
    ///
    /// When `true`, the context keeps every registered object until ``reset()`` (or until it
    /// leaves the context: deleted and saved, or discarded by `rollback()`); setting it back to
    /// `false` has the next block's end check every object.
    ///
    /// - Important: Call on the context's queue.
    public var retainsRegisteredObjects: Bool {
        get {
            checkConfined()
            return retainsRegisteredObjectsValue
        }
        set {
            checkConfined()
            retainsRegisteredObjectsValue = newValue
            releaseCandidates.removeAll()
            checksEveryRegisteredObject = !newValue
        }
    }

    /// The object registered in the context for `objectID`, or `nil` (never loads one from
    /// the store, unlike ``object(with:)``): Core Data's `registeredObject(for:)`.
    ///
    /// See ``retainsRegisteredObjects`` for how long objects stay registered.
    ///
    /// - Important: Call on the context's queue.
    public func registeredObject(for objectID: ObjectID) -> ManagedObject? {
        checkConfined()
        guard let entityIndex = entityIndex(of: objectID) else { return nil }
        return registry[entityIndex][objectID.rawValue]
    }

    /// Up to how many registered objects the end of every block checks them all (above, the
    /// objects registered, saved or rolled back since, and all once enough were).
    static let registeredObjectsAlwaysChecked = 256

    /// Notes that the object registered for `key` may have become releasable (it was
    /// registered, saved or rolled back), for the check at the end of the block.
    func noteReleaseCandidate(entityIndex: Int, key: Int64) {
        guard !retainsRegisteredObjectsValue, !checksEveryRegisteredObject else { return }
        if releaseCandidates.count >= Swift.max(64, objectsKeptAtLastFullCheck / 4) {
            // Checking them one by one would cost more than checking every object.
            checksEveryRegisteredObject = true
            releaseCandidates.removeAll(keepingCapacity: true)
            return
        }
        releaseCandidates.append((entityIndex, key))
    }

    /// Notes the objects of the pending-change lists that stay registered (their changes are
    /// about to be saved or discarded).
    func notePendingObjectsAsReleaseCandidates() {
        guard !retainsRegisteredObjectsValue, !checksEveryRegisteredObject else { return }
        for list in [pendingInserts, pendingUpdates, pendingDeletes] {
            for object in list where !object._state.contains(.detached) {
                guard let entityIndex = object._objectID.key.entityIndex else { continue }
                noteReleaseCandidate(entityIndex: entityIndex, key: object._objectID.rawValue)
            }
        }
    }

    /// Lets go of the registered objects that have no pending changes and that nothing
    /// outside the registry references: the noted candidates, or every object when the
    /// candidates were too many (or ``retainsRegisteredObjects`` was turned off).
    ///
    /// Called only where no QueueData code of this context is in progress (the end of the
    /// outermost block), since library code may hold objects through the registry alone.
    func releaseUnreferencedObjects() {
        dropSettledPendingUpdates()
        guard !retainsRegisteredObjectsValue else { return }
        if checksEveryRegisteredObject
            || registry.reduce(0, { $0 + $1.count }) <= Self.registeredObjectsAlwaysChecked
        {
            checksEveryRegisteredObject = false
            releaseCandidates.removeAll()
            var kept = 0
            for entityIndex in registry.indices {
                releaseUnreferencedObjects(ofEntity: entityIndex)
                kept += registry[entityIndex].count
            }
            objectsKeptAtLastFullCheck = kept
            return
        }
        guard !releaseCandidates.isEmpty else { return }
        let candidates = releaseCandidates
        releaseCandidates = []
        for (entityIndex, key) in candidates {
            _ = registry[entityIndex].releaseIfUnreferenced(key: key, where: Self.hasNoPendingChanges)
        }
    }

    /// Leaves in ``pendingInserts`` and ``pendingDeletes`` only the objects still pending, each
    /// once (in the order they were first listed), when an undo, a redo or a child's save may
    /// have listed one twice; notes the objects taken out that stay registered as release
    /// candidates.
    func removeRepeatedPendingEntries() {
        guard pendingListsMayRepeat else { return }
        pendingListsMayRepeat = false
        var dropped: [(entityIndex: Int, key: Int64)] = []
        func pendingOnce(_ objects: [ManagedObject], _ isPending: (ManagedObject) -> Bool) -> [ManagedObject] {
            var kept: [ManagedObject] = []
            kept.reserveCapacity(objects.count)
            for object in objects {
                if isPending(object) && !object._state.contains(.listed) {
                    object._state.insert(.listed)
                    kept.append(object)
                } else if !object._state.contains(.detached), let entityIndex = object._objectID.key.entityIndex {
                    dropped.append((entityIndex, object._objectID.rawValue))
                }
            }
            for object in kept {
                object._state.remove(.listed)
            }
            return kept
        }
        pendingInserts = pendingOnce(pendingInserts, Self.isPendingInsert)
        pendingDeletes = pendingOnce(pendingDeletes, Self.isPendingDelete)
        for (entityIndex, key) in dropped {
            noteReleaseCandidate(entityIndex: entityIndex, key: key)
        }
    }

    /// Takes out of ``pendingUpdates`` the objects that no longer have any unsaved change (refreshed
    /// without merging their changes, or made current by a merge), whose entries would hold them
    /// registered until the next save or rollback; notes them as release candidates.
    private func dropSettledPendingUpdates() {
        // Only after what can settle an object: a look at every pending update at the end of
        // every block would cost a context holding many of them a pass per block.
        guard pendingUpdatesMaySettle else { return }
        pendingUpdatesMaySettle = false
        let settled: ObjectState = [.inserted, .updated, .deleted]
        guard pendingUpdates.contains(where: { $0._state.isDisjoint(with: settled) }) else { return }
        var dropped: [(entityIndex: Int, key: Int64)] = []
        pendingUpdates.removeAll { object in
            guard object._state.isDisjoint(with: settled) else { return false }
            if !object._state.contains(.detached), let entityIndex = object._objectID.key.entityIndex {
                dropped.append((entityIndex, object._objectID.rawValue))
            }
            return true
        }
        for (entityIndex, key) in dropped {
            noteReleaseCandidate(entityIndex: entityIndex, key: key)
        }
    }

    /// Lets go of the unreferenced objects of one entity.
    private func releaseUnreferencedObjects(ofEntity entityIndex: Int) {
        // Moved out of the context while it is walked: a local map is changed without dynamic
        // exclusivity checks on the context's stored property.
        var map = IdentityMap()
        swap(&map, &registry[entityIndex])
        defer { swap(&map, &registry[entityIndex]) }
        _ = map.releaseUnreferenced(where: Self.hasNoPendingChanges)
    }

    /// Whether `object` has no pending changes (so that, referenced by nothing but its
    /// context's identity map, it can go).
    static func hasNoPendingChanges(_ object: ManagedObject) -> Bool {
        object._state.isDisjoint(with: [.inserted, .updated, .deleted, .noted])
    }
}
