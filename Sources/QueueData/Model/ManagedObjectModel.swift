import Foundation

/// The entities a store holds, discovered from `ManagedObject` subclasses.
///
/// ```swift
/// let model = ManagedObjectModel([Destination.self, Trip.self])
/// ```
///
/// Discovery runs once per class (the result is cached for the process). The model is
/// immutable and `Sendable`; its ``versionHash`` is the same for the same declarations in
/// every run and on every machine, and is what stores record to detect model changes.
public final class ManagedObjectModel: Sendable, CustomStringConvertible {
    /// The entities, in the order they were given.
    public let entities: [EntityDescription]
    /// The entities by name.
    public let entitiesByName: [String: EntityDescription]
    /// A hash of every entity's name, attributes (names, types, optionality) and relationships
    /// (names, destinations, cardinality, order), independent of declaration order, default
    /// values, delete rules, inverse names, counts and uniqueness constraints: SHA-256, 64
    /// hexadecimal digits.
    public let versionHash: String
    /// The position of every entity in `entities`, by name.
    let entityIndexes: [String: Int]
    /// The position of every subclass-backed entity, by class.
    let entityIndexesByClass: [ObjectIdentifier: Int]
    /// Every entity's class (by position; `nil` for an entity described without a subclass),
    /// searched without hashing in small models.
    let entityClasses: [ObjectIdentifier?]
    /// For each entity (by position) and each of its relationships (by position among them):
    /// where it points and where its inverse lives.
    let relationshipLinks: [[RelationshipLink]]

    /// Creates a model from `ManagedObject` subclasses.
    ///
    /// A declaration QueueData cannot use is a programmer error and traps with a message
    /// saying what to fix; use ``init(validating:)`` to get the ``ModelError`` instead.
    public convenience init(_ types: [ManagedObject.Type]) {
        do {
            try self.init(validating: types)
        } catch {
            fatalError("QueueData: invalid model: \(error)")
        }
    }

    /// Creates a model from `ManagedObject` subclasses, throwing on invalid declarations.
    ///
    /// - Throws: ``ModelError`` when a class is listed twice, two entities share a name, an
    ///   attribute has no initial value, or a default cannot be stored.
    public convenience init(validating types: [ManagedObject.Type]) throws {
        var seen: Set<ObjectIdentifier> = []
        var entities: [EntityDescription] = []
        for type in types {
            guard seen.insert(ObjectIdentifier(type)).inserted else {
                throw ModelError(
                    .duplicateEntity, "\(type) is listed twice in the model.", entityName: type.entityName)
            }
            entities.append(try EntityDiscovery.entity(for: type).get())
        }
        try self.init(entities: entities)
    }

    /// Creates a model from entity descriptions (for example, ones read from a store's
    /// schema, or described without subclasses).
    ///
    /// - Throws: ``ModelError/Code/duplicateEntity`` when two entities share a name;
    ///   ``ModelError/Code/invalidRelationship`` when a relationship's destination is missing or
    ///   its inverse does not point back; ``ModelError/Code/unsupportedDeclaration`` when the
    ///   superentities of entities described without a subclass loop or name a missing entity,
    ///   or such a subentity lacks something its superentity declares.
    public init(entities: [EntityDescription]) throws {
        // A subclass's superentity is its nearest superclass the model lists (Core Data's: a
        // class between them, or a common base class, that is no entity is passed over).
        let entities = try entities.map { entity in
            guard !entity.classLineage.isEmpty else { return entity }
            let nearest = entity.superentity(in: entities)?.name
            guard nearest != entity.superentityName else { return entity }
            return try entity.recording(uniquenessConstraints: entity.uniquenessConstraints, superentityName: nearest)
        }
        var byName: [String: EntityDescription] = [:]
        var indexes: [String: Int] = [:]
        var byClass: [ObjectIdentifier: Int] = [:]
        for (index, entity) in entities.enumerated() {
            guard byName.updateValue(entity, forKey: entity.name) == nil else {
                throw ModelError(
                    .duplicateEntity,
                    "Two entities are named '\(entity.name)'; override `class var entityName` to tell them apart.",
                    entityName: entity.name)
            }
            indexes[entity.name] = index
            if entity.managedObjectClass != ManagedObject.self {
                byClass[ObjectIdentifier(entity.managedObjectClass)] = index
            }
        }
        if let problem = EntityDescription.superentityProblem(in: entities) {
            throw ModelError(
                .unsupportedDeclaration, "The model's superentities do not hold together: \(problem).",
                entityName: entities.first?.name ?? "")
        }
        try Self.validateDescribedSubentities(of: entities, byName: byName)
        try Self.validateRelationships(of: entities, byName: byName)
        self.relationshipLinks = entities.map { entity in
            entity.relationships.map { relationship in
                let destinationIndex = indexes[relationship.destinationEntityName]!
                let destination = entities[destinationIndex]
                let inverse = destination.relationship(named: relationship.inverseName)!
                return RelationshipLink(
                    relationship: relationship, destinationIndex: destinationIndex,
                    inverseColumn: destination.column(ofRelationship: inverse.name)!, inverse: inverse)
            }
        }
        self.entities = entities
        self.entitiesByName = byName
        self.entityIndexes = indexes
        self.entityIndexesByClass = byClass
        self.entityClasses = entities.map {
            $0.managedObjectClass == ManagedObject.self ? nil : ObjectIdentifier($0.managedObjectClass)
        }
        let text = entities.map(\.hashText).sorted().joined(separator: "\n")
        self.versionHash = SHA256.hexDigest(of: Array(text.utf8))
    }

