/// What deleting an object does to the objects a relationship points to, applied when the
/// deletion is saved (Core Data's delete rules).
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
    /// Nothing is done: the related objects keep pointing to the deleted object's ID until
    /// you change them (the inverse is left dangling).
    case noAction
}
