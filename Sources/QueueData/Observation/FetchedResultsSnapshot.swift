import Foundation

/// What a ``FetchedResultsController`` shows at one moment: its sections, with the IDs of their
/// objects in order. `Sendable`: hand it to any queue or task, and diff or apply it there.
public struct FetchedResultsSnapshot: Sendable, Hashable {
    /// One section of a snapshot.
    public struct Section: Sendable, Hashable {
        /// The section's name (`""` without a section key path).
        public let name: String
        /// The IDs of the section's objects, in order (temporary IDs for unsaved inserts).
        public let objectIDs: [ObjectID]

        /// Creates a section.
        public init(name: String, objectIDs: [ObjectID]) {
            self.name = name
            self.objectIDs = objectIDs
        }
    }

    /// The sections, in order.
    public let sections: [Section]

    /// Creates a snapshot of `sections`.
    public init(sections: [Section]) {
        self.sections = sections
    }

    /// Every object's ID, section after section.
    public var objectIDs: [ObjectID] {
        sections.flatMap(\.objectIDs)
    }

    /// The ID at `indexPath` (section, then position), or `nil` when there is none.
    public func objectID(at indexPath: IndexPath) -> ObjectID? {
        guard indexPath.count == 2, sections.indices.contains(indexPath[0]),
            sections[indexPath[0]].objectIDs.indices.contains(indexPath[1])
        else { return nil }
        return sections[indexPath[0]].objectIDs[indexPath[1]]
    }
}

/// How a ``FetchedResultsController``'s content changed, as Core Data reports it: the type of a
/// section's or an object's change.
public enum FetchedResultsChangeType: Sendable, Hashable {
    /// Inserted: reported at its new index path.
    case insert
    /// Deleted: reported at its old index path.
    case delete
    /// Moved, because a value it is sorted or sectioned by changed: from its old index path to
    /// its new one (which may be equal when other changes made up for it).
    case move
    /// Changed in place: a value it is not sorted or sectioned by changed (or it was given its
    /// permanent ID); at its old index path, and its new one.
    case update
}

/// The changes between two ``FetchedResultsSnapshot``s of a controller, with the conventions of
/// `UITableView` batch updates: old index paths (deletes, the sources of moves, updates) refer
/// to the old snapshot, new index paths (inserts, the destinations of moves, updates) to the new
/// one.
///
/// ``applied(to:)`` replays them: delete the deleted and moved objects (old index paths), delete
/// the deleted sections, insert the inserted sections, insert the inserted and moved objects
/// (new index paths, in ascending order), and give updated objects the ID the new snapshot has
/// at their new index path. The result equals ``new``.
public struct FetchedResultsDifference: Sendable, Hashable {
    /// A section inserted or deleted.
    public struct SectionChange: Sendable, Hashable {
        /// `.insert` or `.delete`.
        public let type: FetchedResultsChangeType
        /// The section's index: in the old snapshot for a delete, in the new one for an insert.
        public let index: Int
        /// The section's name.
        public let name: String
    }

    /// An object inserted, deleted, moved or updated.
    public struct ObjectChange: Sendable, Hashable {
        /// What happened to it.
        public let type: FetchedResultsChangeType
        /// Its ID in the old snapshot (for an insert, its ID in the new one).
        public let objectID: ObjectID
        /// Where it was, for a delete, move or update.
        public let oldIndexPath: IndexPath?
        /// Where it is, for an insert, move or update.
        public let newIndexPath: IndexPath?
    }

    /// The snapshot before.
    public let old: FetchedResultsSnapshot
    /// The snapshot after.
    public let new: FetchedResultsSnapshot
    /// Sections deleted (in descending old index order), then sections inserted (ascending).
    public let sectionChanges: [SectionChange]
    /// Objects deleted (descending old index paths), inserted (ascending new index paths), moved
    /// and updated.
    public let objectChanges: [ObjectChange]

    /// Whether nothing changed.
    public var isEmpty: Bool {
        sectionChanges.isEmpty && objectChanges.isEmpty
    }

    /// `snapshot` with these changes applied (see the type's documentation); equal to ``new``
    /// when `snapshot` equals ``old``.
    public func applied(to snapshot: FetchedResultsSnapshot) -> FetchedResultsSnapshot {
        var sections = snapshot.sections.map { (name: $0.name, ids: $0.objectIDs) }
        // Objects leave at their old index paths, last first so that earlier ones stay valid.
        let leaving = objectChanges.filter { $0.type == .delete || $0.type == .move }
            .compactMap(\.oldIndexPath).sorted { ($0[0], $0[1]) > ($1[0], $1[1]) }
        for path in leaving where sections.indices.contains(path[0]) && sections[path[0]].ids.indices.contains(path[1])
        {
            sections[path[0]].ids.remove(at: path[1])
        }
        for change in sectionChanges.filter({ $0.type == .delete }).sorted(by: { $0.index > $1.index })
        where sections.indices.contains(change.index) {
            sections.remove(at: change.index)
        }
        for change in sectionChanges.filter({ $0.type == .insert }).sorted(by: { $0.index < $1.index }) {
            sections.insert((change.name, []), at: Swift.min(change.index, sections.count))
        }
        let arriving = objectChanges.filter { $0.type == .insert || $0.type == .move }
            .compactMap { change in change.newIndexPath.map { ($0, change) } }
            .sorted { ($0.0[0], $0.0[1]) < ($1.0[0], $1.0[1]) }
        for (path, change) in arriving where sections.indices.contains(path[0]) {
            let id = new.objectID(at: path) ?? change.objectID
            sections[path[0]].ids.insert(id, at: Swift.min(path[1], sections[path[0]].ids.count))
        }
        for change in objectChanges where change.type == .update {
            guard let path = change.newIndexPath, let id = new.objectID(at: path),
                sections.indices.contains(path[0]), sections[path[0]].ids.indices.contains(path[1])
            else { continue }
            sections[path[0]].ids[path[1]] = id
        }
        return FetchedResultsSnapshot(sections: sections.map { .init(name: $0.name, objectIDs: $0.ids) })
    }
}
