// Public: the fast path of the check inlines into every attribute accessor, and reads the
// thread-local token there.
public import CQueueDataShims
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The queue a context and its objects are confined to, and the check that enforces it.
///
/// Every context owns one; each of its objects holds it strongly, so the check never needs
/// the context itself. The check is a thread-local comparison, inlined, when the code runs
/// inside one of the context's own blocks (`perform`, `performAndWait`, a merge), and otherwise
/// (a block the caller submitted to the queue directly) a comparison of libdispatch's current
/// queue with the context's, then a `DispatchQueue.getSpecific` lookup. It checks the queue, never the thread: a block on `DispatchQueue.main` may run
/// on a thread that is not the main thread.
///
/// An invalidated confinement (its context deallocated, its manager closed) is never marked
/// current: a block that starts after the invalidation runs unmarked, so every check in it takes
/// the slow path, which traps naming the reason; an invalidation from inside one of its blocks
/// clears the mark on that thread at once. (A block already running on another thread when the
/// manager closes finishes what it does; the next block traps.)
///
/// `@unchecked Sendable`: every stored property is immutable except `state`, which is
/// atomic, and `context`, a weak reference written once by the context's initializer
/// before the confinement is shared with any other thread.
@usableFromInline
final class QueueConfinement: @unchecked Sendable {
    /// Why a confinement no longer admits anyone.
    enum State: UInt8 {
        case valid = 0
        case contextDeallocated = 1
        case managerClosed = 2
    }

    /// The queue everything confined here must run on.
    let queue: DispatchQueue
    /// The name used in trap messages.
    let contextName: String
    /// Marks the queue as ours: `getSpecific(key:)` returns `self` on it. The mark holds the
    /// confinement (and so this key) until ``invalidate(_:)`` clears it, so it never outlives
    /// the key: libdispatch keys specifics by the key object's address.
    let key = DispatchSpecificKey<QueueConfinement>()
    /// A `State` raw value; atomic so that invalidation from any thread is seen everywhere.
    @usableFromInline
    let state = Atomic<UInt8>(State.valid.rawValue)
    /// The context, for the slow paths that need it (registering a change).
    weak var context: ManagedObjectContext?
    /// The thread inside one of this confinement's blocks (0 when none): two threads inside
    /// at once means the queue is not serial.
    private let occupant = Atomic<UInt>(0)
    /// The address of `queue`'s libdispatch queue, as `qd_current_dispatch_queue()` returns it
    /// in the queue's own blocks (0 until a first block learns it): a block running on the
    /// queue without being one of the context's (`queue.sync { … }`) is confirmed by comparing
    /// it, before asking `DispatchQueue.getSpecific`. The confinement holds the queue, so the
    /// address is never another queue's.
    private let queueAddress = QueueAddress()

    /// Where the block that learns the queue's address writes it: an object of its own, so
    /// that the block holds neither the confinement (which would live until the queue runs
    /// it) nor a weak reference to it (which would move the reference counts of the
    /// confinement, retained by every object, to a side table, making each retain a slow one).
    private final class QueueAddress: Sendable {
        let value = Atomic<UInt>(0)
    }

    /// The parent context's confinement, for a child context: the child is invalid once its
    /// parent is (its manager closed), as every context of the manager is.
    let parent: QueueConfinement?

    init(queue: DispatchQueue, contextName: String, parent: QueueConfinement? = nil) {
        self.queue = queue
        self.contextName = contextName
        self.parent = parent
        queue.setSpecific(key: key, value: self)
        // Learned in a block submitted to the queue itself: inside a block of a queue that
        // targets this one (which `getSpecific` also admits) the current queue is that other one.
        let address = queueAddress
        queue.async {
            address.value.store(UInt(bitPattern: qd_current_dispatch_queue()), ordering: .relaxed)
        }
    }

    /// The thread-local token that marks this confinement's blocks.
    @inlinable
    var token: UnsafeRawPointer {
        UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
    }

