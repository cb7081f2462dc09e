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

    init(coordinatorIdentifier: UUID, inserted: [ObjectID], updated: [(ObjectID, CommittedRow)], deleted: [ObjectID]) {
        self.coordinatorIdentifier = coordinatorIdentifier
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
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

/// What a merge changed in a context: the `Sendable` payload of
/// ``ManagedObjectContext/objectsDidChangeNotification``.
public struct ObjectsDidChange: Sendable {
    /// The key of the payload in the notification's `userInfo`.
    public static let userInfoKey = "QueueData.ObjectsDidChange"

    let inserted: [ObjectID]
    let updated: [ObjectID]
    let deleted: [ObjectID]

    /// Objects another context inserted; they are now fetchable here.
    public var insertedObjectIDs: Set<ObjectID> { Set(inserted) }
    /// Registered objects that took new committed values.
    public var updatedObjectIDs: Set<ObjectID> { Set(updated) }
    /// Registered objects that were deleted by another context and left this one.
    public var deletedObjectIDs: Set<ObjectID> { Set(deleted) }

    /// The payload of an ``ManagedObjectContext/objectsDidChangeNotification``, or `nil` for
    /// any other notification.
    public init?(_ notification: Notification) {
        guard let changes = notification.userInfo?[Self.userInfoKey] as? ObjectsDidChange else { return nil }
        self = changes
    }

    init(inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID]) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }
}
