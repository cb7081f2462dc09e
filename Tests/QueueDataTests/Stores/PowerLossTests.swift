import Foundation
import QueueData
import Testing

@testable import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// Every atomic replacement of a store file, cut by a power loss after each of its operations
/// (``PowerLossFileSystem``: unsynchronized bytes are lost, and creates, renames, links and
/// unlinks no directory `fsync` covers may be undone, in any combination). After the cut and a
/// reopen, the store holds exactly the state before the replacement or the one after it, and a
/// save that returned — or a migration that finished — is never undone.
@Suite("Power loss during atomic replacements")
struct PowerLossTests {
    let names = ["Lisbon", "Kyoto", "Quito"]

    /// Each state a power cut during `cuts` could leave, labelled with where it was cut.
    func during(_ cuts: [PowerLossFileSystem.Cut]) -> [(label: String, outcome: PowerLossOutcome)] {
        cuts.flatMap { cut in
            cut.outcomes.map { ("cut after operation \(cut.operation) (\(cut.description)), \($0.description)", $0) }
        }
    }

    /// Each state a power cut now could leave `directory` in, labelled with `moment`.
    func after(
        _ moment: String,
        _ fileSystem: PowerLossFileSystem,
        _ directory: TemporaryDirectory
    ) -> [(label: String, outcome: PowerLossOutcome)] {
        fileSystem.outcomes(of: directory.url).map { ("cut \(moment), \($0.description)", $0) }
    }

    /// Writes each distinct state among `outcomes` into a new directory and reads it with `read`
    /// (which reopens the store): each must be one of `allowed`.
    ///
    /// - Returns: What was read, for each distinct state.
    @discardableResult
    func expectStates<Value: Equatable>(
        _ outcomes: [(label: String, outcome: PowerLossOutcome)],
        in allowed: [Value],
        reading read: (TemporaryDirectory) throws -> Value,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [Value] {
        #expect(!outcomes.isEmpty, "no power cut was simulated", sourceLocation: sourceLocation)
        var seen: [PowerLossImage] = []
        var values: [Value] = []
        for (label, outcome) in outcomes where !seen.contains(outcome.image) {
            seen.append(outcome.image)
            let copy = TemporaryDirectory("power-loss-outcome")
            do {
                try outcome.image.write(into: copy.url)
                let value = try read(copy)
                values.append(value)
                #expect(
                    allowed.contains(value), "\(label): read \(value) from \(outcome.image.summary)",
                    sourceLocation: sourceLocation)
            } catch {
                Issue.record("\(label): \(error) (files: \(outcome.image.summary))", sourceLocation: sourceLocation)
            }
        }
        return values
    }

    /// The names stored in `directory`, reopened with `open`.
    func namesReader(_ open: @escaping (TemporaryDirectory) -> ContextManager) -> (TemporaryDirectory) throws ->
        [String]
    {
        { directory in
            let manager = open(directory)
            defer { manager.close() }
            return try storedNames(manager)
        }
    }

    func storeManager(_ fileExtension: String, _ directory: TemporaryDirectory, fileSystem: (any FileSystem)? = nil)
        -> ContextManager
    {
        fileExtension == "json"
            ? jsonManager(directory, fileSystem: fileSystem) : journalManager(directory, fileSystem: fileSystem)
    }

    // MARK: The model