    /// Stops admitting anyone: later checks trap with a message naming `reason`.
    func invalidate(_ reason: State) {
        state.store(reason.rawValue, ordering: .relaxed)
        queue.setSpecific(key: key, value: nil)
        if qd_confinement_current() == token {
            // Invalidated from inside one of its own blocks: the checks after this in the block
            // must not take the fast path.
            qd_confinement_set_current(nil)
        }
    }

    /// Whether the confinement is valid: neither it nor its parent (for a child context's) was
    /// invalidated.
    ///
    /// A loop rather than a recursion, so that the attribute getters' slow path inlines it.
    var isValid: Bool {
        guard state.load(ordering: .relaxed) == State.valid.rawValue else { return false }
        guard let parent else { return true }
        return parent.isValidUp
    }

    /// ``isValid`` for a child context's parent and its ancestors: out of line, off the path
    /// of contexts without a parent.
    @inline(never)
    private var isValidUp: Bool {
        var confinement = self
        while true {
            guard confinement.state.load(ordering: .relaxed) == State.valid.rawValue else { return false }
            guard let parent = confinement.parent else { return true }
            confinement = parent
        }
    }

    /// Whether this confinement itself was not invalidated (whatever its parent's state).
    var isOwnStateValid: Bool {
        state.load(ordering: .relaxed) == State.valid.rawValue
    }

    /// Why the confinement is invalid: its own reason, or its parent's.
    var invalidation: State {
        let own = State(rawValue: state.load(ordering: .relaxed)) ?? .valid
        guard own == .valid, let parent else { return own }
        return parent.invalidation
    }

    /// Checks that the caller runs on the queue and that the confinement is still valid;
    /// traps with a message naming `subject` otherwise.
    ///
    /// - Complexity: a thread-local load and a comparison inside the context's own blocks; a
    ///   `DispatchQueue.getSpecific` call elsewhere.
    @inlinable @inline(__always)
    func check(_ subject: @autoclosure () -> String) {
        if !_isMarkedCurrent() && !_isConfinedSlowPath() {
            _trapNotConfined(subject())
        }
    }

    /// The fast path of `check`: the innermost context block on this thread is one of ours
    /// (which implies the confinement is valid: only a valid one is ever marked current).
    ///
    /// Inlined: one thread-local load (relative to the thread pointer, in the initial-exec
    /// model) and a comparison with this confinement's address. (Reading the state here, an
    /// atomic load, made the optimizer retain and release the object around every access.)
    @inlinable @inline(__always)
    func _isMarkedCurrent() -> Bool {
        // Compared as integers: comparing optionals tested the thread-local for `nil` first.
        UInt(bitPattern: qd_confinement_current()) == UInt(bitPattern: token)
    }

    /// The slow path of `check`: the caller may run on the queue without being inside one of
    /// our blocks, or inside a nested block of another context.
    ///
    /// `@_effects(readonly)`: it reads queue-specific and thread-local state and writes
    /// nothing the optimizer can observe, which lets callers skip retaining the object they
    /// check around the call. Its result is always used, so the call is never removed.
    @usableFromInline @_effects(readonly)
    func _isConfinedSlowPath() -> Bool {
        isConfinedOffMark()
    }

    /// The body of ``_isConfinedSlowPath()``, inlined into it and into the attribute getters'
    /// slow path (`ManagedObject._isConfinedOffMark`), which then make no second call.
    @inline(__always)
    func isConfinedOffMark() -> Bool {
        guard isValid else { return false }
        let address = queueAddress.value.load(ordering: .relaxed)
        if address != 0, UInt(bitPattern: qd_current_dispatch_queue()) == address {
            return true
        }
        if DispatchQueue.getSpecific(key: key) === self {
            return true
        }
        // A context block that called another context's `performAndWait` still owns this
        // queue (it is blocked in `sync`), so its objects remain usable there.
        return isInsideMarkedBlock
    }

