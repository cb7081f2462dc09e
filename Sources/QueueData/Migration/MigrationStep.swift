/// A named, hand-written migration step, for what inference cannot do: splitting or merging
/// attributes, computing values, moving rows between entities.
///
/// Return steps from ``ContextManagerDelegate/migrationSteps``, oldest first, and never
/// rename or reorder them once shipped. When a store opens, the steps it has not recorded
/// run in order, after the inferred changes, and their names are recorded in the store's
/// ``StoreMetadata/appliedMigrationSteps`` in the same atomic replacement: each runs once per
/// store. A new store runs every step too, over no rows, so a step that inserts reference
/// rows inserts them everywhere. Steps need a store that supports migration (every built-in
/// store does; a custom one implements ``PersistentStore/replaceContents(with:keepingOriginalAs:)``).
///
/// ```swift
/// var migrationSteps: [MigrationStep] {
///     [
///         MigrationStep("v2: ratings out of ten") { rows in
///             rows.updateRows(of: "Destination") { row, _ in
///                 if case .integer(let stars)? = row["rating"] {
///                     row.setValue(.integer(stars * 2), for: "rating")
///                 }
///             }
///         }
///     ]
/// }
/// ```
public struct MigrationStep: Sendable {
    /// The step's name: its identity in the store's record of applied steps.
    public let name: String
    let migrate: @Sendable (inout MigrationRows) throws -> Void

    /// Creates a step.
    ///
    /// - Parameters:
    ///   - name: A name unique among the steps, never changed once shipped.
    ///   - migrate: Changes the rows. Throwing fails the migration
    ///     (``StoreError/Code/migrationFailed``) and leaves the store as it was.
    public init(_ name: String, migrate: @escaping @Sendable (inout MigrationRows) throws -> Void) {
        self.name = name
        self.migrate = migrate
    }
}
