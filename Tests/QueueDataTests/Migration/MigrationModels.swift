import Foundation
import QueueData

// Two versions of one model. Version 1 wrote the fixture stores in `Fixtures/`; version 2 is
// the current model they migrate to, exercising every inferred rule at once.

final class PlaceV1: ManagedObject {
    override class var entityName: String { "Place" }
    @Attribute var name: String = ""
    @Attribute var country: String = ""
    @Attribute var stars: Int16 = 0
    @Attribute var population: Int32? = nil
    @Attribute var visited: Bool = false
    @Attribute var notes: String? = nil
    @Attribute var founded: Date = Date(timeIntervalSince1970: 0)
    @Attribute var code: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
}

final class JourneyV1: ManagedObject {
    override class var entityName: String { "Journey" }
    @Attribute var title: String = ""
    @Attribute var days: Int = 0
    @Attribute var cost: Float = 0
}

final class LegacyV1: ManagedObject {
    override class var entityName: String { "Legacy" }
    @Attribute var payload: Data = Data()
}

let modelV1 = ManagedObjectModel([PlaceV1.self, JourneyV1.self, LegacyV1.self])

final class PlaceV2: ManagedObject {
    override class var entityName: String { "Place" }
    @Attribute var name: String = ""
    /// Renamed.
    @Attribute(originalName: "country") var countryName: String = ""
    /// Widened from Int16.
    @Attribute var stars: Int64 = 0
    /// Int32? to Double?.
    @Attribute var population: Double? = nil
    /// Bool to Int.
    @Attribute var visited: Int = 0
    /// Optional to non-optional, with a default.
    @Attribute var notes: String = "(none)"
    /// Date to String.
    @Attribute var founded: String = ""
    /// Added.
    @Attribute var rating: Double = 2.5
    /// Added, optional.
    @Attribute var tags: String? = nil
    // `code` was removed.
}

/// `Journey`, renamed.
final class VoyageV2: ManagedObject {
    override class var entityName: String { "Voyage" }
    override class var originalEntityName: String? { "Journey" }
    @Attribute var title: String = ""
    @Attribute var days: Int = 0
    /// Float to Double.
    @Attribute var cost: Double = 0
}

/// Added.
final class ReviewV2: ManagedObject {
    override class var entityName: String { "Review" }
    @Attribute var text: String = ""
}

// `Legacy` was removed.
let modelV2 = ManagedObjectModel([PlaceV2.self, VoyageV2.self, ReviewV2.self])

/// Writes version 1's rows, over several saves (so that a journal holds a snapshot and change
/// records): four places, one of them deleted again (the last, so that its key must not be
/// reused), an update, two journeys and a legacy row.
func writeVersion1Rows(_ manager: ContextManager) throws {
    let context = try manager.createContext()
    try context.performAndWait {
        let lisbon = context.insert(PlaceV1.self)
        lisbon.name = "Lisbon"
        lisbon.country = "PT"
        lisbon.stars = 4
        lisbon.population = 545_000
        lisbon.visited = true
        lisbon.notes = "tram 28"
        lisbon.founded = Date(timeIntervalSince1970: 1_700_000_000.5)
        lisbon.code = UUID(uuidString: "00000000-0000-0000-0000-000000000001")!
        let kyoto = context.insert(PlaceV1.self)
        kyoto.name = "Kyoto"
        kyoto.country = "JP"
        kyoto.stars = 5
        try context.save()

        let oslo = context.insert(PlaceV1.self)
        oslo.name = "Oslo"
        oslo.country = "NO"
        oslo.stars = -3
        oslo.population = 709_000
        oslo.founded = Date(timeIntervalSince1970: -1_000_000_000)
        let atlantis = context.insert(PlaceV1.self)
        atlantis.name = "Atlantis"
        let rail = context.insert(JourneyV1.self)
        rail.title = "Rail"
        rail.days = 12
        rail.cost = 1234.5
        let ferry = context.insert(JourneyV1.self)
        ferry.title = "Ferry"
        ferry.days = 3
        ferry.cost = 0.1
        context.insert(LegacyV1.self).payload = Data([1, 2, 3])
        try context.save()

        lisbon.notes = "tram 28, then walk"
        context.delete(atlantis)
        try context.save()
    }
}

/// Version 2's rows after migrating version 1's, by entity and primary key.
let expectedVersion2Rows: [String: [Int64: [String: StoredValue]]] = [
    "Place": [
        1: [
            "name": .string("Lisbon"), "countryName": .string("PT"), "stars": .integer(4),
            "population": .double(545_000), "visited": .integer(1), "notes": .string("tram 28, then walk"),
            "founded": .string("2023-11-14T22:13:20.500Z"), "rating": .double(2.5), "tags": .null,
        ],
        2: [
            "name": .string("Kyoto"), "countryName": .string("JP"), "stars": .integer(5), "population": .null,
            "visited": .integer(0), "notes": .string("(none)"), "founded": .string("1970-01-01T00:00:00.000Z"),
            "rating": .double(2.5), "tags": .null,
        ],
        3: [
            "name": .string("Oslo"), "countryName": .string("NO"), "stars": .integer(-3),
            "population": .double(709_000), "visited": .integer(0), "notes": .string("(none)"),
            "founded": .string("1938-04-24T22:13:20.000Z"), "rating": .double(2.5), "tags": .null,
        ],
    ],
    "Voyage": [
        1: ["title": .string("Rail"), "days": .integer(12), "cost": .double(1234.5)],
        2: ["title": .string("Ferry"), "days": .integer(3), "cost": .double(Double(Float(0.1)))],
    ],
    "Review": [:],
]

/// Every row of the entity `entityName`, by primary key, with its values by attribute name.
func rowsByKey(_ manager: ContextManager, _ entityName: String) throws -> [Int64: [String: StoredValue]] {
    let context = try manager.createContext()
    return try context.performAndWait {
        let objects = try context.fetch(FetchRequest<ManagedObject>(entityName: entityName))
        var rows: [Int64: [String: StoredValue]] = [:]
        for object in objects {
            let names = object.entity.attributes.map(\.name)
            rows[object.objectID.primaryKey!] = Dictionary(
                uniqueKeysWithValues: names.map { ($0, object.value(forKey: $0)) })
        }
        return rows
    }
}

/// Every row of the entities of `model`, as ``rowsByKey(_:_:)`` gives them.
func allRows(_ manager: ContextManager, _ model: ManagedObjectModel) throws -> [String: [Int64: [String: StoredValue]]]
{
    var rows: [String: [Int64: [String: StoredValue]]] = [:]
    for entity in model.entities {
        rows[entity.name] = try rowsByKey(manager, entity.name)
    }
    return rows
}
