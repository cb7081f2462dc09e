import Foundation

/// The payloads of journal records: a snapshot of the whole store, or one change set.
///
/// Integers are LEB128 varints (signed ones zigzag-encoded), strings are a varint length and
/// UTF-8, values a tag byte and their payload (see ``BinaryWriter/writeValue(_:)``). Rows list
/// their values in the order of the snapshot's schema.
enum JournalPayload {
    /// A decoded snapshot.
    struct Snapshot {
        var metadata: StoreMetadata
        var schema: [EntityDescription]
        /// Rows of each entity of `schema`.
        var rows: [JournalRows]
        /// The persistent history (format 4), with the transactions of the records replayed.
        var history: StoreHistory?
    }

    // MARK: Snapshot

    static func encodeSnapshot(
        metadata: StoreMetadata,
        schema: [EntityDescription],
        history: StoreHistory?,
        rowCount: (Int) -> Int,
        forEachRow: (Int, (Int64, [StoredValue]) -> Void) -> Void
    ) -> [UInt8] {
        encodeSnapshot(metadata: metadata, schema: schema, history: history, rowCount: rowCount) { index, body in
            withoutActuallyEscaping(body) { body in
                forEachRow(index) { primaryKey, values in
                    values.withUnsafeBufferPointer { buffer in body(primaryKey, buffer.count) { buffer[$0] } }
                }
            }
        }
    }

    /// ``encodeSnapshot(metadata:schema:history:rowCount:forEachRow:)`` of `state`, its rows read
    /// where they live (no array per row).
    static func encodeSnapshot(metadata: StoreMetadata, state: StoreState) -> [UInt8] {
        encodeSnapshot(
            metadata: metadata, schema: state.entities, history: state.history, rowCount: state.rowCount(ofEntityAt:)
        ) { index, body in
            state.tables[index].forEachLiveRow { row in
                let layout = row.block.layout
                let fields = row.fields
                body(row.primaryKey, layout.columnCount) { layout.value(fields, slot: $0) }
            }
        }
    }

    /// The snapshot, each row given by its primary key, its number of values and a function
    /// reading its value at a column.
    private static func encodeSnapshot(
        metadata: StoreMetadata,
        schema: [EntityDescription],
        history: StoreHistory?,
        rowCount: (Int) -> Int,
        forEachRowValue: (Int, (Int64, Int, (Int) -> StoredValue) -> Void) -> Void
    ) -> [UInt8] {
        var writer = BinaryWriter(capacity: 256)
        let version = formatVersion(metadata: metadata, schema: schema, history: history)
        let newer = version >= 2
        writer.writeUUID(metadata.storeIdentifier)
        writer.writeString(metadata.versionHash)
        writer.writeVarint(UInt64(schema.count))
        for entity in schema {
            writer.writeString(entity.name)
            writer.writeVarint(UInt64(entity.attributes.count))
            for attribute in entity.attributes {
                writer.writeString(attribute.name)
                writer.writeString(attribute.type.rawValue)
                writer.write(attribute.isOptional ? 1 : 0)
                writer.writeValue(attribute.defaultValue)
                writer.writeOptionalString(attribute.valueTypeName)
            }
            if newer {
                writer.writeVarint(UInt64(entity.relationships.count))
                for relationship in entity.relationships {
                    writer.writeString(relationship.name)
                    writer.writeString(relationship.destinationEntityName)
                    writer.writeString(relationship.inverseName)
                    writer.write(
                        (relationship.isToMany ? 1 : 0) | (relationship.isOrdered ? 2 : 0)
                            | (relationship.isOptional ? 4 : 0))
                    writer.writeString(relationship.deleteRule.rawValue)
                    writer.writeVarint(UInt64(relationship.minCount))
                    writer.writeVarint(relationship.maxCount.map { UInt64($0) + 1 } ?? 0)
                }
            }
        }
        let keys = metadata.nextPrimaryKeys.sorted { $0.key < $1.key }
        writer.writeVarint(UInt64(keys.count))
        for (entityName, next) in keys {
            writer.writeString(entityName)
            writer.writeSignedVarint(next)
        }
        for index in schema.indices {
            writer.writeVarint(UInt64(rowCount(index)))
            var previous: Int64 = 0
            forEachRowValue(index) { primaryKey, count, value in
                writer.writeVarint(UInt64(primaryKey - previous))
                previous = primaryKey
                for column in 0..<count {
                    writer.writeValue(value(column))
                }
            }
        }
        // Format 2: the migration section (applied steps, renaming identifiers by column).
        if newer {
            writer.writeVarint(UInt64(metadata.appliedMigrationSteps.count))
            for step in metadata.appliedMigrationSteps {
                writer.writeString(step)
            }
            let renamings = originalNames(of: schema)
            writer.writeVarint(UInt64(renamings.count))
            for renaming in renamings {
                writer.writeVarint(UInt64(renaming.entityIndex))
                writer.writeVarint(UInt64(renaming.attributeIndex.map { $0 + 1 } ?? 0))
                writer.writeString(renaming.originalName)
            }
        }
        // Format 3: the model section (superentities, uniqueness constraints by attribute index).
        if version >= 3 {
            let recorded = schema.enumerated().filter { _, entity in
                !entity.uniquenessColumns.isEmpty || entity.superentity(in: schema) != nil
            }
            writer.writeVarint(UInt64(recorded.count))
            for (entityIndex, entity) in recorded {
                writer.writeVarint(UInt64(entityIndex))
                writer.writeOptionalString(entity.superentity(in: schema)?.name)
                writer.writeVarint(UInt64(entity.uniquenessColumns.count))
                for columns in entity.uniquenessColumns {
                    writer.writeVarint(UInt64(columns.count))
                    for column in columns {
                        writer.writeVarint(UInt64(column))
                    }
                }
            }
        }
        // Format 4: the history section.
        if let history {
            writeHistory(history, to: &writer)
        }
        return writer.bytes
    }