    /// Checks that an entity described without a subclass that names a superentity has what a
    /// subclass would inherit: the superentity's attributes (same names and types), its
    /// relationships (same names and destinations) and its uniqueness constraints.
    private static func validateDescribedSubentities(
        of entities: [EntityDescription],
        byName: [String: EntityDescription]
    ) throws {
        for entity in entities where entity.classLineage.isEmpty {
            guard let parentName = entity.superentityName, let parent = byName[parentName] else { continue }
            func invalid(_ what: String) -> ModelError {
                ModelError(
                    .unsupportedDeclaration,
                    "'\(entity.name)' names '\(parent.name)' as its superentity but \(what); a subentity has "
                        + "everything its superentity declares.", entityName: entity.name)
            }
            for attribute in parent.attributes {
                guard let index = entity.index(ofAttribute: attribute.name),
                    entity.attributes[index].type == attribute.type
                else {
                    throw invalid("does not declare its attribute '\(attribute.name)' (\(attribute.type.rawValue))")
                }
            }
            for relationship in parent.relationships {
                guard
                    entity.relationship(named: relationship.name)?.destinationEntityName
                        == relationship.destinationEntityName
                else {
                    throw invalid("does not declare its relationship '\(relationship.name)'")
                }
            }
            for constraint in parent.uniquenessConstraints where !entity.uniquenessConstraints.contains(constraint) {
                throw invalid("does not declare its uniqueness constraint (\(constraint.joined(separator: ", ")))")
            }
        }
    }

    /// Checks that every relationship points to an entity of the model, and has an inverse
    /// there that points back.
    private static func validateRelationships(
        of entities: [EntityDescription],
        byName: [String: EntityDescription]
    ) throws {
        for entity in entities {
            for relationship in entity.relationships {
                let name = "\(entity.name).\(relationship.name)"
                func invalid(_ reason: String) -> ModelError {
                    ModelError(
                        .invalidRelationship, "The relationship '\(name)' \(reason).", entityName: entity.name,
                        attributeName: relationship.name)
                }
                guard let destination = byName[relationship.destinationEntityName] else {
                    throw invalid("points to '\(relationship.destinationEntityName)', which is not in the model")
                }
                // Counts no save could satisfy are a declaration mistake, not a validation failure
                // (a negative minCount is read as 0).
                if let maxCount = relationship.maxCount {
                    guard maxCount >= 0 else { throw invalid("has a negative maxCount (\(maxCount))") }
                    guard maxCount >= relationship.minCount else {
                        throw invalid(
                            "has a maxCount (\(maxCount)) below its minCount (\(relationship.minCount)): no save "
                                + "could satisfy both")
                    }
                }
                guard let inverse = destination.relationship(named: relationship.inverseName) else {
                    throw invalid(
                        "names the inverse '\(relationship.inverseName)', which '\(destination.name)' does not "
                            + "declare; declare it there, pointing back to '\(name)'")
                }
                guard inverse.destinationEntityName == entity.name, inverse.inverseName == relationship.name else {
                    throw invalid(
                        "names the inverse '\(destination.name).\(inverse.name)', which points to "
                            + "'\(inverse.destinationEntityName).\(inverse.inverseName)' instead of back to it")
                }
                let subentities = entities.filter { candidate in
                    var current = candidate
                    for _ in entities.indices {
                        guard let parent = current.superentity(in: entities) else { return false }
                        if parent === destination {
                            return true
                        }
                        current = parent
                    }
                    return false
                }
                guard subentities.isEmpty else {
                    throw invalid(
                        "points to '\(destination.name)', which has subentities "
                            + "(\(subentities.map(\.name).joined(separator: ", "))); relationships to entities "
                            + "with subentities are not supported yet")
                }
            }
        }
    }

