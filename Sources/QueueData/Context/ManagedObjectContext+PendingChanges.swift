import Foundation

extension ManagedObjectContext {
    /// Reports the context's own changes since the last call: posts
    /// ``objectsDidChangeNotification`` (on the context's queue, synchronously) with the objects
    /// inserted, updated and deleted since then, as Core Data does at the end of each event.
    ///
    /// QueueData calls it for you at the end of every block entered with `perform`,
    /// `performAndWait`, `enqueue`, `try await perform` and `performChanges`, at the start of
    /// `save()` (and after each round of ``ManagedObject/willSave()``), and before `rollback()`,
    /// `reset()` and a merge report their own changes, so observers see changes in the order
    /// they happened. Call it yourself after changing objects in code that runs on the queue
    /// outside those blocks (a block you submitted to the queue directly), or to have
    /// observers see changes before the block ends.
    ///
    /// What it reports, per object changed since the last call:
    /// - inserted, and still inserted: in ``ObjectsDidChange/insertedObjectIDs`` (its temporary
    ///   ID); inserted and deleted again before the call: nothing;
    /// - deleted (a pending deletion, or an object inserted earlier and discarded now): in
    ///   ``ObjectsDidChange/deletedObjectIDs``;
    /// - any other change to its attributes or relationships — including an object inserted
    ///   in an earlier event and changed since, and setting a value back: in
    ///   ``ObjectsDidChange/updatedObjectIDs``.
    ///
    /// Delete rules are applied here only in a context with an ``UndoManager`` (first, so that
    /// the objects they change are reported too, and the undo group holds them): otherwise they
    /// run when the deletion is saved (see ``DeleteRule``). Posts nothing when nothing changed.
    ///
    /// - Important: Call on the context's queue.
    public func processPendingChanges() {
        checkConfined()
        confinement.withMarkedBlock {
            processPendingChangesOnQueue()
        }
    }

    /// ``processPendingChanges()`` without the entry check, for QueueData's own blocks.
    func processPendingChangesOnQueue() {
        if let undoManager = undoManagerValue {
            if undoManager.applying == nil {
                propagateDeletesOfEvent(undoManager)
            }
            undoManager.recordPendingChanges()
        }
        guard !changedSinceProcessing.isEmpty else { return }
        // Taken first: an observer that changes objects lists them for the next call.
        let changed = changedSinceProcessing
        changedSinceProcessing = []
        var inserted: [ObjectID] = []
        var updated: [ObjectID] = []
        var deleted: [ObjectID] = []
        for object in changed {
            let state = object._state
            object._state.subtract(ObjectState.eventBits)
            if state.contains(.insertedInEvent) {
                if !state.contains(.detached) {
                    inserted.append(object._objectID)
                }
            } else if state.contains(.deleted) {
                deleted.append(object._objectID)
            } else if !state.contains(.detached) {
                updated.append(object._objectID)
            }
        }
        postObjectsDidChange(ObjectsDidChange(inserted: inserted, updated: updated, deleted: deleted))
    }

    /// Tells the context's change observers about `changes`, then posts
    /// ``objectsDidChangeNotification`` with them, unless they are empty.
    func postObjectsDidChange(_ changes: ObjectsDidChange) {
        if !changeObservers.isEmpty {
            notifyChangeObservers(changes)
        }
        guard !changes.isEmpty else { return }
        NotificationCenter.default.post(
            name: Self.objectsDidChangeNotification, object: self, userInfo: [ObjectsDidChange.userInfoKey: changes])
    }

    /// Calls every live change observer with `changes` (also for a merge that changed nothing
    /// this context holds: observers may follow objects it does not hold), dropping the ones
    /// whose owner is gone.
    func notifyChangeObservers(_ changes: ObjectsDidChange) {
        changeObservers.removeAll { $0.owner == nil }
        for observer in changeObservers {
            observer.handle(changes)
        }
    }

    /// Registers `handle` to be called on the context's queue with every change of the
    /// context — its own, merges (with the whole merged save), refreshes, rollbacks, resets —
    /// before the notification is posted, for as long as `owner` lives. For QueueData's own
    /// observers (fetched-results controllers), which must not miss what a notification
    /// leaves out.
    func addChangeObserver(owner: AnyObject, _ handle: @escaping (ObjectsDidChange) -> Void) {
        changeObservers.append(ChangeObserver(owner: owner, handle: handle))
    }
}

/// One of a context's internal change observers: its owner is held weakly.
final class ChangeObserver {
    weak var owner: AnyObject?
    let handle: (ObjectsDidChange) -> Void

    init(owner: AnyObject, handle: @escaping (ObjectsDidChange) -> Void) {
        self.owner = owner
        self.handle = handle
    }
}
