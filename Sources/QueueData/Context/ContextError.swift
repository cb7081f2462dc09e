/// A context could not do what was asked with an object ID.
public struct ContextError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable, comparable code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// No such object: never saved, deleted, from another store, or a temporary ID of
        /// another context.
        public static let objectNotFound = Code(rawValue: "objectNotFound")
        /// The object exists but is not of the requested class.
        public static let wrongType = Code(rawValue: "wrongType")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for humans.
    public var message: String
    /// The ID concerned.
    public var objectID: ObjectID?

    /// Creates an error.
    public init(_ code: Code, _ message: String, objectID: ObjectID? = nil) {
        self.code = code
        self.message = message
        self.objectID = objectID
    }

    /// `ContextError(code): message`.
    public var description: String { "ContextError(\(code)): \(message)" }
}
