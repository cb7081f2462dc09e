import Foundation

/// A relationship of an entity: its destination, cardinality, inverse and delete rule.
///
/// ``ManagedObjectModel`` builds these from `@Relationship` declarations; tools that describe
/// entities without subclasses can build them directly. Every relationship has an inverse on
/// its destination that points back; the model refuses one that does not.
public struct RelationshipDescription: Sendable, Hashable, CustomStringConvertible {
    /// The relationship's name (the Swift property name).
    public let name: String
    /// The name of the entity it points to.
    public let destinationEntityName: String
    /// The name of the inverse relationship on the destination entity.
    public let inverseName: String
    /// Whether it holds many objects (a set or an ordered list) rather than at most one.
    public let isToMany: Bool
    /// For to-many relationships, whether the objects keep the order they were given in.
    public let isOrdered: Bool
    /// What deleting the source object does to the related objects.
    public let deleteRule: DeleteRule
    /// For to-one relationships, whether it may be `nil` when saved.
    public let isOptional: Bool
    /// For to-many relationships, the fewest objects a save accepts.
    public let minCount: Int
    /// For to-many relationships, the most objects a save accepts (`nil`: no limit).
    public let maxCount: Int?
    /// The relationship's name in stores written before it was renamed; not part of the
    /// version hash.
    public let originalName: String?

    /// Creates a relationship description.
    ///
    /// - Parameters:
    ///   - name: The relationship's name.
    ///   - destination: The name of the entity it points to.
    ///   - inverse: The name of the inverse relationship on the destination.
    ///   - isToMany: Whether it holds many objects.
    ///   - isOrdered: For to-many relationships, whether order is kept.
    ///   - deleteRule: What deleting the source does to the related objects.
    ///   - isOptional: For to-one relationships, whether `nil` is allowed when saving.
    ///   - minCount: For to-many relationships, the fewest objects allowed when saving.
    ///   - maxCount: For to-many relationships, the most objects allowed when saving.
    ///   - originalName: The name in stores written before it was renamed.
    public init(
        name: String,
        destination: String,
        inverse: String,
        isToMany: Bool = false,
        isOrdered: Bool = false,
        deleteRule: DeleteRule = .nullify,
        isOptional: Bool = true,
        minCount: Int = 0,
        maxCount: Int? = nil,
        originalName: String? = nil
    ) {
        self.name = name
        self.destinationEntityName = destination
        self.inverseName = inverse
        self.isToMany = isToMany
        self.isOrdered = isToMany && isOrdered
        self.deleteRule = deleteRule
        self.isOptional = isOptional
        self.minCount = max(0, minCount)
        self.maxCount = maxCount
        self.originalName = originalName
    }

    /// The stored value of an empty relationship: `nil`, or no objects.
    var emptyValue: StoredValue {
        isToMany ? .data(Data()) : .null
    }

    /// Whether `value` is a valid stored value of this relationship: `nil` or a key for a
    /// to-one, a list of keys (8 bytes each) for a to-many.
    func accepts(_ value: StoredValue) -> Bool {
        switch value {
        case .null: return !isToMany
        case .integer: return !isToMany
        case .data(let data): return isToMany && data.count % 8 == 0
        default: return false
        }
    }

    /// The text that identifies this relationship in a version hash: name, destination and
    /// cardinality. (Inverse, delete rule, optionality and counts are checked when saving,
    /// not stored, so changing them needs no migration.)
    var hashText: String {
        "\(name)->\(destinationEntityName)\(isToMany ? (isOrdered ? "[o]" : "[*]") : "")"
    }

    /// `name -> Destination` with `[*]` (to-many) or `[o]` (ordered), and the inverse.
    public var description: String {
        "\(name) -> \(destinationEntityName)\(isToMany ? (isOrdered ? "[o]" : "[*]") : "") (inverse \(inverseName), \(deleteRule))"
    }
}
