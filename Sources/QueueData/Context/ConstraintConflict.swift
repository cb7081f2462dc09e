/// A save that would give two objects the same values for a uniqueness constraint
/// (`@Attribute(.unique)` or ``ManagedObject/uniquenessConstraints``).
///
/// With the ``MergePolicy/error`` policy (or a custom one) a save with constraint conflicts
/// throws ``MergeConflictError`` listing them in
/// ``MergeConflictError/constraintConflicts``. The other built-in policies settle an
/// *inserted* object's conflict by upserting it into the object that holds the values (see
/// ``MergePolicy``); an *update* that would duplicate another object's values is always a
/// conflict.
public struct ConstraintConflict: Sendable, Hashable, CustomStringConvertible {
    /// The entity declaring the constraint.
    public let entityName: String
    /// The constrained attributes.
    public let attributeNames: [String]
    /// The values the two objects would share, in the order of ``attributeNames``.
    public let values: [StoredValue]
    /// The object the save would have written: for an inserted object, its temporary ID
    /// (the one it still has, since nothing was saved).
    public let objectID: ObjectID
    /// The object that holds the values: a saved object, or another object of the same save.
    public let conflictingObjectID: ObjectID

    /// Creates a conflict.
    public init(
        entityName: String,
        attributeNames: [String],
        values: [StoredValue],
        objectID: ObjectID,
        conflictingObjectID: ObjectID
    ) {
        self.entityName = entityName
        self.attributeNames = attributeNames
        self.values = values
        self.objectID = objectID
        self.conflictingObjectID = conflictingObjectID
    }

    /// `Entity.attribute = value: ID duplicates ID`.
    public var description: String {
        let assignments = zip(attributeNames, values).map { "\($0) = \($1)" }.joined(separator: ", ")
        return "\(entityName) \(assignments): \(objectID) duplicates \(conflictingObjectID)"
    }
}
