import Dispatch
import Foundation
import Testing

@testable import QueueData

/// A journal in `directory` written with a `Thing` of one attribute, which the model of
/// ``loadingManager`` extends: loading it migrates.
private func writeOldJournal(_ directory: TemporaryDirectory) throws {
    let old = journalManager(directory, model: try thingModel([AttributeDescription(name: "name", type: .string)]))
    let context = try old.createContext()
    try context.performAndWait {
        for index in 0..<20 {
            context.insert(entityName: "Thing").setValue(.string("t\(index)"), forKey: "name")
        }
        try context.save()
    }
    old.close()
}

/// A manager whose load of the journal in `directory` migrates it, calling `onProgress` with
/// each progress report (on the loading thread).
private func loadingManager(
    _ directory: TemporaryDirectory,
    onProgress: @escaping @Sendable (MigrationProgress) -> Void
) throws -> ContextManager {
    journalManager(
        directory,
        model: try thingModel([
            AttributeDescription(name: "name", type: .string),
            AttributeDescription(name: "count", type: .integer64, defaultValue: .integer(7)),
        ]), onProgress: onProgress)
}

/// Runs `body` on another queue; `nil` if it does not return within 30 s (it waits on a load).
private func returnsWhileLoading<Value: Sendable>(_ body: @escaping @Sendable () -> Value) -> Value? {
    let result = Recorder<Value>()
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        result.record(body())
        done.signal()
    }
    guard done.wait(timeout: .now() + 30) == .success else { return nil }
    return result.values.first
}

/// A load of the journal in `directory` that migrates it and stops at its first progress
/// report until ``release()``: what the manager does meanwhile can be watched.
private struct BlockedLoad {
    let manager: ContextManager
    private let started = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)
    private let loading = DispatchGroup()
    private let outcome = Recorder<Result<Void, StoreError>>()

    /// Starts the load on another thread and returns once it reported progress (`nil` if it
    /// never did).
    init?(_ directory: TemporaryDirectory) throws {
        try writeOldJournal(directory)
        let first = Recorder<Bool>()
        let (started, gate) = (started, gate)
        manager = try loadingManager(directory) { _ in
            if first.count == 0 {
                first.record(true)
                started.signal()
                _ = gate.wait(timeout: .now() + 60)
            }
        }
        let (manager, outcome) = (manager, outcome)
        DispatchQueue.global().async(group: loading) {
            outcome.record(Result { try manager.loadPersistentStore() }.mapError { $0 as! StoreError })
        }
        guard started.wait(timeout: .now() + 30) == .success else { return nil }
    }

    /// Lets the load go on, and returns how it ended (`nil` if it did not within 60 s).
    func release() -> Result<Void, StoreError>? {
        gate.signal()
        guard loading.wait(timeout: .now() + 60) == .success else { return nil }
        return outcome.values.first
    }
}

