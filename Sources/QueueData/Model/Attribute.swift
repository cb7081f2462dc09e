public import CQueueDataShims
import Foundation

/// Declares a persistent attribute of a ``ManagedObject`` subclass.
///
/// ```swift
/// final class Destination: ManagedObject {
///     @Attribute var name: String = ""
///     @Attribute var visited: Date? = nil
///     @Attribute var rating: Int = 0
/// }
/// ```
///
/// The declaration's initial value is the attribute's default: new objects start with it.
/// Native types (see ``AttributeValue``) are stored as typed slots; any other `Codable`
/// type is stored as JSON (a transformable attribute). Every attribute must be declared with
/// an initial value (optionals may write `= nil`), so that ``ManagedObjectModel`` can
/// discover it.
///
/// Reading or writing an attribute checks that the caller runs on the object's context's
/// queue and traps otherwise. Inside `perform`/`performAndWait` the check is a thread-local
/// comparison; on the queue but outside those blocks it costs a `DispatchQueue.getSpecific`.
/// Setting a value equal to the current one changes nothing (the object is not marked updated).
@propertyWrapper
public struct Attribute<Value: Codable> {
    /// The byte offset of the attribute's field in its object's row (see ``RowLayout``), handed
    /// out in declaration order while the object is constructed. (The attribute's slot, which
    /// the slower paths need, is the layout's for this offset: an object keeps two bytes per
    /// attribute.)
    @usableFromInline
    let offset: UInt16

    /// Declares an attribute whose default is `defaultValue`.
    ///
    /// The default is evaluated once, when the model discovers the class (Core Data's
    /// defaults are static too): `= UUID()` gives every new object the same UUID. Set a value
    /// of each object's own in ``ManagedObject/awakeFromInsert()``.
    ///
    /// - Parameters:
    ///   - defaultValue: The value new objects start with (and migration gives existing rows
    ///     when the attribute is added).
    ///   - originalName: The attribute's name in stores written before it was renamed (its
    ///     first name, when renamed more than once):
    ///     migration carries its values over.
    @inlinable
    public init(wrappedValue defaultValue: Value, originalName: String? = nil) {
        // Inlined into the subclass's initializer: an object under construction takes its slot
        // and its field's offset with one call; only a model discovering the class records the
        // declaration.
        let field = _attributeFieldUnlessRecording(isTransient: false)
        if field >= 0 {
            offset = UInt16(truncatingIfNeeded: field >> 16)
        } else {
            _ = Self._declare(defaultValue, options: [], originalName: originalName, transform: nil, validate: nil)
            offset = 0
        }
    }

    /// Declares an attribute with options, such as ``AttributeOptions/unique``.
    ///
    /// ```swift
    /// @Attribute(.unique) var email: String = ""
    /// ```
    ///
    /// - Parameters:
    ///   - defaultValue: The value new objects start with.
    ///   - options: What else the attribute is: ``AttributeOptions/unique``.
    ///   - originalName: The attribute's name in stores written before it was renamed.
    @inlinable
    public init(wrappedValue defaultValue: Value, _ options: AttributeOptions, originalName: String? = nil) {
        let field = _attributeFieldUnlessRecording(isTransient: options.contains(.transient))
        if field >= 0 {
            offset = UInt16(truncatingIfNeeded: field >> 16)
        } else {
            _ = Self._declare(
                defaultValue, options: options, originalName: originalName, transform: nil, validate: nil)
            offset = 0
        }
    }

