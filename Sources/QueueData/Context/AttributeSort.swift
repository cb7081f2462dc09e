/// A sort by one stored attribute, by name: Core Data's `NSSortDescriptor(key:ascending:)`.
///
/// ```swift
/// var request = FetchRequest<Destination>(predicate: #Predicate { $0.rating > 3 })
/// request.attributeSorts = [AttributeSort("name")]
/// ```
///
/// A fetch orders its results by its ``FetchRequest/attributeSorts`` first, then by its
/// ``FetchRequest/sortDescriptors`` among objects those leave tied, then in fetch order (saved
/// objects by primary key, then unsaved inserts). Values are compared as the attribute's Swift
/// type compares them with `<` — numbers by value, strings by Swift's `String` ordering (not a
/// localized one), dates, decimals and UUIDs by their own `<` — and `nil` comes before every
/// value in ascending order, as `SortDescriptor` orders optionals. A NaN (a `Double` or `Float`,
/// or a `Date` whose interval is NaN), which `<` leaves unordered, sorts as `nil` does (tied with
/// it), as it does in Core Data's SQLite store, which keeps it as NULL.
///
/// The values are read from the objects' rows (a committed row, or the object's own row with
/// its unsaved changes), never through a key path, so sorting a large fetch costs a read per row
/// rather than a property access: a sorted fetch with a ``FetchRequest/fetchLimit`` makes objects
/// only for the page it returns (unless a sort descriptor after it has a string comparator, whose
/// comparisons need every match as an object). A limited page sorted by an indexed attribute is
/// read in the index's order (see "Sorting by attribute name" in the Getting Started article).
///
/// The attribute must be a stored (not transient) attribute of every entity fetched, of an
/// ordered type: an integer, floating-point, string, date, decimal or UUID attribute, optional
/// or not. A fetch with any other name traps, naming the entity and the attribute — as Core
/// Data raises an exception for a sort key that is not one of the entity's.
public struct AttributeSort: Sendable, Hashable {
    /// The attribute's name, as the model has it.
    public var attributeName: String
    /// Whether smaller values come first (the default); `false` reverses the order.
    public var ascending: Bool

    /// Creates a sort by the attribute named `attributeName`, ascending unless `ascending` is
    /// `false`.
    public init(_ attributeName: String, ascending: Bool = true) {
        self.attributeName = attributeName
        self.ascending = ascending
    }

    /// The attribute's slot in `entity`'s rows; traps, naming what is wrong, when the entity has
    /// no stored attribute of that name or its values have no order.
    func slot(in entity: EntityDescription) -> Int {
        guard let slot = entity.attributeIndexes[attributeName] else {
            fatalError(
                "QueueData: a FetchRequest sorts by '\(attributeName)' of '\(entity.name)', which has no attribute of "
                    + "that name (a relationship or a transient attribute cannot be sorted by this way).")
        }
        let attribute = entity.attributes[slot]
        switch attribute.type {
        case .integer16, .integer32, .integer64, .double, .float, .string, .date, .decimal, .uuid:
            return slot
        default:
            fatalError(
                "QueueData: a FetchRequest sorts by '\(entity.name).\(attributeName)', of type "
                    + "\(attribute.type.rawValue), whose values have no order; only integer, floating-point, string, "
                    + "date, decimal and UUID attributes can be sorted by.")
        }
    }
}

/// How a fetch reads one ``AttributeSort``'s keys: the attribute's slot in each fetched entity.
struct AttributeSortReader {
    /// The attribute's slot, by entity index (-1 for entities not fetched).
    let slots: [Int]
    /// Whether the order is reversed.
    let descending: Bool
    /// The row layout of every entity of the model, by entity index.
    let layouts: [RowLayout]

    /// Checks `sort` against every entity of `entityIndexes` (trapping on a wrong name or type).
    init(_ sort: AttributeSort, entityIndexes: [Int], model: ManagedObjectModel) {
        var slots = [Int](repeating: -1, count: model.entities.count)
        for entityIndex in entityIndexes {
            slots[entityIndex] = sort.slot(in: model.entities[entityIndex])
        }
        self.slots = slots
        self.descending = !sort.ascending
        layouts = model.entities.map(\.rowLayout)
    }

    /// The sort key of `object`'s current value (what its row holds).
    func key(of object: ManagedObject) -> SortKey? {
        guard let entityIndex = object._objectID.key.entityIndex, entityIndex < slots.count, slots[entityIndex] >= 0
        else { return nil }
        return SortKey(attributeValue: object._value(at: slots[entityIndex]))
    }

    /// The sort key of `row`, a committed row of the entity at `entityIndex`: what
    /// ``key(of:)`` answers for an object holding it.
    func key(ofRow row: RowReference, entityIndex: Int) -> SortKey? {
        guard entityIndex < slots.count, slots[entityIndex] >= 0 else { return nil }
        return SortKey(attributeValue: layouts[entityIndex].value(row.fields, slot: slots[entityIndex]))
    }
}
