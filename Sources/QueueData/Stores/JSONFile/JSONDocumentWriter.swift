import Foundation

/// Writes a JSON store document: one row per line, keys in a fixed order, so that diffs of
/// the file are meaningful. See the "JSON Store Format" article.
struct JSONDocumentWriter {
    static let formatName = "QueueData.JSONFileStore"
    /// The newest version this version reads and writes. Version 2 added the migration records
    /// (`appliedMigrationSteps`, `originalName`), version 3 the model records (`superentity`,
    /// `uniquenessConstraints`); a document that needs neither is written as version 1, byte
    /// for byte what version 1 wrote.
    static let formatVersion = 3

    private(set) var bytes: [UInt8] = []

    /// The document for `metadata`, `schema` and each entity's rows (values in schema order).
    static func document(
        metadata: StoreMetadata,
        schema: [EntityDescription],
        rowCount: (Int) -> Int,
        forEachRow: (Int, (Int64, [StoredValue]) -> Void) -> Void
    ) -> [UInt8] {
        document(metadata: metadata, schema: schema, rowCount: rowCount) { entityIndex, body in
            withoutActuallyEscaping(body) { body in
                forEachRow(entityIndex) { primaryKey, values in
                    values.withUnsafeBufferPointer { buffer in body(primaryKey) { buffer[$0] } }
                }
            }
        }
    }

    /// The document for `metadata`, `schema` and `state`'s rows, read where they live.
    static func document(metadata: StoreMetadata, schema: [EntityDescription], state: StoreState) -> [UInt8] {
        document(metadata: metadata, schema: schema, rowCount: state.rowCount(ofEntityAt:)) { entityIndex, body in
            state.tables[entityIndex].forEachLiveRow { row in
                let layout = row.block.layout
                let fields = row.fields
                body(row.primaryKey) { layout.value(fields, slot: $0) }
            }
        }
    }

    /// The document for `metadata`, `schema` and each entity's rows, each given by its primary
    /// key and a function reading its value at a column (schema order), so that no row is
    /// copied into an array to be written.
    private static func document(
        metadata: StoreMetadata,
        schema: [EntityDescription],
        rowCount: (Int) -> Int,
        forEachRowValue: (Int, (Int64, (Int) -> StoredValue) -> Void) -> Void
    ) -> [UInt8] {
        var writer = JSONDocumentWriter()
        let estimatedRows = schema.indices.reduce(0) { $0 + rowCount($1) }
        writer.bytes.reserveCapacity(1024 + estimatedRows * 96)
        writer.raw("{\n  \"format\": ")
        writer.string(formatName)
        writer.raw(",\n  \"version\": ")
        writer.integer(Int64(metadata.formatVersion(with: schema)))
        writer.raw(",\n  \"metadata\": {\n    \"storeIdentifier\": ")
        writer.string(metadata.storeIdentifier.uuidString)
        writer.raw(",\n    \"versionHash\": ")
        writer.string(metadata.versionHash)
        writer.raw(",\n    \"nextPrimaryKeys\": {")
        for (index, entry) in metadata.nextPrimaryKeys.sorted(by: { $0.key < $1.key }).enumerated() {
            writer.raw(index == 0 ? "" : ", ")
            writer.string(entry.key)
            writer.raw(": ")
            writer.integer(entry.value)
        }
        writer.raw("}")
        if !metadata.appliedMigrationSteps.isEmpty {
            writer.raw(",\n    \"appliedMigrationSteps\": [")
            for (index, step) in metadata.appliedMigrationSteps.enumerated() {
                writer.raw(index == 0 ? "" : ", ")
                writer.string(step)
            }
            writer.raw("]")
        }
        writer.raw("\n  },\n  \"schema\": [")
        for (entityIndex, entity) in schema.enumerated() {
            writer.raw(entityIndex == 0 ? "\n    {\"name\": " : ",\n    {\"name\": ")
            writer.string(entity.name)
            if let originalName = entity.originalName {
                writer.raw(", \"originalName\": ")
                writer.string(originalName)
            }
            if let superentity = entity.superentity(in: schema) {
                writer.raw(", \"superentity\": ")
                writer.string(superentity.name)
            }
            writer.raw(", \"attributes\": [")
            for (attributeIndex, attribute) in entity.attributes.enumerated() {
                writer.raw(attributeIndex == 0 ? "\n      {\"name\": " : ",\n      {\"name\": ")
                writer.string(attribute.name)
                writer.raw(", \"type\": ")
                writer.string(attribute.type.rawValue)
                writer.raw(
                    attribute.isOptional
                        ? ", \"optional\": true, \"default\": " : ", \"optional\": false, \"default\": ")
                writer.value(attribute.defaultValue, type: attribute.type)
                if let valueTypeName = attribute.valueTypeName {
                    writer.raw(", \"valueType\": ")
                    writer.string(valueTypeName)
                }
                if let originalName = attribute.originalName {
                    writer.raw(", \"originalName\": ")
                    writer.string(originalName)
                }
                writer.raw("}")
            }
            writer.raw(entity.attributes.isEmpty ? "]" : "\n    ]")
            if !entity.relationships.isEmpty {
                writer.raw(", \"relationships\": [")
                for (index, relationship) in entity.relationships.enumerated() {
                    writer.raw(index == 0 ? "\n      {\"name\": " : ",\n      {\"name\": ")
                    writer.string(relationship.name)
                    writer.raw(", \"destination\": ")
                    writer.string(relationship.destinationEntityName)
                    writer.raw(", \"inverse\": ")
                    writer.string(relationship.inverseName)
                    writer.raw(relationship.isToMany ? ", \"toMany\": true" : ", \"toMany\": false")
                    if relationship.isOrdered {
                        writer.raw(", \"ordered\": true")
                    }
                    writer.raw(", \"deleteRule\": ")
                    writer.string(relationship.deleteRule.rawValue)
                    if !relationship.isOptional {
                        writer.raw(", \"optional\": false")
                    }
                    if relationship.minCount > 0 {
                        writer.raw(", \"minCount\": ")
                        writer.integer(Int64(relationship.minCount))
                    }
                    if let maxCount = relationship.maxCount {
                        writer.raw(", \"maxCount\": ")
                        writer.integer(Int64(maxCount))
                    }
                    if let originalName = relationship.originalName {
                        writer.raw(", \"originalName\": ")
                        writer.string(originalName)
                    }
                    writer.raw("}")
                }
                writer.raw("\n    ]")
            }
            if !entity.uniquenessConstraints.isEmpty {
                writer.raw(", \"uniquenessConstraints\": [")
                for (index, constraint) in entity.uniquenessConstraints.enumerated() {
                    writer.raw(index == 0 ? "[" : ", [")
                    for (nameIndex, name) in constraint.enumerated() {
                        writer.raw(nameIndex == 0 ? "" : ", ")
                        writer.string(name)
                    }
                    writer.raw("]")
                }
                writer.raw("]")
            }
            writer.raw("}")
        }
        writer.raw(schema.isEmpty ? "],\n  \"rows\": {" : "\n  ],\n  \"rows\": {")
        for (entityIndex, entity) in schema.enumerated() {
            writer.raw(entityIndex == 0 ? "\n    " : ",\n    ")
            writer.string(entity.name)
            writer.raw(": [")
            // What each row's loop needs, read once per entity (not a copy of each attribute's
            // description, names and all, per row): each column's key as bytes, its type.
            let keys = (entity.attributes.map(\.name) + entity.relationships.map(\.name)).map {
                Array(", \"\($0)\": ".utf8)
            }
            let types = entity.attributes.map(\.type)
            let toMany = entity.relationships.map(\.isToMany)
            var first = true
            forEachRowValue(entityIndex) { primaryKey, value in
                writer.raw(first ? "\n      {\"id\": " : ",\n      {\"id\": ")
                first = false
                writer.integer(primaryKey)
                for column in types.indices {
                    writer.bytes.append(contentsOf: keys[column])
                    writer.value(value(column), type: types[column])
                }
                for offset in toMany.indices {
                    let column = types.count + offset
                    writer.bytes.append(contentsOf: keys[column])
                    writer.reference(value(column), toMany: toMany[offset])
                }
                writer.raw("}")
            }
            writer.raw(first ? "]" : "\n    ]")
        }
        writer.raw(schema.isEmpty ? "}\n}\n" : "\n  }\n}\n")
        return writer.bytes
    }