    /// Whether the calling thread is inside one of this confinement's marked blocks (its
    /// innermost block or one below it, when another context's block is nested in it).
    var isInsideMarkedBlock: Bool {
        let token = self.token
        if qd_confinement_current() == token {
            return true
        }
        var frame = qd_confinement_frames()
        while let current = frame {
            let pointer = current.assumingMemoryBound(to: ConfinementFrame.self)
            if pointer.pointee.token == token {
                return true
            }
            frame = pointer.pointee.previous
        }
        return false
    }

    /// Whether the caller currently runs where this confinement admits it.
    var isCurrent: Bool {
        _isMarkedCurrent() || _isConfinedSlowPath()
    }

    @usableFromInline
    func _trapNotConfined(_ subject: String) -> Never {
        let queueLabel = queue.label.isEmpty ? "(unlabeled)" : queue.label
        switch invalidation {
        case .contextDeallocated:
            fatalError(
                "QueueData: \(subject) was used after its context '\(contextName)' was deallocated. "
                    + "Keep a strong reference to the context for as long as you use its objects.")
        case .managerClosed:
            fatalError(
                "QueueData: \(subject) was used after its ContextManager was closed "
                    + "(context '\(contextName)'). Create a new context after reopening the store.")
        case .valid:
            fatalError(
                "QueueData: \(subject) was used off its queue. It is confined to context "
                    + "'\(contextName)' on queue '\(queueLabel)'. Use context.perform { } or "
                    + "context.performAndWait { }, or call it from a block running on that queue.")
        }
    }

    /// Runs `body` marked as one of this confinement's blocks, so that checks inside it take
    /// the thread-local fast path. Must be called on the queue.
    ///
    /// Traps if another thread is inside one of this confinement's blocks at the same time:
    /// the queue is not serial.
    @inline(__always)
    func withMarkedBlock<Result>(_ body: () throws -> Result) rethrows -> Result {
        guard isValid else {
            // Unmarked: every check in it takes the slow path, and traps naming why.
            return try body()
        }
        let occupied = enter()
        defer { leave(occupied) }
        let previousToken = qd_confinement_current()
        let previousFrames = qd_confinement_frames()
        var frame = ConfinementFrame(token: token, previous: previousFrames)
        return try withUnsafeMutablePointer(to: &frame) { pointer in
            qd_confinement_set_frames(UnsafeRawPointer(pointer))
            qd_confinement_set_current(token)
            defer {
                // An outer block of this confinement stays unmarked if it was invalidated.
                qd_confinement_set_current(previousToken == token && !isValid ? nil : previousToken)
                qd_confinement_set_frames(previousFrames)
            }
            return try body()
        }
    }

    /// Marks the calling thread as inside; returns whether this entry took the mark (nested
    /// entries on the same thread do not).
    private func enter() -> Bool {
        #if canImport(Darwin)
            let thread = UInt(bitPattern: pthread_self())
        #else
            let thread = UInt(pthread_self())
        #endif
        if occupant.load(ordering: .relaxed) == thread {
            return false
        }
        let (exchanged, _) = occupant.compareExchange(expected: 0, desired: thread, ordering: .acquiring)
        if !exchanged {
            let queueLabel = queue.label.isEmpty ? "(unlabeled)" : queue.label
            fatalError(
                "QueueData: context '\(contextName)' was entered by two threads at once: its queue '\(queueLabel)' "
                    + "is not serial. Create contexts only for serial queues (a DispatchQueue made without "
                    + ".concurrent), and never touch a context or its objects from concurrentPerform.")
        }
        return true
    }

    private func leave(_ occupied: Bool) {
        if occupied {
            occupant.store(0, ordering: .releasing)
        }
    }
}

/// One entry of the thread's chain of context blocks, living on the stack of
/// `withMarkedBlock`.
struct ConfinementFrame {
    let token: UnsafeRawPointer
    let previous: UnsafeRawPointer?
}