    /// The major version a snapshot needs: 2 for relationships, applied migration steps or
    /// renaming identifiers (the migration section), 3 for superentities or uniqueness
    /// constraints (the model section), 4 for a persistent history (the history section, and a
    /// transaction trailer in every change record). A file with one has that major version, so
    /// that older readers refuse it as newer instead of calling it damaged. Other snapshots stay
    /// byte for byte format 1.
    static func formatVersion(metadata: StoreMetadata, schema: [EntityDescription], history: StoreHistory?) -> UInt16 {
        history != nil ? 4 : UInt16(metadata.formatVersion(with: schema))
    }

    /// The renaming identifiers of a schema: entity (with `attributeIndex` nil) and column
    /// (attributes, then relationships) original names, in schema order.
    private static func originalNames(
        of schema: [EntityDescription]
    ) -> [(entityIndex: Int, attributeIndex: Int?, originalName: String)] {
        var renamings: [(entityIndex: Int, attributeIndex: Int?, originalName: String)] = []
        for (entityIndex, entity) in schema.enumerated() {
            if let original = entity.originalName {
                renamings.append((entityIndex, nil, original))
            }
            let originals = entity.attributes.map(\.originalName) + entity.relationships.map(\.originalName)
            for (column, original) in originals.enumerated() {
                if let original {
                    renamings.append((entityIndex, column, original))
                }
            }
        }
        return renamings
    }

