import Dispatch
import Foundation
import QueueData
import Testing

@testable import QueueData

@Suite("Journal store")
struct JournalStoreTests {
    let names = ["s1", "s2", "s3", "s4", "s5"]

    /// A journal with a snapshot and one record per name.
    func makeJournal(_ directory: TemporaryDirectory) throws -> [UInt8] {
        let manager = journalManager(directory)
        try saveOneByOne(manager, names)
        manager.close()
        return try directory.bytes(of: "Store.journal")
    }

    @Test("each save appends one record and survives a reopen")
    func appendsAndReopens() throws {
        let directory = TemporaryDirectory("journal-basic")
        let bytes = try makeJournal(directory)
        #expect(recordOffsets(bytes).count == 1 + names.count)
        #expect(try storedNames(journalManager(directory)) == names)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.file("Store.journal").path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test("a journal cut at any byte of its last three records opens with the committed prefix, and keeps working")
    func tornTailsAtEveryOffset() throws {
        let source = TemporaryDirectory("journal-source")
        let bytes = try makeJournal(source)
        let offsets = recordOffsets(bytes)
        let firstCut = offsets[offsets.count - 3]
        let directory = TemporaryDirectory("journal-torn")
        for cut in firstCut..<bytes.count {
            for name in directory.contents {
                try FileManager.default.removeItem(at: directory.file(name))
            }
            try directory.write(Array(bytes[..<cut]), to: "Store.journal")
            // Record i ends where record i + 1 starts; record 0 is the snapshot.
            let ends = Array(offsets.dropFirst()) + [bytes.count]
            let expectedSaves = (1..<offsets.count).filter { ends[$0] <= cut }.count
            let manager = journalManager(directory)
            let recovered = try storedNames(manager)
            #expect(recovered == Array(names.prefix(expectedSaves)), "cut at \(cut)")
            let aside = directory.contents.filter { $0.hasPrefix("Store.journal.torn-") }
            if offsets.contains(cut) {
                #expect(aside.isEmpty, "cut at a record boundary \(cut) is not torn")
            } else {
                #expect(aside.count == 1, "cut at \(cut)")
                if let file = aside.first {
                    let start = offsets.last(where: { $0 < cut })!
                    #expect(try directory.bytes(of: file) == Array(bytes[start..<cut]))
                }
            }
            try saveOneByOne(manager, ["after"])
            manager.close()
            #expect(try storedNames(journalManager(directory)) == Array(names.prefix(expectedSaves)) + ["after"])
        }
    }

    @Test("every flipped bit of the last records is detected: a committed prefix, or .corrupted")
    func bitFlips() throws {
        let source = TemporaryDirectory("journal-flip-source")
        let bytes = try makeJournal(source)
        let offsets = recordOffsets(bytes)
        let start = offsets[offsets.count - 2]
        let directory = TemporaryDirectory("journal-flip")
        var prefixes = 0
        var corrupted = 0
        for byte in start..<bytes.count {
            for bit in 0..<8 {
                for name in directory.contents {
                    try FileManager.default.removeItem(at: directory.file(name))
                }
                var damaged = bytes
                damaged[byte] ^= 1 << bit
                try directory.write(damaged, to: "Store.journal")
                let manager = journalManager(directory)
                do {
                    let recovered = try storedNames(manager)
                    #expect(
                        recovered == Array(names.prefix(recovered.count)) && recovered.count >= names.count - 2,
                        "byte \(byte) bit \(bit): \(recovered)")
                    prefixes += 1
                } catch let error as StoreError {
                    #expect(error.code == .corrupted, "byte \(byte) bit \(bit): \(error)")
                    #expect(error.offset == Int64(start), "byte \(byte) bit \(bit): \(error)")
                    #expect(try directory.bytes(of: "Store.journal") == damaged, "a corrupted journal was modified")
                    corrupted += 1
                }
                manager.close()
            }
        }
        #expect(prefixes > 0 && corrupted > 0)
    }

