import Dispatch
import Synchronization

extension ManagedObjectContext {
    /// Runs `changes` on the context's queue, then saves if the context has changes; if
    /// `changes` or the save throws, rolls the context back and rethrows. Either everything
    /// the block did is saved, or none of it stays.
    ///
    /// ```swift
    /// try context.performChanges {
    ///     let trip = context.insert(Trip.self)
    ///     trip.title = "Lisbon"
    ///     guard isValid(trip) else { throw ImportError.invalid }   // rolled back
    /// }                                                            // saved
    /// ```
    ///
    /// Like ``performAndWait(_:)``, callable from any thread and re-entrant on the context's
    /// queue.
    ///
    /// - Important: The rollback discards every unsaved change of the context, including
    ///   changes made before the block.
    /// In an `async` function, `try await performChanges { … }` picks the `async` form, which
    /// suspends instead of blocking. Swift resolves top-level code (`main.swift`) as synchronous
    /// code, so there this form runs (blocking the main thread until the save is done), which
    /// is correct, only not cancellable.
    ///
    /// - Throws: What `changes` throws, or the save's error (``ValidationError``,
    ///   ``MergeConflictError``, ``StoreError``).
    @discardableResult
    public func performChanges<Result>(_ changes: () throws -> Result) throws -> Result {
        try performAndWait {
            do {
                let result = try changes()
                if hasChanges {
                    try save()
                }
                return result
            } catch {
                rollback()
                throw error
            }
        }
    }

    /// Runs `changes` on the context's queue, then saves if the context has changes, suspending
    /// the caller until it is done; if `changes` or the save throws, or the calling task is
    /// cancelled before the save, rolls the context back and throws.
    ///
    /// A task cancelled before the block starts throws `CancellationError` without running
    /// it; one cancelled while the block runs throws `CancellationError` after it, having saved
    /// nothing.
    ///
    /// - Important: The rollback discards every unsaved change of the context, including
    ///   changes made before the block.
    /// - Throws: `CancellationError`, what `changes` throws, or the save's error; ``StoreError``
    ///   `.closed` when the manager was closed before the block could start (it does not run).
    @discardableResult
    public func performChanges<Result: Sendable>(
        _ changes: sending @escaping () throws -> Result
    ) async throws -> Result {
        checkUsable()
        try Task.checkCancellation()
        let cancelled = CancellationFlag()
        let work = UncheckedSendableBox(changes)
        let confinement = self.confinement
        return try await withTaskCancellationHandler {
            let outcome: Swift.Result<Result, any Error> = await withCheckedContinuation { continuation in
                queue.async {
                    guard confinement.isValid else {
                        // Closed after the call: nothing ran, nothing to roll back.
                        continuation.resume(returning: .failure(Self.closedError(self.name)))
                        return
                    }
                    let outcome = confinement.withContextBlock {
                        Swift.Result { () throws -> Result in
                            do {
                                guard !cancelled.isSet else { throw CancellationError() }
                                let result = try work.value()
                                guard !cancelled.isSet else { throw CancellationError() }
                                if self.hasChanges {
                                    try self.save()
                                }
                                return result
                            } catch {
                                self.rollback()
                                throw error
                            }
                        }
                    }
                    continuation.resume(returning: outcome)
                }
            }
            return try outcome.get()
        } onCancel: {
            cancelled.set()
        }
    }
}

/// Whether a task was cancelled, readable from the context's queue.
final class CancellationFlag: Sendable {
    private let storage = Atomic<Bool>(false)

    var isSet: Bool { storage.load(ordering: .acquiring) }

    func set() {
        storage.store(true, ordering: .releasing)
    }
}