@Suite("Loading the store off the manager's registry queue")
struct LoadingTests {
    @Test("while a store migrates, the manager's other calls return at once; the load finishes after")
    func otherCallsDuringALongMigration() throws {
        let directory = TemporaryDirectory("loading-long")
        let load = try #require(try BlockedLoad(directory), "the migration reported no progress")
        let manager = load.manager
        defer { manager.close() }
        #expect(returnsWhileLoading { manager.isStoreLoaded } == false)
        #expect(returnsWhileLoading { manager.delegate != nil } == true)
        #expect(returnsWhileLoading { manager.managedObjectModel == nil } == true)
        let outcome = try #require(load.release(), "the load did not finish")
        #expect((try? outcome.get()) != nil, "\(outcome)")
        #expect(manager.isStoreLoaded)
        let context = try manager.createContext()
        #expect(
            try context.performAndWait { try context.count(for: FetchRequest<ManagedObject>(entityName: "Thing")) }
                == 20)
    }

    @Test("contexts created from many threads at once share one load of the store", arguments: 0..<10)
    func concurrentFirstContexts(round: Int) throws {
        let directory = TemporaryDirectory("loading-concurrent")
        let manager = journalManager(directory)
        defer { manager.close() }
        let contexts = Recorder<ManagedObjectContext>()
        let failures = Recorder<String>()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                contexts.record(try manager.createContext())
            } catch {
                failures.record("\(error)")
            }
        }
        #expect(failures.values.isEmpty, "\(failures.values)")
        let all = contexts.values
        try #require(all.count == 8)
        try all[0].performAndWait {
            all[0].insert(Destination.self).name = "round \(round)"
            try all[0].save()
        }
        for context in all.dropFirst() {
            let names = try context.performAndWait { try context.fetch(FetchRequest<Destination>()).map(\.name) }
            #expect(names == ["round \(round)"], "one store: every context sees the save")
        }
    }

    @Test("closing while the store loads abandons the load: it throws, and the store loads again after")
    func closeDuringLoad() throws {
        let directory = TemporaryDirectory("loading-close")
        let load = try #require(try BlockedLoad(directory), "the migration reported no progress")
        let manager = load.manager
        defer { manager.close() }
        #expect(returnsWhileLoading { manager.close() } != nil, "close() does not wait for the load")
        guard case .failure(let error) = try #require(load.release(), "the load did not finish") else {
            Issue.record("a load the manager's close() overtook installed its store")
            return
        }
        #expect(error.code == .closed, "\(error)")
        #expect(!manager.isStoreLoaded)
        // The abandoned load released the store (its lock): it loads again, migrated.
        let context = try manager.createContext()
        #expect(
            try context.performAndWait { try context.count(for: FetchRequest<ManagedObject>(entityName: "Thing")) }
                == 20)
    }

    @Test("asking the manager for a context from inside its own load traps with a message")
    func contextFromInsideTheLoadTraps() async {
        // Made here, so that it is removed after the child traps.
        let owner = TemporaryDirectory("loading-reentrant")
        let path = owner.path
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [path = path as String] in
            let directory = TemporaryDirectory(existingAt: path)
            try writeOldJournal(directory)
            let box = Recorder<ContextManager>()
            let manager = try loadingManager(directory) { _ in
                _ = try? box.values.first?.createContext()
            }
            box.record(manager)
            try manager.loadPersistentStore()
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("while it loads its store"), "\(message)")
    }
}

/// A store that runs `hook` inside each commit (on the coordinator's queue), then commits to
/// an in-memory store: how a store that calls back into QueueData behaves.
private final class CallingBackStore: PersistentStore, @unchecked Sendable {
    let inner = InMemoryStore()
    let hook: @Sendable () -> Void

    init(hook: @escaping @Sendable () -> Void) {
        self.hook = hook
    }

    func open(for model: ManagedObjectModel) throws -> StoreContents { try inner.open(for: model) }

    func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        hook()
        try inner.commit(changes, resultingState: resultingState)
    }

    func close() { inner.close() }
}

@Suite("The store coordinator's confinement")
struct CoordinatorConfinementTests {
    @Test("a store that calls back into its manager during a commit traps with a message instead of deadlocking")
    func reentrantCallTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let box = Recorder<ContextManager>()
            let store = CallingBackStore { try? box.values.first?.compactPersistentStore() }
            let manager = ContextManager(delegate: TestStoreDelegate(storeType: .custom { _ in store }))
            box.record(manager)
            let context = try manager.createContext()
            try context.performAndWait {
                context.insert(Destination.self).name = "x"
                try context.save()
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("entered from its own queue"), "\(message)")
    }

    @Test("a store that reads through a context during a commit traps instead of deadlocking")
    func nestedReentrantCallTraps() async {
        // libdispatch's own assertion: the process ends (the message is libdispatch's).
        await #expect(processExitsWith: .failure) {
            let box = Recorder<ManagedObjectContext>()
            let store = CallingBackStore {
                guard let reader = box.values.first else { return }
                _ = reader.performAndWait { try? reader.count(for: FetchRequest<Destination>()) }
            }
            let manager = ContextManager(delegate: TestStoreDelegate(storeType: .custom { _ in store }))
            box.record(try manager.createContext())
            let context = try manager.createContext()
            try context.performAndWait {
                context.insert(Destination.self).name = "x"
                try context.save()
            }
        }
    }
}
