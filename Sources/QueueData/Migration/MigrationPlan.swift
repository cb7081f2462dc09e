/// What opening a store would do to migrate it to the current model: the result of
/// ``ContextManager/migrationPlan()``, a dry run that reads the store without changing it.
///
/// ```swift
/// let plan = try ContextManager.shared.migrationPlan()
/// if plan.isMigrationNeeded {
///     print(plan)              // every change, every pending step, every problem
///     guard plan.canMigrate else { exit(1) }
/// }
/// ```
public struct MigrationPlan: Sendable, CustomStringConvertible {
    /// One difference between the stored schema and the current model.
    public enum Change: Sendable, Hashable, CustomStringConvertible {
        /// A new entity: it starts without rows.
        case entityAdded(String)
        /// An entity the model no longer has: its rows are dropped.
        case entityRemoved(String)
        /// An entity whose ``ManagedObject/originalEntityName`` names a stored entity: its
        /// rows are carried over.
        case entityRenamed(from: String, to: String)
        /// A new attribute: existing rows get its default (`nil` for optionals).
        case attributeAdded(entity: String, attribute: String)
        /// An attribute the entity no longer has: its values are dropped.
        case attributeRemoved(entity: String, attribute: String)
        /// An attribute declared with `originalName`: its values are carried over.
        case attributeRenamed(entity: String, from: String, to: String)
        /// An attribute whose type changed: its values are converted.
        case attributeTypeChanged(entity: String, attribute: String, from: AttributeType, to: AttributeType)
        /// A non-optional attribute became optional.
        case attributeBecameOptional(entity: String, attribute: String)
        /// An optional attribute became non-optional: `nil` values become its default.
        case attributeBecameNonOptional(entity: String, attribute: String)
        /// A new relationship: existing rows start with no related objects.
        case relationshipAdded(entity: String, relationship: String)
        /// A relationship the entity no longer has (with its inverse): dropped.
        case relationshipRemoved(entity: String, relationship: String)
        /// A relationship declared with `originalName`: its references are carried over.
        case relationshipRenamed(entity: String, from: String, to: String)
        /// A to-one relationship became to-many (its object becomes the only member), or the
        /// reverse (rows holding several objects fail the migration).
        case relationshipCardinalityChanged(entity: String, relationship: String, isToMany: Bool)
        /// A to-many relationship became ordered (in key order) or unordered.
        case relationshipOrderChanged(entity: String, relationship: String, isOrdered: Bool)

        /// The change in words, such as `attribute 'Trip.days' was added`.
        public var description: String {
            switch self {
            case .entityAdded(let name): return "entity '\(name)' was added"
            case .entityRemoved(let name): return "entity '\(name)' was removed"
            case .entityRenamed(let old, let new): return "entity '\(old)' was renamed to '\(new)'"
            case .attributeAdded(let entity, let name): return "attribute '\(entity).\(name)' was added"
            case .attributeRemoved(let entity, let name): return "attribute '\(entity).\(name)' was removed"
            case .attributeRenamed(let entity, let old, let new):
                return "attribute '\(entity).\(old)' was renamed to '\(new)'"
            case .attributeTypeChanged(let entity, let name, let old, let new):
                return "attribute '\(entity).\(name)' changed type from \(old.rawValue) to \(new.rawValue)"
            case .attributeBecameOptional(let entity, let name): return "attribute '\(entity).\(name)' became optional"
            case .attributeBecameNonOptional(let entity, let name):
                return "attribute '\(entity).\(name)' became non-optional"
            case .relationshipAdded(let entity, let name): return "relationship '\(entity).\(name)' was added"
            case .relationshipRemoved(let entity, let name): return "relationship '\(entity).\(name)' was removed"
            case .relationshipRenamed(let entity, let old, let new):
                return "relationship '\(entity).\(old)' was renamed to '\(new)'"
            case .relationshipCardinalityChanged(let entity, let name, let isToMany):
                return "relationship '\(entity).\(name)' became \(isToMany ? "to-many" : "to-one")"
            case .relationshipOrderChanged(let entity, let name, let isOrdered):
                return "relationship '\(entity).\(name)' became \(isOrdered ? "ordered" : "unordered")"
            }
        }
    }

    /// The version hash the store was written with; `nil` when there is no store yet.
    public let storedVersionHash: String?
    /// The current model's version hash.
    public let currentVersionHash: String
    /// Every difference between the stored schema and the model, entity by entity.
    public let changes: [Change]
    /// The custom steps the store has not recorded, in the order they would run.
    public let pendingSteps: [String]
    /// Why the migration cannot happen: each entry names the entity and attribute and says
    /// what to do. Opening the store would fail with ``StoreError/Code/incompatibleModel``
    /// (or, for a value a conversion cannot carry, ``StoreError/Code/migrationFailed``).
    public let problems: [String]
    /// The rows the store holds.
    public let rowCount: Int

    /// Whether opening the store would migrate it (or refuse to).
    public var isMigrationNeeded: Bool {
        !changes.isEmpty || !pendingSteps.isEmpty || !problems.isEmpty
    }

    /// Whether the migration would succeed (custom steps aside: they are not run by a dry run).
    public var canMigrate: Bool {
        problems.isEmpty
    }

    /// The plan in words, one line per change, step and problem.
    public var description: String {
        guard isMigrationNeeded else {
            return storedVersionHash == nil
                ? "No store yet: a new one will be created." : "The store is up to date: nothing to migrate."
        }
        var lines = [
            "Migration from \(storedVersionHash.map { String($0.prefix(12)) } ?? "a new store") to "
                + "\(currentVersionHash.prefix(12)) (\(rowCount) rows):"
        ]
        lines += changes.map { "- \($0)" }
        lines += pendingSteps.map { "- run step '\($0)'" }
        lines += problems.map { "- problem: \($0)" }
        return lines.joined(separator: "\n")
    }
}
