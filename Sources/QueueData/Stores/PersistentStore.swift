import Foundation

/// A place where committed rows live: the backend behind a ``ContextManager``.
///
/// QueueData ships three: ``JournalStore``, ``JSONFileStore`` and ``InMemoryStore``;
/// ``StoreType/custom(_:)`` plugs in your own. The protocol is small on purpose — what a
/// coordinator needs and nothing more: open and load everything, commit one change set
/// durably, close.
///
/// ## Implementation requirements
///
/// - A store is called one call at a time, never concurrently, though not always on the same
///   queue: ``open(for:)`` and ``replaceContents(with:keepingOriginalAs:)`` on the manager's
///   queue while it loads the store; ``commit(_:resultingState:)`` and ``compact(_:)`` on the
///   coordinator's private serial queue; ``close()`` on the coordinator's queue (also when a
///   coordinator nobody closed is released); ``inspect()`` on a store never opened.
///   A store needs no synchronization of its own (as long as it keeps no thread-affine
///   state), and must not call back into QueueData.
/// - ``open(for:)`` is called once, before anything else. It creates the store if it does
///   not exist, and returns everything the store holds: its metadata (a store identifier
///   that never changes, the version hash of the model it was written with, the next primary
///   key of each entity, the migration steps applied), the schema its rows follow, and the
///   rows. A store written with another model (a different version hash) is returned as it
///   is, unmodified: the coordinator migrates it or refuses it. It must not modify an
///   existing store that it cannot read: throw ``StoreError`` (`.corrupted`,
///   `.unsupportedFormat`, `.locked`, `.io`) and leave the files as they were.
/// - ``commit(_:resultingState:)`` either records the whole change set or throws; it must
///   not return before the change set would survive a crash (for file stores: after `fsync`).
///   After a failed write the store may be in an unknown state: refuse later commits with
///   ``StoreError/Code/closed`` until it is reopened, rather than report success. Record
///   ``ChangeSet/nextPrimaryKeys`` so that keys are never reused after a reopen. The
///   ``StoreState`` argument holds every row after the change set, for stores that rewrite
///   themselves; stores that append can ignore it.
/// - Group commit (optional): a store that can make several saves durable with one sync
///   commits in two phases. It names a serial ``synchronizationQueue``;
///   ``append(_:resultingState:)`` records a change set without waiting for the disk (on the
///   coordinator's queue), and ``pendingSynchronization()`` hands out what makes everything
///   appended so far durable, which the coordinator runs on the synchronization queue while
///   further saves are appended. No save is reported, and no other context sees its rows,
///   before a synchronization taken after it ran; a synchronization that fails fails every
///   save it covered, and the store must refuse every later commit
///   (``synchronizationFailed(_:)``) until reopened. Stores without a synchronization queue
///   (the default) commit each save durably in ``commit(_:resultingState:)``, which the
///   default ``append(_:resultingState:)`` calls.
/// - ``compact(_:)`` (optional) rewrites the store from the state, for stores whose files grow
///   with every save; it must leave a store that opens with every committed save whatever
///   step a crash interrupts.
/// - ``replaceContents(with:keepingOriginalAs:)`` (optional, for migration) replaces
///   everything with the given state, atomically and durably, keeping the original under
///   the given suffix; a crash at any point must leave the original store or the new one.
/// - ``inspect()`` (optional, for dry runs) reads what the store holds without creating,
///   repairing or modifying anything; `nil` when there is no store yet.
/// - ``close()`` releases files and locks; it may be called more than once. Nothing is
///   called after it, except ``open(for:)`` on a store that supports reopening.
/// - Persistent history (optional): a store that can keep it says so with ``keepsHistory``.
///   When history is tracked, every change set carries a ``ChangeSet/transaction``: record it
///   with the changes, all or nothing (a crash must never leave the history ahead of or behind
///   the rows), and return everything recorded in ``StoreContents/history`` from the next
///   ``open(for:)``, `nil` when none was ever recorded. ``compact(_:)`` and
///   ``replaceContents(with:keepingOriginalAs:)`` receive the history to keep in
///   ``StoreState/history`` (a purge reaches the store as a compaction): write it, dropping what
///   it no longer holds. A store without history (the default) ignores all of this.
/// - Rows returned by ``open(for:)`` may be in any order; their values follow the returned
///   schema, which the coordinator maps onto the current model by attribute name.
public protocol PersistentStore: AnyObject {
    /// Opens the store (creating it if needed) and returns everything it holds.
    ///
    /// - Parameter model: The model the store is opened with; a new store records its
    ///   ``ManagedObjectModel/versionHash`` and entities.
    /// - Throws: ``StoreError`` when the store cannot be read; the store is left untouched.
    func open(for model: ManagedObjectModel) throws -> StoreContents

