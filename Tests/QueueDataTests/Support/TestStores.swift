import Foundation
import QueueData

/// An in-memory store whose commits can be made to fail, to test what a failed save leaves.
///
/// `@unchecked Sendable`: the coordinator calls it on its queue; tests set `failNextCommits`
/// only while no save is running.
final class FailingStore: PersistentStore, @unchecked Sendable {
    let backing = InMemoryStore()
    var failNextCommits = 0
    private(set) var commits: [ChangeSet] = []

    func open(for model: ManagedObjectModel) throws -> StoreContents {
        try backing.open(for: model)
    }

    func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        if failNextCommits > 0 {
            failNextCommits -= 1
            throw StoreError(.io, "Injected write failure.")
        }
        try backing.commit(changes, resultingState: resultingState)
        commits.append(changes)
    }

    func close() {
        backing.close()
    }
}

/// A store that returns whatever contents a test gives it.
final class CannedStore: PersistentStore, @unchecked Sendable {
    let contents: StoreContents
    private(set) var isClosed = false

    init(_ contents: StoreContents) {
        self.contents = contents
    }

    func open(for model: ManagedObjectModel) throws -> StoreContents { contents }
    func commit(_ changes: ChangeSet, resultingState: StoreState) throws {}
    func close() { isClosed = true }
}
