import Foundation

/// A Swift type a row stores one value as, in place: the field type of one ``FieldKind``.
///
/// Rows are packed: each value is stored as its attribute's own Swift type (an `Int64` for an
/// integer attribute, a `String?` for an optional string), not as a ``StoredValue``, so that a
/// row of the benchmark's five columns takes 40 bytes instead of 96 and an attribute read is a
/// typed load. ``StoredValue`` stays the form rows take between stores, the coordinator and
/// user code; these conversions are exact both ways for every value that fits the attribute.
protocol RowField {
    /// The field for `value`, or `nil` if `value` does not fit the field's type exactly.
    init?(field value: StoredValue)
    /// The value in its stored form.
    var fieldValue: StoredValue { get }
    /// Whether two values are the same for change tracking, as ``StoredValue/isSame(_:_:)``
    /// says of their stored forms (`0.0` and `-0.0` differ, `NaN` is itself).
    static func isSameField(_ lhs: Self, _ rhs: Self) -> Bool
}

extension Bool: RowField {
    init?(field value: StoredValue) {
        guard case .bool(let bool) = value else { return nil }
        self = bool
    }
    var fieldValue: StoredValue { .bool(self) }
    static func isSameField(_ lhs: Bool, _ rhs: Bool) -> Bool { lhs == rhs }
}

extension Int16: RowField {
    init?(field value: StoredValue) {
        guard case .integer(let integer) = value, let exact = Int16(exactly: integer) else { return nil }
        self = exact
    }
    var fieldValue: StoredValue { .integer(Int64(self)) }
    static func isSameField(_ lhs: Int16, _ rhs: Int16) -> Bool { lhs == rhs }
}

extension Int32: RowField {
    init?(field value: StoredValue) {
        guard case .integer(let integer) = value, let exact = Int32(exactly: integer) else { return nil }
        self = exact
    }
    var fieldValue: StoredValue { .integer(Int64(self)) }
    static func isSameField(_ lhs: Int32, _ rhs: Int32) -> Bool { lhs == rhs }
}

extension Int64: RowField {
    init?(field value: StoredValue) {
        guard case .integer(let integer) = value else { return nil }
        self = integer
    }
    var fieldValue: StoredValue { .integer(self) }
    static func isSameField(_ lhs: Int64, _ rhs: Int64) -> Bool { lhs == rhs }
}

extension Double: RowField {
    init?(field value: StoredValue) {
        guard case .double(let double) = value else { return nil }
        self = double
    }
    var fieldValue: StoredValue { .double(self) }
    static func isSameField(_ lhs: Double, _ rhs: Double) -> Bool { lhs.bitPattern == rhs.bitPattern }
}

extension String: RowField {
    init?(field value: StoredValue) {
        guard case .string(let string) = value else { return nil }
        self = string
    }
    var fieldValue: StoredValue { .string(self) }
    static func isSameField(_ lhs: String, _ rhs: String) -> Bool { lhs == rhs }
}

extension Date: RowField {
    init?(field value: StoredValue) {
        guard case .date(let date) = value else { return nil }
        self = date
    }
    var fieldValue: StoredValue { .date(self) }
    static func isSameField(_ lhs: Date, _ rhs: Date) -> Bool {
        lhs.timeIntervalSinceReferenceDate.bitPattern == rhs.timeIntervalSinceReferenceDate.bitPattern
    }
}

extension Data: RowField {
    init?(field value: StoredValue) {
        guard case .data(let data) = value else { return nil }
        self = data
    }
    var fieldValue: StoredValue { .data(self) }
    static func isSameField(_ lhs: Data, _ rhs: Data) -> Bool { lhs == rhs }
}

extension UUID: RowField {
    init?(field value: StoredValue) {
        guard case .uuid(let uuid) = value else { return nil }
        self = uuid
    }
    var fieldValue: StoredValue { .uuid(self) }
    static func isSameField(_ lhs: UUID, _ rhs: UUID) -> Bool { lhs == rhs }
}

extension URL: RowField {
    init?(field value: StoredValue) {
        guard case .url(let url) = value else { return nil }
        self = url
    }
    var fieldValue: StoredValue { .url(self) }
    static func isSameField(_ lhs: URL, _ rhs: URL) -> Bool { lhs == rhs }
}

extension Decimal: RowField {
    init?(field value: StoredValue) {
        guard case .decimal(let decimal) = value else { return nil }
        self = decimal
    }
    var fieldValue: StoredValue { .decimal(self) }
    static func isSameField(_ lhs: Decimal, _ rhs: Decimal) -> Bool { lhs == rhs }
}

extension StoredValue: RowField {
    init?(field value: StoredValue) {
        self = value
    }
    var fieldValue: StoredValue { self }
    static func isSameField(_ lhs: StoredValue, _ rhs: StoredValue) -> Bool { isSame(lhs, rhs) }
}

