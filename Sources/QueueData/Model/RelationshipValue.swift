/// The types a ``Relationship`` can have: `Destination?` (to-one), `Set<Destination>`
/// (to-many) and `[Destination]` (ordered to-many), where `Destination` is a `ManagedObject`
/// subclass.
///
/// QueueData provides the conformances; the requirements are its own.
public protocol RelationshipValue {
    /// The class of the related objects.
    associatedtype Destination: ManagedObject
    /// Whether this is a to-many form.
    static var _isToMany: Bool { get }
    /// Whether this form keeps order.
    static var _isOrdered: Bool { get }
    /// The value for related objects (at most one for a to-one).
    init(_relatedObjects objects: [Destination])
    /// The related objects, in order.
    var _relatedObjects: [Destination] { get }
    /// The value for one related object or none (read by to-one forms without an array).
    init(_relatedObject object: Destination?)
    /// The related object of a to-one form (the first of a to-many one).
    var _relatedObject: Destination? { get }
}

extension RelationshipValue {
    /// The value for `object` alone, or for none.
    @inlinable
    public init(_relatedObject object: Destination?) {
        self.init(_relatedObjects: object.map { [$0] } ?? [])
    }

    /// The first related object.
    @inlinable
    public var _relatedObject: Destination? { _relatedObjects.first }
}

extension Optional: RelationshipValue where Wrapped: ManagedObject {
    /// The related class.
    public typealias Destination = Wrapped
    /// `false`: at most one object.
    public static var _isToMany: Bool { false }
    /// `false`.
    public static var _isOrdered: Bool { false }
    /// The first object, or `nil`.
    public init(_relatedObjects objects: [Wrapped]) { self = objects.first }
    /// The object, if any.
    public var _relatedObjects: [Wrapped] { map { [$0] } ?? [] }
    /// `object`.
    @inlinable
    public init(_relatedObject object: Wrapped?) { self = object }
    /// The object, if any.
    @inlinable
    public var _relatedObject: Wrapped? { self }
}

extension Set: RelationshipValue where Element: ManagedObject {
    /// The related class.
    public typealias Destination = Element
    /// `true`.
    public static var _isToMany: Bool { true }
    /// `false`: a set has no order.
    public static var _isOrdered: Bool { false }
    /// The set of `objects`.
    public init(_relatedObjects objects: [Element]) { self.init(objects) }
    /// The members.
    public var _relatedObjects: [Element] { Array(self) }
}

extension Array: RelationshipValue where Element: ManagedObject {
    /// The related class.
    public typealias Destination = Element
    /// `true`.
    public static var _isToMany: Bool { true }
    /// `true`: the order is kept.
    public static var _isOrdered: Bool { true }
    /// `objects`, in order.
    public init(_relatedObjects objects: [Element]) { self = objects }
    /// The elements, in order.
    public var _relatedObjects: [Element] { self }
}
