extension ManagedObjectContext {
    /// Registers `object`, made (`detached`) for a committed row a scan found, unless code that
    /// ran since the scan began — an `awakeFromFetch()`, a predicate or a sort following a
    /// relationship — registered an instance for its ID (`registrationCount` is no longer
    /// `registrations`): the scan's copy of the registry did not see it, and that instance is
    /// returned instead, so that one ID has one instance.
    @inline(__always)
    func registerScanned(_ object: ManagedObject, since registrations: Int) -> ManagedObject {
        if registrationCount != registrations,
            let existing = registry[object._objectID.key.entityIndex!][object._objectID.rawValue]
        {
            return existing
        }
        return register(object)
    }

    /// Registers the objects of `objects` made for committed rows (`detached`), each followed at
    /// once by its ``ManagedObject/awakeFromFetch()``: one pass, as a second pass over a large
    /// fetch's objects cost as much as the calls (its objects no longer in the cache).
    ///
    /// An object registered by code that ran since `registrations` — the scan (a predicate
    /// following a relationship), or a hook that fetched — replaces the object made for its row
    /// in `objects` (already awakened where it was registered), so that one ID has one instance.
    /// Must run in a marked block on the context's queue.
    func registerAndAwake(_ objects: inout [ManagedObject], since registrations: Int) {
        var expected = registrations
        let awakes = awakesFetchedObjects
        for index in objects.indices {
            let object = objects[index]
            guard object._stateBits & ObjectState.detached.rawValue != 0 else { continue }
            if registrationCount != expected,
                let existing = registry[object._objectID.key.entityIndex!][object._objectID.rawValue]
            {
                objects[index] = existing
                continue
            }
            register(object)
            if awakes {
                awake(object)
            }
            expected = registrationCount
        }
    }

    /// Calls ``ManagedObject/awakeFromFetch()`` on each of `objects` registered from a committed
    /// row that has not had it since (`ObjectState.awaitingAwake`), in order.
    ///
    /// Called once the whole batch is registered: an `awakeFromFetch()` that fetches finds the
    /// batch's objects registered, and cannot register a second instance of one of them.
    func awakeFetched(_ objects: [ManagedObject]) {
        guard !objects.isEmpty, awakesFetchedObjects else { return }
        confinement.withMarkedBlock {
            objects.withUnsafeBufferPointer { buffer in
                for index in buffer.indices {
                    // The array holds every object throughout: no retain for the call.
                    Unmanaged.passUnretained(buffer[index])._withUnsafeGuaranteedRef { object in
                        if object._stateBits & ObjectState.awaitingAwake.rawValue != 0 {
                            awake(object)
                        }
                    }
                }
            }
        }
    }

    /// ``awakeFetched(_:)`` for one object; returns it.
    @discardableResult
    func awakeFetched(_ object: ManagedObject) -> ManagedObject {
        if awakesFetchedObjects, object._state.contains(.awaitingAwake) {
            confinement.withMarkedBlock { awake(object) }
        }
        return object
    }

    /// Calls `object`'s ``ManagedObject/awakeFromFetch()`` with change processing off: while it
    /// runs the object is `awakening`, so that the values it sets are its values, not changes
    /// (no update registered, nothing reported, nothing recorded for undo), as in Core Data.
    /// An object whose hook is running is not awakened again (its hook calling
    /// `refresh(self, mergeChanges:)`, which would call it again, endlessly): the running call
    /// goes on, on the reloaded values, with change processing still off.
    @inline(__always)
    func awake(_ object: ManagedObject) {
        let state = object._state
        guard !state.contains(.awakening) else {
            object._state = state.subtracting(.awaitingAwake)
            return
        }
        object._state = state.subtracting(.awaitingAwake).union(.awakening)
        object.awakeFromFetch()
        object._state.remove(.awakening)
    }

    /// Notes that `object`'s `awakeFromFetch()` set a stored value (an attribute's or a
    /// relationship's): its values may differ from its committed row's without a pending
    /// update, and a lookup in an index must match it on its own values, as a scan does (see
    /// `unsettledObjects(of:in:)`).
    func noteAwakenedValue(of object: ManagedObject) {
        guard let entityIndex = object._objectID.key.entityIndex else { return }
        awakenedValueKeys[entityIndex].insert(object._objectID.rawValue)
    }
}
