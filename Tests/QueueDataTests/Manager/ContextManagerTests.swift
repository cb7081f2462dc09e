import Dispatch
import Foundation
import QueueData
import Testing

@testable import QueueData

@Suite("Context manager")
struct ContextManagerTests {
    @Test("the same queue gets the same context while it lives; other queues get others")
    func oneContextPerQueue() throws {
        let manager = makeManager()
        let queue = DispatchQueue(label: "import")
        let first = try manager.createContext(for: queue)
        #expect(try manager.createContext(for: queue) === first)
        #expect(try manager.createContext(for: DispatchQueue(label: "import")) !== first)
        #expect(first.name == "import")
        #expect(first.queue === queue)
        let a = try manager.createContext()
        let b = try manager.createContext()
        #expect(a !== b)
        #expect(a.queue !== b.queue)
    }

    @Test("contexts are held weakly: a released one is replaced by a new one")
    func contextsAreWeak() throws {
        let manager = makeManager()
        let queue = DispatchQueue(label: "weak")
        weak var released: ManagedObjectContext?
        do {
            released = try manager.createContext(for: queue)
        }
        #expect(released == nil)
        let replacement = try manager.createContext(for: queue)
        #expect(replacement.queue === queue)
        #expect(try manager.createContext(for: queue) === replacement)
    }

    @Test("the main context is one context, also when asked for by queue")
    func mainContext() throws {
        let manager = makeManager()
        let main = try manager.mainContext
        #expect(try manager.mainContext === main)
        #expect(try manager.createContext(for: .main) === main)
        #expect(main.name == DispatchQueue.main.label)
    }

    @Test("the manager holds its main context strongly, until it closes")
    func mainContextHeldStrongly() throws {
        let manager = makeManager()
        weak var main: ManagedObjectContext?
        do {
            main = try manager.mainContext
        }
        // Nothing but the manager refers to it now.
        #expect(main != nil, "the main context was deallocated while its manager lives")
        #expect(try manager.mainContext === main)
        manager.close()
        #expect(main == nil, "something besides the manager kept the main context")
    }

    @Test("a block on the main queue may use the main context, whichever thread runs it")
    func mainQueueBlockOnAnyThread() async throws {
        let manager = makeManager()
        let main = try manager.mainContext
        let reader = try makeContext(manager, "main-reader")
        // Under `swift test` on Linux the main thread does not drain the main queue: its blocks
        // run on another thread. Confinement checks the queue, so they may use the main context.
        let outcome: Result<Bool, any Error> = await withCheckedContinuation { continuation in
            DispatchQueue.main.async {
                continuation.resume(
                    returning: Result {
                        let object = main.insert(Destination.self)
                        object.name = "from the main queue"
                        try main.save()
                        return Thread.isMainThread
                    })
            }
        }
        let ranOnMainThread = try outcome.get()
        #if os(Linux)
            #expect(!ranOnMainThread, "the block ran on the main thread: this run does not check the rule")
        #endif
        _ = ranOnMainThread
        let names = try reader.performAndWait { try reader.fetch(FetchRequest<Destination>()).map(\.name) }
        #expect(names == ["from the main queue"])
    }

    @Test("two managers each make their own context for a queue, and keep handing out that one")
    func twoManagersOneQueue() throws {
        let first = makeManager()
        let second = makeManager()
        let queue = DispatchQueue(label: "shared by two managers")
        let a = try first.createContext(for: queue)
        let b = try second.createContext(for: queue)
        #expect(a !== b)
        #expect(try first.createContext(for: queue) === a)
        #expect(try second.createContext(for: queue) === b)
        #expect(try first.createContext(for: .main) !== second.createContext(for: .main))
        #expect(try first.createContext(for: .main) === first.mainContext)
    }

