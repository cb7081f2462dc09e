import Foundation
import QueueData
import Testing

@testable import QueueData

@Suite("JSON file store")
struct JSONFileStoreTests {
    let names = ["Lisbon", "Kyoto", "Quito"]

    func makeDocument(_ directory: TemporaryDirectory) throws -> [UInt8] {
        let manager = jsonManager(directory)
        try saveOneByOne(manager, names)
        manager.close()
        return try directory.bytes(of: "Store.json")
    }

    @Test("the document is valid JSON with the format, metadata, schema and one row per line")
    func documentShape() throws {
        let directory = TemporaryDirectory("json-shape")
        let bytes = try makeDocument(directory)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["format"] as? String == "QueueData.JSONFileStore")
        // Version 3: the test model has a subentity (Bicycle of Vehicle), recorded in the schema.
        #expect(object["version"] as? Int == 3)
        let schema = try #require(object["schema"] as? [[String: Any]])
        let bicycle = try #require(schema.first { $0["name"] as? String == "Bicycle" })
        #expect(bicycle["superentity"] as? String == "Vehicle")
        #expect(schema.first { $0["name"] as? String == "Vehicle" }?["superentity"] == nil)
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["versionHash"] as? String == testModel.versionHash)
        #expect((metadata["nextPrimaryKeys"] as? [String: Int])?["Destination"] == 4)
        let rows = try #require((object["rows"] as? [String: Any])?["Destination"] as? [[String: Any]])
        #expect(rows.map { $0["name"] as? String } == names)
        #expect(rows.map { $0["id"] as? Int } == [1, 2, 3])
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#"{"id": 2, "name": "Kyoto", "country": "", "rating": 0, "visited": null}"#))
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.file("Store.json").path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test("saving the same state twice writes the same bytes")
    func deterministicOutput() throws {
        let directory = TemporaryDirectory("json-stable")
        let first = try makeDocument(directory)
        let manager = jsonManager(directory)
        let context = try manager.createContext()
        try context.performAndWait {
            let object = try context.fetch(FetchRequest<Destination>())[0]
            object.rating = 1
            try context.save()
            object.rating = 0
            try context.save()
        }
        manager.close()
        #expect(try directory.bytes(of: "Store.json") == first)
    }

    @Test("every value type round-trips, including what JSON numbers cannot hold")
    func allTypesRoundTrip() throws {
        let directory = TemporaryDirectory("json-types")
        let manager = jsonManager(directory)
        let context = try manager.createContext()
        try context.performAndWait {
            let a = context.insert(AllTypes.self)
            a.double = .nan
            a.float = -.infinity
            a.string = "tab\t, newline\n, quote\", backslash\\, nul\u{0}, emoji 👋, \u{7F}"
            a.data = Data([0, 255, 1, 254])
            a.decimal = Decimal(string: "3.14159265358979323846")!
            a.date = Date(timeIntervalSinceReferenceDate: 12.000_000_1)
            a.address = Address(street: "Rua \"Augusta\"", zip: 1100)
            a.optionalAddress = Address(street: "x", zip: nil)
            let b = context.insert(AllTypes.self)
            b.double = -0.0
            b.int64 = Int64.min
            b.optionalString = "s"
            try context.save()
        }
        manager.close()
        let reopened = jsonManager(directory)
        let reader = try reopened.createContext()
        try reader.performAndWait {
            let objects = try reader.fetch(FetchRequest<AllTypes>())
            #expect(objects[0].double.isNaN)
            #expect(objects[0].float == -.infinity)
            #expect(objects[0].string == "tab\t, newline\n, quote\", backslash\\, nul\u{0}, emoji 👋, \u{7F}")
            #expect(objects[0].data == Data([0, 255, 1, 254]))
            #expect(objects[0].decimal == Decimal(string: "3.14159265358979323846"))
            #expect(objects[0].date == Date(timeIntervalSinceReferenceDate: 12.000_000_1))
            #expect(objects[0].address == Address(street: "Rua \"Augusta\"", zip: 1100))
            #expect(objects[0].optionalAddress == Address(street: "x", zip: nil))
            #expect(objects[1].double.sign == .minus && objects[1].double == 0)
            #expect(objects[1].int64 == Int64.min)
            #expect(objects[1].optionalString == "s")
            #expect(objects[1].optionalAddress == nil)
        }
        let text = String(decoding: try directory.bytes(of: "Store.json"), as: UTF8.self)
        #expect(text.contains(#""address": {"street":"Rua \"Augusta\"","zip":1100}"#))
        #expect(text.contains(#""double": "NaN""#))
    }

    @Test("a non-optional transformable value whose JSON is null is saved and read back")
    func transformableEncodingNull() throws {
        let directory = TemporaryDirectory("json-null-transformable")
        let model = ManagedObjectModel([NullableBoxHolder.self])
        let manager = jsonManager(directory, model: model)
        let context = try manager.createContext()
        try context.performAndWait {
            let holder = context.insert(NullableBoxHolder.self)
            holder.box = NullableBox(nil)
            try context.save()
        }
        manager.close()
        #expect(String(decoding: try directory.bytes(of: "Store.json"), as: UTF8.self).contains(#""box": null"#))
        let reopened = jsonManager(directory, model: model)
        let reader = try reopened.createContext()
        try reader.performAndWait {
            let holders = try reader.fetch(FetchRequest<NullableBoxHolder>())
            #expect(holders.map(\.box) == [NullableBox(nil)])
        }
        reopened.close()
    }

    @Test("a non-optional transformable holding null is refused when its type does not decode from it")
    func transformableNullRefused() throws {
        let directory = TemporaryDirectory("json-null-refused")
        let manager = jsonManager(directory)
        let context = try manager.createContext()
        try context.performAndWait {
            _ = context.insert(AllTypes.self)
            try context.save()
        }
        manager.close()
        let text = String(decoding: try directory.bytes(of: "Store.json"), as: UTF8.self)
        let edited = text.replacingOccurrences(of: #""address": {"street":"Main"}"#, with: #""address": null"#)
        #expect(edited != text)
        try directory.write(Array(edited.utf8), to: "Store.json")
        let reopened = jsonManager(directory)
        #expect(throws: StoreError.self) {
            _ = try reopened.createContext()
        }
        reopened.close()
    }

    @Test("documents written by other tools are read: any layout, any member order, omitted attributes")
    func documentsFromOtherTools() throws {
        let directory = TemporaryDirectory("json-tools")
        let hash = ManagedObjectModel([Destination.self]).versionHash
        let document = """
            {"rows": {"Destination": [
                {"visited": 12.5, "name": "Bern", "id": 7},
                {"id": 9, "rating": 3,
                 "name": "Chur"}
              ]},
             "schema": [{"attributes": [
                {"type": "string", "name": "name", "default": "", "optional": false},
                {"name": "country", "type": "string", "optional": false, "default": "CH"},
                {"name": "rating", "type": "integer64", "optional": false, "default": 0},
                {"name": "visited", "type": "date", "optional": true, "default": null}],
              "name": "Destination"}],
             "version": 1,
             "metadata": {"versionHash": "\(hash)", "storeIdentifier": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
                          "nextPrimaryKeys": {"Destination": 10}},
             "format": "QueueData.JSONFileStore"}
            """
        try directory.write(Array(document.utf8), to: "Store.json")
        let manager = jsonManager(directory, model: ManagedObjectModel([Destination.self]))
        let context = try manager.createContext()
        try context.performAndWait {
            let all = try context.fetch(FetchRequest<Destination>())
            #expect(all.map(\.name) == ["Bern", "Chur"])
            #expect(all.map(\.country) == ["CH", "CH"])
            #expect(all.map(\.rating) == [0, 3])
            #expect(all[0].visited == Date(timeIntervalSinceReferenceDate: 12.5))
            #expect(all[0].objectID.primaryKey == 7)
            #expect(all[0].objectID.storeIdentifier == UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
            context.insert(Destination.self).name = "Sion"
            try context.save()
            #expect(try context.fetchObjectIDs(FetchRequest<Destination>()).map(\.primaryKey) == [7, 9, 10])
        }
    }

    @Test(
        "hand-written rows in any order, listing any members in any order, open as written",
        arguments: 0..<4)
    func randomHandWrittenRows(seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 7_000)
        let model = ManagedObjectModel([Destination.self])
        let defaults: [String: String] = ["name": "\"\"", "country": "\"CH\"", "rating": "0", "visited": "null"]
        for round in 0..<25 {
            // Unique keys, ascending in some rounds (as QueueData writes them), shuffled in others.
            var keys = Array(
                Set(
                    (0..<Int.random(in: 0...40, using: &generator)).map { _ in
                        Int64.random(in: 1...200, using: &generator)
                    }))
            keys.sort()
            if round % 3 != 0 {
                keys.shuffle(using: &generator)
            }
            // Each row lists a random subset of its members, in a random order; the rest take
            // their defaults (not the values of the row before).
            var expected: [(key: Int64, name: String, country: String, rating: Int, visited: Date?)] = []
            var lines: [String] = []
            for key in keys {
                var members = ["\"id\": \(key)"]
                var row = (key: key, name: "", country: "CH", rating: 0, visited: Date?.none)
                for member in ["name", "country", "rating", "visited"].shuffled(using: &generator)
                where Bool.random(using: &generator) {
                    switch member {
                    case "name":
                        row.name = "n\(Int.random(in: 0..<1000, using: &generator))"
                        members.append("\"name\": \"\(row.name)\"")
                    case "country":
                        row.country = "c\(Int.random(in: 0..<10, using: &generator))"
                        members.append("\"country\": \"\(row.country)\"")
                    case "rating":
                        row.rating = Int.random(in: -5...5, using: &generator)
                        members.append("\"rating\": \(row.rating)")
                    default:
                        let seconds = Double(Int.random(in: 0..<100, using: &generator))
                        row.visited = Date(timeIntervalSinceReferenceDate: seconds)
                        members.append("\"visited\": \(seconds)")
                    }
                }
                members.shuffle(using: &generator)
                lines.append("{" + members.joined(separator: ", ") + "}")
                expected.append(row)
            }
            expected.sort { $0.key < $1.key }
            let attributes = ["name": "string", "country": "string", "rating": "integer64", "visited": "date"]
                .sorted { $0.key < $1.key }
                .map { name, type in
                    #"{"name": "\#(name)", "type": "\#(type)", "optional": \#(name == "visited"), "default": \#(defaults[name]!)}"#
                }
            let document = """
                {"format": "QueueData.JSONFileStore", "version": 1,
                 "metadata": {"versionHash": "\(model.versionHash)",
                              "storeIdentifier": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
                              "nextPrimaryKeys": {"Destination": 201}},
                 "schema": [{"name": "Destination", "attributes": [\(attributes.joined(separator: ", "))]}],
                 "rows": {"Destination": [\(lines.joined(separator: ",\n"))]}}
                """
            let directory = TemporaryDirectory("json-random-rows")
            try directory.write(Array(document.utf8), to: "Store.json")
            // Through the coordinator (the rows packed into its blocks) …
            let manager = jsonManager(directory, model: model)
            let context = try manager.createContext()
            try context.performAndWait {
                let all = try context.fetch(FetchRequest<Destination>())
                #expect(all.map(\.objectID.primaryKey) == expected.map(\.key))
                #expect(all.map(\.name) == expected.map(\.name))
                #expect(all.map(\.country) == expected.map(\.country))
                #expect(all.map(\.rating) == expected.map(\.rating))
                #expect(all.map(\.visited) == expected.map(\.visited))
            }
            manager.close()
            // … and through the store's own open, as a tool reads it.
            let store = try JSONFileStore(directory: directory.url, name: "Store")
            let contents = try store.open(for: model)
            store.close()
            let rows = try #require(contents.rows["Destination"])
            #expect(rows.map(\.primaryKey).sorted() == expected.map(\.key))
            // (In the document's column order: its schema lists the attributes by name.)
            let name = try #require(contents.schema.first?.index(ofAttribute: "name"))
            let country = try #require(contents.schema.first?.index(ofAttribute: "country"))
            for row in rows {
                let reference = try #require(expected.first { $0.key == row.primaryKey })
                #expect(row.values[name] == .string(reference.name))
                #expect(row.values[country] == .string(reference.country))
            }
            // A row repeating a key is refused, whichever row it repeats.
            if let repeated = keys.randomElement(using: &generator) {
                var withRepeat = lines
                withRepeat.insert(
                    "{\"id\": \(repeated)}", at: Int.random(in: 0...lines.count, using: &generator))
                let repeatedDocument = document.replacingOccurrences(
                    of: lines.joined(separator: ",\n"), with: withRepeat.joined(separator: ",\n"))
                let other = TemporaryDirectory("json-random-repeat")
                try other.write(Array(repeatedDocument.utf8), to: "Store.json")
                #expect {
                    try jsonManager(other, model: model).loadPersistentStore()
                } throws: { error in
                    (error as? StoreError)?.code == .corrupted
                        && (error as? StoreError)?.message.contains("have the id \(repeated)") == true
                }
                #expect(try other.bytes(of: "Store.json") == Array(repeatedDocument.utf8))
            }
        }
    }

    @Test(
        "damaged or foreign documents are refused with a typed error and never modified",
        arguments: [
            ("empty", "", "corrupted"),
            ("whitespace", "  \n", "corrupted"),
            ("truncated", "TRUNCATE", "corrupted"),
            ("not an object", "[1, 2, 3]", "unsupportedFormat"),
            ("another format", #"{"format": "Something.Else", "version": 1}"#, "unsupportedFormat"),
            ("future version", "FUTURE", "unsupportedFormat"),
            ("invalid JSON", #"{"format": "QueueData.JSONFileStore", "version": 1, "metadata": {,}}"#, "corrupted"),
            ("wrong value type", "WRONGTYPE", "corrupted"),
            ("binary garbage", "\u{1}\u{2}\u{FF}", "unsupportedFormat"),
        ])
    func refusedDocuments(label: String, content: String, code: String) throws {
        let directory = TemporaryDirectory("json-refused")
        let valid = String(decoding: try makeDocument(directory), as: UTF8.self)
        let text: String
        switch content {
        case "TRUNCATE": text = String(valid.prefix(valid.count / 2))
        case "FUTURE": text = valid.replacingOccurrences(of: #""version": 3"#, with: #""version": 4"#)
        case "WRONGTYPE": text = valid.replacingOccurrences(of: #""rating": 0"#, with: #""rating": "zero""#)
        default: text = content
        }
        let bytes = Array(text.utf8)
        try directory.write(bytes, to: "Store.json")
        #expect {
            try jsonManager(directory).loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code.rawValue == code
        }
        #expect(try directory.bytes(of: "Store.json") == bytes)
        if code == "corrupted" && !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            do {
                try jsonManager(directory).loadPersistentStore()
            } catch let error as StoreError {
                #expect(error.offset != nil, "\(label): \(error)")
            }
        }
    }

    @Test("a crash at any step of a save leaves the old document or the new one, never a mix")
    func crashDuringSave() throws {
        let template = TemporaryDirectory("json-crash-template")
        let bytes = try makeDocument(template)

        let counting = FaultyFileSystem()
        let probe = TemporaryDirectory("json-crash-probe")
        try probe.write(bytes, to: "Store.json")
        let probeManager = jsonManager(probe, fileSystem: counting)
        try probeManager.loadPersistentStore()
        counting.reset()
        try saveOneByOne(probeManager, ["new"])
        let operations = counting.count
        probeManager.close()
        #expect(counting.log.contains("rename"))

        for step in 1...operations {
            for fault in [FaultyFileSystem.Fault.error(EIO), .error(ENOSPC), .shortWrite] {
                let directory = TemporaryDirectory("json-crash")
                try directory.write(bytes, to: "Store.json")
                let faulty = FaultyFileSystem()
                let manager = jsonManager(directory, fileSystem: faulty)
                let context = try manager.createContext()
                faulty.reset(failAt: step, fault: fault, crashes: true)
                context.performAndWait {
                    context.insert(Destination.self).name = "new"
                    #expect(throws: StoreError.self, "step \(step) (\(counting.log[step - 1]))") { try context.save() }
                    #expect(context.hasChanges)
                }
                manager.close()
                let recovered = try storedNames(jsonManager(directory))
                let renamed = counting.log[..<step].contains("rename") && counting.log[step - 1] != "rename"
                #expect(recovered == (renamed ? names + ["new"] : names), "step \(step): \(recovered)")
                #expect(!directory.contents.contains { $0.contains(".tmp-") })
            }
        }
    }

    @Test("after a failed write the store refuses commits until reopened; then the save succeeds")
    func failedWriteRefusesUntilReopened() throws {
        let directory = TemporaryDirectory("json-retry")
        let bytes = try makeDocument(directory)
        let faulty = FaultyFileSystem()
        let manager = jsonManager(directory, fileSystem: faulty)
        let context = try manager.createContext()
        faulty.reset(failAt: 2, fault: .error(ENOSPC))  // the write of the new document
        try context.performAndWait {
            context.insert(Destination.self).name = "retry"
            #expect(throws: StoreError.self) { try context.save() }
            let unchanged = try directory.bytes(of: "Store.json")
            #expect(unchanged == bytes)
            #expect {
                try context.save()
            } throws: { error in
                (error as? StoreError)?.code == .closed
            }
        }
        manager.close()
        let reopened = jsonManager(directory)
        try saveOneByOne(reopened, ["retry"])
        reopened.close()
        #expect(try storedNames(jsonManager(directory)) == names + ["retry"])
    }

    @Test("a second manager gets .locked while the first has the document open")
    func locked() throws {
        let directory = TemporaryDirectory("json-lock")
        let first = jsonManager(directory)
        try first.loadPersistentStore()
        #expect {
            try jsonManager(directory).loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code == .locked
        }
        first.close()
        try jsonManager(directory).loadPersistentStore()
    }

    @Test("a seed document is copied in when there is no store")
    func seed() throws {
        let seedDirectory = TemporaryDirectory("json-seed")
        _ = try makeDocument(seedDirectory)
        let directory = TemporaryDirectory("json-seeded")
        let manager = jsonManager(directory, name: "App", seed: seedDirectory.file("Store.json"))
        #expect(try storedNames(manager) == names)
        #expect(directory.contents.contains("App.json"))
    }
}

/// A `Codable` value whose JSON is its optional's: `null` when it holds `nil`.
struct NullableBox: Codable, Equatable {
    var value: String?

    init(_ value: String?) {
        self.value = value
    }

    init(from decoder: any Decoder) throws {
        value = try decoder.singleValueContainer().decode(String?.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

final class NullableBoxHolder: ManagedObject {
    @Attribute var box: NullableBox = NullableBox("default")
}
