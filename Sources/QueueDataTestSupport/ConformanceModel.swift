import Foundation
import QueueData

/// A transformable value of the conformance model.
struct ConformancePayload: Codable, Hashable {
    var label: String
    var numbers: [Int]
}

/// An entity with an attribute of every type the stores must keep.
final class ConformanceItem: ManagedObject {
    @Attribute var flag: Bool = false
    @Attribute var int: Int = 0
    @Attribute var int16: Int16 = 0
    @Attribute var int32: Int32 = 0
    @Attribute var int64: Int64 = 0
    @Attribute var double: Double = 0
    @Attribute var float: Float = 0
    @Attribute var string: String = ""
    @Attribute var date: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var data: Data = Data()
    @Attribute var uuid: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    @Attribute var url: URL = URL(string: "https://example.com")!
    @Attribute var decimal: Decimal = 0
    @Attribute var optionalString: String? = nil
    @Attribute var optionalDate: Date? = nil
    @Attribute var payload: ConformancePayload = ConformancePayload(label: "", numbers: [])
    @Attribute var optionalPayload: ConformancePayload? = nil
    @Attribute var sequence: Int = 0
}

/// A second entity, so that stores keep entities apart.
final class ConformanceNote: ManagedObject {
    @Attribute var text: String = ""
    @Attribute var sequence: Int = 0
}

/// The same entity name with a different attribute: a model the store must refuse.
final class ConformanceNoteChanged: ManagedObject {
    override class var entityName: String { "ConformanceNote" }
    @Attribute var text: Int = 0
    @Attribute var sequence: Int = 0
}

/// The note with an added attribute and a renamed one: a model the store must migrate to, or
/// refuse without changing anything.
final class ConformanceNoteMigrated: ManagedObject {
    override class var entityName: String { "ConformanceNote" }
    @Attribute(originalName: "text") var body: String = ""
    @Attribute var sequence: Int = 0
    @Attribute var pinned: Bool = true
}

let conformanceModel = ManagedObjectModel([ConformanceItem.self, ConformanceNote.self])
let migratedConformanceModel = ManagedObjectModel([ConformanceItem.self, ConformanceNoteMigrated.self])
let incompatibleConformanceModel = ManagedObjectModel([ConformanceItem.self, ConformanceNoteChanged.self])

struct ConformanceDelegate: ContextManagerDelegate {
    let model: ManagedObjectModel
    let makeStore: @Sendable () throws -> any PersistentStore
    var tracksHistory = false

    var tracksPersistentHistory: Bool { tracksHistory }

    var managedObjectModel: ManagedObjectModel { model }
    var persistentStoreName: String { "Conformance" }
    var persistentStoreType: StoreType { .custom { _ in try makeStore() } }
}
