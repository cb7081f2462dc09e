import Foundation
import Testing

@testable import QueueData

/// A transformable value, as version 1 of an app stores it.
struct Extra: Codable, Hashable {
    var label: String
    var weight: Int
}

/// The same value after the app changed its shape: `weight` became `grams`.
struct ReshapedExtra: Codable, Hashable {
    var label: String
    var grams: Int
}

/// Entries of a hand-edited store: one attribute of each kind a file can get wrong.
final class Entry: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var magnitude: Double = 0
    @Attribute var small: Int16 = 0
    @Attribute var ratio: Float = 0
    @Attribute var extra: Extra = Extra(label: "", weight: 0)
}

/// The same entity as a later version of the app declares it: `extra` has another shape (the
/// version hash is the same: it covers names, types and optionality, not Codable shapes).
final class ReshapedEntry: ManagedObject {
    override class var entityName: String { "Entry" }
    @Attribute var name: String = ""
    @Attribute var magnitude: Double = 0
    @Attribute var small: Int16 = 0
    @Attribute var ratio: Float = 0
    @Attribute var extra: ReshapedExtra = ReshapedExtra(label: "", grams: 0)
}

let entryModel = ManagedObjectModel([Entry.self])

/// Every file QueueData reads ends in the data that was written, or a typed error naming the
/// file and the place, with the file untouched: never a trap, never data that quietly differs.
@Suite("Hostile and hand-edited store files")
struct HostileFileTests {
    /// A JSON store of `count` entries, closed; its document's text.
    func jsonDocument(_ directory: TemporaryDirectory, count: Int = 30) throws -> String {
        let manager = jsonManager(directory, model: entryModel)
        try fill(manager, count: count)
        manager.close()
        return String(decoding: try directory.bytes(of: "Store.json"), as: UTF8.self)
    }

    func fill(_ manager: ContextManager, count: Int) throws {
        let context = try manager.createContext()
        try context.performAndWait {
            for index in 1...count {
                let entry = context.insert(Entry.self)
                entry.name = "entry \(index)"
                entry.magnitude = Double(index) / 10
                entry.small = Int16(index)
                entry.extra = Extra(label: "e\(index)", weight: index)
            }
            try context.save()
        }
    }