    /// Decodes a snapshot of a journal of major version `major`.
    static func decodeSnapshot(_ reader: inout BinaryReader, major: UInt16) throws -> Snapshot {
        let identifier = try reader.readUUID()
        let versionHash = try reader.readString()
        let entityCount = try reader.readCount(minimumElementSize: 2, "entity")
        var schema: [EntityDescription] = []
        for _ in 0..<entityCount {
            let name = try reader.readString()
            let attributeCount = try reader.readCount(minimumElementSize: 4, "attribute")
            var attributes: [AttributeDescription] = []
            for _ in 0..<attributeCount {
                let attributeName = try reader.readString()
                let typeName = try reader.readString()
                guard let type = AttributeType(rawValue: typeName) else {
                    throw reader.error("unknown attribute type '\(typeName)'")
                }
                let isOptional = try reader.readByte() != 0
                let defaultValue = try reader.readValue()
                let valueTypeName = try reader.readOptionalString()
                attributes.append(
                    AttributeDescription(
                        name: attributeName, type: type, isOptional: isOptional, defaultValue: defaultValue,
                        valueTypeName: valueTypeName))
            }
            var relationships: [RelationshipDescription] = []
            if major >= 2 {
                let relationshipCount = try reader.readCount(minimumElementSize: 8, "relationship")
                for _ in 0..<relationshipCount {
                    relationships.append(try readRelationship(&reader))
                }
            }
            do {
                schema.append(try EntityDescription(name: name, attributes: attributes, relationships: relationships))
            } catch {
                throw reader.error("invalid schema of '\(name)': \(error)")
            }
        }
        let keyCount = try reader.readCount(minimumElementSize: 2, "primary key counter")
        var nextPrimaryKeys: [String: Int64] = [:]
        for _ in 0..<keyCount {
            let entityName = try reader.readString()
            // A counter may name an entity the schema no longer has (migrations keep them).
            guard nextPrimaryKeys.updateValue(try reader.readSignedVarint(), forKey: entityName) == nil else {
                throw reader.error("two primary key counters name '\(entityName)'")
            }
        }
        var rows: [JournalRows] = []
        for entity in schema {
            let minimumRowSize = 1 + entity.columnCount
            let rowCount = try reader.readCount(minimumElementSize: minimumRowSize, "row")
            var entityRows = JournalRows(columns: entity.columnCount, reservingCapacity: rowCount)
            var previous: Int64 = 0
            for _ in 0..<rowCount {
                let delta = try reader.readVarint()
                guard delta > 0, delta < UInt64(Int64.max - previous) else {
                    throw reader.error("primary keys of '\(entity.name)' are not ascending")
                }
                previous += Int64(delta)
                try entityRows.append(forKey: previous) { try reader.readValue() }
            }
            rows.append(entityRows)
        }
        var steps: [String] = []
        // Format 4 has every section: the history section comes last.
        let hasHistory = major >= 4
        if !reader.isAtEnd || hasHistory {  // Format 2: the migration section.
            let stepCount = try reader.readCount(minimumElementSize: 1, "migration step")
            for _ in 0..<stepCount {
                steps.append(try reader.readString())
            }
            if !reader.isAtEnd || hasHistory {
                schema = try readOriginalNames(&reader, into: schema)
            }
            if major >= 3 && (!reader.isAtEnd || hasHistory) {
                schema = try readModelSection(&reader, into: schema)
            }
        }
        let history = hasHistory ? try readHistory(&reader) : nil
        guard reader.isAtEnd else {
            throw reader.error("the snapshot has \(reader.remaining) unexpected trailing bytes")
        }
        return Snapshot(
            metadata: StoreMetadata(
                storeIdentifier: identifier, versionHash: versionHash, nextPrimaryKeys: nextPrimaryKeys,
                appliedMigrationSteps: steps),
            schema: schema, rows: rows, history: history)
    }

    private static func readRelationship(_ reader: inout BinaryReader) throws -> RelationshipDescription {
        let name = try reader.readString()
        let destination = try reader.readString()
        let inverse = try reader.readString()
        let flags = try reader.readByte()
        let ruleName = try reader.readString()
        guard let deleteRule = DeleteRule(rawValue: ruleName) else {
            throw reader.error("unknown delete rule '\(ruleName)'")
        }
        let minCount = try reader.readVarint()
        let maxCount = try reader.readVarint()
        return RelationshipDescription(
            name: name, destination: destination, inverse: inverse, isToMany: flags & 1 != 0, isOrdered: flags & 2 != 0,
            deleteRule: deleteRule, isOptional: flags & 4 != 0, minCount: Int(clamping: minCount),
            maxCount: maxCount == 0 ? nil : Int(clamping: maxCount - 1))
    }

