import Foundation

/// An entity: a name, its attributes and relationships in row order, and the class that
/// represents it.
///
/// Immutable and `Sendable`. ``ManagedObjectModel`` discovers entities from `ManagedObject`
/// subclasses; tools can also describe entities without any subclass, in which case objects
/// are plain ``ManagedObject`` instances read with ``ManagedObject/value(forKey:)``.
public final class EntityDescription: Sendable, Hashable, CustomStringConvertible {
    /// The entity's name, unique in its model.
    public let name: String
    /// The attributes, in the order of the row's slots.
    public let attributes: [AttributeDescription]
    /// The relationships, in the order of the row's slots after the attributes.
    public let relationships: [RelationshipDescription]
    /// The transient attributes (``AttributeOptions/transient``): kept by objects in memory
    /// only, never stored, and not part of the version hash.
    public let transientAttributes: [AttributeDescription]
    /// The class instantiated for this entity's objects (``ManagedObject`` itself for an entity
    /// described without a subclass).
    public let managedObjectClass: ManagedObject.Type
    /// The entity's name in stores written before it was renamed; not part of the version hash.
    public let originalName: String?
    /// The name of the entity this one inherits from (Core Data's `superentity`): for a
    /// `ManagedObject` subclass in a model, the entity of its nearest superclass the model
    /// lists (`nil` when there is none: a common base class the model leaves out is no
    /// entity); for an entity a store read back, the one it recorded. A fetch, a
    /// uniqueness constraint and an export of an entity include its subentities. An entity
    /// described without a subclass that names a superentity declares everything the
    /// superentity does (attributes, relationships, uniqueness constraints), as a subclass
    /// inherits it: ``ManagedObjectModel/init(entities:)`` checks. Not part of the version hash.
    public let superentityName: String?
    /// How migration converts stored values of other types, by attribute name.
    let attributeTransforms: [String: @Sendable (StoredValue) throws -> StoredValue]
    /// The validation closures of attributes, by slot (transient attributes' slots follow the
    /// row's columns).
    let attributeValidators: [Int: @Sendable (StoredValue) throws -> Void]
    /// For transformable attributes of a subclass, by column: throws if a stored value does not
    /// decode as the declared type (checked when a store is opened, so that a hand-edited or
    /// damaged value is refused then instead of trapping when the attribute is read).
    let attributeDecodingChecks: [Int: @Sendable (StoredValue) throws -> Void]
    /// The columns whose committed values the coordinator indexes: attributes declared
    /// ``AttributeOptions/indexed``, and every attribute that is unique on its own.
    let indexedColumns: [Int]
    /// The sets of attributes whose values no two objects of the entity may share (Core
    /// Data's uniqueness constraints): from `@Attribute(.unique)` and
    /// ``ManagedObject/uniquenessConstraints``.
    public let uniquenessConstraints: [[String]]
    /// `uniquenessConstraints` as attribute indexes.
    let uniquenessColumns: [[Int]]
    /// The default value of every column (attributes, then relationships), in slot order.
    let defaultRow: [StoredValue]
    /// The default value of every transient attribute, in slot order.
    let transientDefaults: [StoredValue]
    /// The slot of every transient attribute by name (after the row's columns).
    let transientSlots: [String: Int]
    /// The index of every attribute by name.
    let attributeIndexes: [String: Int]
    /// The row slot of every relationship by name (after the attributes' slots).
    let relationshipColumns: [String: Int]
    /// `ObjectIdentifier`s of `managedObjectClass` and each of its superclasses up to (not
    /// including) `ManagedObject`: a fetch for a class includes the entities of its subclasses.
    let classLineage: [ObjectIdentifier]
    /// How the entity's rows and objects lay their values out in memory.
    let rowLayout: RowLayout

