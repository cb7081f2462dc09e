import Foundation
import Testing

@testable import QueueData

final class Airport: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute var name: String = ""
    @Attribute var elevation: Int? = nil
    @Attribute var opened: Date? = nil
}

let airportModel = ManagedObjectModel([Airport.self])

final class Runway: ManagedObject {
    @Attribute var length: Int = 3000
    @Attribute var surface: String = "asphalt"
    @Attribute var note: String? = nil
}

let runwayModel = ManagedObjectModel([Runway.self])

/// A comparable summary of an `AllTypes` object's values (NaN as its text, so that it equals
/// itself).
private func summary(_ object: AllTypes) -> String {
    [
        "\(object.bool)", "\(object.int)", "\(object.int16)", "\(object.int32)", "\(object.int64)",
        "\(object.double.bitPattern)", "\(object.float.bitPattern)", object.string.debugDescription,
        "\(object.date.timeIntervalSince1970)", object.data.base64EncodedString(), object.uuid.uuidString,
        object.url.absoluteString, "\(object.decimal)", String(describing: object.optionalString),
        String(describing: object.optionalInt), String(describing: object.address),
        String(describing: object.optionalAddress), "\(object.status)",
    ].joined(separator: "|")
}

@Suite("Import")
struct ImportTests {
    /// Export every attribute type, import the file into another store: the same values.
    @Test(arguments: ["csv", "jsonl"])
    func exportImportsBackUnchanged(format: String) async throws {
        let directory = TemporaryDirectory("import-roundtrip")
        let source = journalManager(directory, name: "Source")
        defer { source.close() }
        let context = try source.createContext()
        var generator = SeededGenerator(seed: exportSeed &+ 7)
        let expected: [String] = try context.performAndWait {
            for index in 0..<300 {
                let object = context.insert(AllTypes.self)
                object.bool = index % 2 == 0
                object.int = Int.random(in: Int.min...Int.max, using: &generator)
                object.int16 = Int16.random(in: Int16.min...Int16.max, using: &generator)
                object.double = [0.1, -0.0, 1e-5, 1e15, .nan, .infinity, -.infinity, 3][index % 8]
                object.float = Float.random(in: -1000...1000, using: &generator)
                object.string = index == 0 ? "" : "\(index), \"quoted\"\r\nline é 日本 🙂"
                object.date = Date(
                    timeIntervalSince1970: Double(Int.random(in: -8_000_000...8_000_000_000, using: &generator)) / 8)
                object.data = Data((0..<(index % 9)).map { UInt8(truncatingIfNeeded: $0 * 37) })
                object.uuid = UUID()
                object.url = URL(string: "https://example.com/\(index)?a=b")!
                object.decimal = Decimal(string: "\(index).\(index % 100)")!
                object.optionalString = index % 3 == 0 ? nil : index % 3 == 1 ? "" : "s\(index)"
                object.optionalInt = index % 2 == 0 ? nil : -index
                object.address = Address(street: "Rua \"\(index)\", 2º", zip: index % 2 == 0 ? nil : index)
                object.optionalAddress = index % 4 == 0 ? nil : Address(street: "x", zip: 1)
                object.status = index % 2 == 0 ? .planned : .booked
            }
            try context.save()
            return try context.fetch(FetchRequest<AllTypes>()).map(summary)
        }
        let file = directory.file("all.\(format)")
        _ = try await context.export(
            FetchRequest<AllTypes>(), to: file,
            formatter: format == "csv" ? CSVExportFormatter() as any ExportFormatter : JSONLinesExportFormatter())

        let target = journalManager(directory, name: "Target")
        defer { target.close() }
        let importer = try target.createContext()
        let result = try await importer.importRecords(from: file, entityName: "AllTypes", batchSize: 128)
        #expect(result == ImportResult(recordCount: 300, insertedCount: 300, updatedCount: 0))
        let imported = try importer.performAndWait { try importer.fetch(FetchRequest<AllTypes>()).map(summary) }
        #expect(imported.count == expected.count)
        for (got, want) in zip(imported, expected) where got != want {
            Issue.record("imported \(got)\nexpected \(want)")
            break
        }
    }