    /// Takes the attribute's slot and, while a model discovers the class, records the
    /// declaration. (The declarations that call it directly, those with a transform or a
    /// validation closure, take their field's offset with ``_fieldOffset(of:)``.)
    @usableFromInline
    static func _declare(
        _ defaultValue: Value,
        options: AttributeOptions,
        originalName: String?,
        transform: (@Sendable (StoredValue) throws -> StoredValue)?,
        validate: (@Sendable (StoredValue) throws -> Void)?
    ) -> UInt16 {
        let isTransient = options.contains(.transient)
        let slot = UInt16(truncatingIfNeeded: isTransient ? qd_transient_slot_take() : qd_attribute_slot_take())
        if let recorder = AttributeRecorder.current {
            recorder.record(
                Value.self, defaultValue: Result { try Self._encodeChecked(defaultValue) }, originalName: originalName,
                transform: transform, validate: validate,
                decodingCheck: DecodingCheck { stored in _ = try Self._decodeDetached(stored) }.run,
                isUnique: options.contains(.unique), isIndexed: options.contains(.indexed), isTransient: isTransient)
        }
        return slot
    }

    /// The value of a stored form, outside any object (for validation closures).
    static func _decodeDetached(_ stored: StoredValue) throws -> Value {
        if let native = Value.self as? any AttributeValue.Type {
            guard let value = _decodeNative(native, stored) else {
                throw ModelError(.invalidDefaultValue, "\(stored) is not a \(Value.self)")
            }
            return value
        }
        let json: Data
        switch stored {
        case .null: json = Data("null".utf8)
        case .data(let data): json = data
        default: throw ModelError(.invalidDefaultValue, "\(stored) is not a \(Value.self)")
        }
        return try TransformableCoding.decoder().decode(Value.self, from: json)
    }

    /// Not available: attributes live in their object's row, reached through the enclosing
    /// ``ManagedObject``.
    @available(*, unavailable, message: "@Attribute can only be declared in a ManagedObject subclass")
    public var wrappedValue: Value {
        get { fatalError("unreachable") }
        // swift-format-ignore
        set { fatalError("unreachable") }
    }

