import Foundation
import Synchronization

/// The identity of a managed object in one store: `Sendable`, `Hashable` and `Codable`, so
/// it is what crosses queues (objects never do).
///
/// An inserted object has a temporary ID until its context saves; the save gives it a
/// permanent one (``isTemporaryID`` becomes `false`, and the object's ``ManagedObject/objectID``
/// changes, as in Core Data). Permanent IDs are never reused within a store.
///
/// The URI form is `x-queuedata://<store UUID>/<Entity>/p<key>` (temporary:
/// `.../t<n>`); `Codable` encodes that string.
public struct ObjectID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The entity and store this ID belongs to (shared by every ID of the entity).
    @usableFromInline
    let key: EntityKey
    /// The primary key when positive; a process-wide unique negative number for temporary IDs
    /// (`Int64.min` plus the count of temporary IDs handed out before, and this one).
    @usableFromInline
    let rawValue: Int64

    init(key: EntityKey, rawValue: Int64) {
        self.key = key
        self.rawValue = rawValue
    }

    /// A new temporary ID, unique in this process: `Int64.min` plus a count, so that each new
    /// one is greater than the last (a new object's key goes last in a to-many relationship's
    /// sorted keys) and every one is less than every primary key.
    static func temporary(for key: EntityKey) -> ObjectID {
        ObjectID(key: key, rawValue: temporaryRawValue())
    }

    /// The raw value of a new temporary ID (see ``temporary(for:)``).
    static func temporaryRawValue() -> Int64 {
        Int64.min + temporaryIDCounter.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Whether the object has not been saved yet.
    public var isTemporaryID: Bool { rawValue < 0 }

    /// The name of the object's entity.
    public var entityName: String { key.entityName }

    /// The UUID of the store the object lives in.
    public var storeIdentifier: UUID { key.storeIdentifier }

    /// The primary key in the store, or `nil` for a temporary ID.
    public var primaryKey: Int64? { rawValue > 0 ? rawValue : nil }

    /// A URI that identifies the object: `x-queuedata://<store UUID>/<Entity>/p<key>`.
    ///
    /// Round-trips through ``init(uriRepresentation:)``; keep it to find the object again in a
    /// later run (permanent IDs only: temporary ones die with their context).
    public var uriRepresentation: URL {
        var components = URLComponents()
        components.scheme = Self.uriScheme
        components.host = key.storeIdentifier.uuidString
        components.path = "/\(key.entityName)/\(rawValue < 0 ? "t\(rawValue - Int64.min)" : "p\(rawValue)")"
        return components.url!
    }

    /// Reads an ID back from its ``uriRepresentation``; `nil` if the URI is not one.
    public init?(uriRepresentation uri: URL) {
        guard let components = URLComponents(url: uri, resolvingAgainstBaseURL: false),
            components.scheme == Self.uriScheme,
            let host = components.host, let store = UUID(uuidString: host)
        else { return nil }
        let parts = components.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].isEmpty, !parts[1].isEmpty, let tag = parts[2].first,
            let number = Int64(parts[2].dropFirst()), number > 0
        else { return nil }
        switch tag {
        case "p": rawValue = number
        case "t": rawValue = Int64.min + number
        default: return nil
        }
        key = EntityKey(entityName: String(parts[1]), storeIdentifier: store, entityIndex: nil)
    }

    static let uriScheme = "x-queuedata"

    /// Equal when the store, entity and key are equal.
    @inlinable
    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.rawValue == rhs.rawValue && (lhs.key === rhs.key || lhs.key.isSameEntity(as: rhs.key))
    }

    /// Hashes the store, entity and key.
    @inlinable
    public func hash(into hasher: inout Hasher) {
        hasher.combine(rawValue)
        hasher.combine(key.hashValueOfIdentity)
    }

    /// Encodes the ``uriRepresentation`` as a string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uriRepresentation.absoluteString)
    }

    /// Decodes an ID from its URI string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let url = URL(string: string), let id = ObjectID(uriRepresentation: url) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(string)' is not an ObjectID URI")
        }
        self = id
    }

    /// The URI string.
    public var description: String {
        rawValue > 0 ? key.permanentURIPrefix + String(rawValue) : uriRepresentation.absoluteString
    }
}

/// The entity and store part of an ``ObjectID``, shared by all IDs of an entity in a store.
@usableFromInline
final class EntityKey: Sendable {
    let entityName: String
    let storeIdentifier: UUID
    /// The entity's index in the coordinator's model, when this key was made by it.
    let entityIndex: Int?
    /// The entity, when this key was made by a coordinator (or for a discovery prototype): the
    /// entity of every object whose ID has this key (objects keep the key, not the entity).
    let entity: EntityDescription?
    @usableFromInline
    let hashValueOfIdentity: Int

    /// The URI of this entity's permanent IDs up to the key: `x-queuedata://<store>/<Entity>/p`
    /// (built once, so that exports write millions of URIs without building a URL each).
    let permanentURIPrefix: String

    init(entityName: String, storeIdentifier: UUID, entityIndex: Int?, entity: EntityDescription? = nil) {
        self.entityName = entityName
        self.storeIdentifier = storeIdentifier
        self.entityIndex = entityIndex
        self.entity = entity
        var components = URLComponents()
        components.scheme = ObjectID.uriScheme
        components.host = storeIdentifier.uuidString
        components.path = "/\(entityName)/p"
        self.permanentURIPrefix =
            components.url?.absoluteString ?? "\(ObjectID.uriScheme)://\(storeIdentifier)/\(entityName)/p"
        var hasher = Hasher()
        hasher.combine(entityName)
        hasher.combine(storeIdentifier)
        self.hashValueOfIdentity = hasher.finalize()
    }

    @usableFromInline
    func isSameEntity(as other: EntityKey) -> Bool {
        entityName == other.entityName && storeIdentifier == other.storeIdentifier
    }
}

/// Hands out temporary IDs; atomic, since contexts on any queue insert objects.
private let temporaryIDCounter = Atomic<Int64>(0)