    @Test("the model loses unsynchronized bytes, and undoes directory changes no directory sync covers")
    func model() throws {
        let directory = TemporaryDirectory("power-loss-model")
        try directory.write(Array("old".utf8), to: "file")
        let fileSystem = PowerLossFileSystem()
        let path = directory.file("file").path
        let temporary = directory.file("file.new").path
        func states() -> Set<[String: String]> {
            Set(
                fileSystem.outcomes(of: directory.url).map { outcome in
                    outcome.image.files.mapValues { String(decoding: $0, as: UTF8.self) }
                })
        }

        let descriptor = try fileSystem.open(temporary, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        defer { fileSystem.close(descriptor) }
        try Array("new".utf8).withUnsafeBytes { try fileSystem.writeAll(descriptor, $0, at: 0, path: temporary) }
        // Created and written, nothing synchronized: the new file may be there, empty.
        #expect(states() == [["file": "old"], ["file": "old", "file.new": ""]])
        try fileSystem.synchronize(descriptor, path: temporary)
        #expect(states() == [["file": "old"], ["file": "old", "file.new": "new"]])
        try fileSystem.rename(temporary, to: path)
        // The rename and the create may each be undone; the replaced file's bytes are kept.
        #expect(
            states() == [
                ["file": "old"], ["file": "old", "file.new": "new"], ["file": "new"],
            ])
        try fileSystem.synchronizeDirectory(directory.path)
        #expect(states() == [["file": "new"]])
        #expect(try directory.bytes(of: "file") == Array("new".utf8))
    }

    // MARK: Replacements

    @Test(
        "a power cut at any step of a JSON save leaves the old document or the new one; a save that returned survives"
    )
    func jsonSave() throws {
        let directory = TemporaryDirectory("power-loss-json")
        let seeding = jsonManager(directory)
        try saveOneByOne(seeding, names)
        seeding.close()

        let fileSystem = PowerLossFileSystem()
        let manager = jsonManager(directory, fileSystem: fileSystem)
        try manager.loadPersistentStore()
        fileSystem.startRecordingCuts(of: directory.url)
        try saveOneByOne(manager, ["new"])
        let cuts = fileSystem.stopRecordingCuts()
        let acknowledged = after("after the save returned", fileSystem, directory)
        manager.close()

        #expect(cuts.contains { $0.description.hasPrefix("rename") })
        let seen = expectStates(during(cuts), in: [names, names + ["new"]], reading: namesReader { jsonManager($0) })
        #expect(seen.contains(names) && seen.contains(names + ["new"]))
        expectStates(acknowledged, in: [names + ["new"]], reading: namesReader { jsonManager($0) })
    }

    @Test(
        "a power cut at any step of a journal compaction, or of the save after it, loses nothing that was acknowledged"
    )
    func journalCompaction() throws {
        let directory = TemporaryDirectory("power-loss-compact")
        let seeding = journalManager(directory)
        try saveOneByOne(seeding, names)
        let context = try seeding.createContext()
        try context.performAndWait {
            let first = try context.fetch(FetchRequest<Destination>())[0]
            for rating in 1...10 {
                first.rating = rating
                try context.save()
            }
        }
        seeding.close()

        let fileSystem = PowerLossFileSystem()
        let manager = journalManager(directory, fileSystem: fileSystem)
        try manager.loadPersistentStore()
        fileSystem.startRecordingCuts(of: directory.url)
        try manager.compactPersistentStore()
        let compaction = fileSystem.stopRecordingCuts()
        let compacted = after("after the compaction returned", fileSystem, directory)
        #expect(try recordOffsets(directory.bytes(of: "Store.journal")).count == 1, "the journal was not compacted")
        fileSystem.startRecordingCuts(of: directory.url)
        try saveOneByOne(manager, ["after"])
        let save = fileSystem.stopRecordingCuts()
        let acknowledged = after("after the save returned", fileSystem, directory)
        manager.close()

        #expect(compaction.contains { $0.description.hasPrefix("rename") })
        let read = namesReader { journalManager($0) }
        expectStates(during(compaction) + compacted, in: [names], reading: read)
        expectStates(during(save), in: [names, names + ["after"]], reading: read)
        expectStates(acknowledged, in: [names + ["after"]], reading: read)
    }

