import Foundation

/// Makes the ``ExportRecord`` of a row of one entity: the row's values for the export's fields
/// (found by name), relationships' keys turned into object IDs.
///
/// Used by the exports of ``ManagedObjectContext`` and by `qd export`, which reads rows from
/// a store file without a model.
@_spi(StoreTool)
public struct ExportRecordBuilder: Sendable {
    private enum Source: Sendable {
        case objectID
        case attribute(Int)
        case relationship(column: Int, destination: EntityKey, isToMany: Bool)
        case missing
    }

    private let sources: [Source]
    private let key: EntityKey

    /// A builder for rows of `entity` (a store's schema entity, or a model's), exported with
    /// `fields`, in the store identified by `storeIdentifier`.
    public init(entity: EntityDescription, fields: [ExportField], storeIdentifier: UUID) {
        var destinations: [String: EntityKey] = [:]
        func destinationKey(_ name: String) -> EntityKey {
            if let key = destinations[name] {
                return key
            }
            let key = EntityKey(entityName: name, storeIdentifier: storeIdentifier, entityIndex: nil)
            destinations[name] = key
            return key
        }
        key = destinationKey(entity.name)
        sources = fields.map { field in
            switch field.kind {
            case .objectID:
                return .objectID
            case .attribute:
                return entity.index(ofAttribute: field.name).map { .attribute($0) } ?? .missing
            case .toOne, .toMany:
                guard let relationship = entity.relationship(named: field.name),
                    let column = entity.column(ofRelationship: field.name)
                else { return .missing }
                return .relationship(
                    column: column, destination: destinationKey(relationship.destinationEntityName),
                    isToMany: relationship.isToMany)
            }
        }
    }

    /// The record of the row with `primaryKey` and `values` (in the entity's column order).
    /// A column the row lacks exports as `nil`.
    public func record(primaryKey: Int64, values: [StoredValue]) -> ExportRecord {
        values.withUnsafeBufferPointer { record(primaryKey: primaryKey, values: $0) }
    }

    /// The record of a row whose fields are at `row`, laid out by `layout` (the entity's).
    func record(primaryKey: Int64, row: UnsafeRawPointer, layout: RowLayout) -> ExportRecord {
        record(primaryKey: primaryKey, count: layout.columnCount) { layout.value(row, slot: $0) }
    }

    /// The record of a row whose values are in `values`, in the entity's column order.
    func record(primaryKey: Int64, values: UnsafeBufferPointer<StoredValue>) -> ExportRecord {
        record(primaryKey: primaryKey, count: values.count) { values[$0] }
    }

    /// The record of a row of `count` columns whose values `value` reads by column.
    private func record(primaryKey: Int64, count: Int, _ value: (Int) -> StoredValue) -> ExportRecord {
        let id = ObjectID(key: key, rawValue: primaryKey)
        var exported: [ExportValue] = []
        exported.reserveCapacity(sources.count)
        for source in sources {
            switch source {
            case .objectID:
                exported.append(.object(id))
            case .attribute(let index):
                exported.append(.value(index < count ? value(index) : .null))
            case .relationship(let column, let destination, let isToMany):
                let keys = column < count ? RelationshipKeys.decode(value(column)) : []
                let ids = keys.map { ObjectID(key: destination, rawValue: $0) }
                exported.append(isToMany ? .objects(ids) : .object(ids.first))
            case .missing:
                exported.append(.value(.null))
            }
        }
        return ExportRecord(objectID: id, values: exported)
    }
}