    /// A relationship's value: an id or `null`, or an array of ids.
    private mutating func reference(_ value: StoredValue, toMany: Bool) {
        let keys = RelationshipKeys.decode(value)
        guard toMany else {
            if let key = keys.first {
                integer(key)
            } else {
                raw("null")
            }
            return
        }
        raw("[")
        for (index, key) in keys.enumerated() {
            if index > 0 {
                raw(", ")
            }
            integer(key)
        }
        raw("]")
    }

    private mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func raw(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    mutating func integer(_ value: Int64) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
        }
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var index = digits.count
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[index...]))
        }
    }

    mutating func double(_ value: Double) {
        if value.isNaN {
            raw("\"NaN\"")
        } else if value.isInfinite {
            raw(value > 0 ? "\"Infinity\"" : "\"-Infinity\"")
        } else {
            raw(value.description)
        }
    }

    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                switch byte {
                case UInt8(ascii: "\""): raw("\\\"")
                case UInt8(ascii: "\\"): raw("\\\\")
                case 0x0A: raw("\\n")
                case 0x0D: raw("\\r")
                case 0x09: raw("\\t")
                default:
                    raw("\\u00")
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0xF)])
                }
                start = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A value as the JSON form of `type` (see the format article).
    mutating func value(_ value: StoredValue, type: AttributeType) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): raw(flag ? "true" : "false")
        case .integer(let integer): self.integer(integer)
        case .double(let double): self.double(double)
        case .string(let string): self.string(string)
        case .date(let date): double(date.timeIntervalSinceReferenceDate)
        case .data(let data):
            if type == .transformable {
                // Transformable values are JSON already: embedded as they are.
                bytes.append(contentsOf: data)
            } else {
                string(data.base64EncodedString())
            }
        case .uuid(let uuid): string(uuid.uuidString)
        case .url(let url): string(url.absoluteString)
        case .decimal(let decimal): string(decimal.description)
        }
    }
}
