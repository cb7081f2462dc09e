import Foundation

/// Reads a JSON store document, checking every value against the document's schema.
///
/// Liberal in layout (any whitespace, members in any order, missing attributes take their
/// defaults), strict in content (unknown attributes, wrong types and invalid JSON are
/// errors with their byte offset).
enum JSONDocumentReader {
    struct Document {
        var formatVersion: Int
        var metadata: StoreMetadata
        var schema: [EntityDescription]
        /// Each entity's rows, packed as they were read (no array per row), in key order unless
        /// the document lists them otherwise.
        var rows: [String: JournalRows]
        /// Where each entity's rows are in the document.
        var rowPlaces: [String: RowLocator.Places]
    }

    enum Problem: Error {
        /// Not a QueueData JSON store document (no such format member, or another format).
        case notAStoreDocument(String)
        /// Written by a newer version of the format.
        case newerVersion(Int)
        /// Damaged: what, and where.
        case malformed(String, offset: Int)
    }

    static func read(_ bytes: UnsafeRawBufferPointer) throws(Problem) -> Document {
        let problem: Problem
        do {
            return try readDocument(bytes)
        } catch let error as Problem {
            problem = error
        } catch let failure as JSONScanner.Failure {
            problem = .malformed(failure.message, offset: failure.offset)
        } catch {
            problem = .malformed("\(error)", offset: 0)
        }
        // Damage found before the format and version were checked may be a member or a value
        // another format, or a newer version of this one, has: those are refused as such.
        if case .malformed = problem, let declared = declaredFormat(bytes) {
            if declared.format != JSONDocumentWriter.formatName {
                throw .notAStoreDocument(
                    declared.format.map { "its format is '\($0)'" }
                        ?? "it has no \"format\": \"\(JSONDocumentWriter.formatName)\"")
            }
            if let version = declared.version, version > JSONDocumentWriter.formatVersion {
                throw .newerVersion(Int(version))
            }
        }
        throw problem
    }

    /// The `format` and `version` members of the document's top-level object, read without
    /// reading anything else (every other value skipped as JSON); `nil` when the bytes are not a
    /// JSON object.
    private static func declaredFormat(_ bytes: UnsafeRawBufferPointer) -> (format: String?, version: Int64?)? {
        var scanner = JSONScanner(bytes)
        scanner.skipWhitespace()
        var format: String?
        var version: Int64?
        do {
            guard !scanner.isAtEnd, try scanner.peek() == UInt8(ascii: "{") else { return nil }
            try scanner.forEachMember { scanner, key in
                switch key {
                case "format": format = try? scanner.string()
                case "version": version = try? scanner.integer()
                default: _ = try scanner.skipValue()
                }
            }
        } catch {
            // What was read before the damage is what the document declares.
        }
        return (format, version)
    }

