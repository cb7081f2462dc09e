/// The type of an attribute, as recorded in the model and in every store's schema.
///
/// The names follow Core Data's attribute types. Optionality is recorded separately, in
/// ``AttributeDescription/isOptional``.
public enum AttributeType: String, Sendable, Hashable, Codable, CaseIterable {
    /// `Bool`.
    case boolean
    /// `Int16`.
    case integer16
    /// `Int32`.
    case integer32
    /// `Int64`, and `Int` (64 bits on every platform QueueData supports).
    case integer64
    /// `Double`.
    case double
    /// `Float`.
    case float
    /// `String`.
    case string
    /// `Date`.
    case date
    /// `Data`.
    case binaryData
    /// `UUID`.
    case uuid
    /// `URL`.
    case uri
    /// `Decimal`.
    case decimal
    /// Any other `Codable` value, stored as its JSON encoding (Core Data's transformable).
    case transformable
}
