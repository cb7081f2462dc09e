import Foundation
import Testing

@testable import QueueData

/// What a reopened journal holds: the destinations' names (sorted), then one line per
/// transaction of its history: its number and the names of the objects it inserted.
private func rowsAndHistory(_ manager: ContextManager) throws -> [String] {
    let context = try makeContext(manager, "rows-and-history")
    return try context.performAndWait {
        let names = try context.fetch(FetchRequest<Destination>()).map(\.name).sorted()
        let transactions = try context.history(after: nil).map { transaction in
            let inserted = transaction.changes.filter { $0.kind == .insert }.map { change in
                (context.object(with: change.objectID) as? Destination)?.name ?? "(gone)"
            }
            return "#\(transaction.transactionNumber) \(inserted.sorted().joined(separator: ","))"
        }
        return names + transactions
    }
}

@Suite("Persistent history survives crashes: never ahead of or behind the rows")
struct HistoryDurabilityTests {
    let old = ["Lisbon", "Kyoto"]

    /// The state after `old` (untracked) then each of `new` saved with history: rows and history.
    func expected(_ new: [String]) -> [String] {
        (old + new).sorted() + new.enumerated().map { "#\($0.offset + 1) \($0.element)" }
    }

    @Test(
        "a journal cut at any byte after its snapshot opens with exactly the saves whose records survived, rows and history alike"
    )
    func tornTails() throws {
        let directory = TemporaryDirectory("history-torn")
        let seeding = journalManager(directory)
        try saveOneByOne(seeding, old)
        seeding.close()
        let new = ["a", "b", "c", "d"]
        let manager = journalManager(directory, tracksHistory: true)
        try saveOneByOne(manager, new)
        manager.close()
        let bytes = try directory.bytes(of: "Store.journal")
        let offsets = recordOffsets(bytes)
        // The first tracked save compacted the journal into one snapshot (holding "a"); each later
        // save is one record.
        #expect(offsets.count == 4)
        let allowed = (1...new.count).map { expected(Array(new.prefix($0))) }
        var seen: [[String]] = []
        for cut in offsets[1]...bytes.count {
            let copy = TemporaryDirectory("history-torn-cut")
            try Data(bytes[..<cut]).write(to: copy.file("Store.journal"))
            let reopened = journalManager(copy, tracksHistory: true)
            defer { reopened.close() }
            let state = try rowsAndHistory(reopened)
            #expect(allowed.contains(state), "cut at \(cut): \(state)")
            if !seen.contains(state) {
                seen.append(state)
            }
        }
        #expect(seen.count == allowed.count)
    }

    @Test(
        "a power cut at any step of the save that starts the history, of a save after it, or of a purge leaves rows and history in step"
    )
    func powerLoss() throws {
        let helpers = PowerLossTests()
        let directory = TemporaryDirectory("history-power-loss")
        let seeding = journalManager(directory)
        try saveOneByOne(seeding, old)
        seeding.close()

        let fileSystem = PowerLossFileSystem()
        let manager = journalManager(directory, fileSystem: fileSystem, tracksHistory: true)
        try manager.loadPersistentStore()
        let read: (TemporaryDirectory) throws -> [String] = { directory in
            let manager = journalManager(directory, tracksHistory: true)
            defer { manager.close() }
            return try rowsAndHistory(manager)
        }
        fileSystem.startRecordingCuts(of: directory.url)
        try saveOneByOne(manager, ["a"])
        let start = fileSystem.stopRecordingCuts()
        #expect(start.contains { $0.description.hasPrefix("rename") }, "the first tracked save did not compact")
        fileSystem.startRecordingCuts(of: directory.url)
        try saveOneByOne(manager, ["b"])
        let next = fileSystem.stopRecordingCuts()
        let acknowledged = helpers.after("after the second save returned", fileSystem, directory)

        let context = try makeContext(manager, "purger")
        let token = try context.performAndWait { try context.currentHistoryToken() }
        fileSystem.startRecordingCuts(of: directory.url)
        try context.performAndWait { try context.purgeHistory(before: token) }
        let purge = fileSystem.stopRecordingCuts()
        let purged = helpers.after("after the purge returned", fileSystem, directory)
        manager.close()

        let untracked = old.sorted()
        helpers.expectStates(helpers.during(start), in: [untracked, expected(["a"])], reading: read)
        helpers.expectStates(helpers.during(next), in: [expected(["a"]), expected(["a", "b"])], reading: read)
        helpers.expectStates(acknowledged, in: [expected(["a", "b"])], reading: read)
        let afterPurge = (old + ["a", "b"]).sorted() + ["#2 b"]
        helpers.expectStates(helpers.during(purge), in: [expected(["a", "b"]), afterPurge], reading: read)
        helpers.expectStates(purged, in: [afterPurge], reading: read)
    }