    /// Reads the renaming identifiers of the migration section and returns `schema` with them.
    private static func readOriginalNames(
        _ reader: inout BinaryReader,
        into schema: [EntityDescription]
    ) throws -> [EntityDescription] {
        let count = try reader.readCount(minimumElementSize: 3, "renaming identifier")
        var entityNames: [Int: String] = [:]
        var attributeNames: [Int: [Int: String]] = [:]
        for _ in 0..<count {
            let entityIndex = try reader.readVarint()
            let attributeNumber = try reader.readVarint()
            let original = try reader.readString()
            guard entityIndex < UInt64(schema.count) else {
                throw reader.error("a renaming identifier names entity \(entityIndex) of \(schema.count)")
            }
            let entity = schema[Int(entityIndex)]
            if attributeNumber == 0 {
                entityNames[Int(entityIndex)] = original
            } else {
                guard attributeNumber <= UInt64(entity.columnCount) else {
                    throw reader.error(
                        "a renaming identifier names attribute \(attributeNumber - 1) of '\(entity.name)'")
                }
                attributeNames[Int(entityIndex), default: [:]][Int(attributeNumber - 1)] = original
            }
        }
        return try schema.enumerated().map { index, entity in
            guard entityNames[index] != nil || attributeNames[index] != nil else { return entity }
            return try entity.renamed(
                originalName: entityNames[index], columnOriginalNames: attributeNames[index] ?? [:])
        }
    }

    /// Reads the model section (superentities and uniqueness constraints) and returns `schema`
    /// with them.
    private static func readModelSection(
        _ reader: inout BinaryReader,
        into schema: [EntityDescription]
    ) throws -> [EntityDescription] {
        var schema = schema
        let count = try reader.readCount(minimumElementSize: 3, "model section entry")
        var seen = Set<Int>()
        for _ in 0..<count {
            let entityIndex = try reader.readVarint()
            guard entityIndex < UInt64(schema.count), seen.insert(Int(entityIndex)).inserted else {
                throw reader.error("the model section names entity \(entityIndex) of \(schema.count), or twice")
            }
            let entity = schema[Int(entityIndex)]
            let superentityName = try reader.readOptionalString()
            let constraintCount = try reader.readCount(minimumElementSize: 2, "uniqueness constraint")
            var constraints: [[String]] = []
            for _ in 0..<constraintCount {
                let columnCount = try reader.readCount(minimumElementSize: 1, "constrained attribute")
                guard columnCount > 0 else {
                    throw reader.error("a uniqueness constraint of '\(entity.name)' names no attribute")
                }
                var names: [String] = []
                for _ in 0..<columnCount {
                    let column = try reader.readVarint()
                    guard column < UInt64(entity.attributes.count) else {
                        throw reader.error(
                            "a uniqueness constraint of '\(entity.name)' names attribute \(column) of "
                                + "\(entity.attributes.count)")
                    }
                    names.append(entity.attributes[Int(column)].name)
                }
                constraints.append(names)
            }
            do {
                schema[Int(entityIndex)] = try entity.recording(
                    uniquenessConstraints: constraints, superentityName: superentityName)
            } catch {
                throw reader.error("invalid model section of '\(entity.name)': \(error)")
            }
        }
        if let problem = EntityDescription.superentityProblem(in: schema) {
            throw reader.error(problem)
        }
        return schema
    }

    // MARK: Changes

    /// How the model's entities and attributes map onto the journal's schema (the same names,
    /// possibly in another order).
    struct SchemaMapping {
        /// For each entity of the journal's schema, by name: its index.
        var entityIndexes: [String: Int]
        /// For each journal entity: the model slot of each of its attributes, in journal order.
        var modelSlots: [[Int]]
        /// For each journal entity: the journal index of each model slot.
        var journalIndexes: [[Int]]

