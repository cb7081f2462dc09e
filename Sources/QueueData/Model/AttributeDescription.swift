import Foundation

/// An attribute of an entity: its name, type, optionality and default value.
///
/// ``ManagedObjectModel`` builds these from `@Attribute` declarations; tools that read a store
/// without its classes can build them directly.
public struct AttributeDescription: Sendable, Hashable, CustomStringConvertible {
    /// The attribute's name (the Swift property name, without the wrapper's underscore).
    public let name: String
    /// The stored type.
    public let type: AttributeType
    /// Whether the attribute accepts `nil`.
    public let isOptional: Bool
    /// The value a newly inserted object starts with.
    public let defaultValue: StoredValue
    /// For transformable attributes, the Swift type that was declared (informational: it is
    /// not part of the model's version hash, so renaming the type does not break stores).
    public let valueTypeName: String?
    /// The attribute's name in stores written before it was renamed (Core Data's renaming
    /// identifier); not part of the version hash.
    public let originalName: String?
    /// Whether ``defaultValue`` was given rather than implied (zero, `nil`): migration gives a
    /// new non-optional attribute only a declared default.
    public let hasDeclaredDefault: Bool

    /// Creates an attribute description.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - type: The stored type.
    ///   - isOptional: Whether `nil` is allowed.
    ///   - defaultValue: The initial value of new objects. When omitted: `nil` for optional
    ///     attributes, otherwise zero, `false`, the empty string or data, the reference date,
    ///     or the all-zero UUID; URL and transformable attributes that are not optional need
    ///     an explicit default (``EntityDescription/init(name:attributes:relationships:originalName:)`` checks this).
    ///   - valueTypeName: For transformable attributes, the declared Swift type's name.
    ///   - originalName: The attribute's name in stores written before it was renamed.
    public init(
        name: String,
        type: AttributeType,
        isOptional: Bool = false,
        defaultValue: StoredValue? = nil,
        valueTypeName: String? = nil,
        originalName: String? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue =
            defaultValue ?? (isOptional ? .null : Self.zeroValue(for: type) ?? .null)
        self.valueTypeName = valueTypeName
        self.originalName = originalName
        self.hasDeclaredDefault = defaultValue != nil
    }

    /// The value a non-optional attribute of `type` gets when no default is declared, or
    /// `nil` when the type has no natural zero.
    static func zeroValue(for type: AttributeType) -> StoredValue? {
        switch type {
        case .boolean: return .bool(false)
        case .integer16, .integer32, .integer64: return .integer(0)
        case .double, .float: return .double(0)
        case .string: return .string("")
        case .date: return .date(Date(timeIntervalSinceReferenceDate: 0))
        case .binaryData: return .data(Data())
        case .uuid: return .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .decimal: return .decimal(0)
        case .uri, .transformable: return nil
        }
    }

    /// The text that identifies this attribute in a version hash: name, type and optionality.
    var hashText: String {
        "\(name):\(type.rawValue)\(isOptional ? "?" : "")"
    }

    /// `name: type` with a `?` for optional attributes.
    public var description: String {
        "\(name): \(type.rawValue)\(isOptional ? "?" : "") = \(defaultValue)"
    }
}
