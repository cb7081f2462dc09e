import Dispatch

/// Group commit: a store with a ``PersistentStore/synchronizationQueue`` (the journal) has its
/// saves appended on the coordinator's queue and synchronized outside it, so that saves
/// arriving while a synchronization is in flight are written meanwhile and made durable
/// together by the next one. Other stores commit each save durably; both go through the
/// same two calls of ``PersistentStore`` (no store is special here).
///
/// Commits are numbered in the order they reach the store (`appendedCommits`); a synchronization
/// taken after commit *n* was appended makes commits 1...*n* durable (a store appends in order).
/// `durableCommits` counts the durable ones and `durableTables` holds the rows after the last of
/// them: that is what contexts read, so no context sees a save before it is durable. A failed
/// synchronization fails every save it was to cover and every later one: the store refuses
/// commits until its manager loads it again.
///
/// The only nesting is the synchronization queue calling ``sync(_:)``; nothing on `queue` waits
/// for the synchronization queue (a store may only enqueue work there), so the two cannot
/// deadlock.
extension StoreCoordinator {
    /// Records `changes` in `store`: appended only, for a store with group commit (the caller
    /// waits with ``waitUntilDurable(_:)`` when the outcome has a ticket), durably for any
    /// other. Call on `queue`.
    ///
    /// - Throws: ``StoreError`` when the store could not record the changes.
    func record(_ changes: ChangeSet, in store: any PersistentStore, resultingState: StoreState) throws {
        let durable: Bool
        do {
            durable = try store.append(changes, resultingState: resultingState)
        } catch let error as StoreError {
            if synchronizationQueue != nil, error.code == .io {
                // The store refuses commits now: so do the saves appended before this one.
                durabilityFailure = durabilityFailure ?? error
            }
            throw error
        }
        appendedCommits += 1
        if durable {
            // Durable on return (or synchronized, compacted, with this change set).
            durableCommits = appendedCommits
        }
    }

    /// Returns once commit `ticket` and every commit before it are durable, synchronizing the
    /// store unless a synchronization that started after it was appended already covered it.
    ///
    /// Call on the saving context's queue, never on the coordinator's: the synchronization runs
    /// outside `queue`, so that other saves can be appended while it is in flight.
    ///
    /// - Throws: ``StoreError``: `.io` when the synchronization failed, `.closed` when an earlier
    ///   one failed or the store was closed. The save is then not durable; nothing is applied.
    func waitUntilDurable(_ ticket: Int) throws {
        guard let synchronizationQueue else {
            preconditionFailure("QueueData: only the commits of a store with group commit wait for a synchronization")
        }
        // A wait from either queue would wait for itself.
        dispatchPrecondition(condition: .notOnQueue(synchronizationQueue))
        assertNotOnQueue()
        try synchronizationQueue.sync {
            // Saves appended while the previous synchronization ran queue up here; the first of
            // them synchronizes for all, the others find themselves covered without a hop to
            // the coordinator's queue.
            if synchronizedCommits >= ticket {
                return
            }
            let pending = try sync {
                () throws -> (target: Int, run: StoreSynchronization, tables: [EntityTable])? in
                if durableCommits >= ticket {
                    return nil
                }
                if let durabilityFailure {
                    // Appended, but the write or sync that was to make it durable failed.
                    throw StoreError(
                        .io,
                        "The save is not known to be durable: a write or sync of the store failed; load the "
                            + "store again to see what it holds. (\(durabilityFailure.message))",
                        url: durabilityFailure.url, underlyingError: durabilityFailure)
                }
                guard let store else {
                    throw StoreError(
                        .closed,
                        "The store was closed before the save was made durable; load it again to see what it holds.",
                        url: storeURL)
                }
                return (appendedCommits, try store.pendingSynchronization(), tables)
            }
            guard let pending else { return }
            do {
                try pending.run.run()
            } catch {
                throw sync { () -> StoreError in
                    let failure =
                        store?.synchronizationFailed(error)
                        ?? StoreError(
                            .io, "The store could not be synchronized: \(error)", url: storeURL,
                            underlyingError: error)
                    durabilityFailure = durabilityFailure ?? failure
                    return failure
                }
            }
            synchronizedCommits = pending.target
            sync {
                didBecomeDurable(through: pending.target, tables: pending.tables)
            }
        }
    }

    /// Records that commits 1...`commit` are durable, `tables` being the rows after them. Call on
    /// `queue`.
    func didBecomeDurable(through commit: Int, tables: [EntityTable]) {
        // After `close()`, nothing is published (the rows would outlive the store).
        guard commit > durableCommits, store != nil else { return }
        durableCommits = commit
        durableTables = tables
    }
}