    /// Describes an entity without a `ManagedObject` subclass.
    ///
    /// - Parameters:
    ///   - name: The entity's name.
    ///   - attributes: Its attributes, in row order.
    ///   - relationships: Its relationships (each needs an inverse on its destination, which
    ///     ``ManagedObjectModel/init(entities:)`` checks).
    ///   - originalName: Its name in stores written before it was renamed.
    /// - Throws: ``ModelError`` when the name is invalid, two properties share a name, or a
    ///   default value does not fit its attribute.
    public convenience init(
        name: String,
        attributes: [AttributeDescription],
        relationships: [RelationshipDescription] = [],
        originalName: String? = nil
    ) throws {
        try self.init(
            name: name, attributes: attributes, relationships: relationships, managedObjectClass: ManagedObject.self,
            classLineage: [], originalName: originalName)
    }

    /// Describes an entity without a `ManagedObject` subclass, with transient attributes.
    ///
    /// - Parameters:
    ///   - name: The entity's name.
    ///   - attributes: Its stored attributes, in row order.
    ///   - transientAttributes: Its transient attributes (kept in memory only; read and set
    ///     them with ``ManagedObject/value(forKey:)`` and ``ManagedObject/setValue(_:forKey:)``).
    ///   - relationships: Its relationships.
    ///   - originalName: Its name in stores written before it was renamed.
    /// - Throws: ``ModelError`` as the other initializers do.
    public convenience init(
        name: String,
        attributes: [AttributeDescription],
        transientAttributes: [AttributeDescription],
        relationships: [RelationshipDescription] = [],
        originalName: String? = nil
    ) throws {
        try self.init(
            name: name, attributes: attributes, transientAttributes: transientAttributes,
            relationships: relationships, managedObjectClass: ManagedObject.self, classLineage: [],
            originalName: originalName)
    }

    /// Describes an entity without a `ManagedObject` subclass, with uniqueness constraints.
    ///
    /// - Parameters:
    ///   - name: The entity's name.
    ///   - attributes: Its attributes, in row order.
    ///   - relationships: Its relationships.
    ///   - uniquenessConstraints: Sets of attribute names whose values no two objects may
    ///     share.
    ///   - originalName: Its name in stores written before it was renamed.
    /// - Throws: ``ModelError`` as the other initializer does, and when a constraint names an
    ///   attribute the entity does not have.
    public convenience init(
        name: String,
        attributes: [AttributeDescription],
        relationships: [RelationshipDescription] = [],
        uniquenessConstraints: [[String]],
        originalName: String? = nil
    ) throws {
        try self.init(
            name: name, attributes: attributes, relationships: relationships, managedObjectClass: ManagedObject.self,
            classLineage: [], originalName: originalName, uniquenessConstraints: uniquenessConstraints)
    }

    /// Describes an entity without a `ManagedObject` subclass, with uniqueness constraints and
    /// the entity it inherits from, as a store records them.
    ///
    /// - Parameters:
    ///   - name: The entity's name.
    ///   - attributes: Its attributes, in row order (inherited ones included).
    ///   - relationships: Its relationships (inherited ones included).
    ///   - uniquenessConstraints: Sets of attribute names whose values no two objects may
    ///     share.
    ///   - superentityName: The entity it inherits from, or `nil`.
    ///   - originalName: Its name in stores written before it was renamed.
    /// - Throws: ``ModelError`` as the other initializers do.
    public convenience init(
        name: String,
        attributes: [AttributeDescription],
        relationships: [RelationshipDescription] = [],
        uniquenessConstraints: [[String]],
        superentityName: String?,
        originalName: String? = nil
    ) throws {
        if let superentityName {
            try Self.validateName(superentityName, entityName: name, what: "entity")
        }
        try self.init(
            name: name, attributes: attributes, relationships: relationships, managedObjectClass: ManagedObject.self,
            classLineage: [], originalName: originalName, uniquenessConstraints: uniquenessConstraints,
            superentityName: superentityName)
    }

