import Dispatch
import Foundation
import Testing

@testable import QueueData

@Suite("performChanges")
struct PerformChangesTests {
    struct Refusal: Error {}

    @Test("saves when the block made changes, and does nothing when it made none")
    func savesChanges() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "changes")
        let saves = AtomicCounter()
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveNotification, object: context, queue: nil
        ) { _ in saves.increment() }
        defer { NotificationCenter.default.removeObserver(observer) }

        let name = try context.performChanges {
            let destination = context.insert(Destination.self)
            destination.name = "Lisbon"
            return destination.name
        }
        #expect(name == "Lisbon")
        try context.performChanges { _ = try context.count(for: FetchRequest<Destination>()) }
        #expect(saves.value == 1)
        let reader = try makeContext(manager, "reader")
        #expect(try reader.performAndWait { try reader.fetch(FetchRequest<Destination>()).map(\.name) } == ["Lisbon"])
        context.performAndWait { #expect(!context.hasChanges) }
    }

    @Test("a block that throws rolls the context back, earlier unsaved changes included, and rethrows")
    func rollsBackOnThrow() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "throwing")
        try seedDestinations(context, ["A"])
        context.performAndWait {
            let earlier = try! context.fetch(FetchRequest<Destination>())[0]
            earlier.rating = 99
        }
        #expect(throws: Refusal.self) {
            try context.performChanges {
                context.insert(Destination.self).name = "B"
                throw Refusal()
            }
        }
        let state = try context.performAndWait {
            (context.hasChanges, try context.fetch(FetchRequest<Destination>()).map { "\($0.name) \($0.rating)" })
        }
        #expect(state == (false, ["A 0"]))
    }

    @Test("a save that fails rolls back, leaving the context clean, and rethrows the save's error")
    func rollsBackOnFailedSave() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "invalid")
        #expect(throws: ValidationError.self) {
            try context.performChanges {
                context.insert(Trip.self).title = ""  // invalid: validateForSave refuses it
            }
        }
        let state = try context.performAndWait { (context.hasChanges, try context.count(for: FetchRequest<Trip>())) }
        #expect(state == (false, 0))
    }

    @Test("the async form saves, rolls back on errors, and returns the block's value")
    func asyncForm() async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "async")
        let count = try await context.performChanges {
            context.insert(Destination.self).name = "Quito"
            return 1
        }
        #expect(count == 1)
        await #expect(throws: Refusal.self) {
            try await context.performChanges {
                context.insert(Destination.self).name = "rolled back"
                throw Refusal()
            }
        }
        let names = try await context.perform { try context.fetch(FetchRequest<Destination>()).map(\.name) }
        #expect(names == ["Quito"])
    }

    @Test("a task cancelled before the block does not run it; one cancelled during it saves nothing")
    func cancellation() async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "cancel")
        let runs = AtomicCounter()

        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await context.performChanges { runs.increment() }
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(runs.value == 0)

        for _ in 0..<20 {
            let started = DispatchSemaphore(value: 0)
            let proceed = DispatchSemaphore(value: 0)
            let task = Task {
                try await context.performChanges {
                    context.insert(Destination.self).name = "cancelled"
                    started.signal()
                    proceed.wait()
                }
            }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    started.wait()
                    continuation.resume()
                }
            }
            task.cancel()
            proceed.signal()
            await #expect(throws: CancellationError.self) { try await task.value }
        }
        let count = try await context.perform { try context.count(for: FetchRequest<Destination>()) }
        #expect(count == 0)
        let pending = await context.perform { context.hasChanges }
        #expect(!pending)
    }
}