    @Test("corruption followed by valid records fails with the offset and leaves the file untouched")
    func corruptionInTheMiddle() throws {
        let directory = TemporaryDirectory("journal-middle")
        var bytes = try makeJournal(directory)
        let offsets = recordOffsets(bytes)
        bytes[offsets[2] + JournalFormat.recordHeaderSize + 1] ^= 0xFF
        try directory.write(bytes, to: "Store.journal")
        #expect {
            try storedNames(journalManager(directory))
        } throws: { error in
            let error = error as? StoreError
            return error?.code == .corrupted && error?.offset == Int64(offsets[2])
                && error?.url?.lastPathComponent == "Store.journal" && "\(error!)".contains("not a torn write")
        }
        #expect(try directory.bytes(of: "Store.journal") == bytes)
        #expect(!directory.contents.contains { $0.contains("torn") })
    }

    @Test("the repair the error names (truncating at its offset) opens the journal with every save before the damage")
    func repairByTruncating() throws {
        let directory = TemporaryDirectory("journal-repair")
        var bytes = try makeJournal(directory)
        let offsets = recordOffsets(bytes)
        // As a power failure during group commit can leave it: an earlier record never written
        // (zeros), a later one written.
        for index in offsets[3]..<offsets[4] {
            bytes[index] = 0
        }
        try directory.write(bytes, to: "Store.journal")
        let error = try #require(throws: StoreError.self) { try storedNames(journalManager(directory)) }
        #expect(error.code == .corrupted && error.offset == Int64(offsets[3]))
        #expect("\(error)".contains("truncate it to \(offsets[3]) bytes"), "\(error)")
        try directory.write(Array(bytes[..<offsets[3]]), to: "Store.journal")
        #expect(try storedNames(journalManager(directory)) == Array(names.prefix(2)))
    }

    @Test("files that are not current journals are refused without being modified")
    func foreignFiles() throws {
        let directory = TemporaryDirectory("journal-foreign")
        let valid = try makeJournal(directory)
        // A file of a newer format has a valid header checksum: a flipped version bit does not.
        var newerHeader = try valid.withUnsafeBytes { try JournalFormat.decodeHeader($0) }
        newerHeader.majorVersion = JournalFormat.majorVersion + 1
        let newer = newerHeader.encoded() + valid[JournalFormat.headerSize...]
        var damaged = valid
        damaged[20] ^= 0xFF  // inside the store identifier: only the header checksum notices
        let cases: [(String, [UInt8], StoreError.Code)] = [
            ("empty", [], .unsupportedFormat),
            ("text", Array("hello, world\n".utf8), .unsupportedFormat),
            ("newer version", newer, .unsupportedFormat),
            ("damaged header", damaged, .corrupted),
            ("header only", Array(valid.prefix(JournalFormat.headerSize)), .corrupted),
        ]
        for (label, bytes, code) in cases {
            try directory.write(bytes, to: "Store.journal")
            #expect(throws: StoreError.self, "\(label)") {
                try journalManager(directory).loadPersistentStore()
            }
            do {
                try journalManager(directory).loadPersistentStore()
            } catch let error as StoreError {
                #expect(error.code == code, "\(label): \(error)")
            }
            #expect(try directory.bytes(of: "Store.journal") == bytes, "\(label) was modified")
        }
    }

    @Test("with migration off, a journal written with another model is refused before any repair")
    func incompatibleModelLeavesTornTail() throws {
        let directory = TemporaryDirectory("journal-model")
        let bytes = try makeJournal(directory)
        let torn = Array(bytes.dropLast(3))
        try directory.write(torn, to: "Store.journal")
        #expect {
            try journalManager(directory, model: ManagedObjectModel([Item.self]), migrates: false).loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code == .incompatibleModel
                && "\(error)".contains("entity 'Destination' was removed")
        }
        #expect(try directory.bytes(of: "Store.journal") == torn)
        #expect(!directory.contents.contains { $0.contains("torn") })
    }

    @Test("random saves reopen as they were: through the coordinator's open and the public open alike")
    func randomSavesReopen() throws {
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        for round in 0..<12 {
            let directory = TemporaryDirectory("journal-random-\(round)")
            var reference: [Int64: (name: String, rating: Int, visited: Date?)] = [:]
            let manager = journalManager(directory)
            let context = try manager.createContext()
            try context.performAndWait {
                // Inserts, updates and deletes over several records, with a compaction (a
                // snapshot followed by records) in some rounds.
                for step in 0..<Int(4 + random.next() % 12) {
                    var objects = try context.fetch(FetchRequest<Destination>())
                    for _ in 0..<Int(random.next() % 40) {
                        let choice = random.next() % 4
                        if choice == 0, !objects.isEmpty {
                            context.delete(objects.remove(at: Int(random.next() % UInt64(objects.count))))
                        } else if choice == 1, !objects.isEmpty {
                            let object = objects[Int(random.next() % UInt64(objects.count))]
                            object.rating = Int(random.next() % 1_000) - 500
                            object.visited = random.next() % 3 == 0 ? nil : Date(timeIntervalSince1970: Double(step))
                        } else {
                            let object = context.insert(Destination.self)
                            object.name = "r\(round)-s\(step)-\(random.next() % 10_000)"
                            object.rating = Int(random.next() % 100)
                            objects.append(object)
                        }
                    }
                    try context.save()
                    if random.next() % 5 == 0 {
                        try manager.compactPersistentStore()
                    }
                }
                for object in try context.fetch(FetchRequest<Destination>()) {
                    reference[object.objectID.primaryKey!] = (object.name, object.rating, object.visited)
                }
            }
            manager.close()
            let expected = reference.sorted { $0.key < $1.key }
            // The coordinator's open: the journal's rows straight into the row blocks.
            let reopened = journalManager(directory)
            let fetched = try reopened.createContext()
            let rows = try fetched.performAndWait {
                try fetched.fetch(FetchRequest<Destination>()).map {
                    ($0.objectID.primaryKey!, $0.name, $0.rating, $0.visited)
                }
            }
            #expect(rows.map(\.0) == expected.map(\.key), "round \(round) (seed \(seed))")
            #expect(rows.map(\.1) == expected.map(\.value.name), "round \(round) (seed \(seed))")
            #expect(rows.map(\.2) == expected.map(\.value.rating), "round \(round) (seed \(seed))")
            #expect(rows.map(\.3) == expected.map(\.value.visited), "round \(round) (seed \(seed))")
            reopened.close()
            // The public open: stored rows, in key order, with the same values.
            let store = try JournalStore(directory: directory.url, name: "Store")
            let contents = try store.open(for: testModel)
            store.close()
            let stored = contents.rows["Destination"] ?? []
            #expect(stored.map(\.primaryKey) == expected.map(\.key), "round \(round) (seed \(seed))")
            let nameColumn = try #require(testModel.entitiesByName["Destination"]?.column(named: "name"))
            #expect(stored.map { $0.values[nameColumn] } == expected.map { .string($0.value.name) })
        }
    }

    @Test("compaction rewrites the journal as one snapshot, and everything survives")
    func compaction() throws {
        let directory = TemporaryDirectory("journal-compact")
        let manager = journalManager(directory)
        try saveOneByOne(manager, names)
        let context = try manager.createContext()
        try context.performAndWait {
            let objects = try context.fetch(FetchRequest<Destination>())
            for round in 1...20 {
                objects[0].rating = round
                try context.save()
            }
            context.delete(objects[1])
            try context.save()
        }
        let before = try directory.bytes(of: "Store.journal")
        try manager.compactPersistentStore()
        let after = try directory.bytes(of: "Store.journal")
        #expect(after.count < before.count)
        #expect(recordOffsets(after).count == 1)
        try saveOneByOne(manager, ["after"])
        manager.close()
        let reopened = journalManager(directory)
        #expect(try storedNames(reopened) == ["s1", "s3", "s4", "s5", "after"])
        let rating = try reopened.createContext()
        #expect(try rating.performAndWait { try rating.fetch(FetchRequest<Destination>())[0].rating } == 20)
        // Keys are never reused, also across compaction: s1–s5 and "after" took 1–6.
        let next = try saveOneByOneReturningKey(reopened, "keys")
        #expect(next == 7)
    }

    private func saveOneByOneReturningKey(_ manager: ContextManager, _ name: String) throws -> Int64? {
        let context = try manager.createContext()
        return try context.performAndWait {
            let object = context.insert(Destination.self)
            object.name = name
            try context.save()
            return object.objectID.primaryKey
        }
    }

    @Test("the journal compacts itself once the log outgrows the live data")
    func automaticCompaction() throws {
        let directory = TemporaryDirectory("journal-auto")
        let manager = journalManager(directory)
        let context = try manager.createContext()
        let payload = String(repeating: "x", count: 2_000)
        try context.performAndWait {
            let object = context.insert(Destination.self)
            for round in 0..<1_200 {
                object.country = payload + String(round)
                try context.save()
            }
        }
        let size = try directory.bytes(of: "Store.journal").count
        #expect(size < 1 << 20)
        manager.close()
        let names = try storedNames(journalManager(directory))
        #expect(names.count == 1)
    }

    @Test(
        "compacting inside the save: failing before it replaces the journal leaves the save to its sync; failing after, it fails the save"
    )
    func automaticCompactionFailures() throws {
        let payload = String(repeating: "x", count: 2_000)
        func countries(_ manager: ContextManager) throws -> [String] {
            defer { manager.close() }
            let context = try manager.createContext()
            return try context.performAndWait { try context.fetch(FetchRequest<Destination>()).map(\.country) }
        }
        /// Saves `payload + round` on one object until `stop` says so; returns the round it stopped at.
        func saveRounds(
            _ manager: ContextManager,
            _ fileSystem: FaultyFileSystem,
            failAt: Int? = nil,
            stop: (Int) -> Bool
        ) throws -> Int {
            let context = try manager.createContext()
            return try context.performAndWait {
                let object = context.insert(Destination.self)
                try context.save()
                fileSystem.reset(failAt: failAt)
                for round in 0..<2_000 {
                    object.country = payload + String(round)
                    try context.save()
                    if stop(round) {
                        return round
                    }
                }
                return -1
            }
        }
        // Where the first automatic compaction renames its new file over the journal.
        let counting = FaultyFileSystem()
        let probe = TemporaryDirectory("journal-auto-probe")
        let probeManager = journalManager(probe, fileSystem: counting, backgroundCompaction: false)
        let compactionRound = try saveRounds(probeManager, counting) { _ in counting.log.contains("rename") }
        let rename = try #require(counting.log.firstIndex(of: "rename")) + 1
        probeManager.close()
        try #require(compactionRound > 0)

        // The rename fails: the old journal is untouched and still the store; the save is made
        // durable by its sync, and a later save's compaction succeeds.
        let before = TemporaryDirectory("journal-auto-before")
        let faulty = FaultyFileSystem()
        let beforeManager = journalManager(before, fileSystem: faulty, backgroundCompaction: false)
        _ = try saveRounds(beforeManager, faulty, failAt: rename) { $0 == compactionRound + 10 }
        beforeManager.close()
        #expect(!before.contents.contains { $0.contains(".tmp-") }, "a temporary file was left")
        #expect(try before.bytes(of: "Store.journal").count < 1 << 20)
        #expect(try countries(journalManager(before)) == [payload + String(compactionRound + 10)])

        // The step after the rename fails: whether the new journal is durable is unknown, so the
        // save fails, keeping its changes, and the journal refuses commits until reopened.
        let after = TemporaryDirectory("journal-auto-after")
        let failing = FaultyFileSystem()
        let afterManager = journalManager(after, fileSystem: failing, backgroundCompaction: false)
        let context = try afterManager.createContext()
        try context.performAndWait {
            let object = context.insert(Destination.self)
            try context.save()
            failing.reset(failAt: rename + 1)
            for round in 0..<compactionRound {
                object.country = payload + String(round)
                try context.save()
            }
            object.country = payload + String(compactionRound)
            #expect {
                try context.save()
            } throws: { error in
                (error as? StoreError)?.code == .io
            }
            #expect(context.hasChanges)
            #expect {
                try context.save()
            } throws: { error in
                (error as? StoreError)?.code == .closed
            }
        }
        afterManager.close()
        // The new journal was renamed into place with the save in its snapshot: reopening finds
        // it (as after any failed sync, a failed save may be there).
        #expect(try countries(journalManager(after)) == [payload + String(compactionRound)])
    }

    @Test("a crash at any step of a compaction leaves a journal with every committed save")
    func crashDuringCompaction() throws {
        let template = TemporaryDirectory("journal-compact-template")
        let seedManager = journalManager(template)
        try saveOneByOne(seedManager, names)
        seedManager.close()
        let bytes = try template.bytes(of: "Store.journal")

        // Count the operations of a compaction.
        let counting = FaultyFileSystem()
        let probe = TemporaryDirectory("journal-compact-probe")
        try probe.write(bytes, to: "Store.journal")
        let probeManager = journalManager(probe, fileSystem: counting)
        try probeManager.loadPersistentStore()
        counting.reset()
        try probeManager.compactPersistentStore()
        let operations = counting.count
        probeManager.close()
        #expect(operations >= 5)

        for step in 1...operations {
            let directory = TemporaryDirectory("journal-compact-crash")
            try directory.write(bytes, to: "Store.journal")
            let faulty = FaultyFileSystem()
            let manager = journalManager(directory, fileSystem: faulty)
            try manager.loadPersistentStore()
            faulty.reset(failAt: step, crashes: true)
            #expect(throws: StoreError.self, "step \(step) (\(counting.log[step - 1]))") {
                try manager.compactPersistentStore()
            }
            manager.close()
            #expect(try storedNames(journalManager(directory)) == names, "step \(step)")
            #expect(!directory.contents.contains { $0.contains(".tmp-") }, "a temporary file was left")
        }
    }

    @Test(
        "a failure at any I/O operation of a save throws, and reopening finds every earlier save",
        arguments: [
            FaultyFileSystem.Fault.error(EIO), .error(ENOSPC), .shortWrite,
        ])
    func faultsDuringSave(_ fault: FaultyFileSystem.Fault) throws {
        let template = TemporaryDirectory("journal-fault-template")
        let seedManager = journalManager(template)
        try saveOneByOne(seedManager, names)
        seedManager.close()
        let bytes = try template.bytes(of: "Store.journal")

        let counting = FaultyFileSystem()
        let probe = TemporaryDirectory("journal-fault-probe")
        try probe.write(bytes, to: "Store.journal")
        let probeManager = journalManager(probe, fileSystem: counting)
        try probeManager.loadPersistentStore()
        counting.reset()
        try saveOneByOne(probeManager, ["failing"])
        let operations = counting.count
        probeManager.close()
        #expect(operations >= 2)

        for step in 1...operations {
            for crashes in [false, true] {
                let directory = TemporaryDirectory("journal-fault")
                try directory.write(bytes, to: "Store.journal")
                let faulty = FaultyFileSystem()
                let manager = journalManager(directory, fileSystem: faulty)
                let context = try manager.createContext()
                faulty.reset(failAt: step, fault: fault, crashes: crashes)
                // A short write alone is not a failure: the rest is written by the next call.
                let isRecoverable: Bool
                if case .shortWrite = fault, !crashes, counting.log[step - 1] == "write" {
                    isRecoverable = true
                } else {
                    isRecoverable = false
                }
                try context.performAndWait {
                    context.insert(Destination.self).name = "failing"
                    if isRecoverable {
                        try context.save()
                        return
                    }
                    #expect(throws: StoreError.self, "step \(step)") { try context.save() }
                    #expect(context.hasChanges)
                    // After a failed write the journal refuses commits until reopened.
                    #expect {
                        try context.save()
                    } throws: { error in
                        (error as? StoreError)?.code == .closed
                    }
                }
                manager.close()
                let recovered = try storedNames(journalManager(directory))
                if isRecoverable {
                    #expect(recovered == names + ["failing"], "step \(step): \(recovered)")
                } else {
                    #expect(recovered == names || recovered == names + ["failing"], "step \(step): \(recovered)")
                }
            }
        }
    }

    @Test("stale temporary files of a crashed compaction are removed at open, never promoted")
    func staleTemporaryFiles() throws {
        let directory = TemporaryDirectory("journal-stale")
        _ = try makeJournal(directory)
        try directory.write(Array("garbage".utf8), to: "Store.journal.tmp-0123456789abcdef")
        try directory.write(Array("other".utf8), to: "Other.journal.tmp-1")
        #expect(try storedNames(journalManager(directory)) == names)
        #expect(directory.contents.contains("Other.journal.tmp-1"))
        #expect(!directory.contents.contains("Store.journal.tmp-0123456789abcdef"))
    }

    @Test("a seed store is copied in when there is no store, and never over one")
    func seedStore() throws {
        let seedDirectory = TemporaryDirectory("journal-seed")
        _ = try makeJournal(seedDirectory)
        let seed = seedDirectory.file("Store.journal")
        let directory = TemporaryDirectory("journal-seeded")
        let manager = journalManager(directory, name: "App", seed: seed)
        #expect(try storedNames(manager) == names)
        try saveOneByOne(manager, ["mine"])
        manager.close()
        #expect(try storedNames(journalManager(directory, name: "App", seed: seed)) == names + ["mine"])
        #expect(try storedNames(journalManager(seedDirectory)) == names)
        // Kept alive to the end, so that it removes what the failed open created in it.
        let unseeded = TemporaryDirectory("journal-no-seed")
        #expect {
            try journalManager(unseeded, seed: directory.file("missing.journal")).loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code == .invalidConfiguration
        }
        #expect(!unseeded.contents.contains("Store.journal"))
        withExtendedLifetime(unseeded) {}
    }

    @Test("a second manager gets .locked while the first has the journal open")
    func lockedAcrossManagers() throws {
        let directory = TemporaryDirectory("journal-lock")
        let first = journalManager(directory)
        try first.loadPersistentStore()
        #expect {
            try journalManager(directory).loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code == .locked
        }
        first.close()
        try journalManager(directory).loadPersistentStore()
    }

    @Test("another process gets .locked while this one has the journal open")
    func lockedAcrossProcesses() async throws {
        let directory = TemporaryDirectory("journal-process-lock")
        let manager = journalManager(directory)
        try manager.loadPersistentStore()
        let path = directory.path
        await #expect(processExitsWith: .exitCode(42)) { [path = path as String] in
            let url = URL(fileURLWithPath: path)
            let other = ContextManager(
                delegate: TestStoreDelegate(storeType: .custom { _ in try JournalStore(directory: url, name: "Store") })
            )
            do {
                try other.loadPersistentStore()
                exit(1)
            } catch let error as StoreError where error.code == .locked {
                exit(42)
            }
        }
        manager.close()
        await #expect(processExitsWith: .exitCode(0)) { [path = path as String] in
            let url = URL(fileURLWithPath: path)
            let other = ContextManager(
                delegate: TestStoreDelegate(storeType: .custom { _ in try JournalStore(directory: url, name: "Store") })
            )
            try other.loadPersistentStore()
            exit(0)
        }
    }

    @Test("store names that would escape the directory are refused", arguments: ["", ".", "..", "a/b", "../up"])
    func invalidNames(_ name: String) {
        #expect {
            try JournalStore(directory: URL(fileURLWithPath: "/tmp"), name: name)
        } throws: { error in
            (error as? StoreError)?.code == .invalidConfiguration
        }
    }
}