    init(
        name: String,
        attributes: [AttributeDescription],
        transientAttributes: [AttributeDescription] = [],
        relationships: [RelationshipDescription] = [],
        managedObjectClass: ManagedObject.Type,
        classLineage: [ObjectIdentifier],
        originalName: String? = nil,
        attributeTransforms: [String: @Sendable (StoredValue) throws -> StoredValue] = [:],
        attributeValidators: [Int: @Sendable (StoredValue) throws -> Void] = [:],
        attributeDecodingChecks: [Int: @Sendable (StoredValue) throws -> Void] = [:],
        uniquenessConstraints: [[String]] = [],
        indexedAttributes: [String] = [],
        superentityName: String? = nil
    ) throws {
        try Self.validateName(name, entityName: name, what: "entity")
        var indexes: [String: Int] = [:]
        for (index, attribute) in attributes.enumerated() {
            try Self.validateName(attribute.name, entityName: name, what: "attribute")
            guard indexes.updateValue(index, forKey: attribute.name) == nil else {
                throw ModelError(
                    .duplicateAttribute,
                    "Entity '\(name)' declares the attribute '\(attribute.name)' twice.",
                    entityName: name, attributeName: attribute.name)
            }
            guard attribute.defaultValue.fits(attribute.type, isOptional: attribute.isOptional) else {
                throw ModelError(
                    .invalidDefaultValue,
                    "The default value \(attribute.defaultValue) of '\(name).\(attribute.name)' does "
                        + "not fit its type \(attribute.type.rawValue)"
                        + (attribute.isOptional ? "?" : "")
                        + "; give a non-optional URL or transformable attribute an explicit default.",
                    entityName: name, attributeName: attribute.name)
            }
        }
        var transientSlots: [String: Int] = [:]
        for (index, attribute) in transientAttributes.enumerated() {
            try Self.validateName(attribute.name, entityName: name, what: "attribute")
            guard indexes[attribute.name] == nil,
                transientSlots.updateValue(attributes.count + relationships.count + index, forKey: attribute.name)
                    == nil
            else {
                throw ModelError(
                    .duplicateAttribute,
                    "Entity '\(name)' declares the attribute '\(attribute.name)' twice.",
                    entityName: name, attributeName: attribute.name)
            }
            guard attribute.defaultValue.fits(attribute.type, isOptional: attribute.isOptional) else {
                throw ModelError(
                    .invalidDefaultValue,
                    "The default value \(attribute.defaultValue) of '\(name).\(attribute.name)' does not fit its type "
                        + "\(attribute.type.rawValue)\(attribute.isOptional ? "?" : "").",
                    entityName: name, attributeName: attribute.name)
            }
        }
        var relationshipColumns: [String: Int] = [:]
        for (index, relationship) in relationships.enumerated() {
            try Self.validateName(relationship.name, entityName: name, what: "relationship")
            guard indexes[relationship.name] == nil, transientSlots[relationship.name] == nil,
                relationshipColumns.updateValue(attributes.count + index, forKey: relationship.name) == nil
            else {
                throw ModelError(
                    .duplicateAttribute,
                    "Entity '\(name)' declares the property '\(relationship.name)' twice.",
                    entityName: name, attributeName: relationship.name)
            }
            try Self.validateName(relationship.destinationEntityName, entityName: name, what: "entity")
        }
        let propertyCount = attributes.count + relationships.count + transientAttributes.count
        guard propertyCount <= Int(UInt16.max) else {
            throw ModelError(
                .unsupportedDeclaration,
                "Entity '\(name)' declares \(propertyCount) properties; at most \(UInt16.max) are supported.",
                entityName: name)
        }
        var uniquenessColumns: [[Int]] = []
        for constraint in uniquenessConstraints where !constraint.isEmpty {
            let columns = try constraint.map { attributeName in
                guard let index = indexes[attributeName] else {
                    throw ModelError(
                        .unsupportedDeclaration,
                        "The uniqueness constraint \(constraint) of '\(name)' names '\(attributeName)', which is not "
                            + (transientSlots[attributeName] == nil
                                ? "one of its attributes."
                                : "a stored attribute: a transient attribute cannot be unique."),
                        entityName: name, attributeName: attributeName)
                }
                return index
            }
            if !uniquenessColumns.contains(columns) {
                uniquenessColumns.append(columns)
            }
        }
        self.uniquenessColumns = uniquenessColumns
        self.uniquenessConstraints = uniquenessColumns.map { $0.map { attributes[$0].name } }
        self.attributeValidators = attributeValidators
        self.attributeDecodingChecks = attributeDecodingChecks
        var indexedColumns: [Int] = []
        for attributeName in indexedAttributes {
            guard let column = indexes[attributeName] else {
                throw ModelError(
                    .unsupportedDeclaration,
                    "'\(name).\(attributeName)' is declared indexed but is not "
                        + (transientSlots[attributeName] == nil
                            ? "one of its attributes."
                            : "a stored attribute: a transient attribute cannot be indexed."),
                    entityName: name, attributeName: attributeName)
            }
            guard attributes[column].type != .transformable else {
                throw ModelError(
                    .unsupportedDeclaration,
                    "'\(name).\(attributeName)' is declared indexed but is transformable: its values are compared by "
                        + "their Codable type's ==, which an index of stored values cannot follow.",
                    entityName: name, attributeName: attributeName)
            }
            indexedColumns.append(column)
        }
        for columns in uniquenessColumns where columns.count == 1 && attributes[columns[0]].type != .transformable {
            indexedColumns.append(columns[0])
        }
        self.indexedColumns = Array(Set(indexedColumns)).sorted()
        self.name = name
        self.attributes = attributes
        self.transientAttributes = transientAttributes
        self.transientDefaults = transientAttributes.map(\.defaultValue)
        self.transientSlots = transientSlots
        self.relationships = relationships
        self.relationshipColumns = relationshipColumns
        self.managedObjectClass = managedObjectClass
        self.originalName = originalName
        self.superentityName = superentityName
        self.attributeTransforms = attributeTransforms
        self.defaultRow = attributes.map(\.defaultValue) + relationships.map(\.emptyValue)
        self.attributeIndexes = indexes
        self.classLineage = classLineage
        self.rowLayout = RowLayout(
            columnKinds: attributes.map { FieldKind($0.type, isOptional: $0.isOptional) }
                + relationships.map { _ in .storedValue },
            transientKinds: transientAttributes.map { FieldKind($0.type, isOptional: $0.isOptional) },
            defaults: defaultRow + transientDefaults)
    }

