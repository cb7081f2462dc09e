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
///   coordinator's private serial queue; ``close()`` on the coordinator's queue, or on the
///   thread that releases a coordinator nobody closed; ``inspect()`` on a store never opened.
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

    /// Rewrites the store as compactly as possible from `state`, the store's current rows.
    /// The default does nothing.
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
}

extension PersistentStore {
    /// `nil`: no file to name.
    public var storeURL: URL? { nil }

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