    /// Records one change set durably.
    ///
    /// - Parameters:
    ///   - changes: What the save changed.
    ///   - resultingState: Every row after the change, for stores that rewrite themselves.
    /// - Throws: ``StoreError`` when the change set could not be recorded in full.
    func commit(_ changes: ChangeSet, resultingState: StoreState) throws

    /// The serial queue on which the coordinator runs this store's synchronizations, for a
    /// store that commits in two phases (group commit); `nil`, the default, for a store whose
    /// ``commit(_:resultingState:)`` is durable when it returns.
    var synchronizationQueue: DispatchQueue? { get }

    /// Phase one of a two-phase commit: records one change set in full without waiting for the
    /// disk. The default commits it durably (``commit(_:resultingState:)``) and returns `true`.
    ///
    /// - Returns: Whether the change set, and everything appended before it, is durable
    ///   already (a store may make it so, compacting say); `false`: a synchronization taken
    ///   after it will.
    /// - Throws: ``StoreError`` when the change set could not be recorded in full (after a
    ///   failed write the store refuses later commits).
    func append(_ changes: ChangeSet, resultingState: StoreState) throws -> Bool

    /// Phase two of a two-phase commit: what makes everything appended so far durable, to run
    /// on ``synchronizationQueue``. The default, for stores whose commits are durable, does
    /// nothing.
    ///
    /// - Throws: ``StoreError/Code/closed`` when the store is closed or refuses commits.
    func pendingSynchronization() throws -> StoreSynchronization

    /// Records that a synchronization failed: the store refuses commits from now on (a retried
    /// `fsync` may report success without the data on disk).
    ///
    /// - Returns: The error to report to the saves the synchronization covered. The default
    ///   wraps `error` in ``StoreError/Code/io``.
    func synchronizationFailed(_ error: any Error) -> StoreError

    /// Rewrites the store as compactly as possible from `state`, the store's current rows (and,
    /// for a store that keeps history, the history to keep: purged transactions are gone from
    /// ``StoreState/history``). The default does nothing.
    ///
    /// - Throws: ``StoreError`` when the rewrite failed; the store still holds every
    ///   committed save.
    func compact(_ state: StoreState) throws

    /// Replaces everything the store holds with `state` (a migration's result), atomically and
    /// durably, keeping the original as `suffix` (`<store file>.<suffix>` for file stores).
    /// The default refuses: the store cannot be migrated.
    ///
    /// - Throws: ``StoreError``; the original store is left as it was.
    func replaceContents(with state: StoreState, keepingOriginalAs suffix: String) throws

    /// What the store holds, read without creating, repairing or modifying anything; `nil`
    /// if there is no store yet. The default throws ``StoreError/Code/unsupportedFormat``.
    func inspect() throws -> StoreContents?

    /// Closes the store, releasing files and locks.
    func close()

    /// The store's main file, named in errors the coordinator reports about it (a migration
    /// that failed, say); `nil`, the default, for stores without one.
    var storeURL: URL? { get }

    /// Whether the store can keep a persistent history (see the implementation requirements);
    /// `false`, the default, for stores that cannot: history requests then throw
    /// ``HistoryError/Code/notTracked``.
    var keepsHistory: Bool { get }
}

extension PersistentStore {
    /// `nil`: no file to name.
    public var storeURL: URL? { nil }

    /// `false`: the store keeps no history.
    public var keepsHistory: Bool { false }

    /// `nil`: each commit is durable when it returns.
    public var synchronizationQueue: DispatchQueue? { nil }

    /// Commits `changes` durably: a store without group commit has one phase.
    public func append(_ changes: ChangeSet, resultingState: StoreState) throws -> Bool {
        try commit(changes, resultingState: resultingState)
        return true
    }

    /// Nothing to do: every commit was durable when it returned.
    public func pendingSynchronization() throws -> StoreSynchronization { .none }

    /// `error` as a ``StoreError`` of code `.io`.
    public func synchronizationFailed(_ error: any Error) -> StoreError {
        error as? StoreError
            ?? StoreError(.io, "The store could not be synchronized: \(error)", url: storeURL, underlyingError: error)
    }

    /// Does nothing: most stores never need compaction.
    public func compact(_ state: StoreState) throws {}

    /// Refuses: a store that does not implement replacement cannot be migrated.
    public func replaceContents(with state: StoreState, keepingOriginalAs suffix: String) throws {
        throw StoreError(
            .incompatibleModel, "This store does not support migration (\(type(of: self)) has no replaceContents).")
    }

    /// Refuses: a store that does not implement inspection cannot be planned for.
    public func inspect() throws -> StoreContents? {
        throw StoreError(.unsupportedFormat, "This store cannot be inspected (\(type(of: self)) has no inspect()).")
    }
}
