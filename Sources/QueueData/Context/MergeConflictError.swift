/// A save refused because objects it changes were changed or deleted by another save since
/// this context last saw them, and the context's ``ManagedObjectContext/mergePolicy`` (by
/// default ``MergePolicy/error``) did not resolve them. Nothing was written; the context keeps
/// its changes (refresh the objects, or choose another policy, and save again).
public struct MergeConflictError: Error, Sendable, CustomStringConvertible {
    /// Every conflict the policy did not resolve.
    public var conflicts: [MergeConflict]

    /// Creates an error.
    public init(conflicts: [MergeConflict]) {
        self.conflicts = conflicts
    }

    /// The conflicts, one per line.
    public var description: String {
        "MergeConflictError: \(conflicts.count) conflict\(conflicts.count == 1 ? "" : "s")\n"
            + conflicts.map { "  \($0)" }.joined(separator: "\n")
    }
}