    /// Records matching an existing object's unique attribute update it (an upsert); the others
    /// are inserted; every context merges the batches.
    @Test func uniquenessConstraintsDecideBetweenInsertAndUpsert() async throws {
        let directory = TemporaryDirectory("import-upsert")
        let manager = journalManager(directory, model: airportModel)
        defer { manager.close() }
        let context = try manager.createContext()
        let watcher = try manager.createContext()
        try context.performAndWait {
            for (code, name) in [("LIS", "Lisboa"), ("OPO", "Porto")] {
                let airport = context.insert(Airport.self)
                airport.code = code
                airport.name = name
            }
            try context.save()
        }
        let watched = try watcher.performAndWait { try watcher.fetch(FetchRequest<Airport>()).count }
        #expect(watched == 2)
        let lines = [
            #"{"code": "LIS", "name": "Humberto Delgado", "elevation": 114}"#,
            #"{"code": "FAO", "name": "Faro", "opened": "1965-07-11T00:00:00Z"}"#,
            #"{"code": "FNC", "name": "Madeira", "elevation": null}"#,
            #"{"code": "FAO", "name": "Faro Airport"}"#,
        ]
        let file = directory.file("airports.jsonl")
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        let reports = Recorder<ExportProgress>()
        let result = try await context.importRecords(
            from: file, entityName: "Airport", batchSize: 3, progress: { reports.record($0) })
        #expect(result == ImportResult(recordCount: 4, insertedCount: 2, updatedCount: 2))
        let stored = try context.performAndWait {
            try context.fetch(FetchRequest<Airport>(sortBy: [SortDescriptor(\.code)])).map {
                "\($0.code) \($0.name) \($0.elevation.map(String.init) ?? "-") \($0.opened.map { ISO8601Text.string($0) } ?? "-")"
            }
        }
        #expect(
            stored == [
                "FAO Faro Airport - -", "FNC Madeira - -", "LIS Humberto Delgado 114 -", "OPO Porto - -",
            ])
        flush(context)
        #expect(reports.values.last == ExportProgress(completedCount: 4, totalCount: 4))
        flush(watcher)
        let merged = try watcher.performAndWait {
            try watcher.fetch(FetchRequest<Airport>(sortBy: [SortDescriptor(\.code)])).map(\.name)
        }
        #expect(merged == ["Faro Airport", "Madeira", "Humberto Delgado", "Porto"])

