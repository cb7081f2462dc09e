import Foundation

/// A Swift type that an attribute stores natively, as one ``StoredValue`` case.
///
/// `Bool`, `Int`, `Int16`, `Int32`, `Int64`, `Double`, `Float`, `String`, `Date`, `Data`,
/// `UUID`, `URL`, `Decimal` and optionals of each conform. Any other `Codable` type can be
/// declared with ``Attribute`` too; it is stored as JSON (a transformable attribute), which
/// costs an encode on every set and a decode on every get.
///
/// You can conform your own types, mapping them onto one of the native cases:
///
/// ```swift
/// extension Celsius: AttributeValue {
///     static var attributeType: AttributeType { .double }
///     init?(storedValue: StoredValue) {
///         guard case .double(let value) = storedValue else { return nil }
///         self.init(value)
///     }
///     var storedValue: StoredValue { .double(degrees) }
/// }
/// ```
public protocol AttributeValue: Codable {
    /// The attribute type recorded in the model for this Swift type.
    static var attributeType: AttributeType { get }
    /// Whether `nil` is a valid value (only `Optional` answers `true`).
    static var isOptionalAttribute: Bool { get }
    /// Creates a value from its stored form, or returns `nil` if the stored value does not
    /// represent this type.
    init?(storedValue: StoredValue)
    /// The stored form of this value.
    var storedValue: StoredValue { get }
}

extension AttributeValue {
    /// Non-optional by default.
    @inlinable
    public static var isOptionalAttribute: Bool { false }
}

extension Bool: AttributeValue {
    /// ``AttributeType/boolean``.
    @inlinable public static var attributeType: AttributeType { .boolean }
    /// Reads a ``StoredValue/bool(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .bool(let value) = storedValue else { return nil }
        self = value
    }
    /// ``StoredValue/bool(_:)``.
    @inlinable public var storedValue: StoredValue { .bool(self) }
}

extension Int: AttributeValue {
    /// ``AttributeType/integer64``.
    @inlinable public static var attributeType: AttributeType { .integer64 }
    /// Reads a ``StoredValue/integer(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .integer(let value) = storedValue else { return nil }
        self.init(truncatingIfNeeded: value)
    }
    /// ``StoredValue/integer(_:)``.
    @inlinable public var storedValue: StoredValue { .integer(Int64(self)) }
}

extension Int16: AttributeValue {
    /// ``AttributeType/integer16``.
    @inlinable public static var attributeType: AttributeType { .integer16 }
    /// Reads a ``StoredValue/integer(_:)`` that fits in 16 bits.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .integer(let value) = storedValue else { return nil }
        self.init(exactly: value)
    }
    /// ``StoredValue/integer(_:)``.
    @inlinable public var storedValue: StoredValue { .integer(Int64(self)) }
}

extension Int32: AttributeValue {
    /// ``AttributeType/integer32``.
    @inlinable public static var attributeType: AttributeType { .integer32 }
    /// Reads a ``StoredValue/integer(_:)`` that fits in 32 bits.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .integer(let value) = storedValue else { return nil }
        self.init(exactly: value)
    }
    /// ``StoredValue/integer(_:)``.
    @inlinable public var storedValue: StoredValue { .integer(Int64(self)) }
}

extension Int64: AttributeValue {
    /// ``AttributeType/integer64``.
    @inlinable public static var attributeType: AttributeType { .integer64 }
    /// Reads a ``StoredValue/integer(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .integer(let value) = storedValue else { return nil }
        self = value
    }
    /// ``StoredValue/integer(_:)``.
    @inlinable public var storedValue: StoredValue { .integer(self) }
}

extension Double: AttributeValue {
    /// ``AttributeType/double``.
    @inlinable public static var attributeType: AttributeType { .double }
    /// Reads a ``StoredValue/double(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .double(let value) = storedValue else { return nil }
        self = value
    }
    /// ``StoredValue/double(_:)``.
    @inlinable public var storedValue: StoredValue { .double(self) }
}

