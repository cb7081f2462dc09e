import Foundation
import Testing

@_spi(StoreTool) @_spi(Fuzzing) @testable import QueueData

/// The `qd` executable the tests run: `QD_PATH`, or the one built beside the test bundle.
let qdExecutablePath: String = {
    if let path = ProcessInfo.processInfo.environment["QD_PATH"] {
        return path
    }
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("qd"),
        Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("qd"),
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../.build/debug/qd"),
    ]
    return (candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]).path
}()

/// Runs `qd` with `arguments`.
private func qd(_ arguments: String...) throws -> ProcessOutput {
    try runProcess(qdExecutablePath, arguments)
}

/// The JSON object `qd` printed.
private func json(_ output: ProcessOutput) throws -> [String: Any] {
    try #require(
        try JSONSerialization.jsonObject(with: Data(output.standardOutput.utf8)) as? [String: Any],
        "\(output.standardOutput)\n\(output.standardError)")
}

/// A graph store of `kind` (journal or json) in `directory`, written by the library: an explorer,
/// expeditions with waypoints and tags, some saves, a deletion.
private func writeGraphStore(_ kind: String, _ directory: TemporaryDirectory) throws -> URL {
    let manager = graphManager(kind, directory)
    defer { manager.close() }
    let context = try manager.createContext()
    try context.performAndWait {
        let ada = context.insert(Explorer.self)
        ada.name = "Ada, \"the\" first"
        let tags = (0..<3).map { index -> Tag in
            let tag = context.insert(Tag.self)
            tag.label = "t\(index)"
            return tag
        }
        try context.save()
        for index in 0..<12 {
            let expedition = context.insert(Expedition.self)
            expedition.title = "E\(index)"
            expedition.leader = index % 3 == 0 ? nil : ada
            expedition.tags = Set(tags.prefix(index % 4))
            expedition.waypoints = (0..<(index % 3)).map { step in
                let waypoint = context.insert(Waypoint.self)
                waypoint.name = "w\(index).\(step)"
                return waypoint
            }
            try context.save()
        }
        context.delete(try context.fetch(FetchRequest<Expedition>(fetchLimit: 1))[0])
        try context.save()
    }
    return directory.file("Store.\(kind)")
}