        // Under .error, a duplicate fails the save: nothing of that batch is written.
        try Data(#"{"code": "OPO", "name": "Again"}"#.utf8).write(to: file)
        await #expect(throws: MergeConflictError.self) {
            try await context.importRecords(from: file, entityName: "Airport", mergePolicy: .error)
        }
        let count = try context.performAndWait { try context.count(for: FetchRequest<Airport>()) }
        #expect(count == 4)
    }

    /// An upsert replaces the whole object: a field the record leaves out takes its default on
    /// the updated object, as the documentation says (it is not kept).
    @Test func upsertResetsTheFieldsTheFileLeavesOut() async throws {
        let directory = TemporaryDirectory("import-upsert-defaults")
        let manager = journalManager(directory, model: airportModel)
        defer { manager.close() }
        let context = try manager.createContext()
        try context.performAndWait {
            let airport = context.insert(Airport.self)
            airport.code = "LIS"
            airport.name = "Lisboa"
            airport.elevation = 114
            airport.opened = Date(timeIntervalSince1970: 0)
            try context.save()
        }
        let file = directory.file("airports.jsonl")
        try Data(#"{"code": "LIS", "elevation": 120}"#.utf8).write(to: file)
        let result = try await context.importRecords(from: file, entityName: "Airport")
        #expect(result == ImportResult(recordCount: 1, insertedCount: 0, updatedCount: 1))
        let stored = try context.performAndWait {
            try context.fetch(FetchRequest<Airport>()).map {
                "\($0.code) \($0.name.debugDescription) \($0.elevation ?? -1) \($0.opened == nil)"
            }
        }
        #expect(stored == [#"LIS "" 120 true"#])
    }

    /// An upsert's relationships follow the merge policy, as documented: under the default
    /// object trump a to-many in the record is joined with the existing members, one the record
    /// leaves out is kept; the attributes it leaves out are reset.
    @Test func upsertJoinsToManyRelationships() async throws {
        let directory = TemporaryDirectory("import-upsert-relationships")
        let manager = journalManager(directory, model: uniquenessModel)
        defer { manager.close() }
        let context = try manager.createContext()
        let porto = try context.performAndWait {
            let country = context.insert(Country.self)
            country.code = "PT"
            country.population = 10
            let lisboa = context.insert(City.self)
            lisboa.name = "Lisboa"
            lisboa.country = country
            let porto = context.insert(City.self)
            porto.name = "Porto"
            try context.save()
            return porto.objectID.uriRepresentation.absoluteString
        }
        func stored() throws -> String {
            try context.performAndWait {
                let countries = try context.fetch(FetchRequest<Country>())
                return countries.map { country in
                    "\(country.code) \(country.name) \(country.population) "
                        + country.cities.map(\.name).sorted().joined(separator: ",")
                }.joined(separator: ";")
            }
        }
        let file = directory.file("countries.jsonl")
        try Data(#"{"code": "PT", "name": "Portugal", "cities": ["\#(porto)"]}"#.utf8).write(to: file)
        let first = try await context.importRecords(from: file, entityName: "Country")
        #expect(first == ImportResult(recordCount: 1, insertedCount: 0, updatedCount: 1))
        #expect(try stored() == "PT Portugal 0 Lisboa,Porto")
        try Data(#"{"code": "PT", "name": "Portugal"}"#.utf8).write(to: file)
        _ = try await context.importRecords(from: file, entityName: "Country")
        #expect(try stored() == "PT Portugal 0 Lisboa,Porto")
    }

    /// In CSV, an empty unquoted field is nil: refused for a required attribute that is not a
    /// string, as JSON's null is (not silently the default), naming the line and field; a
    /// required string reads it as the empty string.
    @Test(arguments: [
        ("csv", "length,surface,note\r\n2500,grass,a\r\n,concrete,b\r\n", 3, "length"),
        ("jsonl", "{\"length\": 2500}\n{\"length\": null}\n", 2, "length"),
    ])
    func nilForARequiredAttributeIsRefused(format: String, text: String, line: Int, field: String) async throws {
        let directory = TemporaryDirectory("import-required")
        let manager = makeManager(model: runwayModel)
        defer { manager.close() }
        let context = try manager.createContext()
        let file = directory.file("runways.\(format)")
        try Data(text.utf8).write(to: file)
        let error = await #expect(throws: ImportError.self) {
            try await context.importRecords(from: file, entityName: "Runway")
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.line == line)
        #expect(error?.field == field)
        #expect(error.map { "\($0)" }?.contains("not optional") == true, "\(String(describing: error))")

        try Data("length,surface,note\r\n2500,,\r\n".utf8).write(to: file)
        _ = try await context.importRecords(from: file, format: .csv, entityName: "Runway")
        let stored = try context.performAndWait {
            try context.fetch(FetchRequest<Runway>()).map {
                "\($0.length) \($0.surface.debugDescription) \($0.note == nil)"
            }
        }
        #expect(stored == [#"2500 "" true"#])
    }

    /// CSV written by Python's `csv` module (an independent writer) imports with its quoting,
    /// line breaks, delimiters and empty strings.
    @Test func csvWrittenByPythonImports() async throws {
        let directory = TemporaryDirectory("import-python")
        let file = directory.file("airports.csv")
        let names = ["a,b", "say \"hi\"", "two\nlines", "crlf\r\nline", "", "é 日本 🙂", " spaced ", "tab\there"]
        let script = """
            import csv, json, sys
            names = json.loads(sys.argv[2])
            with open(sys.argv[1], "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(["code", "name", "elevation"])
                for i, name in enumerate(names):
                    w.writerow([f"C{i}", name, i * 10 if i % 2 else ""])
            """
        let namesJSON = String(decoding: try JSONSerialization.data(withJSONObject: names), as: UTF8.self)
        let output = try runPython(script, [file.path, namesJSON])
        #expect(output.status == 0, "\(output.standardError)")
        let manager = journalManager(directory, model: airportModel)
        defer { manager.close() }
        let context = try manager.createContext()
        let result = try await context.importRecords(from: file, entityName: "Airport")
        #expect(result.insertedCount == names.count)
        let stored = try context.performAndWait {
            try context.fetch(FetchRequest<Airport>()).map { ($0.code, $0.name, $0.elevation) }
        }
        #expect(stored.map(\.1) == names)
        #expect(stored.map(\.0) == names.indices.map { "C\($0)" })
        #expect(stored.map(\.2) == names.indices.map { $0 % 2 == 1 ? $0 * 10 : nil })
    }

    /// Relationships hold object ID URIs of the store: resolved on import; an unknown one is an
    /// error naming the line and field.
    @Test func relationshipsResolveToObjectsOfTheStore() async throws {
        let directory = TemporaryDirectory("import-graph")
        let manager = graphManager("journal", directory)
        defer { manager.close() }
        let context = try manager.createContext()
        let (expedition, tags) = try context.performAndWait {
            let expedition = context.insert(Expedition.self)
            expedition.title = "Andes"
            let tags = (0..<2).map { index -> Tag in
                let tag = context.insert(Tag.self)
                tag.label = "t\(index)"
                return tag
            }
            try context.save()
            return (expedition.objectID, tags.map(\.objectID))
        }
        let file = directory.file("waypoints.jsonl")
        try Data(
            """
            {"name": "Quito", "expedition": "\(expedition)"}
            {"name": "Cusco", "expedition": null}

            """.utf8
        ).write(to: file)
        _ = try await context.importRecords(from: file, entityName: "Waypoint")
        let waypoints = try context.performAndWait {
            let andes = try context.existingObject(with: expedition, as: Expedition.self)
            return andes.waypoints.map(\.name)
        }
        #expect(waypoints == ["Quito"])

        let csv = directory.file("expeditions.csv")
        try Data("title,tags\r\nPatagonia,\(tags[0]) \(tags[1])\r\n".utf8).write(to: csv)
        _ = try await context.importRecords(from: csv, entityName: "Expedition")
        let labels = try context.performAndWait {
            try context.first(Expedition.self, where: #Predicate { $0.title == "Patagonia" }).tags.map(\.label).sorted()
        }
        #expect(labels == ["t0", "t1"])

        let foreign = ObjectID(uriRepresentation: URL(string: "x-queuedata://\(UUID().uuidString)/Expedition/p1")!)!
        try Data(#"{"name": "Lima", "expedition": "\#(foreign)"}"#.utf8).write(to: file)
        let error = await #expect(throws: ImportError.self) {
            try await context.importRecords(from: file, entityName: "Waypoint")
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.line == 1)
        #expect(error?.field == "expedition")
    }

    /// Bad input: a typed error naming the line and field, and nothing imported, even when the
    /// bad record comes after good ones.
    @Test(
        arguments: [
            (
                "jsonl", "{\"code\": \"A\"}\n{\"code\": \"B\", \"elevation\": \"high\"}\n",
                ImportError.Code.invalidValue, 2, "elevation"
            ),
            ("jsonl", "{\"code\": \"A\"}\n{\"code\": \"B\", \"runway\": 3}\n", .unknownField, 2, "runway"),
            ("jsonl", "{\"code\": \"A\"}\n\n{\"code\": \n", .malformedRecord, 3, nil),
            ("jsonl", "[1, 2]\n", .malformedRecord, 1, nil),
            ("jsonl", "{\"code\": null}\n", .invalidValue, 1, "code"),
            ("jsonl", "{\"code\": \"A\", \"opened\": \"yesterday\"}\n", .invalidValue, 1, "opened"),
            ("csv", "code,name\r\nA,x\r\nB\r\n", .malformedRecord, 3, nil),
            ("csv", "code,name\r\nA,\"unterminated\r\n", .malformedRecord, 2, nil),
            ("csv", "code,name\r\nA,x\"y\r\n", .malformedRecord, 2, nil),
            ("csv", "code,name\r\nA,\"x\"y\r\n", .malformedRecord, 2, nil),
            ("csv", "code,height\r\n", .unknownField, 1, "height"),
            ("csv", "code,elevation\r\nA,1\r\n\"multi\nline\",12.5\r\n", .invalidValue, 3, "elevation"),
            ("csv", "", .missingHeader, 1, nil),
        ] as [(String, String, ImportError.Code, Int, String?)])
    func badInputIsRefusedWithItsPlace(
        format: String, text: String, code: ImportError.Code, line: Int, field: String?
    ) async throws {
        let directory = TemporaryDirectory("import-bad")
        let manager = makeManager(model: airportModel)
        defer { manager.close() }
        let context = try manager.createContext()
        let file = directory.file("bad.\(format)")
        try Data(text.utf8).write(to: file)
        let error = await #expect(throws: ImportError.self) {
            try await context.importRecords(from: file, entityName: "Airport", batchSize: 1)
        }
        #expect(error?.code == code, "\(String(describing: error))")
        #expect(error?.line == line, "\(String(describing: error))")
        #expect(error?.field == field, "\(String(describing: error))")
        #expect(error?.url == file)
        let count = try context.performAndWait { try context.count(for: FetchRequest<Airport>()) }
        #expect(count == 0)
    }

    /// Random bytes, and random damage to a valid file, give a typed error or records, never a
    /// trap; a file that imports has exactly its valid records.
    @Test(arguments: ["csv", "jsonl"])
    func damagedFilesNeverTrap(format: String) async throws {
        let directory = TemporaryDirectory("import-fuzz")
        let manager = makeManager(model: airportModel)
        defer { manager.close() }
        let context = try manager.createContext()
        var generator = SeededGenerator(seed: exportSeed &+ 11)
        let valid =
            format == "csv"
            ? Array("code,name,elevation\r\nLIS,\"Lisboa, PT\",114\r\nOPO,Porto,\r\n\"F\"\"AO\",\"a\nb\",7\r\n".utf8)
            : Array("{\"code\": \"LIS\", \"name\": \"Lisboa\"}\n{\"code\": \"OPO\", \"elevation\": 2}\n".utf8)
        let file = directory.file("fuzz.\(format)")
        for round in 0..<200 {
            var bytes = valid
            if round % 3 == 0 {
                bytes = (0..<Int.random(in: 0...80, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &generator) where !bytes.isEmpty {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    switch Int.random(in: 0...2, using: &generator) {
                    case 0: bytes[index] = [0x22, 0x2C, 0x0A, 0x0D, 0x7B, 0xFF, 0x00].randomElement(using: &generator)!
                    case 1: bytes.remove(at: index)
                    default: bytes.removeSubrange(index...)
                    }
                }
            }
            try Data(bytes).write(to: file)
            do {
                _ = try await context.importRecords(
                    from: file, entityName: "Airport", mergePolicy: .mergeByPropertyObjectTrump)
            } catch is ImportError {
            } catch is ValidationError {
            }
        }
    }

    /// A CSV export with a single column writes a nil as an empty line; the import reads it back
    /// as a record of one nil field instead of skipping it, so every record comes back.
    @Test func singleColumnCSVKeepsNilRecords() async throws {
        let directory = TemporaryDirectory("import-single-column")
        let manager = journalManager(directory, model: remarkModel)
        defer { manager.close() }
        let context = try manager.createContext()
        let texts: [String?] = [nil, "", "x", nil, "a,b", nil]
        try context.performAndWait {
            for text in texts {
                context.insert(Remark.self).text = text
            }
            try context.save()
        }
        let file = directory.file("remarks.csv")
        _ = try await context.export(
            FetchRequest<Remark>(), to: file, formatter: CSVExportFormatter(), includesObjectID: false)
        #expect(try directory.bytes(of: "remarks.csv") == Array("text\r\n\r\n\"\"\r\nx\r\n\r\n\"a,b\"\r\n\r\n".utf8))

        let target = journalManager(directory, name: "Target", model: remarkModel)
        defer { target.close() }
        let importer = try target.createContext()
        let result = try await importer.importRecords(from: file, entityName: "Remark")
        #expect(result.insertedCount == texts.count)
        let imported = try importer.performAndWait { try importer.fetch(FetchRequest<Remark>()).map(\.text) }
        #expect(imported == texts)

        // Blank lines are still skipped where the header has more than one column.
        try Data("length,surface\r\n\r\n10,a\r\n\r\n".utf8).write(to: file)
        let runways = try await importer.importRecords(from: file, entityName: "Runway")
        #expect(runways.recordCount == 1)
    }
}

/// An entity whose export (without object IDs) has a single column.
final class Remark: ManagedObject {
    @Attribute var text: String? = nil
}

let remarkModel = ManagedObjectModel([Remark.self, Runway.self])

/// A `Codable` value whose JSON is `null` (a wrapper around an optional, encoded as a single
/// value).
struct NullEncodedValue: Codable, Hashable {
    var inner: Int?

    init(inner: Int?) { self.inner = inner }

    init(from decoder: any Decoder) throws {
        inner = try decoder.singleValueContainer().decode(Int?.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(inner)
    }
}

final class Parcel: ManagedObject {
    @Attribute var label: String = ""
    @Attribute var content: NullEncodedValue = NullEncodedValue(inner: 1)
}

@Suite("Import of transformable values")
struct TransformableImportTests {
    /// A required transformable attribute whose value encodes as JSON `null` is exported as
    /// `null`, and that `null` imports back as the value, not as a refused `nil`.
    @Test(arguments: ["csv", "jsonl"])
    func valuesEncodedAsNullImportBack(format: String) async throws {
        let directory = TemporaryDirectory("import-null-transformable")
        let model = ManagedObjectModel([Parcel.self])
        let source = journalManager(directory, name: "Source", model: model)
        defer { source.close() }
        let context = try source.createContext()
        try context.performAndWait {
            for index in 0..<4 {
                let parcel = context.insert(Parcel.self)
                parcel.label = "p\(index)"
                parcel.content = NullEncodedValue(inner: index % 2 == 0 ? nil : index)
            }
            try context.save()
        }
        let file = directory.file("parcels.\(format)")
        _ = try await context.export(
            FetchRequest<Parcel>(sortBy: [SortDescriptor(\.label)]), to: file,
            formatter: format == "csv" ? CSVExportFormatter() as any ExportFormatter : JSONLinesExportFormatter())

        let target = journalManager(directory, name: "Target", model: model)
        defer { target.close() }
        let importer = try target.createContext()
        let result = try await importer.importRecords(from: file, entityName: "Parcel")
        #expect(result.insertedCount == 4)
        let contents = try importer.performAndWait {
            try importer.fetch(FetchRequest<Parcel>(sortBy: [SortDescriptor(\.label)])).map(\.content.inner)
        }
        #expect(contents == [nil, 1, nil, 3])
    }

    /// A `null` that does not decode as the attribute's type is still refused, with its place.
    @Test func nullThatDoesNotDecodeIsRefused() async throws {
        let directory = TemporaryDirectory("import-null-refused")
        let manager = journalManager(directory, model: ManagedObjectModel([AllTypes.self]))
        defer { manager.close() }
        let context = try manager.createContext()
        try directory.write(Array("{\"address\": null}\n".utf8), to: "bad.jsonl")
        let error = await #expect(throws: ImportError.self) {
            try await context.importRecords(from: directory.file("bad.jsonl"), entityName: "AllTypes")
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.line == 1)
        #expect(error?.field == "address")
        #expect(try context.performAndWait { try context.count(for: FetchRequest<AllTypes>()) } == 0)
    }
}

@Suite("Import of Float values")
struct FloatImportTests {
    /// A finite number beyond `Float`'s range is refused for a `Float` attribute (as one beyond
    /// `Double`'s is for a `Double`), not stored as infinity; the largest `Float` and the
    /// written non-finite values still import.
    @Test(arguments: [
        ("jsonl", "{\"float\": 1e39}\n"), ("jsonl", "{\"float\": -3.5e38}\n"), ("csv", "float\r\n1e39\r\n"),
    ])
    func finiteValuesBeyondFloatAreRefused(format: String, text: String) async throws {
        let directory = TemporaryDirectory("import-float-range")
        let manager = journalManager(directory, model: ManagedObjectModel([AllTypes.self]))
        defer { manager.close() }
        let context = try manager.createContext()
        try directory.write(Array(text.utf8), to: "in.\(format)")
        let error = await #expect(throws: ImportError.self) {
            try await context.importRecords(from: directory.file("in.\(format)"), entityName: "AllTypes")
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.field == "float")
        #expect(error?.line == (format == "csv" ? 2 : 1))
        #expect(try context.performAndWait { try context.count(for: FetchRequest<AllTypes>()) } == 0)

        try directory.write(Array("float\r\n3.4028235e+38\r\nInfinity\r\n-Infinity\r\n".utf8), to: "ok.csv")
        _ = try await context.importRecords(from: directory.file("ok.csv"), entityName: "AllTypes")
        let floats = try context.performAndWait { try context.fetch(FetchRequest<AllTypes>()).map(\.float) }
        #expect(floats == [.greatestFiniteMagnitude, .infinity, -.infinity])
    }
}