    /// The entity of `type`, if the model has one.
    public func entity(for type: ManagedObject.Type) -> EntityDescription? {
        entityIndex(of: type).map { entities[$0] }
    }

    /// The position of the entity of `type` in `entities`, if the model has one: a comparison
    /// per entity in a small model (cheaper than hashing the class), a look-up in a large one.
    func entityIndex(of type: ManagedObject.Type) -> Int? {
        let identifier = ObjectIdentifier(type)
        guard entityClasses.count <= 16 else {
            return entityIndexesByClass[identifier]
        }
        return entityClasses.firstIndex(of: identifier)
    }

    /// The entity named `name`, if the model has one.
    public func entity(named name: String) -> EntityDescription? {
        entitiesByName[name]
    }

    /// The indexes of the entities a fetch for `type` covers: its own entity, and with
    /// `includingSubentities` the entities of its subclasses.
    func entityIndexes(for type: ManagedObject.Type, includingSubentities: Bool) -> [Int] {
        if !includingSubentities {
            return entityIndex(of: type).map { [$0] } ?? []
        }
        return entities.indices.filter { entities[$0].isKind(of: type) }
    }

    /// The indexes of the entity named `name` and, with `includingSubentities`, of the
    /// entities whose classes inherit from its class.
    func entityIndexes(named name: String, includingSubentities: Bool) -> [Int] {
        guard let index = entityIndexes[name] else { return [] }
        let entity = entities[index]
        guard includingSubentities else { return [index] }
        guard entity.managedObjectClass != ManagedObject.self else {
            // Described without a subclass: the entities naming it as their superentity.
            return entities.indices.filter { descends(entities[$0], from: entity) }
        }
        return entityIndexes(for: entity.managedObjectClass, includingSubentities: true)
    }

    /// The superentities of `entity`, nearest first: by class for a subclass, by
    /// ``EntityDescription/superentityName`` for an entity described without one.
    func ancestors(of entity: EntityDescription) -> [EntityDescription] {
        var chain: [EntityDescription] = []
        var current = entity
        while chain.count < entities.count, let parent = current.superentity(in: entities) {
            chain.append(parent)
            current = parent
        }
        return chain
    }

    /// Whether `entity` is `ancestor` or one of its subentities.
    func descends(_ entity: EntityDescription, from ancestor: EntityDescription) -> Bool {
        entity === ancestor || ancestors(of: entity).contains { $0 === ancestor }
    }

    /// The entities, one per line.
    public var description: String {
        "ManagedObjectModel(\(versionHash.prefix(12)))\n"
            + entities.map { "  \($0)" }.joined(separator: "\n")
    }
}

/// A relationship resolved within its model: the destination entity's position and the row
/// slot of the inverse there.
///
/// A class: the relationship paths pass links around constantly, and a copy of a struct
/// holding two relationship descriptions retains and releases their eight strings.
final class RelationshipLink: Sendable {
    let relationship: RelationshipDescription
    let destinationIndex: Int
    let inverseColumn: Int
    let inverse: RelationshipDescription

    init(
        relationship: RelationshipDescription, destinationIndex: Int, inverseColumn: Int,
        inverse: RelationshipDescription
    ) {
        self.relationship = relationship
        self.destinationIndex = destinationIndex
        self.inverseColumn = inverseColumn
        self.inverse = inverse
    }
}
