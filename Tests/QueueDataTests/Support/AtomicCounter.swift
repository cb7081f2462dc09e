import Synchronization

/// A counter safe to bump from any thread.
final class AtomicCounter: Sendable {
    private let storage = Atomic<Int>(0)

    func increment() {
        storage.add(1, ordering: .relaxed)
    }

    var value: Int { storage.load(ordering: .relaxed) }
}