    @Test("a power cut at any step of a save that compacts the journal inside it keeps the save once it returned")
    func journalAutomaticCompaction() throws {
        let directory = TemporaryDirectory("power-loss-auto-compact")
        let fileSystem = PowerLossFileSystem()
        let manager = journalManager(directory, fileSystem: fileSystem, backgroundCompaction: false)
        // Three saves of 370 KB in one row take the log past 1 MiB and twice the live data:
        // the third save compacts the journal.
        let payload = String(repeating: "x", count: 370_000)
        let context = try manager.createContext()
        let object = try context.performAndWait {
            let object = context.insert(Destination.self)
            try context.save()
            for round in 1...2 {
                object.country = payload + "\(round)"
                try context.save()
            }
            return object.objectID
        }
        fileSystem.startRecordingCuts(of: directory.url)
        try context.performAndWait {
            (context.object(with: object) as! Destination).country = payload + "3"
            try context.save()
        }
        let cuts = fileSystem.stopRecordingCuts()
        let acknowledged = after("after the save returned", fileSystem, directory)
        manager.close()
        try #require(cuts.contains { $0.description.hasPrefix("rename") }, "the save did not compact the journal")
        #expect(try directory.bytes(of: "Store.journal").count < payload.utf8.count * 2)

        let round = { (directory: TemporaryDirectory) throws -> [String] in
            let manager = journalManager(directory)
            defer { manager.close() }
            let context = try manager.createContext()
            return try context.performAndWait {
                try context.fetch(FetchRequest<Destination>()).map { String($0.country.drop { $0 == "x" }) }
            }
        }
        expectStates(during(cuts), in: [["2"], ["3"]], reading: round)
        expectStates(acknowledged, in: [["3"]], reading: round)
    }

