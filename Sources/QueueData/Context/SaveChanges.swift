import Foundation

/// What a save committed: the `Sendable` payload of ``ManagedObjectContext/didSaveNotification``.
///
/// ```swift
/// NotificationCenter.default.addObserver(
///     forName: ManagedObjectContext.didSaveNotification, object: nil, queue: nil
/// ) { notification in
///     guard let changes = SaveChanges(notification) else { return }
///     print("saved \(changes.insertedObjectIDs.count) new objects")
/// }
/// ```
public struct SaveChanges: Sendable {
    /// The key of the payload in the notification's `userInfo`.
    public static let userInfoKey = "QueueData.SaveChanges"

    let coordinatorIdentifier: UUID
    let inserted: [ObjectID]
    let updated: [(ObjectID, CommittedRow)]
    let deleted: [ObjectID]
    /// The IDs in `inserted` of objects that existed before the first of the saves combined
    /// here: deleted by one and inserted again by a later one (an undo of the deletion). Empty
    /// for a single save. See ``combined(with:)``.
    let reinserted: Set<ObjectID>

    init(
        coordinatorIdentifier: UUID, inserted: [ObjectID], updated: [(ObjectID, CommittedRow)], deleted: [ObjectID],
        reinserted: Set<ObjectID> = []
    ) {
        self.coordinatorIdentifier = coordinatorIdentifier
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.reinserted = reinserted
    }

    /// The payload of a ``ManagedObjectContext/didSaveNotification``, or `nil` for any other
    /// notification.
    public init?(_ notification: Notification) {
        guard let changes = notification.userInfo?[Self.userInfoKey] as? SaveChanges else { return nil }
        self = changes
    }

    /// The permanent IDs of the inserted objects.
    public var insertedObjectIDs: Set<ObjectID> { Set(inserted) }
    /// The IDs of the updated objects.
    public var updatedObjectIDs: Set<ObjectID> { Set(updated.lazy.map(\.0)) }
    /// The IDs of the deleted objects.
    public var deletedObjectIDs: Set<ObjectID> { Set(deleted) }
}

/// What changed in a context: the `Sendable` payload of
/// ``ManagedObjectContext/objectsDidChangeNotification``.
///
/// Posted for the context's own changes (by ``ManagedObjectContext/processPendingChanges()``;
/// inserted objects carry their temporary IDs), for merges of other contexts' saves, for
/// what a save of the context changed beyond what it had (objects an upsert or a relationship
/// repair changed), and for `refresh`, `rollback` and `reset`.
public struct ObjectsDidChange: Sendable {
    /// The key of the payload in the notification's `userInfo`.
    public static let userInfoKey = "QueueData.ObjectsDidChange"

    let inserted: [ObjectID]
    let updated: [ObjectID]
    let deleted: [ObjectID]
    let refreshed: [ObjectID]

    /// Objects inserted in this context, or inserted by another context's save and now
    /// fetchable here.
    public var insertedObjectIDs: Set<ObjectID> { Set(inserted) }
    /// Registered objects that changed: set in this context, or given new committed values by a
    /// merge or by this context's save.
    public var updatedObjectIDs: Set<ObjectID> { Set(updated) }
    /// Objects deleted in this context (pending deletions, and inserted objects discarded), or
    /// deleted by another context's save and removed from this one.
    public var deletedObjectIDs: Set<ObjectID> { Set(deleted) }
    /// Objects whose values were reloaded from their committed values, discarding or keeping
    /// local changes: by ``ManagedObjectContext/refresh(_:mergeChanges:)``, and by
    /// ``ManagedObjectContext/rollback()`` for updated objects and for deleted objects it
    /// restored.
    public var refreshedObjectIDs: Set<ObjectID> { Set(refreshed) }
    /// Whether every registered object left the context (``ManagedObjectContext/reset()``): a
    /// list built from the context's objects must be rebuilt.
    public let invalidatedAllObjects: Bool
    /// After a save of this context: the permanent ID of each object it inserted, by the
    /// temporary ID it had (and was reported with) before the save. Empty otherwise.
    public var permanentObjectIDs: [ObjectID: ObjectID] {
        Dictionary(reidentified, uniquingKeysWith: { _, last in last })
    }

    /// The temporary and permanent IDs behind ``permanentObjectIDs``.
    let reidentified: [(ObjectID, ObjectID)]
    /// For a merge: the save merged, with every object it changed (registered here or not).
    let mergedSave: SaveChanges?

    /// The payload of an ``ManagedObjectContext/objectsDidChangeNotification``, or `nil` for
    /// any other notification.
    public init?(_ notification: Notification) {
        guard let changes = notification.userInfo?[Self.userInfoKey] as? ObjectsDidChange else { return nil }
        self = changes
    }

    init(
        inserted: [ObjectID] = [],
        updated: [ObjectID] = [],
        deleted: [ObjectID] = [],
        refreshed: [ObjectID] = [],
        invalidatedAllObjects: Bool = false,
        reidentified: [(ObjectID, ObjectID)] = [],
        mergedSave: SaveChanges? = nil
    ) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.refreshed = refreshed
        self.invalidatedAllObjects = invalidatedAllObjects
        self.reidentified = reidentified
        self.mergedSave = mergedSave
    }

    /// Whether nothing changed.
    var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && !invalidatedAllObjects
            && reidentified.isEmpty
    }
}