extension Optional: RowField where Wrapped: RowField {
    init?(field value: StoredValue) {
        if case .null = value {
            self = .none
            return
        }
        guard let wrapped = Wrapped(field: value) else { return nil }
        self = .some(wrapped)
    }
    var fieldValue: StoredValue {
        switch self {
        case .none: return .null
        case .some(let wrapped): return wrapped.fieldValue
        }
    }
    static func isSameField(_ lhs: Wrapped?, _ rhs: Wrapped?) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none): return true
        case (.some(let lhs), .some(let rhs)): return Wrapped.isSameField(lhs, rhs)
        default: return false
        }
    }
}

/// What one field of a row holds: the Swift type its value is stored as.
///
/// Every attribute type has one kind and an optional one (`nil` is ``StoredValue/null``);
/// `Float` attributes are stored as `Double`s (what their stored form holds, so that a value a
/// store wrote is kept bit for bit), and transformable attributes and relationships as
/// ``StoredValue``s.
enum FieldKind: UInt8, Sendable, CaseIterable {
    case bool, int16, int32, int64, double, string, date, data, uuid, url, decimal
    case optionalBool, optionalInt16, optionalInt32, optionalInt64, optionalDouble, optionalString, optionalDate
    case optionalData, optionalUUID, optionalURL, optionalDecimal
    case storedValue

    /// The kind of field an attribute of `type` is stored in.
    init(_ type: AttributeType, isOptional: Bool) {
        switch (type, isOptional) {
        case (.boolean, false): self = .bool
        case (.boolean, true): self = .optionalBool
        case (.integer16, false): self = .int16
        case (.integer16, true): self = .optionalInt16
        case (.integer32, false): self = .int32
        case (.integer32, true): self = .optionalInt32
        case (.integer64, false): self = .int64
        case (.integer64, true): self = .optionalInt64
        case (.double, false), (.float, false): self = .double
        case (.double, true), (.float, true): self = .optionalDouble
        case (.string, false): self = .string
        case (.string, true): self = .optionalString
        case (.date, false): self = .date
        case (.date, true): self = .optionalDate
        case (.binaryData, false): self = .data
        case (.binaryData, true): self = .optionalData
        case (.uuid, false): self = .uuid
        case (.uuid, true): self = .optionalUUID
        case (.uri, false): self = .url
        case (.uri, true): self = .optionalURL
        case (.decimal, false): self = .decimal
        case (.decimal, true): self = .optionalDecimal
        case (.transformable, _): self = .storedValue
        }
    }

    /// Runs `operation` with the kind's field type: the one switch every field operation goes
    /// through, each case a call specialized for its type.
    @inline(__always)
    func dispatch<Operation: FieldOperation>(_ operation: Operation) -> Operation.Result {
        switch self {
        case .bool: return operation.run(Bool.self)
        case .int16: return operation.run(Int16.self)
        case .int32: return operation.run(Int32.self)
        case .int64: return operation.run(Int64.self)
        case .double: return operation.run(Double.self)
        case .string: return operation.run(String.self)
        case .date: return operation.run(Date.self)
        case .data: return operation.run(Data.self)
        case .uuid: return operation.run(UUID.self)
        case .url: return operation.run(URL.self)
        case .decimal: return operation.run(Decimal.self)
        case .optionalBool: return operation.run(Bool?.self)
        case .optionalInt16: return operation.run(Int16?.self)
        case .optionalInt32: return operation.run(Int32?.self)
        case .optionalInt64: return operation.run(Int64?.self)
        case .optionalDouble: return operation.run(Double?.self)
        case .optionalString: return operation.run(String?.self)
        case .optionalDate: return operation.run(Date?.self)
        case .optionalData: return operation.run(Data?.self)
        case .optionalUUID: return operation.run(UUID?.self)
        case .optionalURL: return operation.run(URL?.self)
        case .optionalDecimal: return operation.run(Decimal?.self)
        case .storedValue: return operation.run(StoredValue.self)
        }
    }

    /// The field type.
    var fieldType: any RowField.Type {
        struct TypeOf: FieldOperation {
            func run<Field: RowField>(_: Field.Type) -> any RowField.Type { Field.self }
        }
        return dispatch(TypeOf())
    }

    /// The field's size and alignment in bytes.
    var size: Int {
        struct Size: FieldOperation {
            func run<Field: RowField>(_: Field.Type) -> Int { MemoryLayout<Field>.size }
        }
        return dispatch(Size())
    }

    var alignment: Int {
        struct Alignment: FieldOperation {
            func run<Field: RowField>(_: Field.Type) -> Int { MemoryLayout<Field>.alignment }
        }
        return dispatch(Alignment())
    }

    /// Whether the field holds no reference-counted payload: copying it is copying bytes, and
    /// it needs no destruction.
    var isTrivial: Bool {
        struct Trivial: FieldOperation {
            func run<Field: RowField>(_: Field.Type) -> Bool { _isPOD(Field.self) }
        }
        return dispatch(Trivial())
    }
}

/// An operation generic over a field's type, run by ``FieldKind/dispatch(_:)``.
protocol FieldOperation {
    associatedtype Result
    func run<Field: RowField>(_ type: Field.Type) -> Result
}
