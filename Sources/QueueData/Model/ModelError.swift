/// A model declaration QueueData cannot use: thrown by ``ManagedObjectModel/init(validating:)``
/// and ``EntityDescription/init(name:attributes:relationships:originalName:)``.
public struct ModelError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, as a stable, comparable code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// Two entities share a name, or one class is listed twice.
        public static let duplicateEntity = Code(rawValue: "duplicateEntity")
        /// Two attributes of one entity share a name.
        public static let duplicateAttribute = Code(rawValue: "duplicateAttribute")
        /// A declaration QueueData cannot read (for example an attribute without a default).
        public static let unsupportedDeclaration = Code(rawValue: "unsupportedDeclaration")
        /// An entity or attribute name that is empty or contains characters stores can't keep.
        public static let invalidName = Code(rawValue: "invalidName")
        /// A default value that does not fit its attribute, or cannot be encoded.
        public static let invalidDefaultValue = Code(rawValue: "invalidDefaultValue")
        /// A relationship whose destination is not in the model, or whose inverse is missing or
        /// does not point back.
        public static let invalidRelationship = Code(rawValue: "invalidRelationship")
    }

    /// What is wrong.
    public var code: Code
    /// A sentence for humans saying what is wrong and how to fix it.
    public var message: String
    /// The entity concerned, if any.
    public var entityName: String?
    /// The attribute or relationship concerned, if any.
    public var attributeName: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, entityName: String? = nil, attributeName: String? = nil) {
        self.code = code
        self.message = message
        self.entityName = entityName
        self.attributeName = attributeName
    }

    /// `ModelError(code): message`.
    public var description: String { "ModelError(\(code)): \(message)" }
}
