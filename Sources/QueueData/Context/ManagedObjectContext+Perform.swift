import Dispatch

extension ManagedObjectContext {
    /// Runs `block` on the context's queue, asynchronously; returns at once.
    ///
    /// Callable from any thread. Inside the block, the context and its objects may be used
    /// freely (and their confinement checks are cheapest). Errors cannot escape a
    /// fire-and-forget block: handle them inside it, or use the `async` form.
    ///
    /// Unavailable in `async` code, where `await context.perform { … }` means the form that
    /// waits and returns the block's result. Swift resolves top-level code (`main.swift`) as
    /// synchronous code, so there it would quietly pick this form — not waiting, and giving
    /// `()` for the result — if it were available; instead the compiler stops with a message
    /// saying what to write: annotate the result's type to wait for it
    /// (`let count: Int = await context.perform { … }`), use ``performAndWait(_:)``, or submit
    /// without waiting with ``enqueue(_:)``, which is available everywhere.
    @available(
        *, noasync,
        message:
            "it does not wait. To wait, use 'await perform' in an async function; in top-level code annotate the result ('let value: T = await context.perform { … }') or use 'performAndWait'. To submit without waiting, use 'enqueue { … }'"
    )
    public func perform(_ block: sending @escaping () -> Void) {
        enqueue(block)
    }

    /// Runs `block` on the context's queue, asynchronously; returns at once: `perform(_:)`
    /// under a name that is also callable from `async` code.
    ///
    /// Blocks run in the order they were submitted, after those already queued.
    ///
    /// ```swift
    /// func importInBackground(_ batch: [Record]) async {
    ///     context.enqueue { importer.insert(batch, into: context) }   // does not wait
    /// }
    /// ```
    public func enqueue(_ block: sending @escaping () -> Void) {
        checkUsable()
        let confinement = self.confinement
        let work = UncheckedSendableBox(block)
        queue.async {
            confinement.withContextBlock(work.value)
        }
    }

    /// Runs `block` on the context's queue and returns its result, waiting for it.
    ///
    /// Callable from any thread. Re-entrant: called from the context's own queue (for
    /// example inside `perform`, or nested in another context's `performAndWait` that was
    /// entered from this queue) it runs `block` inline instead of deadlocking.
    ///
    /// - Important: Like `DispatchQueue.sync`, it blocks the calling thread; two contexts
    ///   waiting on each other's queues deadlock.
    public func performAndWait<Result>(_ block: () throws -> Result) rethrows -> Result {
        checkUsable()
        if confinement.isCurrent {
            return try confinement.withContextBlock(block)
        }
        let confinement = self.confinement
        return try queue.sync {
            try confinement.withContextBlock(block)
        }
    }

    /// Runs `block` on the context's queue and returns its `Sendable` result, suspending the
    /// caller (not blocking a thread) until it is done.
    ///
    /// ```swift
    /// let count = try await context.perform {
    ///     try context.count(for: FetchRequest<Destination>())
    /// }
    /// ```
    ///
    /// Errors thrown by `block` are rethrown here.
    public func perform<Result: Sendable, Failure: Error>(
        _ block: sending @escaping () throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        checkUsable()
        let confinement = self.confinement
        let work = UncheckedSendableBox(block)
        let outcome: Swift.Result<Result, Failure> = await withCheckedContinuation { continuation in
            queue.async {
                let outcome = confinement.withContextBlock {
                    Swift.Result { () throws(Failure) -> Result in try work.value() }
                }
                continuation.resume(returning: outcome)
            }
        }
        return try outcome.get()
    }

    /// Runs `block` on the context's queue and returns its result, like `try await perform`,
    /// for QueueData's own multi-step work (the steps of an asynchronous fetch): if the
    /// manager was closed before the block runs, it throws ``StoreError/Code/closed`` instead
    /// of trapping, so that a close in the middle of library work ends it with an error.
    func performIfOpen<Value: Sendable>(_ block: sending @escaping () throws -> Value) async throws -> Value {
        let confinement = self.confinement
        let name = self.name
        guard confinement.isValid else { throw Self.closedError(name) }
        let work = UncheckedSendableBox(block)
        let outcome: Swift.Result<Value, any Error> = await withCheckedContinuation { continuation in
            queue.async {
                guard confinement.isValid else {
                    continuation.resume(returning: .failure(Self.closedError(name)))
                    return
                }
                let outcome = confinement.withContextBlock { Swift.Result { try work.value() } }
                continuation.resume(returning: outcome)
            }
        }
        return try outcome.get()
    }

    /// The error of library work that a close ended.
    static func closedError(_ name: String) -> StoreError {
        StoreError(.closed, "The manager of context '\(name)' was closed while the work was in progress.")
    }

    /// Traps if the context was invalidated (its manager closed, or it is being torn down).
    func checkUsable() {
        if !confinement.isValid {
            confinement._trapNotConfined("ManagedObjectContext '\(name)'")
        }
    }
}

extension QueueConfinement {
    /// Runs a block of the `perform` family: marked as the context's block, then the
    /// context's pending changes are processed (``ManagedObjectContext/processPendingChanges()``)
    /// if it is still alive and its manager open, whether `body` returned or threw.
    ///
    /// With an undo manager that groups by event, the block is an undo group.
    ///
    /// The outermost such block (not nested in another block or operation of the same context)
    /// then lets go of the unreferenced objects (see
    /// ``ManagedObjectContext/retainsRegisteredObjects``).
    func withContextBlock<Result>(_ body: () throws -> Result) rethrows -> Result {
        let isOutermost = !isInsideMarkedBlock
        return try withMarkedBlock {
            let undoManager = context?.undoManagerValue
            let grouped = undoManager?.beginEventGroup() ?? false
            defer { endBlock(grouped ? undoManager : nil, isOutermost: isOutermost) }
            return try body()
        }
    }

    private func endBlock(_ undoManager: UndoManager?, isOutermost: Bool) {
        if isValid, let context {
            context.processPendingChangesOnQueue()
            undoManager?.endEventGroup()
            if isOutermost {
                context.releaseUnreferencedObjects()
            }
        }
    }
}

/// Carries a value into a `@Sendable` closure.
///
/// `@unchecked Sendable`: used only for closures received as `sending` (their captures are
/// in a region no one else can reach) that are handed, exactly once, to the context's queue.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
