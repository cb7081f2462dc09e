import Dispatch
import Foundation
import Testing

@testable import QueueData

/// The journal's automatic compaction writes its snapshot off the saving path: saves go on
/// while it is written, and a later save finishes it.
@Suite("Background compaction")
struct BackgroundCompactionTests {
    static let payload = String(repeating: "x", count: 2_000)

    /// The stores a manager opened, for the test to reach.
    final class Stores: @unchecked Sendable {
        private let lock = NSLock()
        private var stores: [JournalStore] = []

        func add(_ store: JournalStore) {
            lock.withLock { stores.append(store) }
        }

        var last: JournalStore? { lock.withLock { stores.last } }
    }

    /// Saves `payload + round` on `object` until `stop(round)`; returns the last round.
    @discardableResult
    func saveRounds(
        _ context: ManagedObjectContext,
        _ object: Destination,
        from start: Int = 0,
        stop: (Int) -> Bool
    ) throws -> Int {
        try context.performAndWait {
            var round = start
            while true {
                object.country = Self.payload + String(round)
                try context.save()
                if stop(round) {
                    return round
                }
                round += 1
                try #require(round < start + 5_000, "no compaction started")
            }
        }
    }

    func countries(_ directory: TemporaryDirectory) throws -> [String] {
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        return try context.performAndWait { try context.fetch(FetchRequest<Destination>()).map(\.country) }
    }

    @Test(
        "saves go on while a compaction writes its snapshot, each durable and seen; the save after it switches the journal"
    )
    func savesGoOn() throws {
        let directory = TemporaryDirectory("background-compaction")
        let fileSystem = FaultyFileSystem()
        let stores = Stores()
        let manager = journalManager(directory, fileSystem: fileSystem, onStore: stores.add)
        let context = try manager.createContext()
        let reader = try manager.createContext()
        let object = try context.performAndWait {
            let object = context.insert(Destination.self)
            try context.save()
            return object
        }
        fileSystem.reset()  // the log starts here: creating the journal renamed it into place
        // The snapshot's file is held open until released.
        let reached = fileSystem.hold("open", pathContaining: ".tmp-")
        let started = try saveRounds(context, object) { _ in reached.wait(timeout: .now()) == .success }
        let sizeAtStart = try directory.bytes(of: "Store.journal").count
        // Saves while the snapshot is being written: each returns, durable, and another context sees it.
        for round in (started + 1)...(started + 20) {
            try context.performAndWait {
                object.country = Self.payload + String(round)
                try context.save()
            }
            flush(reader)
            let seen = try reader.performAndWait {
                try reader.fetch(FetchRequest<Destination>()).first?.country
            }
            #expect(seen == Self.payload + String(round))
        }
        #expect(!fileSystem.log.contains("rename"), "the journal was replaced before its snapshot was written")
        #expect(try directory.bytes(of: "Store.journal").count > sizeAtStart, "the saves went to the old journal")
        fileSystem.releaseHeld()
        stores.last?.compactionWrites.wait()
        // The next save finishes the compaction: the snapshot and the 20 saves since.
        try saveRounds(context, object, from: started + 21) { _ in true }
        #expect(fileSystem.log.contains("rename"))
        #expect(try directory.bytes(of: "Store.journal").count < 1 << 20)
        #expect(!directory.contents.contains { $0.contains(".tmp-") })
        manager.close()
        #expect(try countries(directory) == [Self.payload + String(started + 21)])
    }