    @Test(
        "a power cut at any step of a background compaction, or of the save that finishes it, keeps every save once it returned"
    )
    func journalBackgroundCompaction() throws {
        let directory = TemporaryDirectory("power-loss-background-compact")
        let fileSystem = PowerLossFileSystem()
        let stores = Locked<[JournalStore]>([])
        let manager = journalManager(
            directory, fileSystem: fileSystem,
            onStore: { store in
                stores.withLock { $0.append(store) }
            })
        // As above: the third save finds the journal due for compaction, and starts writing the
        // snapshot off the saving path; the fourth save finishes it.
        let payload = String(repeating: "x", count: 370_000)
        let context = try manager.createContext()
        let object = try context.performAndWait {
            let object = context.insert(Destination.self)
            try context.save()
            for round in 1...2 {
                object.country = payload + "\(round)"
                try context.save()
            }
            return object.objectID
        }
        let save = { (round: Int) throws in
            try context.performAndWait {
                (context.object(with: object) as! Destination).country = payload + "\(round)"
                try context.save()
            }
        }
        fileSystem.startRecordingCuts(of: directory.url)
        try save(3)
        let third = after("after the third save returned", fileSystem, directory)
        // The snapshot is written in the background; a cut while it is written leaves the journal
        // (the cuts recorded during the third save itself may also leave it before that save).
        try #require(stores.withLock { $0.count } == 1)
        stores.withLock { $0[0] }.compactionWrites.wait()
        let written = fileSystem.stopRecordingCuts()
        try #require(
            written.contains { $0.description.hasPrefix("create Store.journal.tmp-") },
            "the third save started no compaction")
        #expect(!written.contains { $0.description.hasPrefix("rename") })
        fileSystem.startRecordingCuts(of: directory.url)
        try save(4)
        let finishing = fileSystem.stopRecordingCuts()
        let acknowledged = after("after the fourth save returned", fileSystem, directory)
        manager.close()
        try #require(
            finishing.contains { $0.description.hasPrefix("rename") }, "the fourth save did not finish the compaction")
        #expect(try directory.bytes(of: "Store.journal").count < payload.utf8.count * 3)

        let round = { (directory: TemporaryDirectory) throws -> [String] in
            let manager = journalManager(directory)
            defer { manager.close() }
            let context = try manager.createContext()
            return try context.performAndWait {
                try context.fetch(FetchRequest<Destination>()).map { String($0.country.drop { $0 == "x" }) }
            }
        }
        expectStates(third, in: [["3"]], reading: round)
        expectStates(during(written), in: [["2"], ["3"]], reading: round)
        expectStates(during(finishing), in: [["3"], ["4"]], reading: round)
        expectStates(acknowledged, in: [["4"]], reading: round)
    }

    @Test(
        "a power cut at any step of creating a store and its first save leaves no store, an empty one or the save",
        arguments: ["json", "journal"])
    func newStore(fileExtension: String) throws {
        let directory = TemporaryDirectory("power-loss-new-\(fileExtension)")
        let fileSystem = PowerLossFileSystem()
        fileSystem.startRecordingCuts(of: directory.url)
        let writer = storeManager(fileExtension, directory, fileSystem: fileSystem)
        try saveOneByOne(writer, ["first"])
        let cuts = fileSystem.stopRecordingCuts()
        let acknowledged = after("after the save returned", fileSystem, directory)
        writer.close()

        let read = namesReader { storeManager(fileExtension, $0) }
        expectStates(during(cuts), in: [[], ["first"]], reading: read)
        expectStates(acknowledged, in: [["first"]], reading: read)
    }

    @Test(
        "a store in a directory that does not exist yet keeps its first save once it returned",
        arguments: ["json", "journal"])
    func newDirectory(fileExtension: String) throws {
        let directory = TemporaryDirectory("power-loss-mkdir-\(fileExtension)")
        func manager(_ root: TemporaryDirectory, fileSystem: any FileSystem = POSIXFileSystem()) -> ContextManager {
            let url = root.url.appendingPathComponent("Data/Stores", isDirectory: true)
            return ContextManager(
                delegate: TestStoreDelegate(
                    storeType: .custom { _ in
                        if fileExtension == "json" {
                            return try JSONFileStore(
                                directory: url, name: "Store", seedStoreURL: nil, fileSystem: fileSystem)
                        }
                        return try JournalStore(
                            directory: url, name: "Store", seedStoreURL: nil, fileSystem: fileSystem)
                    }))
        }
        let fileSystem = PowerLossFileSystem()
        fileSystem.startRecordingCuts(of: directory.url)
        let writer = manager(directory, fileSystem: fileSystem)
        try saveOneByOne(writer, ["first"])
        let cuts = fileSystem.stopRecordingCuts()
        let acknowledged = after("after the save returned", fileSystem, directory)
        writer.close()
        #expect(cuts.contains { $0.description.hasPrefix("mkdir") })

        let read = namesReader { manager($0) }
        expectStates(during(cuts), in: [[], ["first"]], reading: read)
        expectStates(acknowledged, in: [["first"]], reading: read)
    }

    @Test(
        "a power cut at any step of installing a seed store, or of the save after it, loses nothing acknowledged",
        arguments: ["json", "journal"])
    func seedInstall(fileExtension: String) throws {
        let seeds = TemporaryDirectory("power-loss-seed-source-\(fileExtension)")
        let seeding = storeManager(fileExtension, seeds)
        try saveOneByOne(seeding, names)
        seeding.close()
        let seed = seeds.file("Store.\(fileExtension)")
        func manager(_ directory: TemporaryDirectory, fileSystem: (any FileSystem)? = nil) -> ContextManager {
            fileExtension == "json"
                ? jsonManager(directory, fileSystem: fileSystem, seed: seed)
                : journalManager(directory, fileSystem: fileSystem, seed: seed)
        }

        let directory = TemporaryDirectory("power-loss-seed-\(fileExtension)")
        let fileSystem = PowerLossFileSystem()
        fileSystem.startRecordingCuts(of: directory.url)
        let seeded = manager(directory, fileSystem: fileSystem)
        try seeded.loadPersistentStore()
        let install = fileSystem.stopRecordingCuts()
        fileSystem.startRecordingCuts(of: directory.url)
        try saveOneByOne(seeded, ["after"])
        let save = fileSystem.stopRecordingCuts()
        let acknowledged = after("after the save returned", fileSystem, directory)
        seeded.close()
        #expect(install.contains { $0.description.hasPrefix("rename") })

        let read = namesReader { manager($0) }
        expectStates(during(install), in: [names], reading: read)
        expectStates(during(save), in: [names, names + ["after"]], reading: read)
        expectStates(acknowledged, in: [names + ["after"]], reading: read)
    }

    /// A migrated store as a power cut left it: what is on disk, and the rows reopening it (and
    /// migrating it if needed) gives.
    struct MigrationState: Equatable, CustomStringConvertible {
        enum Disk: Equatable {
            /// The original store, byte for byte (for a seed: no store yet).
            case original
            /// The migrated store (beside the original, kept byte for byte, unless it came from a
            /// seed).
            case migrated
            case other(String)
        }
        var disk: Disk
        var rows: [String: [Int64: [String: StoredValue]]]

        var description: String { "\(disk), rows: \(rows)" }
    }

    @Test(
        "a power cut at any step of a migration leaves the original or the migrated store; once migrated, it stays",
        arguments: ["json", "journal"], [false, true])
    func migration(fileExtension: String, fromSeed: Bool) throws {
        let seeds = TemporaryDirectory("power-loss-migrate-seed-\(fileExtension)")
        let seed = seeds.file("Store.\(fileExtension)")
        let directory = TemporaryDirectory("power-loss-migrate-\(fileExtension)")
        let original = try MigrationFixtures.install(fileExtension, in: fromSeed ? seeds : directory)
        func manager(_ directory: TemporaryDirectory, fileSystem: (any FileSystem)? = nil) -> ContextManager {
            let seed = fromSeed ? seed : nil
            return fileExtension == "json"
                ? jsonManager(directory, fileSystem: fileSystem, seed: seed, model: modelV2)
                : journalManager(directory, fileSystem: fileSystem, seed: seed, model: modelV2)
        }
        let storeName = "Store.\(fileExtension)"
        let backupName = "\(storeName).pre-migration-\(modelV1.versionHash.prefix(12))"
        func read(_ copy: TemporaryDirectory) throws -> MigrationState {
            let disk: MigrationState.Disk
            let contents = try MigrationTests.inspect(fileExtension, copy)
            let store = copy.contents.contains(storeName) ? try copy.bytes(of: storeName) : nil
            if fromSeed ? store == nil : store == original {
                disk = .original
            } else if contents?.metadata.versionHash == modelV2.versionHash,
                fromSeed || (try? copy.bytes(of: backupName)) == original
            {
                disk = .migrated
            } else {
                disk = .other("files \(copy.contents), version \(contents?.metadata.versionHash ?? "none")")
            }
            let reopened = manager(copy)
            defer { reopened.close() }
            return MigrationState(disk: disk, rows: try allRows(reopened, modelV2))
        }

        let fileSystem = PowerLossFileSystem()
        fileSystem.startRecordingCuts(of: directory.url)
        let migrating = manager(directory, fileSystem: fileSystem)
        try migrating.loadPersistentStore()
        let migration = fileSystem.stopRecordingCuts()
        let migrated = after("after the migration returned", fileSystem, directory)
        fileSystem.startRecordingCuts(of: directory.url)
        let context = try migrating.createContext()
        try context.performAndWait {
            context.insert(PlaceV2.self)
            try context.save()
        }
        let save = fileSystem.stopRecordingCuts()
        let acknowledged = after("after the save returned", fileSystem, directory)
        migrating.close()
        #expect(migration.contains { $0.description.hasPrefix("rename") })

        var saved = expectedVersion2Rows
        saved["Place"]![5] = PlaceV2.defaultRow
        let seen = expectStates(
            during(migration),
            in: [
                MigrationState(disk: .original, rows: expectedVersion2Rows),
                MigrationState(disk: .migrated, rows: expectedVersion2Rows),
            ], reading: read)
        #expect(seen.contains { $0.disk == .original } && seen.contains { $0.disk == .migrated })
        expectStates(migrated, in: [MigrationState(disk: .migrated, rows: expectedVersion2Rows)], reading: read)
        expectStates(
            during(save),
            in: [
                MigrationState(disk: .migrated, rows: expectedVersion2Rows),
                MigrationState(disk: .migrated, rows: saved),
            ], reading: read)
        expectStates(acknowledged, in: [MigrationState(disk: .migrated, rows: saved)], reading: read)
    }
}
