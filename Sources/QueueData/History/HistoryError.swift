/// A persistent-history request could not be answered.
public struct HistoryError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable, comparable code (an extensible set).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The store keeps no history: tracking is off
        /// (``ContextManagerDelegate/tracksPersistentHistory``), or the store cannot keep it (the
        /// JSON store).
        public static let notTracked = Code(rawValue: "notTracked")
        /// The token is older than the history kept: transactions after it were purged. Start
        /// over from a fresh fetch and ``ManagedObjectContext/currentHistoryToken()``.
        public static let expiredToken = Code(rawValue: "expiredToken")
        /// The token belongs to another store, or is beyond the store's history (the store was
        /// replaced by an older copy, say).
        public static let invalidToken = Code(rawValue: "invalidToken")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for humans: what happened and what to do.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The code and the message.
    public var description: String { "HistoryError(\(code)): \(message)" }
}
