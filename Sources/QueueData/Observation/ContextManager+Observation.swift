import Foundation

extension ContextManager {
    /// The changes of every save of this manager's contexts, as an `AsyncSequence` any task can
    /// iterate; each value is a save's ``SaveChanges`` (or, for a slow consumer, several saves'
    /// changes combined: ``SaveChanges/combined(with:)``).
    ///
    /// ```swift
    /// Task {
    ///     for await changes in manager.changes {
    ///         log("saved: \(changes.insertedObjectIDs.count) inserted, \(changes.deletedObjectIDs.count) deleted")
    ///     }
    /// }
    /// ```
    ///
    /// It sees saves from the moment it is made until the iterating task is cancelled or the
    /// loop ends, across ``close()`` and reloading; releasing the manager does not end it (the
    /// contexts it made may still save).
    public var changes: ObservationStream<SaveChanges> {
        let channel = ObservationChannel<SaveChanges> { $0.combined(with: $1) }
        let identifier = self.identifier
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveNotification, object: nil, queue: nil
        ) { [weak channel] notification in
            guard let channel, let changes = SaveChanges(notification),
                (notification.object as? ManagedObjectContext)?.coordinator.managerIdentifier == identifier
            else { return }
            channel.send(changes)
        }
        let token = UncheckedSendableBox(observer)
        channel.onTermination { NotificationCenter.default.removeObserver(token.value) }
        return ObservationStream(channel: channel)
    }

    /// The changes of one object, from any queue: ``ObjectChange/updated(_:)`` with its committed
    /// values after each save that changed it, then ``ObjectChange/deleted`` when a save deletes
    /// it (after which the stream ends). A slow consumer gets the latest. Otherwise it lasts until
    /// the iterating task is cancelled or the loop ends, as ``changes`` does.
    ///
    /// ```swift
    /// for await change in manager.changes(of: kyotoID) {
    ///     if case .updated(let values) = change { print(values["rating"] ?? .null) }
    /// }
    /// ```
    public func changes(of objectID: ObjectID) -> ObservationStream<ObjectChange> {
        let channel = ObservationChannel<ObjectChange> { earlier, later in
            if case .deleted = earlier { return earlier }
            return later
        }
        let identifier = self.identifier
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveNotification, object: nil, queue: nil
        ) { [weak channel] notification in
            guard let channel, let changes = SaveChanges(notification),
                let context = notification.object as? ManagedObjectContext,
                context.coordinator.managerIdentifier == identifier
            else { return }
            if changes.deleted.contains(objectID) {
                channel.send(.deleted)
                channel.finish(deliveringPending: true)
            } else if let row = changes.updated.last(where: { $0.0 == objectID })?.1,
                let entityIndex = context.entityIndex(of: objectID)
            {
                let entity = context.model.entities[entityIndex]
                var values: [String: StoredValue] = [:]
                for (index, attribute) in entity.attributes.enumerated() where index < row.values.count {
                    values[attribute.name] = row.values[index]
                }
                channel.send(.updated(values))
            }
        }
        let token = UncheckedSendableBox(observer)
        channel.onTermination { NotificationCenter.default.removeObserver(token.value) }
        return ObservationStream(channel: channel)
    }
}

/// A change of one object (``ContextManager/changes(of:)``).
public enum ObjectChange: Sendable, Hashable {
    /// A save changed it: its committed attribute values, by name.
    case updated([String: StoredValue])
    /// A save deleted it.
    case deleted
}

extension SaveChanges {
    /// The changes of this save and then `later`, as one: what changed from before this save
    /// to after `later`. Each object is listed for where it ends up:
    /// - inserted and then deleted: in neither list (it never existed for whoever reads them);
    /// - deleted and then inserted again (an undo of the deletion): inserted only — it exists;
    ///   deleted again after that: deleted only;
    /// - updated: with its latest committed values; updated and then deleted: deleted only (and
    ///   not listed as updated if inserted again, unless updated after that).
    public func combined(with later: SaveChanges) -> SaveChanges {
        let laterDeleted = Set(later.deleted)
        let laterInserted = Set(later.inserted)
        let insertedHere = Set(inserted)
        let deletedHere = Set(deleted)
        var updatedRows: [ObjectID: CommittedRow] = [:]
        var order: [ObjectID] = []
        // This save's rows of objects `later` deleted (and perhaps inserted again) are gone.
        let earlierRows = updated.lazy.filter { !laterDeleted.contains($0.0) && !later.reinserted.contains($0.0) }
        for (id, row) in earlierRows + later.updated {
            if updatedRows.updateValue(row, forKey: id) == nil {
                order.append(id)
            }
        }
        // Whether the object existed before this save, and after `later`.
        func existedBefore(_ id: ObjectID) -> Bool {
            if insertedHere.contains(id) {
                return reinserted.contains(id)
            }
            return deletedHere.contains(id) || later.reinserted.contains(id) || !laterInserted.contains(id)
        }
        func existsAfter(_ id: ObjectID) -> Bool {
            laterInserted.contains(id)
                || (!laterDeleted.contains(id) && (insertedHere.contains(id) || !deletedHere.contains(id)))
        }
        let allInserted = Self.unique(inserted + later.inserted).filter(existsAfter)
        let allDeleted = Self.unique(deleted + later.deleted).filter { existedBefore($0) && !existsAfter($0) }
        return SaveChanges(
            coordinatorIdentifier: later.coordinatorIdentifier,
            inserted: allInserted,
            updated: order.filter(existsAfter).map { ($0, updatedRows[$0]!) },
            deleted: allDeleted,
            reinserted: Set(allInserted.filter(existedBefore)))
    }

    private static func unique(_ ids: [ObjectID]) -> [ObjectID] {
        var seen = Set<ObjectID>()
        return ids.filter { seen.insert($0).inserted }
    }
}