    /// Reads and writes the attribute in the enclosing object's row.
    @inlinable
    public static subscript<EnclosingSelf: ManagedObject>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Attribute<Value>>
    ) -> Value {
        // Always inlined, so that the storage key path folds into a direct field access
        // everywhere, key-path thunks included: a key path to the storage that escapes makes
        // the optimizer keep a dynamic exclusivity check on every access (≈ 8 ns).
        // Values of QueueData's own attribute types (`_StoredInRow`) are typed fields of the
        // row: a get is one load of the field at the attribute's offset. Other types go through
        // their stored form.
        //
        // A set of a row-typed attribute does everything but its fast path (inside the context's
        // own block, a value without references, a change needing no bookkeeping) in one call out
        // of line, which takes the object and the offset: a loop of sets then keeps what it needs
        // in registers across that call, instead of saving it on the stack around it. (The same
        // for a get saved little, and made the optimizer retain a string it returns.)
        @inline(__always) get {
            object._checkConfined()
            let attribute = object[keyPath: storageKeyPath]
            if Value.self is any _StoredInRow.Type {
                return _load(object._row + Int(attribute.offset))
            }
            let slot = object._slot(atOffset: Int(attribute.offset))
            return _decode(object._value(at: slot), object: object, slot: slot)
        }
        @inline(__always) set {
            let attribute = object[keyPath: storageKeyPath]
            if Value.self is any _StoredInRow.Type {
                if _isPOD(Value.self), _fastPath(object._confinement._isMarkedCurrent()),
                    _fastPath(object._canChangeWithoutRegistering)
                {
                    // The common case, inline: no bookkeeping, nothing to release, the object owns
                    // its row (`_canChangeWithoutRegistering` says so). Storing a value equal to
                    // the one there changes nothing either.
                    UnsafeMutableRawPointer(mutating: object._row).storeBytes(
                        of: newValue, toByteOffset: Int(attribute.offset), as: Value.self)
                    return
                }
                _checkedStore(newValue, in: object, offset: attribute.offset)
                return
            }
            object._confinement.check(object._subjectDescription)
            let slot = object._slot(atOffset: Int(attribute.offset))
            object._setValue(_encode(newValue, object: object, slot: slot), at: slot)
        }
    }

    /// A set of a row-typed attribute outside the fast path: checks the confinement (trapping
    /// off the queue), then stores the value with whatever bookkeeping it needs.
    @inlinable @inline(never)
    static func _checkedStore(_ value: Value, in object: ManagedObject, offset: UInt16) {
        object._confinement.check(object._subjectDescription)
        _store(value, in: object, offset: Int(offset))
    }

    /// The value of the field at `field`, of an `_StoredInRow` type: laid out as `Value`.
    @inlinable @inline(__always)
    static func _load(_ field: UnsafeRawPointer) -> Value {
        field.load(as: Value.self)
    }

    /// Sets the field at `offset` of `object`'s row to `value`, of an `_StoredInRow` type:
    /// nothing if it holds the same value; inline when the object needs no bookkeeping and the
    /// field holds no references; otherwise through `_prepareToWrite`, which registers the
    /// change and gives the object a row of its own.
    @inlinable @inline(__always)
    static func _store(_ value: Value, in object: ManagedObject, offset: Int) {
        if _isSameStored(object._row.load(fromByteOffset: offset, as: Value.self), value) {
            return
        }
        if _isPOD(Value.self) && object._canChangeWithoutRegistering {
            // The common case, inline: no bookkeeping, nothing to release. (Any call here
            // would make the optimizer retain and release the object around every set.) The
            // object owns its row: `_canChangeWithoutRegistering` says so.
            UnsafeMutableRawPointer(mutating: object._row).storeBytes(of: value, toByteOffset: offset, as: Value.self)
        } else if _isPOD(Value.self) {
            object._prepareToWrite(offset: offset).storeBytes(of: value, toByteOffset: offset, as: Value.self)
        } else {
            (object._prepareToWrite(offset: offset) + offset).assumingMemoryBound(to: Value.self).pointee = value
        }
    }

    @inlinable
    static func _decode(_ stored: StoredValue, object: ManagedObject, slot: Int) -> Value {
        // After specialization for a native type, the cast folds away and this is one switch.
        if let native = Value.self as? any AttributeValue.Type {
            guard let value = _decodeNative(native, stored) else {
                object._trapUndecodable(slot: slot, stored: stored, error: nil)
            }
            return value
        }
        return _decodeTransformable(stored, object: object, slot: slot)
    }

    @inlinable
    static func _decodeNative<Native: AttributeValue>(_: Native.Type, _ stored: StoredValue) -> Value? {
        Native(storedValue: stored).map { $0 as! Value }
    }

    @inlinable
    static func _encode(_ value: Value, object: ManagedObject, slot: Int) -> StoredValue {
        if let native = Value.self as? any AttributeValue.Type {
            return _encodeNative(native, value)
        }
        do {
            return try _encodeChecked(value)
        } catch {
            object._trapUnencodable(slot: slot, error: error)
        }
    }

    @inlinable
    static func _encodeNative<Native: AttributeValue>(_: Native.Type, _ value: Value) -> StoredValue {
        (value as! Native).storedValue
    }

    @usableFromInline
    static func _decodeTransformable(_ stored: StoredValue, object: ManagedObject, slot: Int) -> Value {
        let json: Data
        switch stored {
        case .null: json = Data("null".utf8)
        case .data(let data): json = data
        default: object._trapUndecodable(slot: slot, stored: stored, error: nil)
        }
        do {
            return try TransformableCoding.decoder().decode(Value.self, from: json)
        } catch {
            object._trapUndecodable(slot: slot, stored: stored, error: error)
        }
    }

    /// The stored form of any value, native or transformable.
    @usableFromInline
    static func _encodeChecked(_ value: Value) throws -> StoredValue {
        if let native = Value.self as? any AttributeValue.Type {
            return _encodeNative(native, value)
        }
        if let optional = value as? any _OptionalAttributeValue, optional._isNil {
            return .null
        }
        return .data(try TransformableCoding.encoder().encode(value))
    }
}