    /// This entity with the given renaming identifiers (by column: attributes, then
    /// relationships), as a store read them back.
    func renamed(originalName: String?, columnOriginalNames: [Int: String]) throws -> EntityDescription {
        let attributes = self.attributes.enumerated().map { index, attribute in
            AttributeDescription(
                name: attribute.name, type: attribute.type, isOptional: attribute.isOptional,
                defaultValue: attribute.hasDeclaredDefault ? attribute.defaultValue : nil,
                valueTypeName: attribute.valueTypeName, originalName: columnOriginalNames[index])
        }
        let relationships = self.relationships.enumerated().map { index, relationship in
            RelationshipDescription(
                name: relationship.name, destination: relationship.destinationEntityName,
                inverse: relationship.inverseName, isToMany: relationship.isToMany, isOrdered: relationship.isOrdered,
                deleteRule: relationship.deleteRule, isOptional: relationship.isOptional,
                minCount: relationship.minCount, maxCount: relationship.maxCount,
                originalName: columnOriginalNames[self.attributes.count + index])
        }
        return try EntityDescription(
            name: name, attributes: attributes, transientAttributes: transientAttributes, relationships: relationships,
            managedObjectClass: managedObjectClass, classLineage: classLineage, originalName: originalName,
            attributeTransforms: attributeTransforms, attributeValidators: attributeValidators,
            attributeDecodingChecks: attributeDecodingChecks, uniquenessConstraints: uniquenessConstraints,
            indexedAttributes: indexedColumns.map { attributes[$0].name }, superentityName: superentityName)
    }

    /// This entity with `uniquenessConstraints` and `superentityName` instead of its own (what
    /// a store records of another description of the same entity).
    func recording(uniquenessConstraints: [[String]], superentityName: String?) throws -> EntityDescription {
        try EntityDescription(
            name: name, attributes: attributes, transientAttributes: transientAttributes, relationships: relationships,
            managedObjectClass: managedObjectClass, classLineage: classLineage, originalName: originalName,
            attributeTransforms: attributeTransforms, attributeValidators: attributeValidators,
            attributeDecodingChecks: attributeDecodingChecks, uniquenessConstraints: uniquenessConstraints,
            indexedAttributes: indexedColumns.map { attributes[$0].name }, superentityName: superentityName)
    }

