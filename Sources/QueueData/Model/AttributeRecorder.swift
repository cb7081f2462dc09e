internal import CQueueDataShims
import Foundation

/// Collects the `@Attribute` declarations of a class while ``ManagedObjectModel`` constructs a
/// prototype of it.
///
/// Each `Attribute.init(wrappedValue:)` runs when its object is constructed, in declaration
/// order (a subclass's properties before its superclass's). While a recorder is installed on
/// the thread, each one reports its value type and default here; `Mirror` then supplies the
/// names in the same order.
final class AttributeRecorder {
    struct Declaration {
        let valueType: Any.Type
        let attributeType: AttributeType
        let isOptional: Bool
        let defaultValue: Result<StoredValue, any Error>
        let originalName: String?
        let transform: (@Sendable (StoredValue) throws -> StoredValue)?
        let validate: (@Sendable (StoredValue) throws -> Void)?
        /// For a transformable attribute: throws if a stored value does not decode as the
        /// declared type.
        let decodingCheck: (@Sendable (StoredValue) throws -> Void)?
        let isUnique: Bool
        let isIndexed: Bool
        let isTransient: Bool
    }

    /// A `@Relationship` declaration: everything but the name, which `Mirror` supplies.
    struct RelationshipDeclaration {
        let destination: ManagedObject.Type
        let isToMany: Bool
        let isOrdered: Bool
        let inverse: String
        let deleteRule: DeleteRule
        let isOptional: Bool
        let minCount: Int
        let maxCount: Int?
        let originalName: String?
    }

    private(set) var declarations: [Declaration] = []
    private(set) var relationshipDeclarations: [RelationshipDeclaration] = []

    func record(_ declaration: RelationshipDeclaration) {
        relationshipDeclarations.append(declaration)
    }

    /// The recorder installed on this thread, if any.
    static var current: AttributeRecorder? {
        qd_attribute_recorder_get().map { Unmanaged<AttributeRecorder>.fromOpaque($0).takeUnretainedValue() }
    }

    func record<Value: Codable>(
        _ type: Value.Type,
        defaultValue: Result<StoredValue, any Error>,
        originalName: String?,
        transform: (@Sendable (StoredValue) throws -> StoredValue)?,
        validate: (@Sendable (StoredValue) throws -> Void)?,
        decodingCheck: (@Sendable (StoredValue) throws -> Void)?,
        isUnique: Bool,
        isIndexed: Bool,
        isTransient: Bool
    ) {
        let attributeType: AttributeType
        let isOptional: Bool
        if let native = Value.self as? any AttributeValue.Type {
            attributeType = native.attributeType
            isOptional = native.isOptionalAttribute
        } else {
            attributeType = .transformable
            isOptional = Value.self is any _OptionalAttributeValue.Type
        }
        declarations.append(
            Declaration(
                valueType: Value.self, attributeType: attributeType, isOptional: isOptional,
                defaultValue: defaultValue, originalName: originalName, transform: transform, validate: validate,
                decodingCheck: attributeType == .transformable ? decodingCheck : nil, isUnique: isUnique,
                isIndexed: isIndexed, isTransient: isTransient))
    }

    /// Runs `body` with this recorder installed on the thread.
    func recording<Result>(_ body: () throws -> Result) rethrows -> Result {
        let previous = qd_attribute_recorder_get()
        qd_attribute_recorder_set(Unmanaged.passUnretained(self).toOpaque())
        defer { qd_attribute_recorder_set(previous) }
        return try withExtendedLifetime(self) { try body() }
    }
}

/// Lets discovery recognise `@Relationship` storage in a `Mirror`.
protocol RelationshipStorage {}

extension Relationship: RelationshipStorage {}

/// Lets discovery recognise `@Attribute` storage in a `Mirror` and learn its value type.
protocol AttributeStorage {
    static var valueType: Any.Type { get }
}

extension Attribute: AttributeStorage {
    static var valueType: Any.Type { Value.self }
}
