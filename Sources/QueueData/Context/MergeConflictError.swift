/// A save refused because objects it changes were changed or deleted by another save since
/// this context last saw them, or because it would give two objects the same unique values,
/// and the context's ``ManagedObjectContext/mergePolicy`` (by default ``MergePolicy/error``)
/// did not resolve them. Nothing was written; the context keeps its changes (refresh the
/// objects, change the values, or choose another policy, and save again).
public struct MergeConflictError: Error, Sendable, CustomStringConvertible {
    /// Every optimistic-locking conflict the policy did not resolve.
    public var conflicts: [MergeConflict]
    /// Every uniqueness-constraint conflict the policy did not resolve.
    public var constraintConflicts: [ConstraintConflict]

    /// Creates an error.
    public init(conflicts: [MergeConflict], constraintConflicts: [ConstraintConflict] = []) {
        self.conflicts = conflicts
        self.constraintConflicts = constraintConflicts
    }

    /// The conflicts, one per line.
    public var description: String {
        let count = conflicts.count + constraintConflicts.count
        return "MergeConflictError: \(count) conflict\(count == 1 ? "" : "s")\n"
            + (conflicts.map { "  \($0)" } + constraintConflicts.map { "  \($0)" }).joined(separator: "\n")
    }
}