@Suite("qd")
struct QDToolTests {
    @Test(arguments: ["journal", "json"])
    func inspectShowsWhatTheLibraryWrote(kind: String) throws {
        let directory = TemporaryDirectory("qd-inspect")
        let store = try writeGraphStore(kind, directory)
        let before = try directory.bytes(of: store.lastPathComponent)
        let output = try qd("inspect", store.path, "--json")
        #expect(output.status == 0, "\(output.standardError)")
        let report = try json(output)
        let contents = try #require(try StoreInspection.inspect(store).contents)
        #expect(report["storeIdentifier"] as? String == contents.metadata.storeIdentifier.uuidString)
        #expect(report["versionHash"] as? String == graphModel.versionHash)
        #expect(report["format"] as? String == kind)
        #expect(report["fileSize"] as? Int == before.count)
        let entities = try #require(report["entities"] as? [[String: Any]])
        let rows = Dictionary(uniqueKeysWithValues: entities.map { ($0["name"] as! String, $0["rows"] as! Int) })
        #expect(rows == ["Explorer": 1, "Expedition": 11, "Waypoint": 12, "Tag": 3, "Passport": 0])
        let expedition = try #require(entities.first { $0["name"] as? String == "Expedition" })
        let relationships = try #require(expedition["relationships"] as? [[String: Any]])
        let waypoints = try #require(relationships.first { $0["name"] as? String == "waypoints" })
        #expect(waypoints["inverse"] as? String == "expedition")
        #expect(waypoints["ordered"] as? Bool == true)
        #expect(waypoints["deleteRule"] as? String == "cascade")
        if kind == "journal" {
            #expect(report["records"] as? Int == 15)
            #expect(report["tornTail"] is NSNull)
        }
        let text = try qd("inspect", store.path)
        #expect(text.status == 0)
        #expect(
            text.standardOutput.contains(
                "waypoints → Waypoint (ordered to-many), inverse expedition, delete rule cascade"))
        let verify = try qd("verify", store.path)
        #expect(verify.status == 0, "\(verify.standardOutput)")
        #expect(verify.standardOutput.contains("sound"))
        #expect(try directory.bytes(of: store.lastPathComponent) == before)
    }

    /// A torn tail is a warning with its offset; damage followed by valid records is an error
    /// at the damaged record's offset; nothing is modified.
    @Test func verifyReportsTornAndCorruptedJournalsWithOffsets() throws {
        let directory = TemporaryDirectory("qd-verify")
        let store = try writeGraphStore("journal", directory)
        let intact = try directory.bytes(of: "Store.journal")
        let offsets = recordOffsets(intact)

        // A torn tail: half a record appended.
        try directory.write(intact + Array(intact[offsets[3]..<(offsets[3] + 30)]), to: "Store.journal")
        var output = try qd("verify", store.path, "--json")
        #expect(output.status == 0, "\(output.standardOutput)")
        var report = try json(output)
        var problems = try #require(report["problems"] as? [[String: Any]])
        #expect(problems.count == 1)
        #expect(problems.first?["severity"] as? String == "warning")
        #expect(problems.first?["offset"] as? Int == intact.count)
        let inspected = try json(try qd("inspect", store.path, "--json"))
        #expect((inspected["tornTail"] as? [String: Any])?["offset"] as? Int == intact.count)
        #expect(try directory.bytes(of: "Store.journal") == intact + Array(intact[offsets[3]..<(offsets[3] + 30)]))

        // Two damaged records in the middle: both reported, at their offsets.
        var damaged = intact
        damaged[offsets[4] + 30] ^= 0x40
        damaged[offsets[9] + 2] ^= 0x01
        try directory.write(damaged, to: "Store.journal")
        output = try qd("verify", store.path, "--json")
        #expect(output.status == 1)
        report = try json(output)
        #expect(report["sound"] as? Bool == false)
        problems = try #require(report["problems"] as? [[String: Any]])
        let damagedOffsets = problems.compactMap { $0["offset"] as? Int }
        #expect(damagedOffsets.contains(offsets[4]), "\(problems)")
        #expect(damagedOffsets.contains(offsets[9]), "\(problems)")
        let text = try qd("verify", store.path)
        #expect(text.status == 1)
        #expect(
            text.standardOutput.contains("error: offset \(offsets[4]): damaged record (the checksum does not match)"))
        #expect(try directory.bytes(of: "Store.journal") == damaged)
        // Reading commands still read the valid prefix; opening in the library refuses.
        #expect(try qd("inspect", store.path).status == 0)
        // inspect counts the records it read (the four before the damage), says where the damage
        // is and how many valid records after it are not read, and never prints "?" for what it does not know.
        let described = try qd("inspect", store.path)
        #expect(described.standardOutput.contains("4 read: a snapshot of"), "\(described.standardOutput)")
        #expect(described.standardOutput.contains("then 3 saves"), "\(described.standardOutput)")
        #expect(
            described.standardOutput.contains("Damage            at offset \(offsets[4]): damaged record"),
            "\(described.standardOutput)")
        #expect(described.standardOutput.contains("(9 valid records after it)"), "\(described.standardOutput)")
        #expect(!described.standardOutput.contains("offset ?"), "\(described.standardOutput)")
        let inspectedDamage = try json(try qd("inspect", store.path, "--json"))
        #expect(inspectedDamage["records"] as? Int == 4)
        #expect(inspectedDamage["changeRecords"] as? Int == 3)
        #expect((inspectedDamage["damage"] as? [String: Any])?["offset"] as? Int == offsets[4])

        // A damaged snapshot: no record is read, and inspect says so.
        var snapshotDamaged = intact
        snapshotDamaged[offsets[0] + 30] ^= 0x40
        try directory.write(snapshotDamaged, to: "Store.journal")
        let noSnapshot = try qd("inspect", store.path)
        #expect(
            noSnapshot.standardOutput.contains("0 read: no valid snapshot, then 0 saves"),
            "\(noSnapshot.standardOutput)")
        #expect(!noSnapshot.standardOutput.contains("offset ?"), "\(noSnapshot.standardOutput)")
    }

    /// References that do not resolve and inverses that do not point back are reported, with the
    /// row's line (JSON) or the record that last wrote it (journal).
    @Test(arguments: ["journal", "json"])
    func verifyFindsBrokenReferences(kind: String) throws {
        let directory = TemporaryDirectory("qd-references")
        let store = try writeGraphStore(kind, directory)
        var contents = try #require(try StoreInspection.inspect(store).contents)
        let expedition = contents.schema.first { $0.name == "Expedition" }!
        let leaderColumn = expedition.column(ofRelationship: "leader")!
        contents.rows["Expedition"]![2].values[leaderColumn] = .integer(999)
        let key = contents.rows["Expedition"]![2].primaryKey
        let bytes = storeFileBytes(contents, kind: kind)
        try directory.write(bytes, to: store.lastPathComponent)
        let output = try qd("verify", store.path, "--json")
        #expect(output.status == 1)
        let problems = try #require(try json(output)["problems"] as? [[String: Any]])
        let messages = problems.map { $0["message"] as! String }
        #expect(
            messages.contains {
                $0.contains("Expedition row \(key): leader refers to Explorer row 999, which does not exist")
            }, "\(messages)")
        #expect(problems.allSatisfy { $0["offset"] is Int }, "\(problems)")
        if kind == "json" {
            #expect(problems.allSatisfy { $0["line"] is Int })
        }
        #expect(try directory.bytes(of: store.lastPathComponent) == bytes)
    }

    /// Random damage to a journal and a JSON store: qd reports, exits 0, 1 or 3, and never
    /// crashes or modifies the file.
    @Test(arguments: ["journal", "json"])
    func damagedStoresNeverCrashTheTool(kind: String) throws {
        let directory = TemporaryDirectory("qd-fuzz")
        let store = try writeGraphStore(kind, directory)
        let intact = try directory.bytes(of: store.lastPathComponent)
        var generator = SeededGenerator(seed: exportSeed &+ 5)
        for round in 0..<25 {
            var bytes = intact
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                if round % 4 == 3 {
                    bytes.removeSubrange(index...)
                } else {
                    bytes[index] ^= UInt8.random(in: 1...255, using: &generator)
                }
                if bytes.isEmpty { break }
            }
            try directory.write(bytes, to: store.lastPathComponent)
            for command in ["verify", "inspect"] {
                let output = try qd(command, store.path, "--json")
                #expect(
                    [0, 1, 3].contains(output.status),
                    "round \(round) \(command): \(output.status) \(output.standardError)")
            }
            #expect(try directory.bytes(of: store.lastPathComponent) == bytes)
        }
    }

    /// `--where` literals are checked against their attribute's type as the expression is read
    /// (a bad one is a usage error saying what is wrong, not a filter matching nothing), dates
    /// are read as the library reads them (a date alone too), and integers compare exactly.
    @Test func whereLiteralsAreTypeChecked() throws {
        let directory = TemporaryDirectory("qd-where")
        do {
            let manager = journalManager(directory)
            defer { manager.close() }
            let context = try manager.createContext()
            try context.performAndWait {
                for (index, value) in [Int64(1) << 53, (Int64(1) << 53) + 1, 7].enumerated() {
                    let object = context.insert(AllTypes.self)
                    object.int64 = value
                    object.string = "s\(index)"
                    // 2023-12-31, 2024-01-01, 2024-01-02 at midnight UTC.
                    object.date = Date(timeIntervalSince1970: 1_704_067_200 + Double(index - 1) * 86_400)
                }
                try context.save()
            }
        }
        let store = directory.file("Store.journal").path
        func strings(_ expression: String) throws -> [String] {
            let output = try qd(
                "export", store, "--entity", "AllTypes", "--format", "jsonl", "--no-object-id", "--where", expression)
            #expect(output.status == 0, "\(expression): \(output.standardError)")
            return output.standardOutput.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["string"] as? String
            }
        }
        #expect(try strings("int64 == 9007199254740993") == ["s1"])
        #expect(try strings("int64 < 9007199254740993") == ["s0", "s2"])
        #expect(try strings("date >= '2024-01-01'") == ["s1", "s2"])
        #expect(try strings("date < '2024-01-01T00:00:00+01:00'") == ["s0"])
        #expect(try strings("string beginswith 's' and not int64 == 7") == ["s0", "s1"])

        for (expression, message) in [
            ("date > 'yesterday'", "is not a quoted ISO 8601 date"),
            ("date == '2024-02-31'", "is not a quoted ISO 8601 date"),
            ("int64 == 'x'", "is not an integer"),
            ("int64 > 2.5", "is not an integer"),
            ("string == 3", "is not a quoted string"),
            ("bool == 'true'", "is not true or false"),
            ("double >= fast", "is not a number"),
            ("uuid == 'nope'", "is not a quoted UUID"),
            ("int64 contains '1'", "contains works on string attributes"),
            ("string < nil", "nil compares with == and != only"),
        ] {
            let output = try qd("export", store, "--entity", "AllTypes", "--format", "jsonl", "--where", expression)
            #expect(output.status == 2, "\(expression): \(output.standardError)")
            #expect(output.standardError.contains(message), "\(expression): \(output.standardError)")
            #expect(output.standardOutput.isEmpty)
        }
    }

    /// NaN is no number's equal and sorts as nil (as the library's attribute sorts order it); a
    /// `Float` literal is read as a `Float`, as the attribute holds it.
    @Test func whereAndSortOnNaNAndFloats() throws {
        let directory = TemporaryDirectory("qd-nan")
        let doubles: [Double] = [.nan, 3, 1, .nan, 4, 0, 2]
        do {
            let manager = journalManager(directory)
            defer { manager.close() }
            let context = try manager.createContext()
            try context.performAndWait {
                for (index, value) in doubles.enumerated() {
                    let object = context.insert(AllTypes.self)
                    object.double = value
                    object.float = index == 2 ? 0.1 : Float(index)
                    object.string = "s\(index)"
                }
                try context.save()
            }
        }
        let store = directory.file("Store.journal").path
        func strings(_ arguments: String...) throws -> [String] {
            let output = try runProcess(
                qdExecutablePath,
                ["export", store, "--entity", "AllTypes", "--format", "jsonl", "--no-object-id"] + arguments)
            #expect(output.status == 0, "\(arguments): \(output.standardError)")
            return output.standardOutput.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["string"] as? String
            }
        }
        #expect(try strings("--where", "double == 1") == ["s2"])
        #expect(try strings("--where", "double <= 1") == ["s2", "s5"])
        #expect(try strings("--where", "double >= 3") == ["s1", "s4"])
        #expect(try strings("--where", "double != 1").count == doubles.count - 1)
        #expect(try strings("--where", "not double < 100") == ["s0", "s3"])
        // Sorted: NaN as nil (first ascending, last descending); ties in key order.
        #expect(try strings("--sort", "double") == ["s0", "s3", "s5", "s2", "s6", "s1", "s4"])
        #expect(try strings("--sort", "-double") == ["s4", "s1", "s6", "s2", "s5", "s0", "s3"])
        #expect(try strings("--where", "float == 0.1") == ["s2"])
        #expect(try strings("--where", "float > 0.1") == ["s1", "s3", "s4", "s5", "s6"])
        #expect(try strings("--where", "float < 0.1") == ["s0"])
    }

    /// `-o` naming the store, under any name, or its lock file is refused: the store stays as it
    /// was, and so does the lock file an app may hold.
    @Test func exportNeverWritesTheStoreItReads() throws {
        let directory = TemporaryDirectory("qd-export-self")
        let url = try writeGraphStore("journal", directory)
        let before = try Data(contentsOf: url)
        try FileManager.default.createSymbolicLink(
            atPath: directory.file("link.journal").path, withDestinationPath: url.path)
        try FileManager.default.linkItem(atPath: url.path, toPath: directory.file("hard.journal").path)
        let lock = url.deletingPathExtension().appendingPathExtension("lock").path
        if !FileManager.default.fileExists(atPath: lock) {
            _ = FileManager.default.createFile(atPath: lock, contents: Data())
        }
        let lockBefore = try FileManager.default.attributesOfItem(atPath: lock)[.systemFileNumber] as? Int
        let dotted = directory.url.appendingPathComponent(".").appendingPathComponent(url.lastPathComponent).path
        for output in [
            url.path, dotted, directory.file("link.journal").path, directory.file("hard.journal").path, lock,
        ] {
            let result = try qd("export", url.path, "--entity", "Explorer", "--format", "csv", "-o", output)
            #expect(result.status == 2, "\(output): \(result.standardError)")
            #expect(result.standardError.contains("the store's own file"), "\(output): \(result.standardError)")
        }
        #expect(try Data(contentsOf: url) == before)
        #expect(try FileManager.default.attributesOfItem(atPath: lock)[.systemFileNumber] as? Int == lockBefore)
        #expect(try qd("verify", url.path).status == 0)
        // Another file is written as before.
        let other = directory.file("explorers.csv").path
        #expect(try qd("export", url.path, "--entity", "Explorer", "-o", other).status == 0)
        #expect(FileManager.default.fileExists(atPath: other))
    }

    @Test func unreadableFilesAndUsage() throws {
        let directory = TemporaryDirectory("qd-usage")
        try directory.write(Array("not a store".utf8), to: "Junk.journal")
        #expect(try qd("inspect", directory.file("Junk.journal").path).status == 3)
        #expect(try qd("verify", directory.file("Missing.json").path).status == 3)
        #expect(try qd("inspect", directory.file("x.txt").path).status == 2)
        #expect(try qd("frobnicate").status == 2)
        // An input that cannot be read (a directory) is exit status 3, as a missing one is.
        let store = try writeGraphStore("journal", directory)
        try FileManager.default.createDirectory(at: directory.file("in.jsonl"), withIntermediateDirectories: true)
        let unreadable = try qd("import", store.path, "--entity", "Explorer", directory.file("in.jsonl").path)
        #expect(unreadable.status == 3, "\(unreadable.standardError)")
        #expect(unreadable.standardError.contains("cannot read"), "\(unreadable.standardError)")
        #expect(try qd("import", store.path, "--entity", "Explorer", directory.file("none.jsonl").path).status == 3)
        #expect(try qd().status == 2)
        let help = try qd("--help")
        #expect(help.status == 0)
        for command in ["inspect", "verify", "compact", "convert", "export", "import"] {
            #expect(help.standardOutput.contains(command))
            let commandHelp = try qd(command, "--help")
            #expect(commandHelp.status == 0)
            #expect(commandHelp.standardOutput.hasPrefix("usage: qd \(command)"))
        }
    }

    /// While another process holds the store, reading commands work and writing ones refuse,
    /// naming the lock and its holder; nothing is modified.
    @Test func writingCommandsRefuseAHeldStore() throws {
        let directory = TemporaryDirectory("qd-locked")
        let store = try writeGraphStore("journal", directory)
        let before = try directory.bytes(of: "Store.journal")
        let holder = graphManager("journal", directory)
        defer { holder.close() }
        try holder.loadPersistentStore()
        for arguments in [
            ["compact", store.path], ["convert", store.path, directory.file("Out.json").path],
            ["import", store.path, "--entity", "Tag", directory.file("tags.jsonl").path],
        ] {
            try directory.write(Array("{\"label\": \"x\"}\n".utf8), to: "tags.jsonl")
            let output = try runProcess(qdExecutablePath, arguments)
            #expect(output.status == 4, "\(arguments): \(output.standardError)")
            #expect(output.standardError.contains(directory.file("Store.lock").standardizedFileURL.path))
            #expect(output.standardError.contains("process \(getpid())"), "\(output.standardError)")
        }
        #expect(try qd("verify", store.path).status == 0)
        #expect(try qd("inspect", store.path).standardOutput.contains("held by process \(getpid())"))
        #expect(try qd("export", store.path, "--entity", "Tag", "--format", "jsonl").status == 0)
        #expect(try directory.bytes(of: "Store.journal") == before)
        #expect(!directory.contents.contains("Out.json"))
    }

    /// `qd export` writes what the library's export writes for the same request, and its
    /// `--where`/`--sort` select what a fetch selects.
    @Test func exportMatchesTheLibrarysExport() async throws {
        let directory = TemporaryDirectory("qd-export")
        let manager = journalManager(directory)
        let context = try manager.createContext()
        var generator = SeededGenerator(seed: exportSeed &+ 3)
        try context.performAndWait {
            for index in 0..<200 {
                let destination = context.insert(Destination.self)
                destination.name = "n\(Int.random(in: 0...50, using: &generator)), \"q\""
                destination.country = ["PT", "JP", "EC"].randomElement(using: &generator)!
                destination.rating = Int.random(in: 0...9, using: &generator)
                destination.visited = index % 3 == 0 ? nil : Date(timeIntervalSince1970: Double(index) * 86_400)
            }
            try context.save()
        }
        let request = FetchRequest<Destination>(
            predicate: #Predicate { $0.rating >= 4 && $0.country != "JP" },
            sortBy: [SortDescriptor(\.rating, order: .reverse), SortDescriptor(\.name)])
        for format in ["csv", "json", "jsonl"] {
            let formatter: any ExportFormatter =
                switch format {
                case "csv": CSVExportFormatter()
                case "json": JSONExportFormatter()
                default: JSONLinesExportFormatter()
                }
            _ = try await context.export(request, to: directory.file("library.\(format)"), formatter: formatter)
            let output = try qd(
                "export", directory.file("Store.journal").path, "--entity", "Destination", "--format", format,
                "--where", "rating >= 4 and country != 'JP'", "--sort", "-rating,name", "-o",
                directory.file("qd.\(format)").path)
            #expect(output.status == 0, "\(output.standardError)")
            #expect(try directory.bytes(of: "qd.\(format)") == directory.bytes(of: "library.\(format)"), "\(format)")
            let piped = try qd(
                "export", directory.file("Store.journal").path, "--entity", "Destination", "--format", format,
                "--where", "rating >= 4 and country != 'JP'", "--sort", "-rating,name")
            #expect(Array(piped.standardOutput.utf8) == (try directory.bytes(of: "library.\(format)")))
            #expect(!piped.standardError.contains("["), "no progress bar when not a terminal")
        }
        manager.close()
        let bad = try qd("export", directory.file("Store.journal").path, "--entity", "Nope", "--format", "csv")
        #expect(bad.status == 2)
        #expect(bad.standardError.contains("Destination"))
    }

    /// `qd convert` reads a journal with a torn tail without recovering it: the source keeps
    /// every byte (no tail is set aside beside it), and the new store holds the valid prefix.
    @Test func convertLeavesATornJournalUntouched() throws {
        let directory = TemporaryDirectory("qd-convert-torn")
        let store = try writeGraphStore("journal", directory)
        let intact = try directory.bytes(of: "Store.journal")
        let offsets = recordOffsets(intact)
        let torn = intact + Array(intact[offsets[3]..<(offsets[3] + 30)])
        try directory.write(torn, to: "Store.journal")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)

        let converted = directory.file("Copy.json")
        let output = try qd("convert", store.path, converted.path)
        #expect(output.status == 0, "\(output.standardError)")
        #expect(try directory.bytes(of: "Store.journal") == torn)
        let after = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(!after.contains { $0.contains(".torn-") }, "\(after)")
        #expect(Set(after).subtracting(names).subtracting(["Store.lock"]) == ["Copy.json"], "\(after)")
        let prefix = try StoreInspection.contents(of: store)
        let result = try StoreInspection.contents(of: converted)
        #expect(result.metadata.storeIdentifier == prefix.metadata.storeIdentifier)
        for entity in prefix.schema {
            let left = (prefix.rows[entity.name] ?? []).sorted { $0.primaryKey < $1.primaryKey }
            let right = (result.rows[entity.name] ?? []).sorted { $0.primaryKey < $1.primaryKey }
            #expect(left == right, "\(entity.name)")
        }
        #expect(result.rows["Expedition"]?.count == 11)
    }

    /// `qd convert` writes a verified store of the other type that the library opens with the
    /// same rows; `qd compact` shrinks a journal; `qd import` inserts and upserts.
    @Test func convertCompactAndImport() throws {
        let directory = TemporaryDirectory("qd-write")
        let store = try writeGraphStore("journal", directory)
        let original = try directory.bytes(of: "Store.journal")
        let converted = directory.file("Copy.json")
        let output = try qd("convert", store.path, converted.path)
        #expect(output.status == 0, "\(output.standardError)")
        #expect(try directory.bytes(of: "Store.journal") == original)
        #expect(try qd("verify", converted.path).status == 0)
        let a = try #require(try StoreInspection.inspect(store).contents)
        let b = try #require(try StoreInspection.inspect(converted).contents)
        #expect(a.metadata.storeIdentifier == b.metadata.storeIdentifier)
        for entity in a.schema {
            let left = (a.rows[entity.name] ?? []).sorted { $0.primaryKey < $1.primaryKey }
            let right = (b.rows[entity.name] ?? []).sorted { $0.primaryKey < $1.primaryKey }
            #expect(left == right, "\(entity.name)")
        }
        #expect(try qd("convert", store.path, converted.path).status == 5)

        let compact = try qd("compact", store.path)
        #expect(compact.status == 0, "\(compact.standardError)")
        #expect(try directory.bytes(of: "Store.journal").count < original.count)
        let reopened = try #require(try StoreInspection.inspect(store).contents)
        for entity in a.schema {
            #expect(reopened.rows[entity.name]?.count == a.rows[entity.name]?.count)
        }
        #expect(try json(try qd("inspect", store.path, "--json"))["records"] as? Int == 1)

        try directory.write(
            Array("{\"label\": \"t1\"}\n{\"label\": \"new\"}\n{\"label\": \"t0\", \"objectID\": \"ignored\"}\n".utf8),
            to: "tags.jsonl")
        let imported = try qd(
            "import", store.path, "--entity", "Tag", "--unique", "label", directory.file("tags.jsonl").path)
        #expect(imported.status == 0, "\(imported.standardError)")
        #expect(imported.standardOutput.contains("3 records, 1 inserted, 2 updated"), "\(imported.standardOutput)")
        do {
            let manager = graphManager("journal", directory)
            defer { manager.close() }
            let reader = try manager.createContext()
            let labels = try reader.performAndWait { try reader.fetch(FetchRequest<Tag>()).map(\.label).sorted() }
            #expect(labels == ["new", "t0", "t1", "t2"])
        }

        try directory.write(Array("label\r\nok\r\n\"broken\r\n".utf8), to: "bad.csv")
        let refused = try qd("import", store.path, "--entity", "Tag", directory.file("bad.csv").path)
        #expect(refused.status == 5)
        #expect(refused.standardError.contains("line 3"), "\(refused.standardError)")
        #expect(refused.standardError.contains("Nothing was imported"))
    }

    /// `qd import`: --delimiter applies to a CSV file whatever picked the format; an empty
    /// --unique is a usage error; --unique naming attributes the existing objects share is
    /// refused with a message saying so, exit status 5, nothing imported.
    @Test func importOptionsAreCheckedAndApplied() throws {
        let directory = TemporaryDirectory("qd-import-options")
        let store = try writeGraphStore("journal", directory)
        func labels() throws -> [String] {
            let contents = try StoreInspection.contents(of: store)
            let entity = try #require(contents.schema.first { $0.name == "Tag" })
            let column = try #require(entity.index(ofAttribute: "label"))
            return (contents.rows["Tag"] ?? []).compactMap {
                if case .string(let text) = $0.values[column] { return text }
                return nil
            }.sorted()
        }
        try directory.write(Array("label\r\nsemi,colon\r\n".utf8), to: "tags.csv")
        let semicolons = try qd(
            "import", store.path, "--entity", "Tag", "--delimiter", ";", directory.file("tags.csv").path)
        #expect(semicolons.status == 0, "\(semicolons.standardError)")
        #expect(try labels() == ["semi,colon", "t0", "t1", "t2"])

        try directory.write(Array("{\"label\": \"x\"}\n".utf8), to: "tags.jsonl")
        let jsonDelimiter = try qd(
            "import", store.path, "--entity", "Tag", "--delimiter", ";", directory.file("tags.jsonl").path)
        #expect(jsonDelimiter.status == 2)
        #expect(jsonDelimiter.standardError.contains("--delimiter applies to CSV"), "\(jsonDelimiter.standardError)")
        for unique in ["", ",", "label,"] {
            let output = try qd(
                "import", store.path, "--entity", "Tag", "--unique", unique, directory.file("tags.jsonl").path)
            #expect(output.status == 2, "\(unique): \(output.standardError)")
            #expect(output.standardError.contains("--unique needs attribute names"), "\(output.standardError)")
        }

        try directory.write(Array("{\"label\": \"t0\"}\n".utf8), to: "duplicate.jsonl")
        #expect(try qd("import", store.path, "--entity", "Tag", directory.file("duplicate.jsonl").path).status == 0)
        let before = try directory.bytes(of: "Store.journal")
        let refused = try qd(
            "import", store.path, "--entity", "Tag", "--unique", "label", directory.file("tags.jsonl").path)
        #expect(refused.status == 5, "\(refused.standardError)")
        #expect(refused.standardError.contains("existing objects already share"), "\(refused.standardError)")
        #expect(refused.standardError.contains("label = "), "\(refused.standardError)")
        #expect(try directory.bytes(of: "Store.journal") == before)
    }
}