        init(schema: [EntityDescription], model: ManagedObjectModel) {
            entityIndexes = Dictionary(uniqueKeysWithValues: schema.enumerated().map { ($1.name, $0) })
            modelSlots = schema.map { entity in
                guard let current = model.entity(named: entity.name) else { return [] }
                return (0..<entity.columnCount).map { current.column(named: entity.columnName($0)) ?? 0 }
            }
            journalIndexes = schema.map { entity in
                guard let current = model.entity(named: entity.name) else { return [] }
                return (0..<current.columnCount).map { entity.column(named: current.columnName($0)) ?? 0 }
            }
        }
    }

    /// Writes the field of `slot` of the row at `row` as ``BinaryWriter/writeValue(_:)`` writes
    /// its stored value (``RowLayout/value(_:slot:)``): the common kinds read as their own
    /// type, without making the stored value.
    private static func writeField(
        _ slot: Int, of row: UnsafeRawPointer, layout: RowLayout, to writer: inout BinaryWriter
    ) {
        let field = row + layout.offsets[slot]
        switch layout.kinds[slot] {
        case .int64:
            writer.write(ValueTag.integer)
            writer.writeSignedVarint(field.load(as: Int64.self))
        case .double:
            writer.write(ValueTag.double)
            writer.writeUInt64(field.load(as: Double.self).bitPattern)
        case .date:
            writer.write(ValueTag.date)
            writer.writeUInt64(field.load(as: Date.self).timeIntervalSinceReferenceDate.bitPattern)
        case .string:
            writer.write(ValueTag.string)
            writer.writeString(field.assumingMemoryBound(to: String.self).pointee)
        default:
            writer.writeValue(layout.value(row, slot: slot))
        }
    }

    static func encodeChanges(_ changes: ChangeSet, mapping: SchemaMapping) -> [UInt8] {
        var writer = BinaryWriter(capacity: 64)
        writer.writeVarint(UInt64(changes.entities.count))
        for entity in changes.entities {
            guard let index = mapping.entityIndexes[entity.entityName] else {
                preconditionFailure("QueueData: the journal has no entity '\(entity.entityName)'")
            }
            let modelSlots = mapping.modelSlots[index]
            writer.writeVarint(UInt64(index))
            writer.writeVarint(UInt64(entity.insertedReferences.count + entity.inserted.count))
            // Rows where the coordinator's tables hold them: each field read from its row.
            for reference in entity.insertedReferences {
                writer.writeVarint(UInt64(reference.primaryKey))
                let fields = UnsafeRawPointer(reference.fields)
                let layout = reference.block.layout
                for slot in modelSlots {
                    writeField(slot, of: fields, layout: layout, to: &writer)
                }
            }
            for row in entity.inserted {
                writer.writeVarint(UInt64(row.primaryKey))
                for slot in modelSlots {
                    writer.writeValue(row.values[slot])
                }
            }
            writer.writeVarint(UInt64(entity.updated.count))
            for update in entity.updated {
                writer.writeVarint(UInt64(update.primaryKey))
                writer.writeVarint(UInt64(update.changedAttributes.count))
                for slot in update.changedAttributes {
                    writer.writeVarint(UInt64(mapping.journalIndexes[index][slot]))
                    writer.writeValue(update.values[slot])
                }
            }
            writer.writeVarint(UInt64(entity.deleted.count))
            for primaryKey in entity.deleted {
                writer.writeVarint(UInt64(primaryKey))
            }
        }
        let keys = changes.nextPrimaryKeys.compactMap { name, next in
            mapping.entityIndexes[name].map { ($0, next) }
        }.sorted { $0.0 < $1.0 }
        writer.writeVarint(UInt64(keys.count))
        for (index, next) in keys {
            writer.writeVarint(UInt64(index))
            writer.writeSignedVarint(next)
        }
        // Format 4: the transaction trailer.
        if let transaction = changes.transaction {
            writeTransactionHeader(transaction, to: &writer)
        }
        return writer.bytes
    }