    @Test("compaction, automatic or asked for, keeps the history and every token")
    func compaction() throws {
        let directory = TemporaryDirectory("history-compaction")
        var manager = journalManager(directory, tracksHistory: true)
        let context = try makeContext(manager, "writer")
        // Saves of 300 KB rows take the log past 1 MiB and twice the live data: automatic
        // compactions run in the background while saves go on.
        let payload = String(repeating: "x", count: 300_000)
        let id = try context.performAndWait {
            context.transactionAuthor = "writer"
            let object = context.insert(Destination.self)
            object.name = "big"
            try context.save()
            for round in 1...12 {
                object.country = payload + "\(round)"
                try context.save()
            }
            return object.objectID
        }
        #expect(recordOffsets(try directory.bytes(of: "Store.journal")).count < 13, "no automatic compaction ran")
        let before = try context.performAndWait { try context.history(after: nil) }
        #expect(before.map(\.transactionNumber) == Array(1...13))
        #expect(
            before.dropFirst().allSatisfy {
                $0.changes == [HistoryChange(objectID: id, kind: .update, updatedProperties: ["country"])]
            })
        try manager.compactPersistentStore()
        #expect(try context.performAndWait { try context.history(after: nil) } == before)
        manager.close()
        manager = journalManager(directory, tracksHistory: true)
        defer { manager.close() }
        let reopened = try makeContext(manager, "reader")
        #expect(try reopened.performAndWait { try reopened.history(after: nil) } == before)
        #expect(try reopened.performAndWait { try reopened.history(after: before[5].token) } == Array(before[6...]))
    }

    @Test("a damaged history is refused as corruption, never a trap, and the file is left untouched")
    func hostileHistory() throws {
        let directory = TemporaryDirectory("history-hostile")
        let manager = journalManager(directory, tracksHistory: true)
        try saveOneByOne(manager, ["a", "b"])
        let context = try makeContext(manager, "purger")
        // Compact: the history is all in the snapshot.
        try manager.compactPersistentStore()
        _ = try context.performAndWait { try context.history(after: nil) }
        manager.close()
        let good = try directory.bytes(of: "Store.journal")
        let contents = try #require(try JournalStore(directory: directory.url, name: "Store").inspect())
        let history = try #require(contents.history)
        #expect(history.transactions.count == 2)

        func refused(_ history: StoreHistory, _ reason: String) throws {
            var damaged = contents
            damaged.history = history
            let copy = TemporaryDirectory("history-hostile-copy")
            let bytes = storeFileBytes(damaged, kind: "journal")
            try Data(bytes).write(to: copy.file("Store.journal"))
            let reopened = journalManager(copy, tracksHistory: true)
            defer { reopened.close() }
            let error = #expect(throws: StoreError.self, "\(reason)") { try reopened.loadPersistentStore() }
            #expect(error?.code == .corrupted, "\(reason)")
            #expect(try copy.bytes(of: "Store.journal") == bytes, "\(reason)")
        }
        var bad = history
        bad.transactions.reverse()
        try refused(bad, "numbers descending")
        bad = history
        bad.lastTransactionNumber = 1
        try refused(bad, "a transaction after the last number")
        bad = history
        bad.purgedThrough = 1
        try refused(bad, "a transaction at the purge point")
        bad = history
        bad.transactions[0].timestamp = Date(timeIntervalSinceReferenceDate: .nan)
        try refused(bad, "a timestamp that is not a number")
        bad = history
        bad.transactions[0].entities[0].inserted = [0]
        try refused(bad, "a key of 0")

        // Every single-byte change of the history section (at the end of the snapshot's payload),
        // re-framed with a valid checksum so that the decoder meets it: refused as damage, or read
        // as another history if the change still makes sense — never a trap.
        let header = try good.withUnsafeBytes { try JournalFormat.decodeHeader($0) }
        let record = try #require(
            good.withUnsafeBytes { JournalFormat.record(at: JournalFormat.headerSize, in: $0, epoch: header.epoch) })
        #expect(record.end == good.count, "the compacted journal is one snapshot")
        let payload = Array(good[record.payload])
        var outcomes = (refused: 0, read: 0)
        for offset in (payload.count - 48)..<payload.count {
            for value: UInt8 in [0x00, 0x7F, 0xFF, payload[offset] ^ 0x01] where value != payload[offset] {
                var mutated = payload
                mutated[offset] = value
                let bytes =
                    Array(good[..<JournalFormat.headerSize])
                    + JournalFormat.encodeRecord(
                        type: .snapshot, sequence: record.sequence, epoch: header.epoch, payload: mutated)
                do {
                    _ = try bytes.withUnsafeBytes { try JournalStore.parse($0, url: nil) }
                    outcomes.read += 1
                } catch let error as StoreError {
                    #expect(error.code == .corrupted)
                    outcomes.refused += 1
                }
            }
        }
        #expect(outcomes.refused > 0)
    }
}

@Suite("Persistent history: a failed start loses nothing")
struct HistoryStartFailureTests {
    @Test(
        "when the compaction that starts the history cannot be written, the save fails with the changes kept and the journal untouched"
    )
    func failedStart() throws {
        let directory = TemporaryDirectory("history-start-failure")
        let seeding = journalManager(directory)
        try saveOneByOne(seeding, ["old"])
        seeding.close()
        let before = try directory.bytes(of: "Store.journal")

        let faulty = FaultyFileSystem()
        var manager = journalManager(directory, fileSystem: faulty, tracksHistory: true)
        let context = try makeContext(manager, "writer")
        faulty.fail("rename", pathContaining: "Store.journal")
        let error = #expect(throws: StoreError.self) {
            try context.performAndWait {
                context.insert(Destination.self).name = "new"
                try context.save()
            }
        }
        #expect(error?.code == .io, "\(String(describing: error))")
        #expect(context.performAndWait { context.hasChanges })
        #expect(try directory.bytes(of: "Store.journal") == before)
        #expect(!directory.contents.contains { $0.contains(".tmp") }, "\(directory.contents)")
        manager.close()

        manager = journalManager(directory, tracksHistory: true)
        defer { manager.close() }
        try saveOneByOne(manager, ["new"])
        let reader = try makeContext(manager, "reader")
        #expect(try reader.performAndWait { try reader.history(after: nil) }.count == 1)
        #expect(try childlessNames(manager) == ["new", "old"])
    }
}
