import Foundation
import QueueData

/// A value shared between threads, behind an `NSLock` (a pthread mutex, which the thread
/// sanitizer understands; it reports false races inside `Synchronization.Mutex` on Linux).
/// Tests may use locks; `Sources/` may not.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }
}

/// Collects values reported from any thread, such as migration progress.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Locked<[Value]>([])

    func record(_ value: Value) {
        storage.withLock { $0.append(value) }
    }

    var values: [Value] { storage.withLock { $0 } }

    var count: Int { storage.withLock { $0.count } }

    func removeAll() {
        storage.withLock { $0.removeAll() }
    }
}

/// Records every `objectsDidChangeNotification` a context posts, in order, as the sets of IDs
/// it reports; observes until released.
final class ObjectsDidChangeRecorder: Sendable {
    /// One notification's payload, as sets.
    struct Change: Sendable, Equatable, CustomStringConvertible {
        var inserted: Set<ObjectID> = []
        var updated: Set<ObjectID> = []
        var deleted: Set<ObjectID> = []
        var refreshed: Set<ObjectID> = []
        var invalidatedAll = false
        /// The permanent IDs a save gave, by temporary ID.
        var permanent: [ObjectID: ObjectID] = [:]

        var description: String {
            "inserted \(inserted.count), updated \(updated.count), deleted \(deleted.count), "
                + "refreshed \(refreshed.count)\(invalidatedAll ? ", all invalidated" : "")"
                + (permanent.isEmpty ? "" : ", \(permanent.count) given permanent IDs")
        }
    }

    /// Held so that no other context can take its address while this observer filters on it
    /// (NotificationCenter compares the object by address).
    private let context: ManagedObjectContext
    private let recorder = Recorder<Change>()
    /// Whether each notification was posted on the context's queue.
    private let onQueue = Recorder<Bool>()
    private let observer: Locked<(any NSObjectProtocol)?> = Locked(nil)
    /// The key of this recorder's mark on the context's queue.
    private let key: DispatchSpecificKey<Bool>

    init(_ context: ManagedObjectContext) {
        self.context = context
        let recorder = self.recorder
        let onQueue = self.onQueue
        let key = Self.marker(for: context.queue)
        self.key = key
        let token = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil
        ) { notification in
            guard let changes = ObjectsDidChange(notification) else { return }
            onQueue.record(DispatchQueue.getSpecific(key: key) != nil)
            recorder.record(
                Change(
                    inserted: changes.insertedObjectIDs, updated: changes.updatedObjectIDs,
                    deleted: changes.deletedObjectIDs, refreshed: changes.refreshedObjectIDs,
                    invalidatedAll: changes.invalidatedAllObjects, permanent: changes.permanentObjectIDs))
        }
        observer.withLock { $0 = token }
    }

    deinit {
        observer.withLock { $0 }.map(NotificationCenter.default.removeObserver)
        // libdispatch keys specifics by the key's address: the mark goes before the key does.
        context.queue.setSpecific(key: key, value: nil)
    }

    /// The notifications so far, oldest first.
    var changes: [Change] { recorder.values }

    /// Whether every notification so far was posted on the context's queue.
    var allOnQueue: Bool { onQueue.values.allSatisfy { $0 } }

    /// Forgets the notifications so far.
    func removeAll() -> [Change] {
        let all = recorder.values
        recorder.removeAll()
        return all
    }

    /// A key set on `queue` (a new one for each recorder: a queue at the address of a released
    /// one is another queue), so that an observer can tell it runs there.
    private static func marker(for queue: DispatchQueue) -> DispatchSpecificKey<Bool> {
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        return key
    }
}
