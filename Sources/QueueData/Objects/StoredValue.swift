import Foundation

/// One attribute value as a row stores it: a small, `Sendable` tagged union.
///
/// Rows are arrays of `StoredValue`s indexed by attribute (typed slots, not dictionaries).
/// Every integer width is stored as `.integer`, `Float` as `.double`, and `Codable` values
/// (transformable attributes) as their JSON encoding in `.data`. Custom stores read and write
/// rows in this form; ``AttributeType`` says which case an attribute holds.
public enum StoredValue: Sendable, Hashable {
    /// No value: only optional attributes hold it.
    case null
    /// A Boolean attribute.
    case bool(Bool)
    /// An integer attribute of any width (`Int`, `Int16`, `Int32`, `Int64`).
    case integer(Int64)
    /// A `Double` or `Float` attribute.
    case double(Double)
    /// A `String` attribute.
    case string(String)
    /// A `Date` attribute.
    case date(Date)
    /// A `Data` attribute, or the JSON encoding of a transformable (`Codable`) attribute.
    case data(Data)
    /// A `UUID` attribute.
    case uuid(UUID)
    /// A `URL` attribute.
    case url(URL)
    /// A `Decimal` attribute.
    case decimal(Decimal)

    /// Whether this is ``null``.
    @inlinable
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Whether `value` is the value stored at `pointer`, bit for bit where it matters:
    /// setting an attribute to the same value is not a change. (`0.0` and `-0.0` differ;
    /// `NaN` equals itself.) Switching on the new value first lets a specialized setter
    /// compare one payload without copying the stored value.
    @inlinable
    static func _isSame(_ value: StoredValue, at pointer: UnsafePointer<StoredValue>) -> Bool {
        switch value {
        case .integer(let new):
            if case .integer(let old) = pointer.pointee { return old == new }
            return false
        case .double(let new):
            if case .double(let old) = pointer.pointee { return old.bitPattern == new.bitPattern }
            return false
        case .bool(let new):
            if case .bool(let old) = pointer.pointee { return old == new }
            return false
        case .date(let new):
            if case .date(let old) = pointer.pointee {
                return old.timeIntervalSinceReferenceDate.bitPattern == new.timeIntervalSinceReferenceDate.bitPattern
            }
            return false
        case .null:
            return pointer.pointee.isNull
        default:
            return pointer.pointee == value
        }
    }

    /// Whether two values are the same, bit for bit where it matters (`0.0` and `-0.0`
    /// differ, `NaN` equals itself): the one notion of "changed" used by setters, saves,
    /// merges and ``ManagedObject/changedValues()``.
    static func isSame(_ lhs: StoredValue, _ rhs: StoredValue) -> Bool {
        switch (lhs, rhs) {
        case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern
        case (.date(let a), .date(let b)):
            return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        default: return lhs == rhs
        }
    }

    /// Whether `data` is exactly one JSON value: what a transformable attribute holds (the
    /// JSON store embeds it as it is).
    static func isSingleJSONValue(_ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            var scanner = JSONScanner(bytes)
            guard (try? scanner.skipValue()) != nil else { return false }
            scanner.skipWhitespace()
            return scanner.isAtEnd
        }
    }

    /// Whether the value holds no reference-counted payload (so overwriting it needs no
    /// release).
    @inlinable
    var _hasTrivialPayload: Bool {
        switch self {
        case .null, .bool, .integer, .double, .date: return true
        case .string, .data, .uuid, .url, .decimal: return false
        }
    }

    /// Whether this value can be stored in an attribute of the given type.
    ///
    /// `.null` fits only optional attributes.
    public func fits(_ type: AttributeType, isOptional: Bool) -> Bool {
        switch (self, type) {
        case (.null, _): return isOptional
        case (.bool, .boolean): return true
        case (.integer(let value), .integer16): return Int16(exactly: value) != nil
        case (.integer(let value), .integer32): return Int32(exactly: value) != nil
        case (.integer, .integer64): return true
        case (.double, .double): return true
        // A Float attribute reads its value as a Float: a finite value beyond Float's range
        // would read as infinity, which is not what the store holds.
        case (.double(let value), .float): return !value.isFinite || abs(value) <= Double(Float.greatestFiniteMagnitude)
        case (.string, .string): return true
        case (.date, .date): return true
        case (.data, .binaryData): return true
        case (.data(let data), .transformable): return Self.isSingleJSONValue(data)
        case (.uuid, .uuid): return true
        case (.url, .uri): return true
        case (.decimal, .decimal): return true
        default: return false
        }
    }
}

extension StoredValue: CustomStringConvertible {
    /// A short, human-readable form of the value, for messages and debugging.
    public var description: String {
        switch self {
        case .null: return "nil"
        case .bool(let value): return String(value)
        case .integer(let value): return String(value)
        case .double(let value): return String(value)
        case .string(let value): return String(reflecting: value)
        case .date(let value): return value.formatted(.iso8601)
        case .data(let value): return "\(value.count) bytes"
        case .uuid(let value): return value.uuidString
        case .url(let value): return value.absoluteString
        case .decimal(let value): return value.description
        }
    }
}

extension UnsafeMutablePointer where Pointee == StoredValue {
    /// Initializes `count` values here with copies of `source`'s, in a loop the compiler
    /// specializes for `StoredValue` (a retain of the payload where there is one), instead of
    /// the runtime's generic array copy, which calls the type's copy witness for each value.
    @inline(__always)
    func initializeStoredValues(from source: UnsafePointer<StoredValue>, count: Int) {
        for index in 0..<count {
            (self + index).initialize(to: source[index])
        }
    }

    /// Replaces `count` initialized values here with copies of `source`'s (see
    /// `initializeStoredValues(from:count:)`).
    @inline(__always)
    func updateStoredValues(from source: UnsafePointer<StoredValue>, count: Int) {
        for index in 0..<count {
            self[index] = source[index]
        }
    }
}