    /// The number of slots in a row: attributes, then relationships.
    var columnCount: Int {
        attributes.count + relationships.count
    }

    /// The number of slots an object holds: the row's columns, then the transient attributes.
    var objectSlotCount: Int {
        columnCount + transientAttributes.count
    }

    /// The slot of the attribute named `name`, stored or transient, if the entity has one.
    func slot(ofAttribute name: String) -> Int? {
        attributeIndexes[name] ?? transientSlots[name]
    }

    /// The attribute, stored or transient, at an object's `slot` (not a relationship's).
    func attribute(atSlot slot: Int) -> AttributeDescription {
        slot < attributes.count ? attributes[slot] : transientAttributes[slot - columnCount]
    }

    /// The relationship named `name`, if the entity has one.
    public func relationship(named name: String) -> RelationshipDescription? {
        relationshipColumns[name].map { relationships[$0 - attributes.count] }
    }

    /// The row slot of the relationship named `name` (after the attributes' slots), if any.
    func column(ofRelationship name: String) -> Int? {
        relationshipColumns[name]
    }

    /// The row slot of the attribute or relationship named `name`, if any.
    func column(named name: String) -> Int? {
        attributeIndexes[name] ?? relationshipColumns[name]
    }

    /// The name of the attribute or relationship at row slot `column` (or of the transient
    /// attribute at an object's slot after the row).
    func columnName(_ column: Int) -> String {
        if column >= columnCount {
            return transientAttributes[column - columnCount].name
        }
        return column < attributes.count ? attributes[column].name : relationships[column - attributes.count].name
    }

    static func validateName(_ name: String, entityName: String, what: String) throws {
        let forbidden: Set<Character> = ["/", "\\", "?", "#", "%", ":", "\0"]
        guard !name.isEmpty, !name.contains(where: { forbidden.contains($0) || $0.isWhitespace }) else {
            throw ModelError(
                .invalidName,
                "The \(what) name '\(name)' is invalid: names must be non-empty and contain no "
                    + "whitespace or any of / \\ ? # % :.",
                entityName: entityName, attributeName: what == "entity" ? nil : name)
        }
    }

    /// The attribute named `name`, if the entity has one.
    public func attribute(named name: String) -> AttributeDescription? {
        attributeIndexes[name].map { attributes[$0] }
    }

    /// The slot index of the attribute named `name`, if the entity has one.
    public func index(ofAttribute name: String) -> Int? {
        attributeIndexes[name]
    }

    /// The text that identifies this entity in a version hash: its name and each attribute's
    /// name, type and optionality, sorted by name so that declaration order does not matter.
    var hashText: String {
        let attributeText = attributes.map(\.hashText).sorted().joined(separator: ",")
        guard !relationships.isEmpty else { return "\(name){\(attributeText)}" }
        let relationshipText = relationships.map(\.hashText).sorted().joined(separator: ",")
        return "\(name){\(attributeText)|\(relationshipText)}"
    }

    /// A deterministic hash of the entity's name, attributes and relationships (SHA-256,
    /// hexadecimal); see ``ManagedObjectModel/versionHash`` for what it leaves out.
    public var versionHash: String {
        SHA256.hexDigest(of: Array(hashText.utf8))
    }

    /// Whether this entity's class is `type` or one of its subclasses.
    func isKind(of type: ManagedObject.Type) -> Bool {
        ObjectIdentifier(managedObjectClass) == ObjectIdentifier(type)
            || classLineage.contains(ObjectIdentifier(type))
    }

    /// Identity.
    public static func == (lhs: EntityDescription, rhs: EntityDescription) -> Bool {
        lhs === rhs
    }

    /// Identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }

    /// `Name(attribute: type, ...)`.
    public var description: String {
        "\(name)(\((attributes.map(\.description) + relationships.map(\.description)).joined(separator: ", ")))"
    }
}
