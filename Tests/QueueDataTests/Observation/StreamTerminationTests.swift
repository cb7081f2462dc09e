import Dispatch
import Foundation
import Testing

@testable import QueueData

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
        let seen = try await within {
            var seen = Set<ObjectID>()
            for await changes in stream {
                seen.formUnion(changes.insertedObjectIDs)
            }
            return seen
        }
        #expect(seen.isSubset(of: [inserted]))
    }
}