/// A `Kit` of a unique `sku` and its subentity `Bundle` (with a `size`), described without
/// subclasses, as `qd` sees any store.
private let kitModel: ManagedObjectModel = {
    let sku = AttributeDescription(name: "sku", type: .string)
    let name = AttributeDescription(name: "name", type: .string)
    return try! ManagedObjectModel(entities: [
        EntityDescription(name: "Kit", attributes: [sku, name], uniquenessConstraints: [["sku"]]),
        EntityDescription(
            name: "Bundle", attributes: [AttributeDescription(name: "size", type: .integer64), sku, name],
            uniquenessConstraints: [["sku"]], superentityName: "Kit"),
    ])
}()

/// A kit store of `kind` in `directory`: kits k1, k3 and bundles k2 (size 2), k4 (size 4).
private func writeKitStore(_ kind: String, _ directory: TemporaryDirectory) throws -> URL {
    let manager =
        kind == "journal" ? journalManager(directory, model: kitModel) : jsonManager(directory, model: kitModel)
    defer { manager.close() }
    let context = try manager.createContext()
    try context.performAndWait {
        for index in 1...4 {
            let object = context.insert(entityName: index.isMultiple(of: 2) ? "Bundle" : "Kit")
            object.setValue(.string("k\(index)"), forKey: "sku")
            object.setValue(.string("kit \(index)"), forKey: "name")
            if index.isMultiple(of: 2) {
                object.setValue(.integer(Int64(index)), forKey: "size")
            }
        }
        try context.save()
    }
    return directory.file("Store.\(kind)")
}

