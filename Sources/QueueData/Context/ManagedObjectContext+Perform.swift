import Dispatch

extension ManagedObjectContext {
    /// Runs `block` on the context's queue, asynchronously; returns at once.
    ///
    /// Callable from any thread. Inside the block, the context and its objects may be used
    /// freely (and their confinement checks are cheapest). Errors cannot escape a
    /// fire-and-forget block: handle them inside it, or use the `async` form.
    ///
    /// In `async` code, Swift prefers the `async` overload of `perform`, which waits for the
    /// block; call this one from synchronous code to schedule work without waiting.
    public func perform(_ block: sending @escaping () -> Void) {
        checkUsable()
        let confinement = self.confinement
        let work = UncheckedSendableBox(block)
        queue.async {
            confinement.withMarkedBlock(work.value)
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
            return try confinement.withMarkedBlock(block)
        }
        let confinement = self.confinement
        return try queue.sync {
            try confinement.withMarkedBlock(block)
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
                let outcome = confinement.withMarkedBlock {
                    Swift.Result { () throws(Failure) -> Result in try work.value() }
                }
                continuation.resume(returning: outcome)
            }
        }
        return try outcome.get()
    }

    /// Traps if the context was invalidated (its manager closed, or it is being torn down).
    func checkUsable() {
        if !confinement.isValid {
            confinement._trapNotConfined("ManagedObjectContext '\(name)'")
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
