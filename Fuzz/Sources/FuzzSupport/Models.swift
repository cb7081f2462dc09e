import Foundation
import QueueData

// Two versions of one model. Version 1 writes the seed stores: every attribute type, each
// also optional, a transformable, a unique attribute, and every kind of relationship (to-one,
// one-to-one, ordered to-many, many-to-many). Version 2 is what the fuzzed stores are also
// opened with, so that migration runs: renamed, widened, narrowed (with a transform), removed
// and added attributes, a renamed and a removed entity, a renamed relationship, a step.

/// A transformable value (stored as JSON).
struct Dimensions: Codable, Hashable, Sendable {
    /// A width.
    var width: Double
    /// A height.
    var height: Double
    /// Free text.
    var label: String
    /// Nested members, so that the JSON has depth.
    var tags: [String: Int]
}

let zeroUUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
let exampleURL = URL(string: "https://example.org/")!

/// Version 1's entity with one attribute of every type.
final class SampleV1: ManagedObject {
    override class var entityName: String { "Sample" }
    @Attribute(.unique) var code: String = ""
    @Attribute var flag: Bool = false
    @Attribute var int: Int = 0
    @Attribute var int16: Int16 = 0
    @Attribute var int32: Int32 = 0
    @Attribute var int64: Int64 = 0
    @Attribute var double: Double = 0
    @Attribute var float: Float = 0
    @Attribute var string: String = ""
    @Attribute var date: Date = Date(timeIntervalSince1970: 0)
    @Attribute var data: Data = Data()
    @Attribute var uuid: UUID = zeroUUID
    @Attribute var url: URL = exampleURL
    @Attribute var decimal: Decimal = 0
    @Attribute var dimensions: Dimensions = Dimensions(width: 0, height: 0, label: "", tags: [:])
    @Attribute var optionalFlag: Bool? = nil
    @Attribute var optionalInt: Int? = nil
    @Attribute var optionalInt16: Int16? = nil
    @Attribute var optionalInt32: Int32? = nil
    @Attribute var optionalInt64: Int64? = nil
    @Attribute var optionalDouble: Double? = nil
    @Attribute var optionalFloat: Float? = nil
    @Attribute var optionalString: String? = nil
    @Attribute var optionalDate: Date? = nil
    @Attribute var optionalData: Data? = nil
    @Attribute var optionalUUID: UUID? = nil
    @Attribute var optionalURL: URL? = nil
    @Attribute var optionalDecimal: Decimal? = nil
    @Attribute var optionalDimensions: Dimensions? = nil
    @Relationship(inverse: "samples") var owner: OwnerV1?
    @Relationship(inverse: "samples") var labels: Set<LabelV1>
    @Relationship(inverse: "sample", deleteRule: .cascade) var detail: DetailV1?

    /// Reads every property through its typed accessor.
    func readAll() {
        _ = (code, flag, int, int16, int32, int64, double, float, string, date, data, uuid, url, decimal)
        _ = dimensions
        _ = (optionalFlag, optionalInt, optionalInt16, optionalInt32, optionalInt64, optionalDouble, optionalFloat)
        _ = (optionalString, optionalDate, optionalData, optionalUUID, optionalURL, optionalDecimal)
        _ = optionalDimensions
        _ = (owner?.name, labels.map(\.name), detail?.notes)
    }
}

/// Version 1's owners: an ordered to-many relationship.
final class OwnerV1: ManagedObject {
    override class var entityName: String { "Owner" }
    @Attribute var name: String = ""
    @Relationship(inverse: "owner", deleteRule: .cascade) var samples: [SampleV1]

    /// Reads every property through its typed accessor.
    func readAll() {
        _ = (name, samples.map(\.code))
    }
}

/// Version 1's labels: a many-to-many relationship.
final class LabelV1: ManagedObject {
    override class var entityName: String { "Label" }
    @Attribute var name: String = ""
    @Relationship(inverse: "labels", deleteRule: .deny) var samples: Set<SampleV1>

    /// Reads every property through its typed accessor.
    func readAll() {
        _ = (name, samples.map(\.code))
    }
}

/// Version 1's details: a one-to-one relationship.
final class DetailV1: ManagedObject {
    override class var entityName: String { "Detail" }
    @Attribute var notes: String? = nil
    @Relationship(inverse: "detail") var sample: SampleV1?

    /// Reads every property through its typed accessor.
    func readAll() {
        _ = (notes, sample?.code)
    }
}

/// The model the seed stores are written with.
let modelV1 = ManagedObjectModel([SampleV1.self, OwnerV1.self, LabelV1.self, DetailV1.self])

