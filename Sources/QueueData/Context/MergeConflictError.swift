/// A save refused because objects it changes were changed or deleted by another save since
/// this context last saw them. Nothing was written; the context keeps its changes.
public struct MergeConflictError: Error, Sendable, CustomStringConvertible {
    /// One conflicting object.
    public struct Conflict: Sendable, Hashable, CustomStringConvertible {
        /// The object.
        public var objectID: ObjectID
        /// The committed version the context's changes were based on.
        public var baseVersion: Int64
        /// The version committed now, or `nil` if the object was deleted.
        public var committedVersion: Int64?

        /// Creates a conflict.
        public init(objectID: ObjectID, baseVersion: Int64, committedVersion: Int64?) {
            self.objectID = objectID
            self.baseVersion = baseVersion
            self.committedVersion = committedVersion
        }

        /// `ID: version a → b` or `ID: deleted`.
        public var description: String {
            if let committedVersion {
                return "\(objectID): version \(baseVersion) → \(committedVersion)"
            }
            return "\(objectID): deleted by another save"
        }
    }

    /// Every conflict of the save.
    public var conflicts: [Conflict]

    /// Creates an error.
    public init(conflicts: [Conflict]) {
        self.conflicts = conflicts
    }

    /// The conflicts, one per line.
    public var description: String {
        "MergeConflictError: \(conflicts.count) conflict\(conflicts.count == 1 ? "" : "s")\n"
            + conflicts.map { "  \($0)" }.joined(separator: "\n")
    }
}