    /// Applies an encoded change set to `rows` (the rows of each entity of `schema`).
    ///
    /// - Parameters:
    ///   - history: The history so far, for a journal that records one (format 4): the record's
    ///     transaction trailer is read and the transaction added to it.
    ///   - onRow: Called with the entity index and primary key of each row inserted or
    ///     updated (to find which record last wrote a row).
    static func applyChanges(
        _ reader: inout BinaryReader,
        schema: [EntityDescription],
        to rows: inout [JournalRows],
        nextPrimaryKeys: inout [String: Int64],
        history: inout StoreHistory?,
        onRow: ((Int, Int64) -> Void)? = nil
    ) throws {
        let recordsHistory = history != nil
        var entities: [StoredTransaction.EntityChanges] = []
        let entityCount = try reader.readCount(minimumElementSize: 4, "entity change")
        for _ in 0..<entityCount {
            let index = try readIndex(&reader, below: schema.count, "entity index")
            let attributeCount = schema[index].columnCount
            var changes = StoredTransaction.EntityChanges(entityName: schema[index].name)
            let insertCount = try reader.readCount(minimumElementSize: 1 + attributeCount, "insert")
            rows[index].reserveCapacity(adding: insertCount)
            for _ in 0..<insertCount {
                let primaryKey = try readPrimaryKey(&reader)
                try rows[index].append(forKey: primaryKey) { try reader.readValue() }
                onRow?(index, primaryKey)
                if recordsHistory {
                    changes.inserted.append(primaryKey)
                }
            }
            let updateCount = try reader.readCount(minimumElementSize: 2, "update")
            for _ in 0..<updateCount {
                let primaryKey = try readPrimaryKey(&reader)
                let changedCount = try reader.readCount(minimumElementSize: 2, "changed attribute")
                guard var values = rows[index][primaryKey] else {
                    throw reader.error(
                        "an update of row \(primaryKey) of '\(schema[index].name)', which does not exist")
                }
                var properties: [String] = []
                for _ in 0..<changedCount {
                    let attribute = try readIndex(&reader, below: attributeCount, "attribute index")
                    values[attribute] = try reader.readValue()
                    if recordsHistory {
                        properties.append(schema[index].columnName(attribute))
                    }
                }
                rows[index][primaryKey] = values
                onRow?(index, primaryKey)
                if recordsHistory {
                    changes.updated.append(StoredTransaction.Update(primaryKey: primaryKey, properties: properties))
                }
            }
            let deleteCount = try reader.readCount(minimumElementSize: 1, "delete")
            for _ in 0..<deleteCount {
                let primaryKey = try readPrimaryKey(&reader)
                rows[index][primaryKey] = nil
                if recordsHistory {
                    changes.deleted.append(primaryKey)
                }
            }
            if recordsHistory {
                entities.append(changes)
            }
        }
        let keyCount = try reader.readCount(minimumElementSize: 2, "primary key counter")
        for _ in 0..<keyCount {
            let index = try readIndex(&reader, below: schema.count, "entity index")
            nextPrimaryKeys[schema[index].name] = try reader.readSignedVarint()
        }
        if var recorded = history {
            var transaction = try readTransactionHeader(&reader)
            guard transaction.number > recorded.lastTransactionNumber else {
                throw reader.error(
                    "the record's transaction \(transaction.number) does not come after the history's last, "
                        + "\(recorded.lastTransactionNumber)")
            }
            transaction.entities = entities
            history = nil  // Appended in place, not copied.
            recorded.append(transaction)
            history = recorded
        }
        guard reader.isAtEnd else {
            throw reader.error("the change set has \(reader.remaining) unexpected trailing bytes")
        }
    }

    /// An index below `count`, checked before it becomes an `Int` (a varint may not fit one).
    private static func readIndex(_ reader: inout BinaryReader, below count: Int, _ what: String) throws -> Int {
        let value = try reader.readVarint()
        guard value < UInt64(count) else {
            throw reader.error("\(what) \(value) is out of range (\(count))")
        }
        return Int(value)
    }

    private static func readPrimaryKey(_ reader: inout BinaryReader) throws -> Int64 {
        let value = try reader.readVarint()
        guard value > 0, value <= UInt64(Int64.max) else {
            throw reader.error("invalid primary key \(value)")
        }
        return Int64(value)
    }
}
