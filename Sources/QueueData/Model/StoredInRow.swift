import Foundation

/// An attribute type whose values a row holds in place, laid out as the type itself: reading
/// an ``Attribute`` of such a type is one typed load from the object's row, writing one is a
/// typed store.
///
/// QueueData's own attribute types conform (`Bool`, `Int`, `Int16`, `Int32`, `Int64`, `Double`,
/// `String`, `Date`, `Data`, `UUID`, `URL`, `Decimal`, and their optionals): each is stored as
/// itself (`Int` as an `Int64`, the same bits). An implementation detail of ``Attribute``, public
/// only so that its accessors can be inlined: don't conform your own types (they are stored
/// through ``AttributeValue``); a model refuses a type of another module that does.
public protocol _StoredInRow: AttributeValue {}

extension Bool: _StoredInRow {}
extension Int: _StoredInRow {}
extension Int16: _StoredInRow {}
extension Int32: _StoredInRow {}
extension Int64: _StoredInRow {}
extension Double: _StoredInRow {}
extension String: _StoredInRow {}
extension Date: _StoredInRow {}
extension Data: _StoredInRow {}
extension UUID: _StoredInRow {}
extension URL: _StoredInRow {}
extension Decimal: _StoredInRow {}
extension Optional: _StoredInRow where Wrapped: _StoredInRow {}

extension Attribute {
    /// Whether two values of an `_StoredInRow` type are the same for change tracking (`0.0`
    /// and `-0.0` differ, `NaN` is itself), as ``StoredValue/isSame(_:_:)`` says of their
    /// stored forms: setting an attribute to the same value is not a change.
    ///
    /// One branch per type, each a comparison of metatypes that folds away once `Value` is
    /// known: what is left is the comparison of one type (a protocol requirement called
    /// through the existential `Value.self as? any _StoredInRow.Type` kept a dynamic cast).
    @inlinable @inline(__always)
    static func _isSameStored(_ lhs: Value, _ rhs: Value) -> Bool {
        func same<T: Equatable>(_: T.Type) -> Bool {
            unsafeBitCast(lhs, to: T.self) == unsafeBitCast(rhs, to: T.self)
        }
        if Value.self == Double.self {
            return unsafeBitCast(lhs, to: Double.self).bitPattern == unsafeBitCast(rhs, to: Double.self).bitPattern
        }
        if Value.self == Date.self {
            return unsafeBitCast(lhs, to: Date.self).timeIntervalSinceReferenceDate.bitPattern
                == unsafeBitCast(rhs, to: Date.self).timeIntervalSinceReferenceDate.bitPattern
        }
        if Value.self == Double?.self {
            return unsafeBitCast(lhs, to: Double?.self)?.bitPattern == unsafeBitCast(rhs, to: Double?.self)?.bitPattern
        }
        if Value.self == Date?.self {
            return unsafeBitCast(lhs, to: Date?.self)?.timeIntervalSinceReferenceDate.bitPattern
                == unsafeBitCast(rhs, to: Date?.self)?.timeIntervalSinceReferenceDate.bitPattern
        }
        if Value.self == Int.self { return same(Int.self) }
        if Value.self == String.self { return same(String.self) }
        if Value.self == Bool.self { return same(Bool.self) }
        if Value.self == Int64.self { return same(Int64.self) }
        if Value.self == Int32.self { return same(Int32.self) }
        if Value.self == Int16.self { return same(Int16.self) }
        if Value.self == Data.self { return same(Data.self) }
        if Value.self == UUID.self { return same(UUID.self) }
        if Value.self == URL.self { return same(URL.self) }
        if Value.self == Decimal.self { return same(Decimal.self) }
        if Value.self == Int?.self { return same(Int?.self) }
        if Value.self == String?.self { return same(String?.self) }
        if Value.self == Bool?.self { return same(Bool?.self) }
        if Value.self == Int64?.self { return same(Int64?.self) }
        if Value.self == Int32?.self { return same(Int32?.self) }
        if Value.self == Int16?.self { return same(Int16?.self) }
        if Value.self == Data?.self { return same(Data?.self) }
        if Value.self == UUID?.self { return same(UUID?.self) }
        if Value.self == URL?.self { return same(URL?.self) }
        if Value.self == Decimal?.self { return same(Decimal?.self) }
        preconditionFailure("QueueData: \(Value.self) is not stored in rows as itself")
    }
}

/// Whether `type` is stored in rows as the type itself: `Value` of an `_StoredInRow` attribute
/// must be laid out exactly as its attribute's field (the model checks it at discovery).
func isLaidOutAsField(_ type: Any.Type, _ kind: FieldKind) -> Bool {
    let field = kind.fieldType
    if ObjectIdentifier(type) == ObjectIdentifier(field) {
        return true
    }
    // `Int` is stored as an `Int64`: the same size and bits on 64-bit platforms.
    return (type == Int.self && field == Int64.self && MemoryLayout<Int>.size == MemoryLayout<Int64>.size)
        || (type == Int?.self && field == Int64?.self && MemoryLayout<Int?>.size == MemoryLayout<Int64?>.size)
}
