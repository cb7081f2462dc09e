/// What an ``UndoManager/undo()`` or ``UndoManager/redo()`` did: the payload of
/// ``UndoManager/didUndoChangeNotification`` and ``UndoManager/didRedoChangeNotification``.
public struct UndoOutcome: Sendable, Equatable {
    /// The key of the payload in the notifications' `userInfo`.
    public static let userInfoKey = "QueueData.UndoOutcome"

    /// Whether there was a group to undo (or redo). `false`: nothing happened.
    public let didApply: Bool

    /// The action name of the group undone or redone.
    public let actionName: String

    /// Objects the group would have brought back, changed or pointed a relationship at, which
    /// another context deleted: an undo never brings those back. Everything else in the group
    /// was undone (or redone). Objects this context's own saves deleted are never listed: an
    /// undo applies their delete rules instead (see ``UndoManager``).
    public let deletedObjectIDs: Set<ObjectID>

    init(didApply: Bool = false, actionName: String = "", deletedObjectIDs: Set<ObjectID> = []) {
        self.didApply = didApply
        self.actionName = actionName
        self.deletedObjectIDs = deletedObjectIDs
    }
}