extension Attribute where Value: SendableMetatype {
    /// Declares an attribute whose default is `defaultValue`, with a migration transform.
    ///
    /// - Parameters:
    ///   - defaultValue: The value new objects start with.
    ///   - originalName: The attribute's name in stores written before it was renamed.
    ///   - transform: How migration converts a stored value of another type (or optionality)
    ///     into this attribute's type; needed only where the conversion would lose
    ///     information (a `String` becoming an `Int`, say). Throwing fails the migration.
    public init(
        wrappedValue defaultValue: Value,
        originalName: String? = nil,
        transform: @escaping @Sendable (StoredValue) throws -> Value
    ) {
        let slot = Self._declare(
            defaultValue, options: [], originalName: originalName,
            transform: { @Sendable old in try Self._encodeChecked(transform(old)) }, validate: nil)
        offset = Self._fieldOffset(of: slot)
    }

    /// Declares an attribute with a validation closure: `save()` calls it with the value of
    /// every inserted and updated object, and a throw makes the save fail with a
    /// ``ValidationError`` naming the object, the attribute and the error.
    ///
    /// ```swift
    /// @Attribute(validate: { email in
    ///     guard email.contains("@") else { throw InvalidEmail() }
    /// })
    /// var email: String = ""
    /// ```
    ///
    /// - Parameters:
    ///   - defaultValue: The value new objects start with.
    ///   - options: What else the attribute is: ``AttributeOptions/unique``.
    ///   - originalName: The attribute's name in stores written before it was renamed.
    ///   - validate: Throws if a value may not be saved.
    public init(
        wrappedValue defaultValue: Value,
        _ options: AttributeOptions = [],
        originalName: String? = nil,
        validate: @escaping @Sendable (Value) throws -> Void
    ) {
        let slot = Self._declare(
            defaultValue, options: options, originalName: originalName, transform: nil,
            validate: { @Sendable stored in try validate(try Self._decodeDetached(stored)) })
        offset = Self._fieldOffset(of: slot)
    }

    /// Declares an attribute with a migration transform and a validation closure.
    ///
    /// - Parameters:
    ///   - defaultValue: The value new objects start with.
    ///   - options: What else the attribute is: ``AttributeOptions/unique``.
    ///   - originalName: The attribute's name in stores written before it was renamed.
    ///   - transform: How migration converts a stored value of another type.
    ///   - validate: Throws if a value may not be saved.
    public init(
        wrappedValue defaultValue: Value,
        _ options: AttributeOptions = [],
        originalName: String? = nil,
        transform: @escaping @Sendable (StoredValue) throws -> Value,
        validate: @escaping @Sendable (Value) throws -> Void
    ) {
        let slot = Self._declare(
            defaultValue, options: options, originalName: originalName,
            transform: { @Sendable old in try Self._encodeChecked(transform(old)) },
            validate: { @Sendable stored in try validate(try Self._decodeDetached(stored)) })
        offset = Self._fieldOffset(of: slot)
    }
}

/// What else an attribute is, beyond its type and default.
public struct AttributeOptions: OptionSet, Sendable, Hashable {
    /// The options' bits.
    public let rawValue: Int

    /// Creates options from their bits.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// No two objects of the entity (and its subentities) may hold the same value: a save
    /// that would create a duplicate is a constraint conflict, which the merge policy settles
    /// (see ``MergePolicy``: ``MergePolicy/error`` throws, the others upsert an inserted
    /// duplicate into the existing object). `nil` is not a value: any number of objects may
    /// leave an optional unique attribute unset. For combinations of attributes, override
    /// ``ManagedObject/uniquenessConstraints``.
    public static let unique = AttributeOptions(rawValue: 1 << 0)

