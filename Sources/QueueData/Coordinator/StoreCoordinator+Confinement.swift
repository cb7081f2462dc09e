import Dispatch

/// The coordinator's confinement: everything it holds lives on its serial `queue`, entered from
/// outside only through ``sync(_:)``, which turns the one way to deadlock — entering the queue
/// from code already running on it (a store, a custom merge policy or an observer calling back
/// into QueueData during a commit) — into a trap that says so.
extension StoreCoordinator {
    /// Runs `body` on the coordinator's queue and returns its result.
    ///
    /// Call from anywhere but the coordinator's queue: from there (directly, or from a queue it
    /// is waiting on) the call traps instead of deadlocking.
    func sync<Result>(_ body: () throws -> Result) rethrows -> Result {
        if DispatchQueue.getSpecific(key: queueKey) != nil {
            fatalError(
                "QueueData: the store coordinator was entered from its own queue: code that runs during a commit "
                    + "(a PersistentStore, a merge policy, an observer called from it) called back into QueueData. "
                    + "It would wait for itself: do that work after the save returns.")
        }
        // The same, when the call comes from another queue this one is waiting on (a context's
        // queue entered with sync from inside a commit): libdispatch knows.
        dispatchPrecondition(condition: .notOnQueue(queue))
        return try queue.sync(execute: body)
    }

    /// Traps unless called on the coordinator's queue: the check of the methods that touch its
    /// state (one queue-ownership test, like swift-nio's `assertInEventLoop`).
    func assertOnQueue() {
        dispatchPrecondition(condition: .onQueue(queue))
    }
}