@Suite("qd with recorded constraints and subentities")
struct QDStoredModelTests {
    @Test(arguments: ["journal", "json"])
    func inspectListsConstraintsAndSuperentities(kind: String) throws {
        let directory = TemporaryDirectory("qd-kit-inspect")
        let store = try writeKitStore(kind, directory)
        let report = try json(try qd("inspect", store.path, "--json"))
        let entities = try #require(report["entities"] as? [[String: Any]])
        let byName = Dictionary(uniqueKeysWithValues: entities.map { ($0["name"] as! String, $0) })
        #expect(byName["Kit"]?["uniquenessConstraints"] as? [[String]] == [["sku"]])
        #expect(byName["Kit"]?["superentity"] is NSNull)
        #expect(byName["Bundle"]?["superentity"] as? String == "Kit")
        let text = try qd("inspect", store.path)
        #expect(text.status == 0, "\(text.standardError)")
        #expect(text.standardOutput.contains("Bundle (subentity of Kit): 2 rows"), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("    unique (sku)"), "\(text.standardOutput)")
    }

    @Test(arguments: ["journal", "json"])
    func verifyChecksRecordedConstraints(kind: String) throws {
        let directory = TemporaryDirectory("qd-kit-verify")
        let store = try writeKitStore(kind, directory)
        #expect(try qd("verify", store.path).status == 0)
        // A hand edit gives bundle 2 the sku of kit 1.
        var contents = try StoreInspection.contents(of: store)
        let bundle = contents.schema.first { $0.name == "Bundle" }!
        let skuColumn = bundle.index(ofAttribute: "sku")!
        let row = contents.rows["Bundle"]!.firstIndex { $0.values[skuColumn] == .string("k2") }!
        contents.rows["Bundle"]![row].values[skuColumn] = .string("k1")
        let bytes = storeFileBytes(contents, kind: kind)
        try directory.write(bytes, to: store.lastPathComponent)
        let output = try qd("verify", store.path)
        #expect(output.status == 1)
        #expect(
            output.standardOutput.contains(
                #"Bundle row \#(contents.rows["Bundle"]![row].primaryKey) and Kit row 1 share sku = "k1""#),
            "\(output.standardOutput)")
        #expect(try directory.bytes(of: store.lastPathComponent) == bytes)
    }