    /// Writes `bytes` as the store file `name`, opens it with `manager`, and returns the
    /// error: it must be a `StoreError` with `code` naming the file, and the file must be
    /// byte for byte what was written.
    @discardableResult
    func refusal(
        of bytes: [UInt8],
        as name: String,
        in directory: TemporaryDirectory,
        code: StoreError.Code = .corrupted,
        _ manager: () -> ContextManager,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> StoreError? {
        try directory.write(bytes, to: name)
        let opened = manager()
        defer { opened.close() }
        do {
            try opened.loadPersistentStore()
            Issue.record("the store opened", sourceLocation: sourceLocation)
            return nil
        } catch let error as StoreError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.url?.lastPathComponent == name, "\(error)", sourceLocation: sourceLocation)
            #expect(try directory.bytes(of: name) == bytes, "the file was modified", sourceLocation: sourceLocation)
            return error
        }
    }

    /// The line and column of the first occurrence of `needle` in `text`.
    func place(of needle: String, in text: String, occurrence: Int = 1) -> (line: Int, column: Int) {
        var searchStart = text.startIndex
        var found = text.startIndex
        for _ in 0..<occurrence {
            found = text.range(of: needle, range: searchStart..<text.endIndex)!.lowerBound
            searchStart = text.index(after: found)
        }
        let before = text[..<found].utf8
        let line = before.filter { $0 == 0x0A }.count + 1
        let lineStart = before.lastIndex(of: 0x0A).map { before.distance(from: before.startIndex, to: $0) + 1 } ?? 0
        return (line, before.count - lineStart + 1)
    }

    // MARK: Duplicate keys

    @Test(
        "a newer version's document, or another format's, is refused as unsupported whatever members it has",
        arguments: [
            (#""version": 1"#, #""version": 9, "newThing": {"a": [1, 2]}"#),
            (#""version": 1"#, #""version": 4, "format2": true"#),
            (#""name": "entry 1""#, #""name": "entry 1", "newColumn": 7"#),
        ])
    func newerVersionsAndOtherFormats(original: String, replacement: String) throws {
        let directory = TemporaryDirectory("hostile-newer")
        let valid = try jsonDocument(directory)
        #expect(valid.contains(original))
        var edited = valid.replacingOccurrences(of: original, with: replacement)
        if !replacement.hasPrefix(#""version""#) {
            edited = edited.replacingOccurrences(of: #""version": 1"#, with: #""version": 5"#)
        }
        let newer = try refusal(of: Array(edited.utf8), as: "Store.json", in: directory, code: .unsupportedFormat) {
            jsonManager(directory, model: entryModel)
        }
        #expect(newer?.message.contains("newer") == true, "\(String(describing: newer))")
        for foreign in [
            #"{"format": "Something.Else", "version": 1, "data": []}"#, #"{"name": "x", "items": [1, 2]}"#,
            #"{"rows": {"Entry": [{"id": 1, "bogus": 2}]}, "format": "Other"}"#,
        ] {
            try refusal(of: Array(foreign.utf8), as: "Store.json", in: directory, code: .unsupportedFormat) {
                jsonManager(directory, model: entryModel)
            }
        }
        // A byte order mark an editor added is named.
        let marked = try refusal(
            of: [0xEF, 0xBB, 0xBF] + Array(valid.utf8), as: "Store.json", in: directory, code: .unsupportedFormat
        ) { jsonManager(directory, model: entryModel) }
        #expect(marked?.message.contains("byte order mark") == true, "\(String(describing: marked))")
        // A document whose rows were cut out is damaged, not an empty store.
        let rowsMember = valid.range(of: "\"rows\"")!.lowerBound
        let lastComma = valid[..<rowsMember].lastIndex(of: ",")!
        let withoutRows = valid[..<lastComma] + "\n}\n"
        let missing = try refusal(of: Array(withoutRows.utf8), as: "Store.json", in: directory) {
            jsonManager(directory, model: entryModel)
        }
        #expect(missing?.message.contains("no rows") == true, "\(String(describing: missing))")
        // Damage in a document of this format and version stays damage.
        let damaged = valid.replacingOccurrences(of: #""name": "entry 1""#, with: #""name": "entry 1", "bogus": 7"#)
        try refusal(of: Array(damaged.utf8), as: "Store.json", in: directory, code: .corrupted) {
            jsonManager(directory, model: entryModel)
        }
    }

    @Test("a valid store with \"rows\": {} appended opens refused, and its 30 rows stay on disk")
    func appendedEmptyRows() throws {
        let directory = TemporaryDirectory("hostile-rows")
        let valid = try jsonDocument(directory)
        let closing = valid.range(of: "}", options: .backwards)!.lowerBound
        let edited = valid[..<closing] + #","rows": {}"# + valid[closing...]
        let error = try refusal(of: Array(edited.utf8), as: "Store.json", in: directory) {
            jsonManager(directory, model: entryModel)
        }
        #expect(error?.message.contains(#""rows" appears twice"#) == true, "\(String(describing: error))")
        let expected = place(of: #""rows": {}"#, in: String(edited))
        #expect(error?.line == expected.line && error?.column == expected.column, "\(String(describing: error))")
        // Put the valid document back: nothing was lost.
        try directory.write(Array(valid.utf8), to: "Store.json")
        let manager = jsonManager(directory, model: entryModel)
        let context = try manager.createContext()
        #expect(try context.performAndWait { try context.count(for: FetchRequest<Entry>()) } == 30)
        manager.close()
    }

    @Test(
        "a key that appears twice is refused at every level, naming its line and column",
        arguments: [
            ("format", #""format": "QueueData.JSONFileStore""#),
            ("version", #""version": 1"#),
            ("storeIdentifier", #""storeIdentifier": "#),
            ("nextPrimaryKeys", #""nextPrimaryKeys": {"Entry": 31}"#),
            ("a primary key counter", #""Entry": 31"#),
            ("schema", #""schema": ["#),
            ("an entity's name", #"{"name": "Entry""#),
            ("an attribute's type", #""type": "string""#),
            ("an entity's rows", #""Entry": [\n"#),
            ("a row's attribute", #""name": "entry 7""#),
            ("a row's id", #"{"id": 7"#),
            ("a transformable value's member", #""weight":7"#),
        ])
    func duplicateKeys(label: String, member: String) throws {
        let directory = TemporaryDirectory("hostile-duplicate")
        let valid = try jsonDocument(directory)
        let edited = duplicate(member, in: valid)
        #expect(edited != valid, "\(label): the member is not in the document")
        let error = try refusal(of: Array(edited.utf8), as: "Store.json", in: directory) {
            jsonManager(directory, model: entryModel)
        }
        #expect(
            error?.line != nil && error?.column != nil && error?.offset != nil, "\(label): \(String(describing: error))"
        )
        #expect(error?.message.contains("twice") == true, "\(label): \(String(describing: error))")
    }

    /// `text` with the first member starting at `member` written twice: `"key": value` becomes
    /// `"key": value, "key": value` (for an object or array value, the copy is a whole copy).
    func duplicate(_ member: String, in text: String) -> String {
        let pattern = member.replacingOccurrences(of: #"\n"#, with: "\n")
        guard let range = text.range(of: pattern) else { return text }
        // From the key's opening quote (after a leading `{` if the pattern has one) to the end
        // of its value.
        var keyStart = range.lowerBound
        if text[keyStart] == "{" {
            keyStart = text.index(after: keyStart)
        }
        let bytes = Array(text.utf8)
        let start = text.utf8.distance(from: text.startIndex, to: keyStart)
        var end = start
        var depth = 0
        var inString = false
        var sawColon = false
        var escaped = false
        while end < bytes.count {
            let byte = bytes[end]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: ":") {
                sawColon = true
            } else if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                depth += 1
            } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                if depth == 0 {
                    break
                }
                depth -= 1
            } else if byte == UInt8(ascii: ","), depth == 0, sawColon {
                break
            }
            end += 1
        }
        let memberText = String(decoding: bytes[start..<end], as: UTF8.self)
        return String(decoding: bytes[..<end], as: UTF8.self) + ", " + memberText
            + String(decoding: bytes[end...], as: UTF8.self)
    }

    // MARK: Values outside the format

    @Test(
        "values outside the format or the schema are refused with their line and column",
        arguments: [
            ("a number beyond a Double", #""magnitude": 0.7"#, #""magnitude": 1e999"#, "out of the range"),
            ("a Float beyond a Float", #""ratio": 0.0"#, #""ratio": 1e300"#, "of type float"),
            ("an Int16 beyond an Int16", #""small": 7"#, #""small": 100000"#, "of type integer16"),
            ("format version 0", #""version": 1"#, #""version": 0"#, "does not exist"),
            ("format version -1", #""version": 1"#, #""version": -1"#, "does not exist"),
            ("a counter below the keys in use", #""Entry": 31"#, #""Entry": 12"#, "handed out twice"),
            ("a counter of a removed entity below 1", #""Entry": 31"#, #""Entry": 31, "Ghost": -4"#, "at least 1"),
            ("a counter of zero", #""Entry": 31"#, #""Entry": 0"#, "at least 1"),
            ("a counter of 2^63 - 1", #""Entry": 31"#, #""Entry": 9223372036854775807"#, "below 2^63 - 1"),
            ("two rows with one id", #"{"id": 8,"#, #"{"id": 7,"#, "have the id 7"),
            ("a version hash of another schema", #""versionHash": ""#, #""versionHash": "0"#, "not the hash"),
            ("a row id of 2^63 - 1", #"{"id": 30,"#, #"{"id": 9223372036854775807,"#, "below 2^63"),
        ])
    func valuesOutsideTheFormat(label: String, original: String, replacement: String, reason: String) throws {
        let directory = TemporaryDirectory("hostile-values")
        let valid = try jsonDocument(directory)
        #expect(valid.contains(original), "\(label): '\(original)' is not in the document")
        let edited = valid.replacingOccurrences(
            of: original, with: replacement, options: [], range: valid.range(of: original))
        let error = try refusal(of: Array(edited.utf8), as: "Store.json", in: directory) {
            jsonManager(directory, model: entryModel)
        }
        #expect(error?.message.contains(reason) == true, "\(label): \(String(describing: error))")
        #expect(error?.line != nil && error?.column != nil, "\(label): \(String(describing: error))")
        // The place is the edit's line: the row, the member, or (for the counters) the counter.
        let line = place(of: original, in: valid).line
        #expect(error?.line == line, "\(label): \(String(describing: error)), expected line \(line)")
    }

    // MARK: Transformable values of the wrong shape

    @Test(
        "a transformable value that does not decode as its declared type is refused at open, on every file store",
        arguments: ["json", "journal"])
    func reshapedTransformable(store: String) throws {
        let directory = TemporaryDirectory("hostile-reshaped-\(store)")
        func manager(_ model: ManagedObjectModel) -> ContextManager {
            store == "json" ? jsonManager(directory, model: model) : journalManager(directory, model: model)
        }
        let writer = manager(entryModel)
        try fill(writer, count: 3)
        writer.close()
        let name = "Store.\(store)"
        let bytes = try directory.bytes(of: name)
        let reshaped = ManagedObjectModel([ReshapedEntry.self])
        #expect(reshaped.versionHash == entryModel.versionHash)
        let error = try refusal(of: bytes, as: name, in: directory) { manager(reshaped) }
        let message = error?.message ?? ""
        #expect(
            message.contains("Entry") && message.contains("'extra'") && message.contains("ReshapedExtra"), "\(message)")
        #expect(message.contains("Row "), "\(message)")
        #expect(error?.offset != nil, "\(String(describing: error))")
        if store == "json" {
            #expect(message.contains("Row 1"), "\(message)")
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(error?.line == place(of: #"{"id": 1,"#, in: text).line, "\(String(describing: error))")
        }
        // The original model still reads every value.
        let reader = manager(entryModel)
        let context = try reader.createContext()
        let extras = try context.performAndWait { try context.fetch(FetchRequest<Entry>()).map(\.extra.weight) }
        #expect(extras.sorted() == [1, 2, 3])
        reader.close()
    }

    @Test(
        "a transformable value edited into another shape in a JSON store is refused, not trapped on read",
        arguments: [
            (#""extra": {"label":"e2","weight":2}"#, #""extra": "string""#),
            (#""extra": {"label":"e2","weight":2}"#, #""extra": {"label": "e2"}"#),
            (#""extra": {"label":"e2","weight":2}"#, #""extra": {"label": "e2", "weight": "two"}"#),
        ])
    func editedTransformable(original: String, replacement: String) throws {
        let directory = TemporaryDirectory("hostile-transformable")
        let valid = try jsonDocument(directory, count: 3)
        #expect(valid.contains(original))
        let edited = valid.replacingOccurrences(of: original, with: replacement)
        let error = try refusal(of: Array(edited.utf8), as: "Store.json", in: directory) {
            jsonManager(directory, model: entryModel)
        }
        #expect(error?.message.contains("'extra'") == true, "\(String(describing: error))")
        #expect(error?.line == place(of: replacement, in: edited).line, "\(String(describing: error))")
    }

    // MARK: Journals whose checksums are valid

    /// A journal: a header with `baseSequence` and one snapshot record of `entryModel` with no rows,
    /// then `records` (payloads of change records), every checksum valid.
    func journal(baseSequence: UInt64, records: [[UInt8]] = []) -> [UInt8] {
        let header = JournalFormat.Header(
            storeIdentifier: UUID(), epoch: 0x1234_5678_9ABC_DEF0, baseSequence: baseSequence)
        let metadata = StoreMetadata(storeIdentifier: header.storeIdentifier, versionHash: entryModel.versionHash)
        let snapshot = JournalPayload.encodeSnapshot(
            metadata: metadata, schema: entryModel.entities, history: nil, rowCount: { _ in 0 }, forEachRow: { _, _ in }
        )
        var bytes =
            header.encoded()
            + JournalFormat.encodeRecord(
                type: .snapshot, sequence: baseSequence, epoch: header.epoch, payload: snapshot)
        for (index, payload) in records.enumerated() {
            bytes += JournalFormat.encodeRecord(
                type: .changes, sequence: baseSequence + UInt64(index) + 1, epoch: header.epoch, payload: payload)
        }
        return bytes
    }

    @Test("a journal whose header and snapshot carry sequence number 2^64 - 1 is refused, not trapped on")
    func lastSequenceNumber() throws {
        let directory = TemporaryDirectory("hostile-sequence")
        for base in [UInt64.max, UInt64.max - 1, JournalFormat.maximumBaseSequence] {
            let error = try refusal(of: journal(baseSequence: base), as: "Store.journal", in: directory) {
                journalManager(directory, model: entryModel)
            }
            #expect(error?.offset == 0, "\(String(describing: error))")
        }
        // Just below the bound, a journal opens and takes saves.
        try directory.write(journal(baseSequence: JournalFormat.maximumBaseSequence - 1), to: "Store.journal")
        let manager = journalManager(directory, model: entryModel)
        try fill(manager, count: 2)
        manager.close()
        let reopened = journalManager(directory, model: entryModel)
        let context = try reopened.createContext()
        #expect(try context.performAndWait { try context.count(for: FetchRequest<Entry>()) } == 2)
        reopened.close()
    }

    @Test(
        "indexes in a change record too large for an Int are refused with the record's offset",
        arguments: [
            ("entity index", [UInt64.max]),
            ("entity index", [UInt64(Int.max) + 1]),
            ("attribute index", [0, 0, 1, 1, 1, UInt64.max]),
            ("entity index", [0, 0, 0, 0, 1, UInt64.max]),
        ] as [(String, [UInt64])])
    func hugeIndexes(what: String, varints: [UInt64]) throws {
        let directory = TemporaryDirectory("hostile-index")
        // A change record: entity count 1, then the varints given (an index where an index goes).
        var writer = BinaryWriter(capacity: 64)
        writer.writeVarint(1)
        for value in varints {
            writer.writeVarint(value)
        }
        writer.write(contentsOf: [UInt8](repeating: 0, count: 16))
        let bytes = journal(baseSequence: 1, records: [writer.bytes])
        let error = try refusal(of: bytes, as: "Store.journal", in: directory) {
            journalManager(directory, model: entryModel)
        }
        #expect(error?.offset != nil, "\(String(describing: error))")
        #expect(error?.message.contains("out of range") == true || error?.message.contains("malformed") == true)
    }

    @Test("a flipped bit in the header's version is damage, not a newer format")
    func flippedVersionBit() throws {
        let directory = TemporaryDirectory("hostile-header")
        let manager = journalManager(directory, model: entryModel)
        try fill(manager, count: 2)
        manager.close()
        var bytes = try directory.bytes(of: "Store.journal")
        bytes[9] ^= 0x40  // the high byte of the major version: 1 becomes 16385
        let error = try refusal(of: bytes, as: "Store.journal", in: directory) {
            journalManager(directory, model: entryModel)
        }
        #expect(error?.message.contains("checksum") == true, "\(String(describing: error))")
    }

    @Test("a journal whose valid snapshot repeats a primary key counter is refused")
    func journalCounters() throws {
        let directory = TemporaryDirectory("hostile-counters")
        for names in [["Entry", "Entry"]] {
            let header = JournalFormat.Header(storeIdentifier: UUID(), epoch: 42, baseSequence: 1)
            var writer = BinaryWriter(capacity: 256)
            let metadata = StoreMetadata(
                storeIdentifier: header.storeIdentifier, versionHash: entryModel.versionHash,
                nextPrimaryKeys: Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1 + "\($0)", 1) }))
            let snapshot = JournalPayload.encodeSnapshot(
                metadata: metadata, schema: entryModel.entities, history: nil, rowCount: { _ in 0 },
                forEachRow: { _, _ in })
            // Rename the counters in the encoded payload: "Entry0"/"Entry1"/"Ghost0" become the names asked for.
            var payload = snapshot
            for (index, name) in names.enumerated() {
                let encoded = Array("\(name)\(index)".utf8)
                let start = payload.firstRange(of: encoded)!.lowerBound
                payload.replaceSubrange(start..<(start + encoded.count), with: Array(name.utf8) + [0])
                // Keep the length prefix right: the name is one byte shorter; drop the pad byte.
                payload.remove(at: start + name.utf8.count)
                payload[start - 1] = UInt8(name.utf8.count)
            }
            writer.write(contentsOf: header.encoded())
            writer.write(
                contentsOf: JournalFormat.encodeRecord(type: .snapshot, sequence: 1, epoch: 42, payload: payload))
            let error = try refusal(of: writer.bytes, as: "Store.journal", in: directory) {
                journalManager(directory, model: entryModel)
            }
            #expect(error?.offset != nil, "\(names): \(String(describing: error))")
        }
    }

    // MARK: Refusals found after reading

    @Test("a dangling reference in a JSON store names the row's line")
    func danglingReference() throws {
        let directory = TemporaryDirectory("hostile-reference")
        let manager = jsonManager(directory, model: graphModel)
        let context = try manager.createContext()
        try context.performAndWait {
            let explorer = context.insert(Explorer.self)
            explorer.name = "Ada"
            let expedition = context.insert(Expedition.self)
            expedition.title = "Notes"
            expedition.leader = explorer
            try context.save()
        }
        manager.close()
        let valid = String(decoding: try directory.bytes(of: "Store.json"), as: UTF8.self)
        let edited = valid.replacingOccurrences(of: #""leader": 1"#, with: #""leader": 9"#)
        #expect(edited != valid)
        let error = try refusal(of: Array(edited.utf8), as: "Store.json", in: directory) {
            jsonManager(directory, model: graphModel)
        }
        #expect(error?.message.contains("does not exist") == true, "\(String(describing: error))")
        #expect(error?.line == place(of: #""leader": 9"#, in: edited).line, "\(String(describing: error))")
    }
}

// MARK: Decimals

/// Decimals are written as their text: what a store writes reads back as the same value, and
/// text that is not a whole decimal number is refused rather than read in part.
@Suite("Decimal values in store files")
struct DecimalStoreTests {
    static let model = ManagedObjectModel([AllTypes.self])

    @Test(
        "NaN and extreme decimals saved to a file store read back as saved, after reopening",
        arguments: ["json", "journal"])
    func roundTrip(store: String) throws {
        let directory = TemporaryDirectory("decimal-\(store)")
        let open = {
            store == "json"
                ? jsonManager(directory, model: Self.model) : journalManager(directory, model: Self.model)
        }
        let values: [Decimal] = [
            .nan, Decimal(string: "-12345678901234567890.123456789")!,
            Decimal(string: "0.000000000000000000000000000001")!,
            Decimal(sign: .plus, exponent: 100, significand: 7), Decimal(sign: .minus, exponent: -120, significand: 3),
            0,
        ]
        let writer = open()
        let context = try writer.createContext()
        let ids = try context.performAndWait {
            let objects = values.map { value in
                let object = context.insert(AllTypes.self)
                object.decimal = value
                return object
            }
            try context.save()
            return objects.map(\.objectID)
        }
        writer.close()

        let reader = open()
        defer { reader.close() }
        let readContext = try reader.createContext()
        let read = try readContext.performAndWait {
            try ids.map { try readContext.existingObject(with: $0, as: AllTypes.self).decimal }
        }
        #expect(read[0].isNaN)
        #expect(Array(read.dropFirst()) == Array(values.dropFirst()))
    }

    @Test(
        "decimal text that is not a whole number is refused with its place, not read in part",
        arguments: [
            "12abc", "1e", " 1", "nan", "1.2.3", "",
            // More significant digits than a Decimal holds: Foundation would round them.
            "1234567890123456789012345678901234567890123", String(repeating: "9", count: 60),
            "0.1234567890123456789012345678901234567891",
        ])
    func partialText(text: String) throws {
        let directory = TemporaryDirectory("decimal-text")
        let writer = jsonManager(directory, model: Self.model)
        let context = try writer.createContext()
        try context.performAndWait {
            context.insert(AllTypes.self).decimal = Decimal(string: "12.34")!
            try context.save()
        }
        writer.close()
        let valid = String(decoding: try directory.bytes(of: "Store.json"), as: UTF8.self)
        #expect(valid.contains(#""decimal": "12.34""#))
        let edited = valid.replacingOccurrences(of: #""decimal": "12.34""#, with: #""decimal": "\#(text)""#)
        try directory.write(Array(edited.utf8), to: "Store.json")
        let reader = jsonManager(directory, model: Self.model)
        defer { reader.close() }
        #expect {
            try reader.loadPersistentStore()
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .corrupted && error.message.contains("not a decimal number") && error.line != nil
        }
        #expect(try directory.bytes(of: "Store.json") == Array(edited.utf8))
    }
}