    @Test(
        "a queue that managers now gone made contexts for is never taken for a new manager's coordinator or loading queue"
    )
    func queueMarkedByManagersNowGone() throws {
        // A manager marks the queues it makes contexts for. Were the mark keyed by an object of
        // the manager's, the mark would outlive the key, and a later key allocated at the same
        // address would read it: the queue would look like a coordinator's (a save from it
        // traps as a re-entrant commit) or a loading queue (a load from it throws).
        let queue = DispatchQueue(label: "marked by many managers")
        for round in 0..<200 {
            for _ in 0..<8 {
                let gone = makeManager()
                _ = try gone.createContext(for: queue)
                gone.close()
            }
            let manager = makeManager()
            let context = try manager.createContext(for: queue)
            let names = try queue.sync {
                let object = context.insert(Destination.self)
                object.name = "round \(round)"
                try context.save()
                return try context.fetch(FetchRequest<Destination>()).map(\.name)
            }
            #expect(names == ["round \(round)"])
            manager.close()
        }
    }

    @Test("loading is lazy, idempotent, and close() makes the manager load again")
    func loadAndClose() throws {
        let store = InMemoryStore()
        let manager = makeManager(storeType: .custom { _ in store })
        #expect(!manager.isStoreLoaded)
        try manager.loadPersistentStore()
        try manager.loadPersistentStore()
        #expect(manager.isStoreLoaded)
        #expect(manager.managedObjectModel === testModel)
        let context = try makeContext(manager, "before")
        try seedDestinations(context, ["kept"])
        manager.close()
        #expect(!manager.isStoreLoaded)
        let reopened = try makeContext(manager, "after")
        #expect(reopened !== context)
        let names = try reopened.performAndWait { try reopened.fetch(FetchRequest<Destination>()).map(\.name) }
        #expect(names == ["kept"])
        let next = try seedDestinations(reopened, ["new"])
        #expect(next[0].primaryKey == 2)
    }

    @Test("a closed manager's context for a queue is replaced after reopening")
    func reopenSameQueue() throws {
        let manager = makeManager()
        let queue = DispatchQueue(label: "reopen")
        let before = try manager.createContext(for: queue)
        manager.close()
        let after = try manager.createContext(for: queue)
        #expect(after !== before)
    }