extension Float: AttributeValue {
    /// ``AttributeType/float``.
    @inlinable public static var attributeType: AttributeType { .float }
    /// Reads a ``StoredValue/double(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .double(let value) = storedValue else { return nil }
        self.init(value)
    }
    /// ``StoredValue/double(_:)`` (every `Float` is exactly representable as a `Double`).
    @inlinable public var storedValue: StoredValue { .double(Double(self)) }
}

extension String: AttributeValue {
    /// ``AttributeType/string``.
    @inlinable public static var attributeType: AttributeType { .string }
    /// Reads a ``StoredValue/string(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .string(let value) = storedValue else { return nil }
        self = value
    }
    /// ``StoredValue/string(_:)``.
    @inlinable public var storedValue: StoredValue { .string(self) }
}

extension Date: AttributeValue {
    /// ``AttributeType/date``.
    @inlinable public static var attributeType: AttributeType { .date }
    /// Reads a ``StoredValue/date(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .date(let value) = storedValue else { return nil }
        self = value
    }
    /// ``StoredValue/date(_:)``.
    @inlinable public var storedValue: StoredValue { .date(self) }
}

extension Data: AttributeValue {
    /// ``AttributeType/binaryData``.
    @inlinable public static var attributeType: AttributeType { .binaryData }
    /// Reads a ``StoredValue/data(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .data(let value) = storedValue else { return nil }
        self = value
    }
    /// ``StoredValue/data(_:)``.
    @inlinable public var storedValue: StoredValue { .data(self) }
}

extension UUID: AttributeValue {
    /// ``AttributeType/uuid``.
    @inlinable public static var attributeType: AttributeType { .uuid }
    /// Reads a ``StoredValue/uuid(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .uuid(let value) = storedValue else { return nil }
        self = value
    }
    /// ``StoredValue/uuid(_:)``.
    @inlinable public var storedValue: StoredValue { .uuid(self) }
}

extension URL: AttributeValue {
    /// ``AttributeType/uri``.
    @inlinable public static var attributeType: AttributeType { .uri }
    /// Reads a ``StoredValue/url(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .url(let value) = storedValue else { return nil }
        self = value
    }
    /// ``StoredValue/url(_:)``.
    @inlinable public var storedValue: StoredValue { .url(self) }
}

extension Decimal: AttributeValue {
    /// ``AttributeType/decimal``.
    @inlinable public static var attributeType: AttributeType { .decimal }
    /// Reads a ``StoredValue/decimal(_:)``.
    @inlinable
    public init?(storedValue: StoredValue) {
        guard case .decimal(let value) = storedValue else { return nil }
        self = value
    }
    /// ``StoredValue/decimal(_:)``.
    @inlinable public var storedValue: StoredValue { .decimal(self) }
}

extension Optional: AttributeValue where Wrapped: AttributeValue {
    /// The wrapped type's attribute type.
    @inlinable public static var attributeType: AttributeType { Wrapped.attributeType }
    /// Always `true`.
    @inlinable public static var isOptionalAttribute: Bool { true }
    /// `nil` from ``StoredValue/null``, otherwise the wrapped type's reading.
    @inlinable
    public init?(storedValue: StoredValue) {
        if case .null = storedValue {
            self = .none
            return
        }
        guard let value = Wrapped(storedValue: storedValue) else { return nil }
        self = .some(value)
    }
    /// ``StoredValue/null`` for `nil`, otherwise the wrapped value's stored form.
    @inlinable
    public var storedValue: StoredValue {
        switch self {
        case .none: return .null
        case .some(let value): return value.storedValue
        }
    }
}

/// Lets transformable (`Codable`) attributes recognise `nil` without knowing the wrapped type.
@usableFromInline
protocol _OptionalAttributeValue {
    var _isNil: Bool { get }
}

extension Optional: _OptionalAttributeValue {
    @usableFromInline
    var _isNil: Bool { self == nil }
}
