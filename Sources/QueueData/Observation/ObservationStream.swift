import Dispatch

/// An `AsyncSequence` of changes that any task can iterate: a manager's saves
/// (``ContextManager/changes``), one object's changes (``ContextManager/changes(of:)``), a
/// context's ``ManagedObjectContext/objectsDidChange``, a controller's
/// ``FetchedResultsController/snapshots``.
///
/// ```swift
/// for await changes in manager.changes {
///     print("\(changes.insertedObjectIDs.count) objects inserted")
/// }
/// ```
///
/// Observation starts when the sequence is made and lasts until the iterating task is
/// cancelled, the loop stops (the iterator is released), or the source goes away (a context or
/// a controller released; a manager's streams follow its contexts, which may outlive it, so
/// releasing the manager does not end them); then its observers are released, and nothing is
/// delivered after that.
///
/// **Slow consumers.** Nothing is buffered without bound: while the consumer is busy, the values
/// that arrive are combined into one, delivered at its next `next()`: the latest snapshot, or
/// the union of the changes (see each source). A consumer always ends up with the current state,
/// in fewer, larger steps.
public struct ObservationStream<Element: Sendable>: AsyncSequence, Sendable {
    let channel: ObservationChannel<Element>

    /// Creates the iterator; iterate a stream once.
    public func makeAsyncIterator() -> Iterator {
        Iterator(channel: channel)
    }

    /// Waits for the next value (`nil` once the observation ended).
    public final class Iterator: AsyncIteratorProtocol {
        let channel: ObservationChannel<Element>

        init(channel: ObservationChannel<Element>) {
            self.channel = channel
        }

        deinit {
            channel.finish()
        }

        /// The next value, combining every value that arrived since the last one; `nil` when
        /// the observation ended (cancelled, or its source gone).
        public func next() async -> Element? {
            await channel.next()
        }
    }
}

/// The state of one observation: at most one pending value (combined) and one waiting
/// consumer.
///
/// `@unchecked Sendable`: every mutable property is touched only on `queue`; the rest is
/// immutable.
final class ObservationChannel<Element: Sendable>: @unchecked Sendable {
    private let queue = DispatchQueue(label: "QueueData.ObservationStream")
    private let combine: @Sendable (Element, Element) -> Element
    // Confined to `queue`:
    private var pending: Element?
    private var waiter: CheckedContinuation<Element?, Never>?
    private var isFinished = false
    private var onTermination: (@Sendable () -> Void)?

    /// - Parameter combine: Combines a pending value with one arriving after it.
    init(combine: @escaping @Sendable (Element, Element) -> Element) {
        self.combine = combine
    }

    /// A stream made and dropped without being iterated still releases its observers. (No
    /// other reference exists here: reading the queue-confined state is safe.)
    deinit {
        if !isFinished {
            onTermination?()
        }
    }

    /// Sets what ends the observation at its source (removing observers); runs at once if the
    /// channel already finished.
    func onTermination(_ body: @escaping @Sendable () -> Void) {
        queue.async {
            if self.isFinished {
                body()
            } else {
                self.onTermination = body
            }
        }
    }

    /// Delivers `element` to the waiting consumer, or combines it with the pending value.
    func send(_ element: Element) {
        queue.async {
            guard !self.isFinished else { return }
            if let waiter = self.waiter {
                self.waiter = nil
                waiter.resume(returning: element)
            } else {
                self.pending = self.pending.map { self.combine($0, element) } ?? element
            }
        }
    }

    /// Ends the observation: the source's observers are released, and the consumer gets `nil`
    /// — after the value still pending when `deliveringPending` (the source ended with a last
    /// value), at once otherwise (cancelled: nothing is delivered after).
    func finish(deliveringPending: Bool = false) {
        queue.async {
            guard !self.isFinished else { return }
            self.isFinished = true
            if !deliveringPending {
                self.pending = nil
            }
            self.waiter?.resume(returning: nil)
            self.waiter = nil
            let termination = self.onTermination
            self.onTermination = nil
            termination?()
        }
    }

    func next() async -> Element? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                queue.async {
                    if let pending = self.pending {
                        self.pending = nil
                        continuation.resume(returning: pending)
                    } else if self.isFinished {
                        continuation.resume(returning: nil)
                    } else {
                        self.waiter = continuation
                    }
                }
            }
        } onCancel: {
            finish()
        }
    }
}

extension ManagedObjectContext {
    /// The context's ``objectsDidChangeNotification``s as an `AsyncSequence` any task can
    /// iterate: its own changes (at ``processPendingChanges()``), merges, refreshes, rollbacks
    /// and resets. A slow consumer gets several changes combined (the union of their IDs).
    /// Values are `Sendable` IDs: to read the objects, enter the context with `perform`. The
    /// stream ends when the context is released, after the changes it had not delivered yet.
    ///
    /// ```swift
    /// for await changes in context.objectsDidChange {
    ///     let names = try await context.perform {
    ///         changes.updatedObjectIDs.compactMap { (context.object(with: $0) as? Destination)?.name }
    ///     }
    /// }
    /// ```
    ///
    /// Callable from any thread.
    public var objectsDidChange: ObservationStream<ObjectsDidChange> {
        let channel = ObservationChannel<ObjectsDidChange> { $0.combined(with: $1) }
        let observer = NotificationCenter.default.addObserver(
            forName: Self.objectsDidChangeNotification, object: self, queue: nil
        ) { [weak channel] notification in
            guard let channel, let changes = ObjectsDidChange(notification) else { return }
            channel.send(changes)
        }
        let token = UncheckedSendableBox(observer)
        channel.onTermination { NotificationCenter.default.removeObserver(token.value) }
        observations.add(channel)
        return ObservationStream(channel: channel)
    }
}

/// A context's ``ManagedObjectContext/objectsDidChange`` observations, ended when the context
/// goes away: its `deinit` releases this, the last reference (a block still pending on the
/// queue holds one until it ran).
///
/// `@unchecked Sendable`: `channels` is touched only on the shared queue, and in `deinit`, when no other
/// reference exists.
final class ContextObservations: @unchecked Sendable {
    /// One queue for every context's list (streams are made rarely): no queue per context.
    private static let queue = DispatchQueue(label: "QueueData.ContextObservations")
    private var channels: [WeakChannel<ObjectsDidChange>] = []

    /// Ends `channel` (after what it still holds) when this goes away.
    func add(_ channel: ObservationChannel<ObjectsDidChange>) {
        Self.queue.async {
            self.channels.removeAll { $0.channel == nil }
            self.channels.append(WeakChannel(channel))
        }
    }

    deinit {
        for box in channels {
            box.channel?.finish(deliveringPending: true)
        }
    }
}

extension ObjectsDidChange {
    /// These changes and then `later`, as one (the union of each list; all objects invalidated if
    /// either says so).
    func combined(with later: ObjectsDidChange) -> ObjectsDidChange {
        ObjectsDidChange(
            inserted: inserted + later.inserted, updated: updated + later.updated, deleted: deleted + later.deleted,
            refreshed: refreshed + later.refreshed,
            invalidatedAllObjects: invalidatedAllObjects || later.invalidatedAllObjects,
            reidentified: reidentified + later.reidentified)
    }
}