    /// The attribute lives only in memory, as Core Data's transient attributes do: setting it
    /// is a change like any other (the object becomes updated, and ``ManagedObjectContext/objectsDidChangeNotification``
    /// reports it), but it is never stored, never merged into other contexts, and not part of the
    /// model's version hash (adding or removing one needs no migration). A fetched object starts
    /// with the default; a save keeps the value in the saving context's object;
    /// ``ManagedObjectContext/refresh(_:mergeChanges:)`` with `mergeChanges: false` and
    /// ``ManagedObjectContext/rollback()`` put the default back. It cannot be unique, and
    /// ``ManagedObject/changedValues()`` (persistent attributes) leaves it out.
    ///
    /// ```swift
    /// @Attribute(.transient) var isSelected: Bool = false
    /// ```
    public static let transient = AttributeOptions(rawValue: 1 << 1)

    /// The committed rows are indexed by the attribute's value, so that a fetch that requires
    /// it to equal a value or one of a list of values
    /// (``FetchRequest/init(where:equals:predicate:sortBy:)``,
    /// ``FetchRequest/init(where:in:predicate:sortBy:)-(_,[Value],_,_)``), to lie in a range
    /// (``FetchRequest/init(where:in:predicate:sortBy:)-(_,ClosedRange<Value>,_,_)`` and the
    /// other range forms) or to start with a prefix
    /// (``FetchRequest/init(where:startsWith:predicate:sortBy:)``) finds the matching rows
    /// without scanning the others. Unique attributes are indexed too. The index lives in memory, is
    /// built when the store opens and follows every save; it is not part of the model's version
    /// hash (adding or removing it needs no migration). A transient or transformable attribute
    /// cannot be indexed. See "Indexes" in <doc:GettingStarted>.
    ///
    /// ```swift
    /// @Attribute(.indexed) var country: String = ""
    /// ```
    public static let indexed = AttributeOptions(rawValue: 1 << 2)
}

/// The next slot of the object under construction on this thread (a transient slot, or a
/// persistent one), taken, with its field's byte offset in the object's row: `slot | offset <<
/// 16`; or -1, taking nothing, while a model records this thread's declarations (the attribute
/// then declares itself through `Attribute._declare`).
@inlinable @inline(__always)
func _attributeFieldUnlessRecording(isTransient: Bool) -> Int {
    // Inlined into every subclass's initializer: a thread-local read and an increment, without
    // a call per attribute of every object made.
    qd_attribute_field_take(isTransient)
}

extension Attribute {
    /// The byte offset of `slot`'s field in the row of the object under construction.
    @usableFromInline
    static func _fieldOffset(of slot: UInt16) -> UInt16 {
        UInt16(truncatingIfNeeded: qd_field_offset(Int(slot)))
    }
}

extension Attribute where Value: ExpressibleByNilLiteral {
    /// Declares an optional attribute whose default is `nil`.
    ///
    /// - Parameter originalName: The attribute's name in stores written before it was renamed.
    @inlinable
    public init(originalName: String? = nil) {
        self.init(wrappedValue: nil, originalName: originalName)
    }
}

/// Whether a stored value decodes as an attribute's declared type: run when a store opens, on
/// the thread that opens it.
///
/// `@unchecked Sendable`: the closure captures nothing but the attribute's value type (a
/// metatype, immutable), and decoding a `Codable` type from bytes touches no shared state.
/// Attributes of every type need the check, not only those whose metatype is `Sendable`.
struct DecodingCheck: @unchecked Sendable {
    let check: (StoredValue) throws -> Void

    init(_ check: @escaping (StoredValue) throws -> Void) {
        self.check = check
    }

    /// The check as a `@Sendable` closure.
    var run: @Sendable (StoredValue) throws -> Void {
        { @Sendable [self] stored in try check(stored) }
    }
}

/// The JSON coders of transformable attributes: sorted keys, so that equal values encode to
/// equal bytes (setting an equal value is then not a change), and non-finite floating-point
/// numbers as strings rather than encoding errors.
enum TransformableCoding {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "+Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        encoder.dateEncodingStrategy = .deferredToDate
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "+Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return decoder
    }
}
