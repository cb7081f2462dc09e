import Dispatch
import Foundation
import QueueData
import Testing

@testable import QueueData

/// Group commit in the journal store: saves arriving while an `fdatasync` is in flight are
/// appended meanwhile and made durable by one sync; none returns, or is visible to other
/// contexts, before its bytes are durable. Durability is checked by cutting the store where a
/// power loss would (``PowerLossFileSystem``): every byte written after the start of the last
/// successful sync is dropped, and so may be any directory change no directory sync covers.
@Suite("Group commit")
struct GroupCommitTests {
    /// A journal holding one destination, "existing", and a manager on it through `fileSystem`.
    func makeManager(_ directory: TemporaryDirectory, _ fileSystem: PowerLossFileSystem) throws -> ContextManager {
        let seeding = journalManager(directory)
        try saveOneByOne(seeding, ["existing"])
        seeding.close()
        let manager = journalManager(directory, fileSystem: fileSystem)
        try manager.loadPersistentStore()
        return manager
    }

    /// What `read` finds in the store a power loss now would leave: the same in every state it
    /// could leave the directory in (any directory change not synchronized kept or undone).
    func afterPowerLoss<Value: Equatable>(
        _ directory: TemporaryDirectory,
        _ fileSystem: PowerLossFileSystem,
        sourceLocation: SourceLocation = #_sourceLocation,
        opening makeManager: (TemporaryDirectory) -> ContextManager = { journalManager($0) },
        _ read: (ContextManager) throws -> Value
    ) throws -> Value? {
        var values: [Value] = []
        for outcome in fileSystem.outcomes(of: directory.url) {
            let copy = TemporaryDirectory("group-commit-power-loss")
            try outcome.image.write(into: copy.url)
            let manager = makeManager(copy)
            defer { manager.close() }
            let value = try read(manager)
            if !values.contains(value) {
                values.append(value)
            }
        }
        #expect(
            values.count == 1, "a power loss now leaves different stores: \(values)", sourceLocation: sourceLocation)
        return values.first
    }

    /// The destinations' names in the journal a power loss now would leave.
    func namesAfterPowerLoss(
        _ directory: TemporaryDirectory,
        _ fileSystem: PowerLossFileSystem,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [String] {
        try afterPowerLoss(directory, fileSystem, sourceLocation: sourceLocation) { try storedNames($0) } ?? []
    }

    /// The names `context` can fetch.
    func names(in context: ManagedObjectContext) throws -> Set<String> {
        try context.performAndWait { Set(try context.fetch(FetchRequest<Destination>()).map(\.name)) }
    }

    /// Starts a save of one new destination named `name` on `context`'s queue; `results`
    /// records its outcome, and `group` is left when it is done.
    func startSave(
        _ name: String,
        on context: ManagedObjectContext,
        into results: Recorder<(name: String, result: Result<Void, StoreError>)>,
        _ group: DispatchGroup
    ) {
        group.enter()
        context.perform {
            context.insert(Destination.self).name = name
            let result: Result<Void, StoreError>
            do {
                try context.save()
                result = .success(())
            } catch {
                result = .failure(error as? StoreError ?? StoreError(.io, "unexpected: \(error)"))
            }
            results.record((name, result))
            group.leave()
        }
    }

    /// A manager of `kind` ("journal", or "log" for the custom ``AppendLogStore``) in
    /// `directory`, through `fileSystem`.
    func manager(_ kind: String, _ directory: TemporaryDirectory, _ fileSystem: any FileSystem) -> ContextManager {
        guard kind == "log" else { return journalManager(directory, fileSystem: fileSystem) }
        let path = directory.file("Store.log").path
        return ContextManager(
            delegate: TestStoreDelegate(storeType: .custom { _ in AppendLogStore(path: path, fileSystem: fileSystem) }))
    }

    @Test(
        "saves arriving during a sync are written meanwhile and share the next one; none is seen before it is durable",
        arguments: ["journal", "log"])
    func savesShareTheNextSync(kind: String) throws {
        // The journal, and a custom store with group commit: it is the protocol's.
        let directory = TemporaryDirectory("group-commit-\(kind)")
        let fileSystem = PowerLossFileSystem()
        let seeding = manager(kind, directory, POSIXFileSystem())
        try saveOneByOne(seeding, ["existing"])
        seeding.close()
        let manager = manager(kind, directory, fileSystem)
        defer { manager.close() }
        try manager.loadPersistentStore()
        func namesAfterPowerLoss(_ directory: TemporaryDirectory, _ fileSystem: PowerLossFileSystem) throws -> [String]
        {
            try afterPowerLoss(
                directory, fileSystem, opening: { self.manager(kind, $0, POSIXFileSystem()) }, { try storedNames($0) })
                ?? []
        }
        let savers = try (0..<3).map { _ in try manager.createContext() }
        let reader = try manager.createContext()
        let results = Recorder<(name: String, result: Result<Void, StoreError>)>()
        let group = DispatchGroup()

        let syncsBefore = fileSystem.syncCount
        fileSystem.hold(sync: syncsBefore + 1)
        startSave("first", on: savers[0], into: results, group)
        try #require(fileSystem.waitForHeldSync(), "the save did not sync")
        let writes = fileSystem.writeCount
        // While the first save's sync is in flight, two more saves are appended...
        startSave("second", on: savers[1], into: results, group)
        startSave("third", on: savers[2], into: results, group)
        guard fileSystem.waitForWrites(reaching: writes + 2) else {
            fileSystem.releaseHeldSync()
            Issue.record("the saves were not appended while the sync was in flight")
            return
        }
        // ...and none of the three has returned, or is visible to another context.
        #expect(results.count == 0)
        #expect(try names(in: reader) == ["existing"])
        #expect(try namesAfterPowerLoss(directory, fileSystem) == ["existing"])

        fileSystem.releaseHeldSync()
        try #require(group.wait(timeout: .now() + 60) == .success, "the saves did not finish")
        #expect(results.count == 3)
        #expect(results.values.allSatisfy { (try? $0.result.get()) != nil })
        // One sync for the first save, one for the two that arrived during it.
        #expect(fileSystem.syncCount == syncsBefore + 2)
        #expect(try names(in: reader) == ["existing", "first", "second", "third"])
        #expect(try Set(namesAfterPowerLoss(directory, fileSystem)) == ["existing", "first", "second", "third"])
    }

    /// A manager on an ``AppendLogStore`` (a custom store with group commit) in `directory`.
    func logManager(_ directory: TemporaryDirectory, _ fileSystem: any FileSystem = POSIXFileSystem()) -> ContextManager
    {
        let path = directory.file("Store.log").path
        return ContextManager(
            delegate: TestStoreDelegate(storeType: .custom { _ in AppendLogStore(path: path, fileSystem: fileSystem) }))
    }

    @Test("a failed sync fails every save it covered and every later one; earlier saves stay durable")
    func failedSyncFailsItsGroup() throws {
        let directory = TemporaryDirectory("group-commit-failure")
        let fileSystem = PowerLossFileSystem()
        let manager = try makeManager(directory, fileSystem)
        defer { manager.close() }
        let savers = try (0..<3).map { _ in try manager.createContext() }
        let reader = try manager.createContext()
        try savers[0].performAndWait {
            savers[0].insert(Destination.self).name = "acknowledged"
            try savers[0].save()
        }
        let results = Recorder<(name: String, result: Result<Void, StoreError>)>()
        let group = DispatchGroup()

        fileSystem.hold(sync: fileSystem.syncCount + 1, failing: true)
        startSave("leader", on: savers[0], into: results, group)
        try #require(fileSystem.waitForHeldSync(), "the save did not sync")
        let writes = fileSystem.writeCount
        startSave("follower 1", on: savers[1], into: results, group)
        startSave("follower 2", on: savers[2], into: results, group)
        let appended = fileSystem.waitForWrites(reaching: writes + 2)
        fileSystem.releaseHeldSync()
        try #require(appended, "the saves were not appended while the sync was in flight")
        try #require(group.wait(timeout: .now() + 60) == .success, "the saves did not finish")

        let outcomes = Dictionary(uniqueKeysWithValues: results.values.map { ($0.name, $0.result) })
        // The leader's sync failed: an I/O error naming the journal.
        guard case .failure(let leaderError) = outcomes["leader"] else {
            Issue.record("the save whose sync failed reported success")
            return
        }
        #expect(leaderError.code == .io)
        #expect(leaderError.url?.lastPathComponent == "Store.journal")
        // The saves appended behind it are not reported durable either.
        for name in ["follower 1", "follower 2"] {
            guard case .failure(let error) = outcomes[name] else {
                Issue.record("\(name) reported success after the sync covering it failed")
                continue
            }
            #expect(error.code == .closed || error.code == .io, "\(name): \(error)")
        }
        // Each failed context keeps its changes, and the store refuses commits from now on.
        for saver in savers {
            saver.performAndWait {
                #expect(saver.hasChanges)
                #expect {
                    try saver.save()
                } throws: { error in
                    (error as? StoreError)?.code == .closed
                }
            }
        }
        // Nobody sees the failed saves; the acknowledged one survives a power loss.
        #expect(try names(in: reader) == ["existing", "acknowledged"])
        #expect(try namesAfterPowerLoss(directory, fileSystem) == ["existing", "acknowledged"])
    }

    @Test("closing with a save waiting fails it; reopening makes what the journal holds durable before reading it")
    func closeWhileSavesWait() throws {
        let directory = TemporaryDirectory("group-commit-close")
        let fileSystem = PowerLossFileSystem()
        let manager = try makeManager(directory, fileSystem)
        let savers = try (0..<2).map { _ in try manager.createContext() }
        let results = Recorder<(name: String, result: Result<Void, StoreError>)>()
        let group = DispatchGroup()

        fileSystem.hold(sync: fileSystem.syncCount + 1)
        startSave("leader", on: savers[0], into: results, group)
        try #require(fileSystem.waitForHeldSync(), "the save did not sync")
        let writes = fileSystem.writeCount
        startSave("waiting", on: savers[1], into: results, group)
        let appended = fileSystem.waitForWrites(reaching: writes + 1)
        if appended {
            manager.close()
        }
        fileSystem.releaseHeldSync()
        try #require(appended, "the save was not appended while the sync was in flight")
        try #require(group.wait(timeout: .now() + 60) == .success, "the saves did not finish")

        let outcomes = Dictionary(uniqueKeysWithValues: results.values.map { ($0.name, $0.result) })
        // The leader's own sync succeeded: it is durable and says so.
        #expect((try? outcomes["leader"]?.get()) != nil)
        // The waiting save was never synchronized: it fails, naming the journal.
        guard case .failure(let error) = outcomes["waiting"] else {
            Issue.record("a save that was never synchronized reported success")
            return
        }
        #expect(error.code == .closed)
        #expect(error.url?.lastPathComponent == "Store.journal")
        #expect(try namesAfterPowerLoss(directory, fileSystem) == ["existing", "leader"])

        // Its record is in the journal, though: reopening synchronizes the journal before any
        // context reads it, so what a context sees is durable.
        let path = directory.file("Store.journal").path
        let reopening = PowerLossFileSystem(durableSizes: [path: fileSystem.durableSize(of: path)])
        let reopened = journalManager(directory, fileSystem: reopening)
        defer { reopened.close() }
        #expect(try storedNames(reopened) == ["existing", "leader", "waiting"])
        #expect(try namesAfterPowerLoss(directory, reopening) == ["existing", "leader", "waiting"])
    }

    @Test("saves of 4 queues keep their durability through automatic compactions")
    func compactionsWhileSavesWait() throws {
        let queues = 4
        let savesPerQueue = 200
        let directory = TemporaryDirectory("group-commit-compaction")
        let fileSystem = PowerLossFileSystem()
        let manager = try makeManager(directory, fileSystem)
        defer { manager.close() }
        let contexts = try (0..<queues).map { _ in try manager.createContext() }
        // Each queue rewrites one object of its own with 4 KB: the log passes 1 MiB and twice the
        // live data several times, so the journal compacts itself while other saves wait.
        let payload = String(repeating: "x", count: 4_000)
        let objectIDs = try contexts.enumerated().map { queue, context in
            try context.performAndWait {
                let destination = context.insert(Destination.self)
                destination.name = "queue \(queue)"
                try context.save()
                return destination.objectID
            }
        }
        let failures = Recorder<String>()
        let group = DispatchGroup()
        for (queue, context) in contexts.enumerated() {
            group.enter()
            context.perform {
                let destination = context.object(with: objectIDs[queue]) as! Destination
                for save in 0..<savesPerQueue {
                    destination.country = payload + "\(save)"
                    do {
                        try context.save()
                    } catch {
                        failures.record("queue \(queue) save \(save): \(error)")
                        context.rollback()
                    }
                }
                group.leave()
            }
        }
        try #require(group.wait(timeout: .now() + 120) == .success, "the saves did not finish")
        #expect(failures.values == [])
        let written = queues * savesPerQueue * payload.utf8.count
        let journal = try directory.bytes(of: "Store.journal")
        #expect(journal.count < written / 2, "the journal did not compact: \(journal.count) bytes")

        // A power loss now keeps every queue's last save, whichever directory changes it undoes.
        let countries = try afterPowerLoss(directory, fileSystem) { reopened in
            let context = try reopened.createContext()
            return try context.performAndWait {
                Dictionary(
                    uniqueKeysWithValues: try context.fetch(FetchRequest<Destination>()).map { ($0.name, $0.country) })
            }
        }
        for queue in 0..<queues {
            #expect(countries?["queue \(queue)"] == payload + "\(savesPerQueue - 1)", "queue \(queue)")
        }
    }

    @Test(
        "8 queues × 40 saves: every save acknowledged before a sync is durable by it, in commit order",
        arguments: 0..<3)
    func concurrentSaversUnderPowerLoss(round: Int) throws {
        let queues = 8
        let savesPerQueue = 40
        let directory = TemporaryDirectory("group-commit-stress")
        // The acknowledged saves, in the order they returned; each sync's checkpoint records
        // how many had returned when it started.
        let acknowledged = Recorder<String>()
        let fileSystem = PowerLossFileSystem(marker: { acknowledged.count })
        let manager = try makeManager(directory, fileSystem)
        defer { manager.close() }
        let contexts = try (0..<queues).map { _ in try manager.createContext() }
        let failures = Recorder<String>()
        let path = directory.file("Store.journal").path
        // Each save, with how much of the journal was durable when it returned.
        let returned = Recorder<(name: String, durableSize: Int64)>()
        let group = DispatchGroup()
        for (queue, context) in contexts.enumerated() {
            group.enter()
            context.perform {
                for save in 0..<savesPerQueue {
                    let name = "q\(queue)-\(save)"
                    context.insert(Destination.self).name = name
                    do {
                        try context.save()
                        returned.record((name, fileSystem.durableSize(of: path)))
                        acknowledged.record(name)
                    } catch {
                        failures.record("\(name): \(error)")
                    }
                }
                group.leave()
            }
        }
        try #require(group.wait(timeout: .now() + 120) == .success, "the saves did not finish")
        #expect(failures.values == [])
        let saves = queues * savesPerQueue
        // Fewer syncs than saves: some saves shared one (8 threads, most of each save's time is
        // its sync).
        let checkpoints = fileSystem.checkpoints(of: path)
        #expect(checkpoints.count < saves, "\(checkpoints.count) syncs for \(saves) saves")

        // The journal a power loss after each of (up to) 12 syncs would leave holds every save
        // acknowledged before that sync started, and only whole saves in commit order: a
        // prefix of the primary keys.
        let journal = try directory.bytes(of: "Store.journal")
        let order = acknowledged.values
        let step = max(1, checkpoints.count / 12)
        for checkpoint in stride(from: 0, to: checkpoints.count, by: step).map({ checkpoints[$0] }) {
            let copy = TemporaryDirectory("group-commit-cut")
            try copy.write(Array(journal.prefix(Int(checkpoint.size))), to: "Store.journal")
            let reopened = journalManager(copy)
            let context = try reopened.createContext()
            let stored = try context.performAndWait {
                try context.fetch(FetchRequest<Destination>()).map { ($0.objectID.rawValue, $0.name) }
            }
            reopened.close()
            let storedNames = Set(stored.map(\.1))
            let missing = order.prefix(checkpoint.marker).filter { !storedNames.contains($0) }
            #expect(missing.isEmpty, "acknowledged before a sync but lost at its cut: \(missing)")
            #expect(stored.map(\.0).sorted() == Array(1...Int64(stored.count)), "not a prefix of the commits")
        }
        // Every save was durable when it returned: the journal cut where a power loss at that
        // moment would cut it holds it (checked for every 10th save).
        for (position, save) in returned.values.enumerated() where position % 10 == 0 {
            let copy = TemporaryDirectory("group-commit-return")
            try copy.write(Array(journal.prefix(Int(save.durableSize))), to: "Store.journal")
            let reopened = journalManager(copy)
            defer { reopened.close() }
            #expect(try storedNames(reopened).contains(save.name), "\(save.name) returned before it was durable")
        }
        // And after the last sync, everything.
        #expect(try Set(namesAfterPowerLoss(directory, fileSystem)) == Set(order + ["existing"]))
        #expect(order.count == saves)
    }
}
