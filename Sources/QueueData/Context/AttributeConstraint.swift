/// A requirement of a ``FetchRequest`` on one stored attribute, by name: its value must be one
/// of ``values``, compared in stored form.
///
/// Answered from the attribute's index when it has one (``AttributeOptions/indexed``, or unique);
/// otherwise checked on each row's stored value, without making objects of the rows that do not
/// satisfy it.
public struct AttributeConstraint: Sendable, Hashable {
    /// The attribute's name, as the model has it.
    public var attributeName: String
    /// The values the attribute may hold, in stored form.
    public var values: [StoredValue]

    /// Creates a constraint.
    public init(attributeName: String, values: [StoredValue]) {
        self.attributeName = attributeName
        self.values = values
    }

    /// The attribute's slot in `entity`'s rows; traps, naming what is wrong, when the entity
    /// has no such attribute or a value cannot be one of its values.
    func slot(in entity: EntityDescription) -> Int {
        guard let slot = entity.attributeIndexes[attributeName] else {
            fatalError(
                "QueueData: a FetchRequest requires '\(attributeName)' of '\(entity.name)', which has no attribute of "
                    + "that name (a relationship or a transient attribute cannot be required this way).")
        }
        let attribute = entity.attributes[slot]
        for value in values where !value.fits(attribute.type, isOptional: attribute.isOptional) {
            fatalError(
                "QueueData: a FetchRequest requires '\(entity.name).\(attributeName)', of type "
                    + "\(attribute.type.rawValue)\(attribute.isOptional ? " (optional)" : ""), to equal \(value), "
                    + "which it can never hold.")
        }
        return slot
    }

    /// Whether `value` is one of ``values``.
    @inline(__always)
    func isSatisfied(by value: StoredValue) -> Bool {
        values.withUnsafeBufferPointer { candidates in
            for index in candidates.indices where candidates[index] == value {
                return true
            }
            return false
        }
    }

    /// Whether the field of `slot` of the row at `row` (laid out by `layout`) holds one of
    /// ``values``.
    @inline(__always)
    func isSatisfied(row: UnsafeRawPointer, slot: Int, layout: RowLayout) -> Bool {
        isSatisfied(by: layout.value(row, slot: slot))
    }
}
