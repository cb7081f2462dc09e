/// One object's change in a ``HistoryTransaction``.
public struct HistoryChange: Sendable, Hashable {
    /// What happened to the object.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The save inserted the object (or wrote back one it had deleted, as an undo does).
        case insert
        /// The save changed some of the object's attributes or relationships.
        case update
        /// The save deleted the object.
        case delete
    }

    /// The object: its entity and primary key as the store recorded them (an entity a later
    /// migration renamed or removed keeps its old name here).
    public let objectID: ObjectID
    /// What happened to it.
    public let kind: Kind
    /// For an update, the names of the attributes and relationships that changed (a relationship
    /// appears on both sides when its inverse changed too); empty for inserts and deletes.
    public let updatedProperties: Set<String>

    /// Creates a change.
    public init(objectID: ObjectID, kind: Kind, updatedProperties: Set<String> = []) {
        self.objectID = objectID
        self.kind = kind
        self.updatedProperties = updatedProperties
    }
}
