import Foundation

/// A description of objects to fetch: an entity, a `#Predicate`, sort descriptors, and paging.
///
/// ```swift
/// let request = FetchRequest<Destination>(
///     predicate: #Predicate { $0.rating > 3 },
///     sortBy: [SortDescriptor(\.name)],
///     fetchLimit: 10)
/// let best = try context.fetch(request)
/// ```
///
/// A value type and `Sendable`: build it anywhere, pass it across queues; fetching never
/// mutates it.
public struct FetchRequest<Result: ManagedObject>: Sendable {
    /// Which objects match; `nil` matches all.
    public var predicate: Predicate<Result>?
    /// The order of the results; without any, objects come in insertion order (saved
    /// objects by primary key, then unsaved inserts).
    public var sortDescriptors: [SortDescriptor<Result>]
    /// The most objects to return; 0 means no limit.
    public var fetchLimit: Int
    /// How many matching objects to skip, after sorting.
    public var fetchOffset: Int
    /// Whether unsaved changes count (default `true`): unsaved inserts that match are
    /// returned, objects deleted but not saved are not, and the predicate sees current
    /// values. When `false`, only saved objects are considered, matched on their committed
    /// values.
    public var includesPendingChanges: Bool
    /// Whether objects of subclasses' entities are included (default `true`).
    public var includesSubentities: Bool
    /// The entity to fetch, when it is not `Result`'s own (for entities described without a
    /// subclass: `FetchRequest<ManagedObject>(entityName: "Destination")`).
    public var entityName: String?
    /// How many objects a ``FetchedResultsController`` materializes at a time (registers in
    /// the context) as they are asked for; 0, the default, materializes every object when it
    /// fetches. A plain `fetch` returns every object whatever it says (enumerate with
    /// ``ManagedObjectContext/enumerate(_:batchSize:_:)`` for batches).
    public var fetchBatchSize: Int = 0

    /// Creates a fetch request.
    public init(
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = [],
        fetchLimit: Int = 0,
        fetchOffset: Int = 0,
        includesPendingChanges: Bool = true,
        includesSubentities: Bool = true
    ) {
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.includesPendingChanges = includesPendingChanges
        self.includesSubentities = includesSubentities
        self.entityName = nil
    }

    /// Creates a fetch request for the entity named `entityName`.
    public init(
        entityName: String,
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = [],
        fetchLimit: Int = 0,
        fetchOffset: Int = 0,
        includesPendingChanges: Bool = true
    ) {
        self.init(
            predicate: predicate, sortBy: sortDescriptors, fetchLimit: fetchLimit, fetchOffset: fetchOffset,
            includesPendingChanges: includesPendingChanges)
        self.entityName = entityName
    }
}