    private static func readDocument(_ bytes: UnsafeRawBufferPointer) throws -> Document {
        var scanner = JSONScanner(bytes)
        scanner.skipWhitespace()
        guard !scanner.isAtEnd else { throw Problem.malformed("the file is empty", offset: 0) }
        guard try scanner.peek() == UInt8(ascii: "{") else {
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
                throw Problem.notAStoreDocument(
                    "the file starts with a byte order mark (EF BB BF), which a JSON store never has: an editor "
                        + "added it; save the file as UTF-8 without one")
            }
            throw Problem.notAStoreDocument("the file is not a JSON object")
        }
        var format: String?
        var version: Int64?
        var versionOffset = 0
        var metadata: Metadata?
        var schema: [EntityDescription]?
        var schemaOffset = 0
        var rowsRange: Range<Int>?
        var rows = Rows()
        var rowsParsed = false
        try scanner.forEachMember { scanner, key in
            switch key {
            case "format": format = try scanner.string()
            case "version":
                scanner.skipWhitespace()
                versionOffset = scanner.position
                version = try scanner.integer()
            case "metadata": metadata = try readMetadata(&scanner)
            case "schema":
                scanner.skipWhitespace()
                schemaOffset = scanner.position
                schema = try readSchema(&scanner)
            case "rows":
                // Parsed in place when the schema came first (as QueueData writes it); kept for
                // later otherwise.
                if let schema {
                    rows = try readRows(&scanner, schema: schema)
                    rowsParsed = true
                } else {
                    rowsRange = try scanner.skipValue()
                }
            default: throw scanner.failure("unknown member '\(key)'")
            }
        }
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { throw scanner.failure("unexpected bytes after the document") }
        guard format == JSONDocumentWriter.formatName else {
            throw Problem.notAStoreDocument(
                format.map { "its format is '\($0)'" } ?? "it has no \"format\": \"\(JSONDocumentWriter.formatName)\"")
        }
        guard let version else { throw Problem.malformed("the document has no version", offset: 0) }
        guard version >= 1 else {
            throw Problem.malformed(
                "the format version \(version) does not exist (versions start at 1)", offset: versionOffset)
        }
        guard version <= JSONDocumentWriter.formatVersion else { throw Problem.newerVersion(Int(version)) }
        guard let metadata else { throw Problem.malformed("the document has no metadata", offset: 0) }
        guard let schema else { throw Problem.malformed("the document has no schema", offset: 0) }
        // Required, as the other members: a document whose rows were cut out by hand is damaged,
        // not an empty store (the next save would write it so).
        guard rowsParsed || rowsRange != nil else { throw Problem.malformed("the document has no rows", offset: 0) }
        if version < 3, schema.contains(where: { !$0.uniquenessConstraints.isEmpty || $0.superentityName != nil }) {
            throw Problem.malformed(
                "the schema records superentities or uniqueness constraints, which need format version 3 "
                    + "(the document says \(version))", offset: versionOffset)
        }
        if let rowsRange, !rowsParsed {
            var rowScanner = JSONScanner(bytes)
            rowScanner.position = rowsRange.lowerBound
            rows = try readRows(&rowScanner, schema: schema)
        }
        try check(metadata, schema: schema, schemaOffset: schemaOffset, rows: rows)
        return Document(
            formatVersion: Int(version),
            metadata: StoreMetadata(
                storeIdentifier: metadata.identifier, versionHash: metadata.hash,
                nextPrimaryKeys: metadata.keys.mapValues(\.value), appliedMigrationSteps: metadata.steps),
            schema: schema, rows: rows.rows, rowPlaces: rows.places)
    }

    /// The metadata as read, with the offsets of what is checked against the rest.
    private struct Metadata {
        var identifier: UUID
        var hash: String
        var hashOffset: Int
        var keys: [String: (value: Int64, offset: Int)]
        var steps: [String]
    }

    /// The rows of each entity, and where they are.
    private struct Rows {
        var rows: [String: JournalRows] = [:]
        var places: [String: RowLocator.Places] = [:]
        /// The largest key of each entity's rows, and that row's offset.
        var largest: [String: (key: Int64, offset: Int)] = [:]
        /// The first row found with the key of an earlier row of its entity (refused by
        /// `check`, after what is checked before rows; the row itself is left out).
        var duplicate: (entityName: String, key: Int64, offset: Int)?
    }

    /// Checks what ties the parts of the document together: the version hash is the schema's,
    /// each primary key counter is at least 1 and lies above every key of its entity's rows,
    /// and no entity has two rows with one key. (A counter may name an entity the schema no
    /// longer has: migrations keep the counters of removed entities, so that an entity that
    /// comes back never reuses its old keys.)
    private static func check(_ metadata: Metadata, schema: [EntityDescription], schemaOffset: Int, rows: Rows) throws {
        let model: ManagedObjectModel
        do {
            model = try ManagedObjectModel(entities: schema)
        } catch {
            throw Problem.malformed("the schema is not a valid model: \(error)", offset: schemaOffset)
        }
        guard model.versionHash == metadata.hash else {
            throw Problem.malformed(
                "the versionHash \(metadata.hash.prefix(16)) is not the hash of the document's schema "
                    + "(\(model.versionHash.prefix(16))); the schema or the hash was edited",
                offset: metadata.hashOffset)
        }
        for (entityName, counter) in metadata.keys {
            guard counter.value >= 1, counter.value < Int64.max else {
                throw Problem.malformed(
                    "the next primary key of '\(entityName)' is \(counter.value); it must be at least 1 and below "
                        + "2^63 - 1",
                    offset: counter.offset)
            }
        }
        if let duplicate = rows.duplicate {
            throw Problem.malformed(
                "two rows of '\(duplicate.entityName)' have the id \(duplicate.key)", offset: duplicate.offset)
        }
        for (entityName, largest) in rows.largest {
            let next = metadata.keys[entityName]
            guard largest.key < (next?.value ?? 1) else {
                throw Problem.malformed(
                    "the next primary key of '\(entityName)' is \(next.map { "\($0.value)" } ?? "missing (1)"), "
                        + "but a row has the id \(largest.key): keys would be handed out twice",
                    offset: next?.offset ?? largest.offset)
            }
        }
    }

    private static func readMetadata(_ scanner: inout JSONScanner) throws -> Metadata {
        scanner.skipWhitespace()
        let start = scanner.position
        var identifier: UUID?
        var hash: String?
        var hashOffset = start
        var keys: [String: (value: Int64, offset: Int)] = [:]
        var steps: [String] = []
        try scanner.forEachMember { scanner, key in
            switch key {
            case "storeIdentifier":
                let position = scanner.position
                guard let uuid = UUID(uuidString: try scanner.string()) else {
                    throw scanner.failure("the store identifier is not a UUID", at: position)
                }
                identifier = uuid
            case "versionHash":
                scanner.skipWhitespace()
                hashOffset = scanner.position
                hash = try scanner.string()
            case "nextPrimaryKeys":
                try scanner.forEachMember { scanner, entity in
                    scanner.skipWhitespace()
                    let offset = scanner.position
                    keys[entity] = (try scanner.integer(), offset)
                }
            case "appliedMigrationSteps":
                try scanner.forEachElement { scanner in
                    steps.append(try scanner.string())
                }
            default:
                throw scanner.failure("unknown metadata member '\(key)'")
            }
        }
        guard let identifier, let hash else {
            throw scanner.failure("the metadata needs a storeIdentifier and a versionHash", at: start)
        }
        return Metadata(identifier: identifier, hash: hash, hashOffset: hashOffset, keys: keys, steps: steps)
    }

    private static func readSchema(_ scanner: inout JSONScanner) throws -> [EntityDescription] {
        var entities: [EntityDescription] = []
        try scanner.forEachElement { scanner in
            scanner.skipWhitespace()
            let start = scanner.position
            var name: String?
            var originalName: String?
            var attributes: [AttributeDescription] = []
            var relationships: [RelationshipDescription] = []
            var superentityName: String?
            var constraints: [[String]] = []
            try scanner.forEachMember { scanner, key in
                switch key {
                case "name": name = try scanner.string()
                case "originalName": originalName = try scanner.string()
                case "superentity": superentityName = try scanner.string()
                case "uniquenessConstraints":
                    try scanner.forEachElement { scanner in
                        scanner.skipWhitespace()
                        let position = scanner.position
                        var constraint: [String] = []
                        try scanner.forEachElement { scanner in
                            constraint.append(try scanner.string())
                        }
                        guard !constraint.isEmpty else {
                            throw scanner.failure("a uniqueness constraint names no attribute", at: position)
                        }
                        constraints.append(constraint)
                    }
                case "attributes":
                    try scanner.forEachElement { scanner in
                        attributes.append(try readAttribute(&scanner))
                    }
                case "relationships":
                    try scanner.forEachElement { scanner in
                        relationships.append(try readRelationship(&scanner))
                    }
                default: throw scanner.failure("unknown entity member '\(key)'")
                }
            }
            guard let name else { throw scanner.failure("an entity has no name", at: start) }
            guard !entities.contains(where: { $0.name == name }) else {
                throw scanner.failure("the schema has two entities named '\(name)'", at: start)
            }
            do {
                entities.append(
                    try EntityDescription(
                        name: name, attributes: attributes, relationships: relationships,
                        uniquenessConstraints: constraints, superentityName: superentityName,
                        originalName: originalName))
            } catch {
                throw scanner.failure("invalid entity '\(name)': \(error)", at: start)
            }
        }
        if let problem = EntityDescription.superentityProblem(in: entities) {
            throw scanner.failure(problem)
        }
        return entities
    }

    private static func readRelationship(_ scanner: inout JSONScanner) throws -> RelationshipDescription {
        let start = scanner.position
        var name: String?
        var destination: String?
        var inverse: String?
        var isToMany = false
        var isOrdered = false
        var deleteRule = DeleteRule.nullify
        var isOptional = true
        var minCount = 0
        var maxCount: Int?
        var originalName: String?
        try scanner.forEachMember { scanner, key in
            switch key {
            case "name": name = try scanner.string()
            case "destination": destination = try scanner.string()
            case "inverse": inverse = try scanner.string()
            case "toMany": isToMany = try scanner.bool()
            case "ordered": isOrdered = try scanner.bool()
            case "deleteRule":
                let position = scanner.position
                let rule = try scanner.string()
                guard let parsed = DeleteRule(rawValue: rule) else {
                    throw scanner.failure("unknown delete rule '\(rule)'", at: position)
                }
                deleteRule = parsed
            case "optional": isOptional = try scanner.bool()
            case "minCount": minCount = Int(clamping: try scanner.integer())
            case "maxCount": maxCount = try scanner.consumeNull() ? nil : Int(clamping: try scanner.integer())
            case "originalName": originalName = try scanner.string()
            default: throw scanner.failure("unknown relationship member '\(key)'")
            }
        }
        guard let name, let destination, let inverse else {
            throw scanner.failure("a relationship needs a name, a destination and an inverse", at: start)
        }
        return RelationshipDescription(
            name: name, destination: destination, inverse: inverse, isToMany: isToMany, isOrdered: isOrdered,
            deleteRule: deleteRule, isOptional: isOptional, minCount: minCount, maxCount: maxCount,
            originalName: originalName)
    }

    private static func readAttribute(_ scanner: inout JSONScanner) throws -> AttributeDescription {
        let start = scanner.position
        var name: String?
        var type: AttributeType?
        var isOptional = false
        var defaultRange: Range<Int>?
        var valueTypeName: String?
        var originalName: String?
        try scanner.forEachMember { scanner, key in
            switch key {
            case "name": name = try scanner.string()
            case "type":
                let position = scanner.position
                let typeName = try scanner.string()
                guard let parsed = AttributeType(rawValue: typeName) else {
                    throw scanner.failure("unknown attribute type '\(typeName)'", at: position)
                }
                type = parsed
            case "optional": isOptional = try scanner.bool()
            case "default": defaultRange = try scanner.skipValue()
            case "valueType": valueTypeName = try scanner.string()
            case "originalName": originalName = try scanner.string()
            default: throw scanner.failure("unknown attribute member '\(key)'")
            }
        }
        guard let name, let type else { throw scanner.failure("an attribute needs a name and a type", at: start) }
        var defaultValue: StoredValue?
        if let defaultRange {
            var valueScanner = JSONScanner(scanner.bytes)
            valueScanner.position = defaultRange.lowerBound
            defaultValue = try readValue(&valueScanner, type: type, isOptional: isOptional, name: name)
        }
        return AttributeDescription(
            name: name, type: type, isOptional: isOptional, defaultValue: defaultValue, valueTypeName: valueTypeName,
            originalName: originalName)
    }

    private static func readRows(_ scanner: inout JSONScanner, schema: [EntityDescription]) throws -> Rows {
        let entities = Dictionary(schema.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var rows = Rows()
        try scanner.forEachMember { scanner, entityName in
            guard let entity = entities[entityName] else {
                throw scanner.failure("rows of '\(entityName)', which is not in the schema")
            }
            let names = (entity.attributes.map(\.name) + entity.relationships.map(\.name)).map { Array($0.utf8) }
            let idKey = Array("id".utf8)
            let attributeCount = entity.attributes.count
            let types = entity.attributes.map(\.type)
            let optionals = entity.attributes.map(\.isOptional)
            let defaults = entity.defaultRow
            var entityRows = JournalRows(columns: names.count)
            var places = RowLocator.Places()
            var largest: (key: Int64, offset: Int)?
            /// What a row's members set so far (passed to `member` as a parameter, not captured:
            /// captured variables are checked for exclusive access dynamically at every member).
            struct RowState {
                var primaryKey: Int64?
                var values: [StoredValue]
                var seen: [Bool]
                var expected = 0
            }
            // Keys compared as bytes; rows usually list attributes in schema order.
            func member(_ key: UnsafeRawBufferPointer, _ scanner: inout JSONScanner, _ row: inout RowState) throws {
                if JSONScanner.isSame(key, idKey) {
                    guard row.primaryKey == nil else { throw scanner.failure("a row lists its id twice") }
                    let position = scanner.position
                    let id = try scanner.integer()
                    guard id > 0, id < Int64.max else {
                        throw scanner.failure("row ids must be positive and below 2^63 - 1", at: position)
                    }
                    row.primaryKey = id
                    return
                }
                let index: Int
                if row.expected < names.count, JSONScanner.isSame(key, names[row.expected]) {
                    index = row.expected
                } else if let found = names.firstIndex(where: { JSONScanner.isSame(key, $0) }) {
                    index = found
                } else {
                    throw scanner.failure(
                        "'\(entityName)' has no attribute '\(String(decoding: key, as: UTF8.self))'")
                }
                guard !row.seen[index] else { throw scanner.failure("a row lists an attribute twice") }
                row.seen[index] = true
                row.expected = index + 1
                guard index < attributeCount else {
                    row.values[index] = try readReference(&scanner, entity.relationships[index - attributeCount])
                    return
                }
                row.values[index] = try readValue(
                    &scanner, type: types[index], isOptional: optionals[index], name: entity.attributes[index].name)
            }
            // One row's state, reused from row to row (so that no row makes an array).
            var row = RowState(values: defaults, seen: [Bool](repeating: false, count: names.count))
            try scanner.forEachElement { scanner in
                scanner.skipWhitespace()
                let start = scanner.position
                row.primaryKey = nil
                row.expected = 0
                for index in row.seen.indices {
                    row.seen[index] = false
                }
                try scanner.expect(UInt8(ascii: "{"))
                if try !scanner.consume(UInt8(ascii: "}")) {
                    while true {
                        var escapedKey: String?
                        if let raw = try scanner.rawKey(escapedKey: &escapedKey) {
                            try member(raw, &scanner, &row)
                        } else {
                            try Array(escapedKey!.utf8).withUnsafeBytes { try member($0, &scanner, &row) }
                        }
                        if try scanner.consume(UInt8(ascii: ",")) {
                            continue
                        }
                        try scanner.expect(UInt8(ascii: "}"))
                        break
                    }
                }
                guard let primaryKey = row.primaryKey else {
                    throw scanner.failure("a row of '\(entityName)' has no id", at: start)
                }
                // Members the row does not list take their defaults (over the previous row's).
                for index in row.seen.indices where !row.seen[index] {
                    row.values[index] = defaults[index]
                }
                // QueueData writes rows in ascending order: then no key repeats, and no look-up
                // is needed.
                if let last = largest, primaryKey <= last.key {
                    guard entityRows[primaryKey] == nil else {
                        if rows.duplicate == nil {
                            rows.duplicate = (entityName, primaryKey, start)
                        }
                        return
                    }
                } else {
                    largest = (primaryKey, start)
                }
                entityRows.append(row.values, forKey: primaryKey)
                places.keys.append(primaryKey)
                places.offsets.append(start)
            }
            rows.rows[entityName] = entityRows
            rows.places[entityName] = places
            rows.largest[entityName] = largest
        }
        return rows
    }

    /// A relationship's value: the related row's id or `null` (to-one), or an array of ids.
    private static func readReference(
        _ scanner: inout JSONScanner,
        _ relationship: RelationshipDescription
    ) throws -> StoredValue {
        let start = scanner.position
        func id(_ scanner: inout JSONScanner) throws -> Int64 {
            let position = scanner.position
            let key = try scanner.integer()
            guard key > 0 else { throw scanner.failure("row ids must be positive", at: position) }
            return key
        }
        guard relationship.isToMany else {
            return try scanner.consumeNull() ? .null : .integer(try id(&scanner))
        }
        var keys: [Int64] = []
        try scanner.forEachElement { scanner in keys.append(try id(&scanner)) }
        guard Set(keys).count == keys.count else {
            throw scanner.failure("'\(relationship.name)' lists an id twice", at: start)
        }
        return RelationshipKeys.encode(keys, for: relationship)
    }

    private static func readValue(
        _ scanner: inout JSONScanner,
        type: AttributeType,
        isOptional: Bool,
        name: String
    ) throws -> StoredValue {
        let start = scanner.position
        if try scanner.consumeNull() {
            if type == .transformable && !isOptional {
                // A non-optional transformable value is its type's JSON, which may be `null` (a
                // type encoding a `nil` it holds): the writer embeds it as it is. Whether the
                // type decodes from it is the decoding check's to say.
                return .data(Data("null".utf8))
            }
            guard isOptional else { throw scanner.failure("'\(name)' is not optional but holds null", at: start) }
            return .null
        }
        switch type {
        case .boolean:
            return .bool(try scanner.bool())
        case .integer16, .integer32, .integer64:
            return .integer(try scanner.integer())
        case .double, .float:
            return .double(try scanner.double())
        case .string:
            return .string(try scanner.string())
        case .date:
            return .date(Date(timeIntervalSinceReferenceDate: try scanner.double()))
        case .binaryData:
            guard let data = Data(base64Encoded: try scanner.string()) else {
                throw scanner.failure("'\(name)' is not base64", at: start)
            }
            return .data(data)
        case .uuid:
            guard let uuid = UUID(uuidString: try scanner.string()) else {
                throw scanner.failure("'\(name)' is not a UUID", at: start)
            }
            return .uuid(uuid)
        case .uri:
            guard let url = URL(string: try scanner.string()) else {
                throw scanner.failure("'\(name)' is not a URL", at: start)
            }
            return .url(url)
        case .decimal:
            let text = try scanner.string()
            guard let decimal = Decimal(exactText: text) else {
                throw scanner.failure("'\(name)' is not a decimal number", at: start)
            }
            return .decimal(decimal)
        case .transformable:
            let range = try scanner.skipValue()
            return .data(Data(UnsafeRawBufferPointer(rebasing: scanner.bytes[range])))
        }
    }
}