    @Test("an in-memory store instance can be open in only one manager at a time")
    func inMemoryStoreLocks() throws {
        let store = InMemoryStore()
        let first = makeManager(storeType: .custom { _ in store })
        try first.loadPersistentStore()
        let second = makeManager(storeType: .custom { _ in store })
        #expect {
            try second.loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code == .locked
        }
        first.close()
        try second.loadPersistentStore()
    }

    @Test("with migration off, a store written with another model is refused, and opening never changes it")
    func incompatibleModel() throws {
        let store = InMemoryStore()
        let original = makeManager(storeType: .custom { _ in store })
        try seedDestinations(makeContext(original, "seed"), ["A"])
        original.close()
        let changed = makeManager(
            model: ManagedObjectModel([Item.self]), storeType: .custom { _ in store }, migrates: false)
        #expect {
            try changed.createContext()
        } throws: { error in
            (error as? StoreError)?.code == .incompatibleModel
        }
        #expect(!changed.isStoreLoaded)
        let again = makeManager(storeType: .custom { _ in store })
        let context = try makeContext(again, "again")
        #expect(try context.performAndWait { try context.count(for: FetchRequest<Destination>()) } == 1)
    }

    @Test("errors of the store factory are thrown from createContext")
    func factoryErrors() {
        let manager = makeManager(
            storeType: .custom { configuration in
                throw StoreError(.invalidConfiguration, "no store for \(configuration.name)")
            })
        #expect {
            try manager.createContext()
        } throws: { error in
            (error as? StoreError)?.code == .invalidConfiguration && "\(error)".contains("QueueDataTests")
        }
    }

    @Test("invalid store names are refused", arguments: ["", ".", "..", "a/b", "../escape"])
    func invalidStoreNames(_ name: String) {
        let manager = ContextManager(delegate: TestStoreDelegate(name: name))
        #expect {
            try manager.loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code == .invalidConfiguration
        }
    }

    @Test("rows a store returns are mapped onto the model by attribute name and checked")
    func loadingMapsAndChecksRows() throws {
        let entity = try EntityDescription(
            name: "Destination",
            attributes: [
                .init(name: "visited", type: .date, isOptional: true), .init(name: "rating", type: .integer64),
                .init(name: "name", type: .string), .init(name: "country", type: .string),
            ])
        let model = ManagedObjectModel([Destination.self])
        let metadata = StoreMetadata(
            storeIdentifier: UUID(), versionHash: model.versionHash, nextPrimaryKeys: ["Destination": 10])
        let good = StoreContents(
            metadata: metadata, schema: [entity],
            rows: [
                "Destination": [StoredRow(primaryKey: 4, values: [.null, .integer(3), .string("Bern"), .string("CH")])]
            ])
        let manager = makeManager(model: model, storeType: .custom { _ in CannedStore(good) })
        let context = try makeContext(manager, "mapped")
        try context.performAndWait {
            let all = try context.fetch(FetchRequest<Destination>())
            #expect(all.map { "\($0.name) \($0.country) \($0.rating)" } == ["Bern CH 3"])
            #expect(all[0].objectID.primaryKey == 4)
            context.insert(Destination.self)
            try context.save()
            #expect(try context.fetchObjectIDs(FetchRequest<Destination>()).map(\.primaryKey) == [4, 10])
        }

        var bad = good
        bad.rows = [
            "Destination": [
                StoredRow(primaryKey: 1, values: [.null, .string("three"), .string("Bern"), .string("CH")])
            ]
        ]
        let corrupt = CannedStore(bad)
        let failing = makeManager(model: model, storeType: .custom { _ in corrupt })
        #expect {
            try failing.loadPersistentStore()
        } throws: { error in
            (error as? StoreError)?.code == .corrupted && "\(error)".contains("rating")
        }
        #expect(corrupt.isClosed)
    }

    @Test("the default store directory follows the XDG base directory specification")
    func defaultDirectory() {
        #expect(
            ContextManager.defaultStoreDirectory(
                name: "Travel", environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/u"]
            ).path
                == "/data/Travel")
        #expect(
            ContextManager.defaultStoreDirectory(
                name: "Travel", environment: ["XDG_DATA_HOME": "relative", "HOME": "/home/u"]
            ).path
                == "/home/u/.local/share/Travel")
        #expect(
            ContextManager.defaultStoreDirectory(name: "Travel", environment: ["HOME": "/home/u"]).path
                == "/home/u/.local/share/Travel")
    }

    @Test("a delegate that states nothing gets every default")
    func delegateDefaults() {
        struct Bare: ContextManagerDelegate {}
        let bare = Bare()
        #expect(bare.managedObjectModel.entities.isEmpty)
        #expect(bare.persistentStoreName == ProcessInfo.processInfo.processName)
        #expect(bare.persistentStoreType.description == "journal")
        #expect(bare.shouldUseAutomaticLightweightMigration)
        #expect(bare.seedStoreURL == nil)
        #expect(bare.storeDirectory.lastPathComponent == bare.persistentStoreName)
    }

    @Test("the shared manager is one instance, from every thread, whose delegate every access sees")
    func shared() {
        let instances = Locked<Set<ObjectIdentifier>>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let instance = ObjectIdentifier(ContextManager.shared)
            instances.withLock { _ = $0.insert(instance) }
        }
        #expect(instances.withLock { $0 }.count == 1)
        // State set through one access is seen through the next: one manager, not one per access.
        let previous = ContextManager.shared.delegate
        defer { ContextManager.shared.delegate = previous }
        ContextManager.shared.delegate = TestStoreDelegate(name: "SharedManagerTest")
        #expect(ContextManager.shared.delegate?.persistentStoreName == "SharedManagerTest")
    }
}
