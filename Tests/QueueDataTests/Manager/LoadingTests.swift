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

@Suite("Loading the store off the manager's registry queue")
struct LoadingTests {
    @Test("while a store migrates, the manager's other calls return at once; the load finishes after")
    func otherCallsDuringALongMigration() throws {
        let directory = TemporaryDirectory("loading-long")
        try writeOldJournal(directory)
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let first = Recorder<Bool>()
        let manager = try loadingManager(directory) { _ in
            if first.count == 0 {
                first.record(true)
                started.signal()
                _ = release.wait(timeout: .now() + 60)
            }
        }
        defer { manager.close() }
        let loaded = Recorder<Result<Void, StoreError>>()
        let loading = DispatchGroup()
        DispatchQueue.global().async(group: loading) {
            loaded.record(Result { try manager.loadPersistentStore() }.mapError { $0 as! StoreError })
        }
        try #require(started.wait(timeout: .now() + 30) == .success, "the migration reported no progress")
        #expect(returnsWhileLoading { manager.isStoreLoaded } == false)
        #expect(returnsWhileLoading { manager.delegate != nil } == true)
        #expect(returnsWhileLoading { manager.managedObjectModel == nil } == true)
        release.signal()
        try #require(loading.wait(timeout: .now() + 60) == .success)
        #expect((try? loaded.values.first?.get()) != nil, "\(loaded.values)")
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
        try writeOldJournal(directory)
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let first = Recorder<Bool>()
        let manager = try loadingManager(directory) { _ in
            if first.count == 0 {
                first.record(true)
                started.signal()
                _ = release.wait(timeout: .now() + 60)
            }
        }
        defer { manager.close() }
        let loaded = Recorder<Result<Void, StoreError>>()
        let loading = DispatchGroup()
        DispatchQueue.global().async(group: loading) {
            loaded.record(Result { try manager.loadPersistentStore() }.mapError { $0 as! StoreError })
        }
        try #require(started.wait(timeout: .now() + 30) == .success)
        #expect(returnsWhileLoading { manager.close() } != nil, "close() does not wait for the load")
        release.signal()
        try #require(loading.wait(timeout: .now() + 60) == .success)
        guard case .failure(let error) = try #require(loaded.values.first) else {
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
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let directory = TemporaryDirectory("loading-reentrant")
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
