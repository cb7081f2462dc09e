internal import CQueueDataShims

/// Declares a relationship of a ``ManagedObject`` subclass: to-one (`Trip?`), to-many
/// (`Set<Destination>`) or ordered to-many (`[Destination]`), with an inverse on the
/// destination that points back.
///
/// ```swift
/// final class Trip: ManagedObject {
///     @Attribute var title: String = ""
///     @Relationship(inverse: "trip", deleteRule: .cascade) var stops: Set<Stop>
/// }
///
/// final class Stop: ManagedObject {
///     @Attribute var name: String = ""
///     @Relationship(inverse: "stops") var trip: Trip?
/// }
/// ```
///
/// Setting one side updates the inverse in the same context at once (`stop.trip = trip`
/// adds `stop` to `trip.stops`, and removes it from its previous trip's). Related objects are
/// loaded when first read, not with the object. Stores keep relationships as the related
/// objects' primary keys. Like attributes, relationships are read and written only on the
/// context's queue; assigning an object of another context, or of an unrelated entity, traps.
@propertyWrapper
public struct Relationship<Value: RelationshipValue> {
    /// The index of this relationship among its object's relationships, handed out in
    /// declaration order while the object is constructed.
    @usableFromInline
    let slot: UInt16

    /// Declares a relationship.
    ///
    /// - Parameters:
    ///   - inverse: The name of the inverse relationship on the destination class (required:
    ///     the model refuses a relationship whose inverse does not point back).
    ///   - deleteRule: What deleting this object does to the related objects (default
    ///     ``DeleteRule/nullify``).
    ///   - isOptional: For a to-one relationship, whether it may be `nil` when saved.
    ///   - minCount: For a to-many relationship, the fewest objects a save accepts.
    ///   - maxCount: For a to-many relationship, the most objects a save accepts.
    ///   - originalName: The relationship's name in stores written before it was renamed.
    public init(
        inverse: String,
        deleteRule: DeleteRule = .nullify,
        isOptional: Bool = true,
        minCount: Int = 0,
        maxCount: Int? = nil,
        originalName: String? = nil
    ) {
        slot = UInt16(truncatingIfNeeded: qd_relationship_slot_take())
        if let recorder = AttributeRecorder.current {
            recorder.record(
                AttributeRecorder.RelationshipDeclaration(
                    destination: Value.Destination.self, isToMany: Value._isToMany, isOrdered: Value._isOrdered,
                    inverse: inverse, deleteRule: deleteRule, isOptional: isOptional, minCount: minCount,
                    maxCount: maxCount, originalName: originalName))
        }
    }

    /// Not available: relationships live in their object's row, reached through the
    /// enclosing ``ManagedObject``.
    @available(*, unavailable, message: "@Relationship can only be declared in a ManagedObject subclass")
    public var wrappedValue: Value {
        get { fatalError("unreachable") }
        // swift-format-ignore
        set { fatalError("unreachable") }
    }

    /// Reads and writes the relationship in the enclosing object's row.
    ///
    /// Inlined, so that the storage key path folds into a load of `slot` (a key path
    /// projection costs hundreds of instructions); a to-one relationship is read and set as one
    /// object, with no array made for it.
    @inlinable
    public static subscript<EnclosingSelf: ManagedObject>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Relationship<Value>>
    ) -> Value {
        @inline(__always) get {
            object._checkConfined()
            let slot = Int(object[keyPath: storageKeyPath].slot)
            if !Value._isToMany {
                return Value(
                    _relatedObject: object._relatedObject(relationshipSlot: slot).map { $0 as! Value.Destination })
            }
            return Value(
                _relatedObjects: object._relatedObjects(relationshipSlot: slot).map { $0 as! Value.Destination })
        }
        @inline(__always) set {
            object._checkConfined()
            let slot = Int(object[keyPath: storageKeyPath].slot)
            if !Value._isToMany {
                object._setRelatedObject(newValue._relatedObject, relationshipSlot: slot)
            } else {
                object._setRelatedObjects(newValue._relatedObjects, relationshipSlot: slot)
            }
        }
    }
}