/// Version 2's samples.
final class SampleV2: ManagedObject {
    override class var entityName: String { "Sample" }
    @Attribute(.unique) var code: String = ""
    /// Bool to Int.
    @Attribute var flag: Int = 0
    @Attribute var int: Int = 0
    /// Widened.
    @Attribute var int16: Int64 = 0
    /// Int32 to Double.
    @Attribute var int32: Double = 0
    /// Narrowed, with a transform that clamps.
    @Attribute(transform: { old in
        guard case .integer(let value) = old else { return 0 }
        return Int16(clamping: value)
    })
    var int64: Int16 = 0
    @Attribute var double: Double = 0
    /// Float to Double.
    @Attribute var float: Double = 0
    /// Renamed.
    @Attribute(originalName: "string") var text: String = ""
    /// Date to String.
    @Attribute var date: String = ""
    // `data` was removed.
    @Attribute var uuid: UUID = zeroUUID
    /// URL to String.
    @Attribute var url: String = ""
    @Attribute var decimal: Decimal = 0
    @Attribute var dimensions: Dimensions = Dimensions(width: 0, height: 0, label: "", tags: [:])
    /// Optional to non-optional, with a default.
    @Attribute var optionalFlag: Bool = true
    @Attribute var optionalInt: Int? = nil
    /// Non-optional to optional, and widened.
    @Attribute var optionalInt16: Int32? = nil
    @Attribute var optionalInt32: Int32? = nil
    @Attribute var optionalInt64: Int64? = nil
    @Attribute var optionalDouble: Double? = nil
    @Attribute var optionalFloat: Float? = nil
    /// Optional to non-optional, with a default.
    @Attribute var optionalString: String = "none"
    @Attribute var optionalDate: Date? = nil
    @Attribute var optionalData: Data? = nil
    @Attribute var optionalUUID: UUID? = nil
    @Attribute var optionalURL: URL? = nil
    @Attribute var optionalDecimal: Decimal? = nil
    @Attribute var optionalDimensions: Dimensions? = nil
    /// Added.
    @Attribute var rating: Double = 1.5
    /// Added, and set by the migration step.
    @Attribute var summary: String? = nil
    /// Renamed relationship, to a renamed entity.
    @Relationship(inverse: "samples", originalName: "owner") var keeper: KeeperV2?
    @Relationship(inverse: "samples") var labels: Set<LabelV2>
    // `detail` was removed with its entity.

    /// Reads every property through its typed accessor.
    func readAll() {
        _ = (code, flag, int, int16, int32, int64, double, float, text, date, uuid, url, decimal)
        _ = dimensions
        _ = (optionalFlag, optionalInt, optionalInt16, optionalInt32, optionalInt64, optionalDouble, optionalFloat)
        _ = (optionalString, optionalDate, optionalData, optionalUUID, optionalURL, optionalDecimal)
        _ = (optionalDimensions, rating, summary)
        _ = (keeper?.name, labels.map(\.name))
    }
}

/// `Owner`, renamed.
final class KeeperV2: ManagedObject {
    override class var entityName: String { "Keeper" }
    override class var originalEntityName: String? { "Owner" }
    @Attribute var name: String = ""
    @Relationship(inverse: "keeper", deleteRule: .cascade) var samples: [SampleV2]

    /// Reads every property through its typed accessor.
    func readAll() {
        _ = (name, samples.map(\.code))
    }
}

/// Version 2's labels.
final class LabelV2: ManagedObject {
    override class var entityName: String { "Label" }
    @Attribute var name: String = ""
    @Relationship(inverse: "labels") var samples: Set<SampleV2>

    /// Reads every property through its typed accessor.
    func readAll() {
        _ = (name, samples.map(\.code))
    }
}

/// Added.
final class NoteV2: ManagedObject {
    override class var entityName: String { "Note" }
    @Attribute var text: String = ""

    /// Reads every property through its typed accessor.
    func readAll() {
        _ = text
    }
}

/// The model the fuzzed stores are migrated to.
let modelV2 = ManagedObjectModel([SampleV2.self, KeeperV2.self, LabelV2.self, NoteV2.self])

/// Version 2's hand-written step: reads every original row (values and relationships) and
/// writes a summary into the migrated samples, and adds a note.
let migrationStepsV2 = [
    MigrationStep("summarize samples") { rows in
        var related = 0
        for entity in rows.originalSchema {
            for row in rows.originalRows(of: entity.name) {
                _ = row.valuesByName
                for relationship in entity.relationships {
                    related += row.relatedKeys(relationship.name).count
                }
            }
        }
        rows.updateRows(of: "Sample") { sample, original in
            if case .string(let text)? = original?["string"] {
                sample.setValue(.string("\(text.count) characters, \(related) related"), for: "summary")
            }
        }
        rows.insertRow(into: "Note", ["text": .string("migrated")])
    }
]

/// Reads every property of `object` through its class's typed accessors.
func readAll(_ object: ManagedObject) {
    switch object {
    case let sample as SampleV1: sample.readAll()
    case let owner as OwnerV1: owner.readAll()
    case let label as LabelV1: label.readAll()
    case let detail as DetailV1: detail.readAll()
    case let sample as SampleV2: sample.readAll()
    case let keeper as KeeperV2: keeper.readAll()
    case let label as LabelV2: label.readAll()
    case let note as NoteV2: note.readAll()
    default: break
    }
}
