internal import CQueueDataShims
import Dispatch
import Foundation

/// Discovers the entity of a `ManagedObject` subclass, once per class.
///
/// Discovery constructs a prototype with an ``AttributeRecorder`` installed (each
/// `@Attribute` reports its type and default), then reads the attribute names with `Mirror`,
/// which lists stored properties in the same order the initializers ran.
enum EntityDiscovery {
    /// Serializes discovery and guards the cache: the queue is the lock (no locks of our own).
    private static let queue = DispatchQueue(label: "QueueData.EntityDiscovery")

    /// Discovered entities by class.
    ///
    /// `nonisolated(unsafe)`: read and written only inside `queue.sync`.
    nonisolated(unsafe) private static var cache: [ObjectIdentifier: Result<EntityDescription, ModelError>] = [:]

    /// The entity of `type`, discovered on first use.
    static func entity(for type: ManagedObject.Type) -> Result<EntityDescription, ModelError> {
        queue.sync {
            let key = ObjectIdentifier(type)
            if let cached = cache[key] {
                return cached
            }
            let result = Result { try discover(type) }.mapError { $0 as! ModelError }
            cache[key] = result
            return result
        }
    }

    private static func discover(_ type: ManagedObject.Type) throws -> EntityDescription {
        let entityName = type.entityName
        guard type != ManagedObject.self else {
            throw ModelError(
                .unsupportedDeclaration,
                "ManagedObject itself is not an entity: list your subclasses, or describe an entity "
                    + "without a subclass with EntityDescription(name:attributes:).",
                entityName: entityName)
        }
        let recorder = AttributeRecorder()
        let prototype: ManagedObject = recorder.recording {
            let saved = qd_construction_begin(nil, 0, 0)
            defer { qd_construction_set(saved) }
            return type.init(prototypeConstruction)
        }
        var names: [String] = []
        var relationshipNames: [String] = []
        var valueTypes: [Any.Type] = []
        var lineage: [ObjectIdentifier] = []
        var mirror: Mirror? = Mirror(reflecting: prototype)
        while let level = mirror, level.subjectType != ManagedObject.self {
            if level.subjectType != type {
                lineage.append(ObjectIdentifier(level.subjectType))
            }
            for child in level.children {
                var name = child.label ?? ""
                if name.hasPrefix("_") {
                    name.removeFirst()
                }
                if child.value is any RelationshipStorage {
                    relationshipNames.append(name)
                    continue
                }
                guard let storage = child.value as? any AttributeStorage else { continue }
                names.append(name)
                valueTypes.append(Swift.type(of: storage).valueType)
            }
            mirror = level.superclassMirror
        }
        // A renaming identifier belongs to the class that declares it: a subclass inheriting its
        // parent's would claim the parent's stored rows as its own.
        let parent = Mirror(reflecting: prototype).superclassMirror?.subjectType as? ManagedObject.Type
        let originalName =
            parent.map { $0.originalEntityName == type.originalEntityName } == true ? nil : type.originalEntityName
        let declarations = recorder.declarations
        let matches =
            declarations.count == names.count
            && zip(declarations, valueTypes).allSatisfy { ObjectIdentifier($0.valueType) == ObjectIdentifier($1) }
        guard matches else {
            throw ModelError(
                .unsupportedDeclaration,
                "Could not read the attributes of \(type): declare each one as "
                    + "`@Attribute var name: Type = default` (found \(names.count) declarations, "
                    + "\(declarations.count) initial values), and do not make the class CustomReflectable.",
                entityName: entityName)
        }
        for (name, declaration) in zip(names, declarations) {
            // An attribute type read as a typed field must be laid out as that field: true of
            // every `_StoredInRow` type of QueueData's; a type of another module conforming is
            // refused here instead of reading memory as the wrong type.
            let kind = FieldKind(declaration.attributeType, isOptional: declaration.isOptional)
            if declaration.valueType is any _StoredInRow.Type, !isLaidOutAsField(declaration.valueType, kind) {
                throw ModelError(
                    .unsupportedDeclaration,
                    "'\(entityName).\(name)' is of type \(declaration.valueType), which conforms to _StoredInRow but "
                        + "is not how rows store its attribute type \(declaration.attributeType.rawValue) "
                        + "(\(kind.fieldType)): only QueueData's own types may conform to _StoredInRow.",
                    entityName: entityName, attributeName: name)
            }
        }
        var attributes: [AttributeDescription] = []
        var transientAttributes: [AttributeDescription] = []
        var transforms: [String: @Sendable (StoredValue) throws -> StoredValue] = [:]
        var validators: [Int: @Sendable (StoredValue) throws -> Void] = [:]
        var transientValidators: [Int: @Sendable (StoredValue) throws -> Void] = [:]
        var decodingChecks: [Int: @Sendable (StoredValue) throws -> Void] = [:]
        var constraints: [[String]] = []
        var indexed: [String] = []
        for (name, declaration) in zip(names, declarations) {
            if declaration.isTransient {
                transientValidators[transientAttributes.count] = declaration.validate
            } else {
                transforms[name] = declaration.transform
                validators[attributes.count] = declaration.validate
                decodingChecks[attributes.count] = declaration.decodingCheck
            }
            if declaration.isUnique {
                constraints.append([name])
            }
            if declaration.isIndexed {
                indexed.append(name)
            }
            let defaultValue: StoredValue
            switch declaration.defaultValue {
            case .success(let value):
                defaultValue = value
            case .failure(let error):
                throw ModelError(
                    .invalidDefaultValue,
                    "The default value of \(entityName).\(name) cannot be encoded: \(error)",
                    entityName: entityName, attributeName: name)
            }
            let attribute = AttributeDescription(
                name: name, type: declaration.attributeType, isOptional: declaration.isOptional,
                defaultValue: defaultValue,
                valueTypeName: declaration.attributeType == .transformable
                    ? String(reflecting: declaration.valueType) : nil,
                originalName: declaration.isTransient ? nil : declaration.originalName)
            if declaration.isTransient {
                transientAttributes.append(attribute)
            } else {
                attributes.append(attribute)
            }
        }
        let relationshipDeclarations = recorder.relationshipDeclarations
        guard relationshipDeclarations.count == relationshipNames.count else {
            throw ModelError(
                .unsupportedDeclaration,
                "Could not read the relationships of \(type): declare each one as "
                    + "`@Relationship(inverse: \"name\") var name: Destination?` (or a Set or Array of a "
                    + "ManagedObject subclass); found \(relationshipNames.count) declarations, "
                    + "\(relationshipDeclarations.count) initialized.",
                entityName: entityName)
        }
        let relationships = zip(relationshipNames, relationshipDeclarations).map { name, declaration in
            RelationshipDescription(
                name: name, destination: declaration.destination.entityName, inverse: declaration.inverse,
                isToMany: declaration.isToMany, isOrdered: declaration.isOrdered, deleteRule: declaration.deleteRule,
                isOptional: declaration.isOptional, minCount: declaration.minCount, maxCount: declaration.maxCount,
                originalName: declaration.originalName)
        }
        // Transient attributes' slots follow the row's columns.
        let columnCount = attributes.count + relationships.count
        for (index, validate) in transientValidators {
            validators[columnCount + index] = validate
        }
        return try EntityDescription(
            name: entityName, attributes: attributes, transientAttributes: transientAttributes,
            relationships: relationships, managedObjectClass: type, classLineage: lineage, originalName: originalName,
            attributeTransforms: transforms, attributeValidators: validators, attributeDecodingChecks: decodingChecks,
            uniquenessConstraints: constraints + type.uniquenessConstraints, indexedAttributes: indexed,
            superentityName: parent.flatMap { $0 == ManagedObject.self ? nil : $0.entityName })
    }

    /// The construction of discovery prototypes: an empty entity and a confinement that no
    /// queue admits, so a prototype cannot be used for anything.
    private static let prototypeConstruction: ObjectConstruction = {
        let entity = try! EntityDescription(
            name: "Prototype", attributes: [], managedObjectClass: ManagedObject.self, classLineage: [])
        let confinement = QueueConfinement(
            queue: DispatchQueue(label: "QueueData.Prototype"), contextName: "discovery prototype")
        confinement.invalidate(.contextDeallocated)
        let key = EntityKey(entityName: "Prototype", storeIdentifier: UUID(), entityIndex: nil, entity: entity)
        let parameters = UnsafeMutablePointer<ObjectConstructionParameters>.allocate(capacity: 1)
        parameters.initialize(
            to: ObjectConstructionParameters(
                entity: entity, confinement: confinement, key: key, rawKey: -1,
                values: nil, committed: nil, isPrototype: true))
        // Never freed: it lives as long as the process, as the prototypes it builds — and so do
        // the references it holds without retaining them.
        _ = Unmanaged.passRetained(entity)
        _ = Unmanaged.passRetained(confinement)
        _ = Unmanaged.passRetained(key)
        return ObjectConstruction(parameters: parameters)
    }()
}
