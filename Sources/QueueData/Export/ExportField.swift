/// One column of an export: the object's ID, an attribute, or a relationship.
///
/// An export's fields are the ID (first, unless left out), then the entity's attributes in
/// the order of its schema, then its relationships; each ``ExportRecord`` holds one
/// ``ExportValue`` per field, in the same order.
public struct ExportField: Sendable, Hashable {
    /// What a field holds.
    public enum Kind: Sendable, Hashable {
        /// The object's ``ObjectID`` (a ``ExportValue/object(_:)`` value).
        case objectID
        /// An attribute of `type` (a ``ExportValue/value(_:)`` value, `.null` only if optional).
        case attribute(AttributeType, isOptional: Bool)
        /// A to-one relationship to `destination` (an ``ExportValue/object(_:)`` value, `nil`
        /// when empty).
        case toOne(destination: String)
        /// A to-many relationship to `destination` (an ``ExportValue/objects(_:)`` value), in
        /// its order when `isOrdered`, otherwise by primary key.
        case toMany(destination: String, isOrdered: Bool)
    }

    /// The field's name: `objectID`, or the attribute's or relationship's name.
    public let name: String
    /// What the field holds.
    public let kind: Kind

    /// Creates a field.
    public init(name: String, kind: Kind) {
        self.name = name
        self.kind = kind
    }

    /// Whether the field is a `Float` attribute, whose values are written in `Float`'s
    /// shortest form.
    var isFloat: Bool {
        if case .attribute(.float, _) = kind { return true }
        return false
    }

    /// The name of the object ID field.
    public static let objectIDName = "objectID"

    /// The fields an export of `entity` writes: the object ID (when `includesObjectID`), every
    /// attribute, then every relationship, in the entity's order.
    public static func fields(of entity: EntityDescription, includesObjectID: Bool = true) -> [ExportField] {
        var fields: [ExportField] = []
        fields.reserveCapacity(entity.attributes.count + entity.relationships.count + 1)
        if includesObjectID {
            fields.append(ExportField(name: objectIDName, kind: .objectID))
        }
        for attribute in entity.attributes {
            fields.append(
                ExportField(name: attribute.name, kind: .attribute(attribute.type, isOptional: attribute.isOptional)))
        }
        for relationship in entity.relationships {
            fields.append(
                ExportField(
                    name: relationship.name,
                    kind: relationship.isToMany
                        ? .toMany(destination: relationship.destinationEntityName, isOrdered: relationship.isOrdered)
                        : .toOne(destination: relationship.destinationEntityName)))
        }
        return fields
    }
}
