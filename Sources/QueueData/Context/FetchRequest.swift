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
    /// The order of the results, after ``attributeSorts`` (which apply first: these order the
    /// objects those leave tied); without either, objects come in insertion order (saved
    /// objects by primary key, then unsaved inserts).
    public var sortDescriptors: [SortDescriptor<Result>]
    /// The most objects to return; 0 means no limit.
    public var fetchLimit: Int
    /// How many matching objects to skip, after sorting.
    public var fetchOffset: Int
    /// Whether unsaved changes count (default `true`): unsaved inserts that match are
    /// returned, objects deleted but not saved are not, and the predicate sees current
    /// values. When `false`, only saved objects are considered, matched and sorted on the
    /// committed values (those of the latest save, even for an object whose merge of it has not
    /// arrived yet; in a child context, its parent's); the objects returned are still the
    /// context's instances, with their own values (``ManagedObjectContext/fetchValues(_:properties:)``
    /// returns the committed ones). A predicate or sort descriptor that reaches other objects
    /// through a relationship (`$0.leader?.name`, `$0.items.contains { … }`) reads them
    /// committed too, as Core Data's store does: while the context has unsaved changes, such a
    /// request on an entity with relationships is matched in a private context that holds none
    /// (as the asynchronous fetches are), then its objects are the context's instances.
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
    /// A requirement on one stored attribute, by name, besides ``predicate``: its value must be
    /// one of a list, lie in a range, or start with a prefix. Answered from the attribute's index
    /// when it is indexed (``AttributeOptions/indexed``) or unique, without scanning the entity's
    /// rows. Set it with ``init(where:equals:predicate:sortBy:)``,
    /// ``init(where:in:predicate:sortBy:)-(_,[Value],_,_)``, a range
    /// (``init(where:in:predicate:sortBy:)-(_,ClosedRange<Value>,_,_)`` and the other range
    /// forms) or
    /// ``init(where:startsWith:predicate:sortBy:)``.
    public var attributeConstraint: AttributeConstraint?
    /// Sorts by stored attributes, by name (Core Data's `NSSortDescriptor(key:ascending:)`),
    /// applied before ``sortDescriptors``: the results are ordered by these first, then by the
    /// sort descriptors among objects these leave tied. Read from the rows rather than through
    /// key paths, so a large sort costs less; see ``AttributeSort``. Empty by default.
    public var attributeSorts: [AttributeSort] = []

    /// Whether the request orders its results (by attribute sorts or sort descriptors).
    var isSorted: Bool {
        !attributeSorts.isEmpty || !sortDescriptors.isEmpty
    }

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

    /// Creates a fetch request sorted by stored attributes, by name (see ``AttributeSort``).
    ///
    /// ```swift
    /// let request = FetchRequest<Destination>(
    ///     predicate: #Predicate { $0.rating > 3 },
    ///     sortedBy: [AttributeSort("name")],
    ///     fetchLimit: 10)
    /// ```
    public init(
        predicate: Predicate<Result>? = nil,
        sortedBy attributeSorts: [AttributeSort],
        fetchLimit: Int = 0,
        fetchOffset: Int = 0,
        includesPendingChanges: Bool = true,
        includesSubentities: Bool = true
    ) {
        self.init(
            predicate: predicate, fetchLimit: fetchLimit, fetchOffset: fetchOffset,
            includesPendingChanges: includesPendingChanges, includesSubentities: includesSubentities)
        self.attributeSorts = attributeSorts
    }

    /// Creates a fetch request for the objects whose attribute `attributeName` equals `value`
    /// (and that match `predicate`, if any): Core Data's `NSPredicate(format: "code == %@")`.
    ///
    /// ```swift
    /// let request = FetchRequest<Destination>(where: "code", equals: "LIS")
    /// ```
    ///
    /// When the attribute is indexed or unique, the fetch looks the value up in the index
    /// instead of evaluating every row. Values are compared in their stored form, which for
    /// `String`, the integer types, `Bool`, `Double`, `Float`, `Date`, `Data`, `UUID` and their
    /// optionals is the type's `==` (`nil` matches objects whose attribute is `nil`).
    public init<Value: AttributeValue>(
        where attributeName: String,
        equals value: Value,
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = []
    ) {
        self.init(where: attributeName, in: [value], predicate: predicate, sortBy: sortDescriptors)
    }

    /// Creates a fetch request for the objects whose attribute `attributeName` equals one of
    /// `values` (and that match `predicate`, if any): Core Data's
    /// `NSPredicate(format: "code IN %@")`. See ``init(where:equals:predicate:sortBy:)``.
    public init<Value: AttributeValue>(
        where attributeName: String,
        in values: [Value],
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = []
    ) {
        self.init(predicate: predicate, sortBy: sortDescriptors)
        var stored: [StoredValue] = []
        stored.reserveCapacity(values.count)
        for value in values {
            stored.append(value.storedValue)
        }
        attributeConstraint = AttributeConstraint(attributeName: attributeName, values: stored)
    }

    /// Creates a fetch request for the objects whose attribute `attributeName` lies in `range`
    /// (and that match `predicate`, if any): Core Data's
    /// `NSPredicate(format: "rating BETWEEN {3, 5}")`.
    ///
    /// ```swift
    /// let request = FetchRequest<Destination>(where: "rating", in: 3...5, sortBy: [SortDescriptor(\.rating)])
    /// ```
    ///
    /// Values compare as the `<` of the attribute's type orders them (integers, `Double`,
    /// `Float`, `Date` and `String`; another type traps), as a `#Predicate` writing the same
    /// bounds with `>=` and `<=` (`<` for `..<`) does: an attribute that is `nil`, or a `Double`
    /// or `Float` NaN, is never in a range; a `Date` whose interval is NaN is in every range
    /// but a half-open one (`Date` derives `>=` and `<=` from its `<`). When the attribute is indexed or unique, the fetch reads the rows
    /// in the range from the index instead of evaluating every row.
    public init<Value: AttributeValue & Comparable>(
        where attributeName: String,
        in range: ClosedRange<Value>,
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = []
    ) {
        self.init(predicate: predicate, sortBy: sortDescriptors)
        attributeConstraint = AttributeConstraint(
            attributeName: attributeName, lowerBound: range.lowerBound.storedValue,
            upperBound: range.upperBound.storedValue)
    }

    /// Creates a fetch request for the objects whose attribute `attributeName` lies in `range`,
    /// its upper bound excluded. See ``init(where:in:predicate:sortBy:)-(_,ClosedRange<Value>,_,_)``.
    public init<Value: AttributeValue & Comparable>(
        where attributeName: String,
        in range: Range<Value>,
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = []
    ) {
        self.init(predicate: predicate, sortBy: sortDescriptors)
        attributeConstraint = AttributeConstraint(
            attributeName: attributeName, lowerBound: range.lowerBound.storedValue,
            upperBound: range.upperBound.storedValue, includesUpperBound: false)
    }

    /// Creates a fetch request for the objects whose attribute `attributeName` is at least
    /// `range.lowerBound` (`where: "rating", in: 3...`).
    public init<Value: AttributeValue & Comparable>(
        where attributeName: String,
        in range: PartialRangeFrom<Value>,
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = []
    ) {
        self.init(predicate: predicate, sortBy: sortDescriptors)
        attributeConstraint = AttributeConstraint(
            attributeName: attributeName, lowerBound: range.lowerBound.storedValue, upperBound: nil)
    }

    /// Creates a fetch request for the objects whose attribute `attributeName` is at most
    /// `range.upperBound` (`where: "rating", in: ...3`).
    public init<Value: AttributeValue & Comparable>(
        where attributeName: String,
        in range: PartialRangeThrough<Value>,
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = []
    ) {
        self.init(predicate: predicate, sortBy: sortDescriptors)
        attributeConstraint = AttributeConstraint(
            attributeName: attributeName, lowerBound: nil, upperBound: range.upperBound.storedValue)
    }

    /// Creates a fetch request for the objects whose attribute `attributeName` is below
    /// `range.upperBound` (`where: "rating", in: ..<3`).
    public init<Value: AttributeValue & Comparable>(
        where attributeName: String,
        in range: PartialRangeUpTo<Value>,
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = []
    ) {
        self.init(predicate: predicate, sortBy: sortDescriptors)
        attributeConstraint = AttributeConstraint(
            attributeName: attributeName, lowerBound: nil, upperBound: range.upperBound.storedValue,
            includesUpperBound: false)
    }

    /// Creates a fetch request for the objects whose string attribute `attributeName` starts
    /// with `prefix` (and that match `predicate`, if any): Core Data's
    /// `NSPredicate(format: "code BEGINSWITH %@")`, compared as `String.starts(with:)` compares
    /// (whole characters; `nil` never matches).
    ///
    /// ```swift
    /// let request = FetchRequest<Destination>(where: "code", startsWith: "LI")
    /// ```
    ///
    /// When the attribute is indexed or unique and `prefix` is ASCII, the fetch reads the rows
    /// that start with it from the index; otherwise it checks every row's stored value.
    public init(
        where attributeName: String,
        startsWith prefix: String,
        predicate: Predicate<Result>? = nil,
        sortBy sortDescriptors: [SortDescriptor<Result>] = []
    ) {
        self.init(predicate: predicate, sortBy: sortDescriptors)
        attributeConstraint = AttributeConstraint(attributeName: attributeName, prefix: prefix)
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