    @Test(arguments: ["journal", "json"])
    func exportIncludesSubentities(kind: String) throws {
        let directory = TemporaryDirectory("qd-kit-export")
        let store = try writeKitStore(kind, directory)
        let output = try qd("export", store.path, "--entity", "Kit", "--format", "jsonl", "--sort", "-sku")
        #expect(output.status == 0, "\(output.standardError)")
        let records = output.standardOutput.split(separator: "\n").map {
            try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(records.map { $0["sku"] as? String } == ["k4", "k3", "k2", "k1"])
        #expect(
            records.map { ($0["objectID"] as? String)?.contains("/Bundle/") == true } == [true, false, true, false])
        #expect(records.allSatisfy { $0["size"] == nil }, "the fields are Kit's")
        let filtered = try qd("export", store.path, "--entity", "Kit", "--format", "csv", "--where", "name == 'kit 2'")
        // CSV records end in CRLF, one Character in Swift.
        #expect(filtered.standardOutput.split(whereSeparator: \.isNewline).count == 2, "\(filtered.standardOutput)")
        #expect(filtered.standardOutput.contains("/Bundle/p1,k2,kit 2"), "\(filtered.standardOutput)")
        let bundles = try qd("export", store.path, "--entity", "Bundle", "--format", "jsonl")
        #expect(bundles.standardOutput.split(separator: "\n").count == 2, "\(bundles.standardOutput)")
        // The library's export of the same entity has the same records.
        let manager =
            kind == "journal" ? journalManager(directory, model: kitModel) : jsonManager(directory, model: kitModel)
        defer { manager.close() }
        let context = try manager.createContext()
        let fetched = try context.performAndWait {
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Kit")).map {
                $0.objectID.uriRepresentation.absoluteString
            }
        }
        #expect(Set(fetched) == Set(records.compactMap { $0["objectID"] as? String }))
    }

    @Test(arguments: ["journal", "json"])
    func importUpsertsByRecordedConstraints(kind: String) throws {
        let directory = TemporaryDirectory("qd-kit-import")
        let store = try writeKitStore(kind, directory)
        try directory.write(
            Array("{\"sku\": \"k1\", \"name\": \"renamed\"}\n{\"sku\": \"k9\", \"name\": \"new\"}\n".utf8),
            to: "kits.jsonl")
        let output = try qd("import", store.path, "--entity", "Kit", directory.file("kits.jsonl").path)
        #expect(output.status == 0, "\(output.standardError)")
        #expect(output.standardOutput.contains("1 inserted, 1 updated"), "\(output.standardOutput)")
        let contents = try StoreInspection.contents(of: store)
        #expect(contents.rows["Kit"]?.count == 3)
        #expect(contents.schema.first { $0.name == "Kit" }?.uniquenessConstraints == [["sku"]])
        #expect(contents.schema.first { $0.name == "Bundle" }?.superentityName == "Kit")
        #expect(try qd("verify", store.path).status == 0)

        // A Kit record with a Bundle's sku cannot update the bundle (another entity): refused, named.
        try directory.write(Array("{\"sku\": \"k2\", \"name\": \"clash\"}\n".utf8), to: "clash.jsonl")
        let clash = try qd("import", store.path, "--entity", "Kit", directory.file("clash.jsonl").path)
        #expect(clash.status == 5, "\(clash.standardError)")
        #expect(clash.standardError.contains("another entity of the hierarchy"), "\(clash.standardError)")
        #expect(!clash.standardError.contains("Use --on-conflict update"), "\(clash.standardError)")
        let after = try StoreInspection.contents(of: store)
        #expect(after.rows["Kit"]?.count == 3 && after.rows["Bundle"]?.count == 2)
        #expect(!after.rows.values.joined().contains { $0.values.contains(.string("clash")) }, "nothing imported")
    }
}
