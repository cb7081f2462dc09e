extension ManagedObjectContext {
    /// Calls ``ManagedObject/awakeFromFetch()`` on each of `objects` registered from a committed
    /// row that has not had it since (`ObjectState.awaitingAwake`), in order.
    ///
    /// Called once the whole batch is registered: an `awakeFromFetch()` that fetches finds the
    /// batch's objects registered, and cannot register a second instance of one of them.
    func awakeFetched(_ objects: some Sequence<ManagedObject>) {
        confinement.withMarkedBlock {
            for object in objects where object._state.contains(.awaitingAwake) {
                awake(object)
            }
        }
    }

    /// ``awakeFetched(_:)`` for one object; returns it.
    @discardableResult
    func awakeFetched(_ object: ManagedObject) -> ManagedObject {
        if object._state.contains(.awaitingAwake) {
            confinement.withMarkedBlock { awake(object) }
        }
        return object
    }

    /// Calls `object`'s ``ManagedObject/awakeFromFetch()`` with change processing off: while it
    /// runs the object is `constructing`, so that the values it sets are its values, not changes
    /// (no update registered, nothing reported, nothing recorded for undo), as in Core Data.
    func awake(_ object: ManagedObject) {
        object._state.remove(.awaitingAwake)
        let wasConstructing = object._state.contains(.constructing)
        object._state.insert(.constructing)
        object.awakeFromFetch()
        if !wasConstructing {
            object._state.remove(.constructing)
        }
    }
}
