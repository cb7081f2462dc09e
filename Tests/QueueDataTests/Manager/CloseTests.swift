import Dispatch
import Foundation
import Testing

@testable import QueueData

/// Runs a hook when an object is constructed (fetched or inserted), so that a test can close
/// the manager in the middle of QueueData's own work on the context's queue, deterministically.
final class CloseProbe: ManagedObject {
    @Attribute var index: Int = 0

    /// Called on the context's queue by every construction while set.
    nonisolated(unsafe) static var onConstruction: (() -> Void)?

    required init(_ construction: ObjectConstruction) {
        super.init(construction)
        Self.onConstruction?()
    }
}

let closeProbeModel = ManagedObjectModel([CloseProbe.self])

@Suite("Closing a manager with work in flight", .serialized)
struct CloseTests {
    @Test("an asynchronous fetch in flight when the manager closes ends with StoreError .closed, not a trap")
    func asynchronousFetchInFlight() async throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: closeProbeModel))
        let seed = try manager.createContext()
        let count = ManagedObjectContext.asynchronousRegistrationSlice * 2 + 10
        try seed.performAndWait {
            for index in 0..<count {
                seed.insert(CloseProbe.self).index = index
            }
            try seed.save()
        }
        let context = try manager.createContext()
        // The first object the fetch registers (in its first slice, on the context's queue)
        // closes the manager; the fetch has two more slices to go.
        let closed = Locked(false)
        CloseProbe.onConstruction = {
            guard !closed.withLock({ $0 }) else { return }
            closed.withLock { $0 = true }
            manager.close()
        }
        defer { CloseProbe.onConstruction = nil }
        await #expect {
            _ = try await context.fetch(FetchRequest<CloseProbe>()) { objects in objects.count }
        } throws: { error in
            (error as? StoreError)?.code == .closed
        }
        #expect(closed.withLock { $0 })
        #expect(!manager.isStoreLoaded)
    }

    @Test("a child context's asynchronous fetch in flight when the manager closes ends without a trap")
    func childAsynchronousFetchInFlight() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: closeProbeModel))
        let parent = try manager.createContext()
        try parent.performAndWait {
            for index in 0..<3 {
                parent.insert(CloseProbe.self).index = index
            }
            try parent.save()
        }
        let child = parent.performAndWait { parent.newChildContext() }
        // The parent's queue is held: the fetch's private context waits there to read through
        // the parent, and goes on only after the close.
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        parent.queue.async {
            entered.signal()
            gate.wait()
        }
        entered.wait()
        let delivered = Locked(false)
        child.fetch(FetchRequest<CloseProbe>()) { _ in delivered.withLock { $0 = true } }
        manager.close()
        gate.signal()
        // The fetch ends (its private context's read through the closed parent throws .closed),
        // and its completion is skipped, as documented after a close.
        #expect(child.asynchronousFetches.wait(timeout: .now() + 60) == .success)
        #expect(!delivered.withLock { $0 })
        #expect(!manager.isStoreLoaded)
    }

    @Test("closeGracefully runs every block already queued on each context, then closes")
    func gracefulClose() async throws {
        let store = InMemoryStore()
        let delegate = TestStoreDelegate(model: closeProbeModel, storeType: .custom { _ in store })
        let manager = ContextManager(delegate: delegate)
        let contexts = try (0..<4).map { _ in try manager.createContext() }
        let gate = DispatchSemaphore(value: 0)
        let ran = Locked(0)
        // Hold the first context's queue so that its blocks are still queued when closing starts.
        contexts[0].queue.async { gate.wait() }
        for (offset, context) in contexts.enumerated() {
            for round in 0..<5 {
                context.enqueue {
                    let probe = context.insert(CloseProbe.self)
                    probe.index = offset * 100 + round
                    try? context.save()
                    ran.withLock { $0 += 1 }
                }
            }
        }
        async let closing: Void = manager.closeGracefully()
        gate.signal()
        await closing
        #expect(ran.withLock { $0 } == 20)
        #expect(!manager.isStoreLoaded)
        let reopened = ContextManager(delegate: delegate)
        let reader = try reopened.createContext()
        let stored = try reader.performAndWait { try reader.count(for: FetchRequest<CloseProbe>()) }
        #expect(stored == 20)
        reopened.close()
    }

    @Test("closeGracefully runs a block already queued on a child context before closing")
    func gracefulCloseWaitsForChildContexts() async throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "graceful-parent")
        let child = parent.performAndWait { parent.newChildContext() }
        let gate = DispatchSemaphore(value: 0)
        child.queue.async { gate.wait() }
        let ran = Locked(false)
        child.enqueue {
            child.insert(Destination.self).name = "child"
            ran.withLock { $0 = true }
        }
        // The child's queue opens once closing returned, or after a bound (closing waits for it).
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = closed.wait(timeout: .now() + 1)
            gate.signal()
        }
        await manager.closeGracefully()
        let ranBeforeClose = ran.withLock { $0 }
        closed.signal()
        #expect(ranBeforeClose)
    }

    @Test("close() invalidates child contexts (and theirs) with their parents, naming the close")
    func closeInvalidatesChildContexts() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "close-parent")
        let child = parent.performAndWait { parent.newChildContext() }
        let grandchild = child.performAndWait { child.newChildContext() }
        #expect(child.confinement.isValid && grandchild.confinement.isValid)
        manager.close()
        #expect(!child.confinement.isValid)
        #expect(!grandchild.confinement.isValid)
        #expect(grandchild.confinement.invalidation == .managerClosed)
    }

    @Test("closeGracefully waits for an asynchronous fetch in flight: its completion runs, with the objects")
    func gracefulCloseWaitsForAsynchronousFetch() async throws {
        let manager = makeManager()
        let context = try manager.createContext()
        try seedDestinations(context, ["a", "b", "c"])
        // The coordinator is held, so that the fetch's match (on a private queue) waits there.
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let coordinator = context.coordinator
        DispatchQueue.global().async {
            coordinator.sync {
                entered.signal()
                gate.wait()
            }
        }
        entered.wait()
        let delivered = DispatchSemaphore(value: 0)
        let count = Locked(-1)
        context.fetch(FetchRequest<Destination>()) { result in
            count.withLock { $0 = (try? result.get().count) ?? -2 }
            delivered.signal()
        }
        // The coordinator opens after a bound: by then closing has closed the contexts (had it not
        // waited for the fetch) or waits for the fetch.
        DispatchQueue.global().async {
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 2)
            gate.signal()
        }
        await manager.closeGracefully()
        #expect(delivered.wait(timeout: .now()) == .success)
        #expect(count.withLock { $0 } == 3)
    }

    @Test("closeGracefully with nothing queued closes at once; the store can be loaded again")
    func gracefulCloseIdle() async throws {
        let store = InMemoryStore()
        let manager = ContextManager(
            delegate: TestStoreDelegate(model: closeProbeModel, storeType: .custom { _ in store }))
        let context = try manager.createContext()
        try context.performAndWait {
            context.insert(CloseProbe.self)
            try context.save()
        }
        await manager.closeGracefully()
        #expect(!manager.isStoreLoaded)
        let again = try manager.createContext()
        #expect(try again.performAndWait { try again.count(for: FetchRequest<CloseProbe>()) } == 1)
        manager.close()
    }

    @Test("close() from inside a context's block: an object used after it in the same block traps")
    func closeInsideABlockTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: closeProbeModel))
            let context = try manager.createContext()
            context.performAndWait {
                let probe = context.insert(CloseProbe.self)
                probe.index = 1
                manager.close()
                probe.index = 2
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("after its ContextManager was closed"))
    }

    @Test("close() with a block of the user's still queued: the block traps when it uses its context")
    func closeTrapsQueuedBlocks() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: closeProbeModel))
            let context = try manager.createContext()
            let gate = DispatchSemaphore(value: 0)
            let done = DispatchSemaphore(value: 0)
            context.queue.async { gate.wait() }
            context.enqueue {
                _ = context.hasChanges
                done.signal()
            }
            manager.close()
            gate.signal()
            _ = done.wait(timeout: .now() + 10)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("after its ContextManager was closed"))
    }
}

