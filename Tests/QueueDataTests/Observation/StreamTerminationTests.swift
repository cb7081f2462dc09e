import Dispatch
import Foundation
import Testing

@testable import QueueData

/// Runs `body` with a time limit: a stream that never ends fails the test instead of hanging it.
private func ending<Value: Sendable>(
    within seconds: Double,
    _ body: @escaping @Sendable () async -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw CancellationError()
        }
        return value
    }
}

@Suite("Change streams end with their source")
struct StreamTerminationTests {
    @Test("a context's objectsDidChange ends when the context is released, after what it had seen")
    func contextStreamEndsWithTheContext() async throws {
        let manager = makeManager()
        var context: ManagedObjectContext? = try makeContext(manager, "released")
        let stream = context!.objectsDidChange
        let inserted = context!.performAndWait { [context] in context!.insert(Destination.self).objectID }
        weak let released = context
        context = nil
        #expect(released == nil)
        let seen = try await ending(within: 10) {
            var seen = Set<ObjectID>()
            for await changes in stream {
                seen.formUnion(changes.insertedObjectIDs)
            }
            return seen
        }
        #expect(seen.isSubset(of: [inserted]))
    }
}