    @Test("a compaction failing before it replaces the journal leaves every save in the journal; a later one succeeds")
    func failureBeforeReplacing() throws {
        for failing in ["snapshot", "rename"] {
            let directory = TemporaryDirectory("background-failure-\(failing)")
            let fileSystem = FaultyFileSystem()
            let stores = Stores()
            let manager = journalManager(directory, fileSystem: fileSystem, onStore: stores.add)
            let context = try manager.createContext()
            let object = try context.performAndWait {
                let object = context.insert(Destination.self)
                try context.save()
                return object
            }
            if failing == "snapshot" {
                fileSystem.fail("open", pathContaining: ".tmp-")
            } else {
                fileSystem.fail("rename", pathContaining: "Store.journal")
            }
            // Save until the failed compaction is reported; every save succeeds meanwhile.
            let failedAt = try saveRounds(context, object) { _ in
                stores.last?.compactionWrites.wait()
                return stores.last?.lastCompactionError != nil
            }
            #expect(!directory.contents.contains { $0.contains(".tmp-") }, "\(failing): a temporary file was left")
            manager.close()
            #expect(try countries(directory) == [Self.payload + String(failedAt)], "\(failing)")
            // Reopened, the journal compacts itself on a later save.
            let again = journalManager(directory, fileSystem: fileSystem, onStore: stores.add)
            let context2 = try again.createContext()
            let object2 = try context2.performAndWait { try context2.fetch(FetchRequest<Destination>())[0] }
            fileSystem.reset()
            try saveRounds(context2, object2, from: failedAt + 1) { _ in
                stores.last?.compactionWrites.wait()
                return fileSystem.log.contains("rename")
            }
            // One more save finishes it.
            try saveRounds(context2, object2, from: 0) { _ in true }
            #expect(try directory.bytes(of: "Store.journal").count < 1 << 20, "\(failing)")
            again.close()
        }
    }

    @Test("a compaction on demand that succeeds clears the error of a failed automatic one")
    func explicitCompactionClearsFailure() throws {
        let directory = TemporaryDirectory("background-failure-cleared")
        let fileSystem = FaultyFileSystem()
        let stores = Stores()
        let manager = journalManager(directory, fileSystem: fileSystem, onStore: stores.add)
        defer { manager.close() }
        let context = try manager.createContext()
        let object = try context.performAndWait {
            let object = context.insert(Destination.self)
            try context.save()
            return object
        }
        fileSystem.fail("open", pathContaining: ".tmp-")
        try saveRounds(context, object) { _ in
            stores.last?.compactionWrites.wait()
            return stores.last?.lastCompactionError != nil
        }
        try manager.compactPersistentStore()
        #expect(try directory.bytes(of: "Store.journal").count < 1 << 20)
        #expect(stores.last?.lastCompactionError == nil, "the journal no longer grows: a compaction succeeded")
    }

    @Test(
        "a failure after the compaction replaced the journal fails the save that finished it; the journal refuses commits"
    )
    func failureAfterReplacing() throws {
        let directory = TemporaryDirectory("background-failure-after")
        let fileSystem = FaultyFileSystem()
        let stores = Stores()
        let manager = journalManager(directory, fileSystem: fileSystem, onStore: stores.add)
        let context = try manager.createContext()
        let object = try context.performAndWait {
            let object = context.insert(Destination.self)
            try context.save()
            return object
        }
        let reached = fileSystem.hold("open", pathContaining: ".tmp-")
        let started = try saveRounds(context, object) { _ in reached.wait(timeout: .now()) == .success }
        fileSystem.releaseHeld()
        stores.last?.compactionWrites.wait()
        // The directory's sync after the rename fails.
        fileSystem.fail("fsync", path: directory.path)
        context.performAndWait {
            object.country = Self.payload + "last"
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
        manager.close()
        // The new journal is in place with the save in it (as after any failed sync, a failed
        // save may be there).
        #expect(try countries(directory) == [Self.payload + "last"], "round \(started)")
    }

    @Test("closing with a compaction in flight leaves no temporary file, and the store opens whole")
    func closeInFlight() throws {
        let directory = TemporaryDirectory("background-close")
        let fileSystem = FaultyFileSystem()
        let manager = journalManager(directory, fileSystem: fileSystem)
        let context = try manager.createContext()
        let object = try context.performAndWait {
            let object = context.insert(Destination.self)
            try context.save()
            return object
        }
        let reached = fileSystem.hold("open", pathContaining: ".tmp-")
        let last = try saveRounds(context, object) { _ in reached.wait(timeout: .now()) == .success }
        // Closing waits for the write in flight: let it go once close has started waiting.
        let releaser = DispatchQueue(label: "releaser")
        releaser.async { fileSystem.releaseHeld() }
        manager.close()
        #expect(!directory.contents.contains { $0.contains(".tmp-") })
        #expect(try countries(directory) == [Self.payload + String(last)])
    }
}