/// Notes whether each call runs on its coordinator's queue.
final class QueueCheckingStore: PersistentStore, @unchecked Sendable {
    let backing = InMemoryStore()
    /// Set once the store is open; unowned(unsafe): read while the coordinator deinitializes.
    unowned(unsafe) var coordinator: StoreCoordinator?
    private(set) var commitsOnQueue: [Bool] = []
    private(set) var closesOnQueue: [Bool] = []
    /// Signalled by each close (after noting it).
    let closed = DispatchSemaphore(value: 0)

    func open(for model: ManagedObjectModel) throws -> StoreContents {
        try backing.open(for: model)
    }

    func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        commitsOnQueue.append(coordinator?.isOnQueue ?? false)
        try backing.commit(changes, resultingState: resultingState)
    }

    func close() {
        closesOnQueue.append(coordinator?.isOnQueue ?? false)
        backing.close()
        closed.signal()
    }
}

@Suite("Letting a store go without close()")
struct CoordinatorReleaseTests {
    @Test("a store whose manager and contexts are let go without close() is closed once, on its coordinator's queue")
    func closedOnTheCoordinatorsQueue() throws {
        let store = QueueCheckingStore()
        do {
            let manager = makeManager(storeType: .custom { _ in store })
            let context = try makeContext(manager, "released")
            store.coordinator = context.coordinator
            try context.performAndWait {
                context.insert(Destination.self).name = "A"
                try context.save()
            }
        }
        #expect(store.commitsOnQueue == [true])
        // The last reference may go on another thread a moment later: a block the released
        // context queued for the manager's registry holds the manager while it runs, and then
        // lets it (and its coordinator) go there.
        #expect(store.closed.wait(timeout: .now() + 30) == .success, "the store was never closed")
        #expect(store.closesOnQueue == [true])
    }

    @Test("a journal store whose manager and contexts are let go without close() opens again at once")
    func reopensAtOnce() throws {
        let directory = TemporaryDirectory("release-reopen")
        for round in 0..<150 {
            do {
                let manager = journalManager(directory)
                let context = try makeContext(manager, "released-\(round)")
                let others = try (0..<6).map { try makeContext(manager, "other-\(round)-\($0)") }
                try context.performAndWait {
                    context.insert(Destination.self).name = "\(round)"
                    try context.save()
                }
                // The other contexts merge the save on their queues; all of them then go.
                for other in others {
                    flush(other)
                }
            }
            // Nothing of the old manager may hold the store's lock any more.
            let manager = journalManager(directory)
            let context = try makeContext(manager, "reopened-\(round)")
            let count = try context.performAndWait { try context.count(for: FetchRequest<Destination>()) }
            #expect(count == round + 1)
            manager.close()
        }
    }
}
