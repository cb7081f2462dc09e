/// A save refused because objects are invalid. Nothing was written; the context keeps its
/// changes so they can be fixed and saved again, or rolled back.
///
/// `save()` collects every failure of every object into one error. Throw one from
/// ``ManagedObject/validateForSave()`` to refuse a save: `ValidationError(property:reason:)`
/// (the context fills in the object and entity).
public struct ValidationError: Error, Sendable, CustomStringConvertible {
    /// One problem with one object.
    public struct Failure: Sendable, Hashable, CustomStringConvertible {
        /// The invalid object, if known.
        public var objectID: ObjectID?
        /// The object's entity.
        public var entityName: String
        /// The property concerned, if the problem is about one.
        public var property: String?
        /// What is wrong, for humans.
        public var reason: String

        /// Creates a failure.
        public init(objectID: ObjectID?, entityName: String, property: String?, reason: String) {
            self.objectID = objectID
            self.entityName = entityName
            self.property = property
            self.reason = reason
        }

        /// `Entity.property (ID): reason`.
        public var description: String {
            let subject = property.map { "\(entityName).\($0)" } ?? entityName
            return "\(subject)\(objectID.map { " (\($0))" } ?? ""): \(reason)"
        }
    }

    /// Every failure found by the save.
    public var failures: [Failure]

    /// Creates an error with the given failures.
    public init(failures: [Failure]) {
        self.failures = failures
    }

    /// Creates an error for a validation override: the context fills in the object and entity.
    public init(property: String? = nil, reason: String) {
        self.failures = [Failure(objectID: nil, entityName: "", property: property, reason: reason)]
    }

    /// The failures, one per line.
    public var description: String {
        "ValidationError: \(failures.count) failure\(failures.count == 1 ? "" : "s")\n"
            + failures.map { "  \($0)" }.joined(separator: "\n")
    }
}
