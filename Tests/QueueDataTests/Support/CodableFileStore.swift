import Foundation
import QueueData

/// A custom store written the simplest way: the whole state as JSON through Foundation's
/// `JSONEncoder`, written atomically. It shows what implementing `PersistentStore` takes, and
/// runs through the conformance suite like the built-in stores.
final class CodableFileStore: PersistentStore {
    private struct Document: Codable {
        var storeIdentifier: UUID
        var versionHash: String
        var nextPrimaryKeys: [String: Int64]
        var entities: [Entity]
    }

    private struct Entity: Codable {
        var name: String
        var attributes: [Attribute]
        var rows: [Row]
    }

    struct Attribute: Codable {
        var name: String
        var type: AttributeType
        var isOptional: Bool
        var defaultValue: Value

        init(_ description: AttributeDescription) {
            name = description.name
            type = description.type
            isOptional = description.isOptional
            defaultValue = Value(description.defaultValue)
        }

        var description: AttributeDescription {
            AttributeDescription(name: name, type: type, isOptional: isOptional, defaultValue: defaultValue.stored)
        }
    }

    private struct Row: Codable {
        var primaryKey: Int64
        var values: [Value]
    }

    /// A `StoredValue` in a Codable form.
    enum Value: Codable {
        case null
        case bool(Bool)
        case integer(Int64)
        case doubleBits(UInt64)
        case string(String)
        case dateBits(UInt64)
        case data(Data)
        case uuid(UUID)
        case url(String)
        case decimal(String)

        init(_ value: StoredValue) {
            switch value {
            case .null: self = .null
            case .bool(let v): self = .bool(v)
            case .integer(let v): self = .integer(v)
            case .double(let v): self = .doubleBits(v.bitPattern)
            case .string(let v): self = .string(v)
            case .date(let v): self = .dateBits(v.timeIntervalSinceReferenceDate.bitPattern)
            case .data(let v): self = .data(v)
            case .uuid(let v): self = .uuid(v)
            case .url(let v): self = .url(v.absoluteString)
            case .decimal(let v): self = .decimal(v.description)
            }
        }

        var stored: StoredValue {
            switch self {
            case .null: return .null
            case .bool(let v): return .bool(v)
            case .integer(let v): return .integer(v)
            case .doubleBits(let v): return .double(Double(bitPattern: v))
            case .string(let v): return .string(v)
            case .dateBits(let v): return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: v)))
            case .data(let v): return .data(v)
            case .uuid(let v): return .uuid(v)
            case .url(let v): return .url(URL(string: v)!)
            case .decimal(let v): return .decimal(Decimal(string: v)!)
            }
        }
    }

    let url: URL
    private var isOpen = false

    init(url: URL) {
        self.url = url
    }

    func open(for model: ManagedObjectModel) throws -> StoreContents {
        guard FileManager.default.fileExists(atPath: url.path) else {
            let empty = StoreContents.empty(for: model)
            try write(
                metadata: empty.metadata,
                entities: model.entities.map {
                    Entity(name: $0.name, attributes: $0.attributes.map(Attribute.init), rows: [])
                })
            isOpen = true
            return empty
        }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: Data(contentsOf: url))
        } catch {
            throw StoreError(.corrupted, "Unreadable: \(error)", url: url, underlyingError: error)
        }
        let schema = try document.entities.map { entity in
            try EntityDescription(name: entity.name, attributes: entity.attributes.map(\.description))
        }
        isOpen = true
        return StoreContents(
            metadata: StoreMetadata(
                storeIdentifier: document.storeIdentifier, versionHash: document.versionHash,
                nextPrimaryKeys: document.nextPrimaryKeys),
            schema: schema,
            rows: Dictionary(
                uniqueKeysWithValues: document.entities.map { entity in
                    (
                        entity.name,
                        entity.rows.map { StoredRow(primaryKey: $0.primaryKey, values: $0.values.map(\.stored)) }
                    )
                }))
    }

    func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        guard isOpen else { throw StoreError(.closed, "closed", url: url) }
        var entities: [Entity] = []
        for (index, entity) in resultingState.entities.enumerated() {
            var rows: [Row] = []
            resultingState.forEachRow(ofEntityAt: index) { primaryKey, values in
                rows.append(Row(primaryKey: primaryKey, values: values.map(Value.init)))
            }
            entities.append(
                Entity(
                    name: entity.name,
                    attributes: entity.attributes.map(Attribute.init),
                    rows: rows))
        }
        try write(metadata: resultingState.metadata, entities: entities)
    }

    private func write(metadata: StoreMetadata, entities: [Entity]) throws {
        let document = Document(
            storeIdentifier: metadata.storeIdentifier, versionHash: metadata.versionHash,
            nextPrimaryKeys: metadata.nextPrimaryKeys, entities: entities)
        do {
            try JSONEncoder().encode(document).write(to: url, options: .atomic)
        } catch {
            throw StoreError(.io, "Could not write: \(error)", url: url, underlyingError: error)
        }
    }

    func close() {
        isOpen = false
    }
}
