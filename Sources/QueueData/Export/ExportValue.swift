/// One field's value in an ``ExportRecord``: `Sendable`, so formatters run off the context's
/// queue and never touch a managed object.
public enum ExportValue: Sendable, Hashable {
    /// An attribute's value in its stored form (a transformable attribute's is its JSON
    /// encoding, in `.data`).
    case value(StoredValue)
    /// The object's own ID, or a to-one relationship's destination (`nil` when empty).
    case object(ObjectID?)
    /// A to-many relationship's destinations, every one of them.
    case objects([ObjectID])
}
