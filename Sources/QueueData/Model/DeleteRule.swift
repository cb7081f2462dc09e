/// What deleting an object does to the objects a relationship points to, applied when the
/// deletion is saved (Core Data's delete rules); in a context with an ``UndoManager``, already
/// at the end of the block that deletes (as Core Data's `propagatesDeletesAtEndOfEvent`), so
/// that the deletion's undo group holds everything the rules change.
public enum DeleteRule: String, Sendable, Hashable, Codable, CaseIterable {
    /// The related objects stay; their inverse relationship stops pointing to the deleted
    /// object. The default.
    case nullify
    /// The related objects are deleted too (and, through their own rules, what they point to;
    /// cycles end).
    case cascade
    /// The deletion is refused while the relationship points to any object: `save()` throws a
    /// ``ValidationError`` naming the blocking objects.
    case deny
    /// Core Data's "no action": the rule does nothing to the related objects. QueueData never
    /// stores a reference to a deleted row, though (every store refuses dangling references),
    /// so when the deletion is saved their inverse stops pointing to the deleted object, as
    /// with ``nullify``.
    case noAction
}
