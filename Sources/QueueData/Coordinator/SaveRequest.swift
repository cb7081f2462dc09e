/// What a context asks the coordinator to commit: its pending changes as values.
struct SaveRequest: Sendable {
    struct Insert: Sendable {
        var entityIndex: Int
        /// The object's temporary key: relationships of this save refer to it by that key.
        var temporaryKey: Int64
        /// The object's values: a copy of its row the saving context made (rows of one entity
        /// in one block for the whole save, so that no array is made per object), or values.
        private var storage: Storage

        private enum Storage: Sendable {
            case values([StoredValue])
            case row(RowReference)
        }

        init(entityIndex: Int, temporaryKey: Int64, values: [StoredValue]) {
            self.entityIndex = entityIndex
            self.temporaryKey = temporaryKey
            storage = .values(values)
        }

        /// An insert whose values are the row at `row` (a block no table holds, which nothing
        /// writes once the request is made).
        init(entityIndex: Int, temporaryKey: Int64, row: RowReference) {
            self.entityIndex = entityIndex
            self.temporaryKey = temporaryKey
            storage = .row(row)
        }

        /// The object's values (read from its row copy, for an insert made with one).
        var values: [StoredValue] {
            get {
                switch storage {
                case .values(let values): return values
                case .row(let row): return row.values
                }
            }
            set { storage = .values(newValue) }
        }

        /// Whether the insert's values are a copy of the object's row (see ``row``).
        var hasRow: Bool {
            if case .row = storage { true } else { false }
        }

        /// The copy of the object's row, for an insert made with one whose values were not
        /// replaced since.
        var row: RowReference? {
            if case .row(let row) = storage { row } else { nil }
        }
    }

    struct Update: Sendable {
        var entityIndex: Int
        var primaryKey: Int64
        /// The committed version the context's changes are based on.
        var baseVersion: Int64
        /// The committed values the context last saw (shared with the object, not copied).
        var snapshot: [StoredValue]
        /// Changed slots, ascending, and their new values.
        var changedSlots: [Int]
        var changedValues: [StoredValue]

        /// The object's values: the snapshot with the changes applied.
        var objectValues: [StoredValue] {
            var values = snapshot
            for (slot, value) in zip(changedSlots, changedValues) {
                values[slot] = value
            }
            return values
        }
    }

    struct Delete: Sendable {
        var entityIndex: Int
        var primaryKey: Int64
        var baseVersion: Int64
        var snapshot: [StoredValue]
    }

    /// A row this context deleted and an undo brought back: written back under its key.
    struct Restore: Sendable {
        var entityIndex: Int
        var primaryKey: Int64
        /// The last committed version the context saw of the row.
        var baseVersion: Int64
        /// The committed values the context last saw.
        var snapshot: [StoredValue]
        var values: [StoredValue]
    }

    var inserts: [Insert] = []
    var updates: [Update] = []
    var deletes: [Delete] = []
    var restores: [Restore] = []
    /// How conflicts with other saves are resolved.
    var mergePolicy: MergePolicy = .error
    /// The saving context's transaction author and name, for the persistent history.
    var author: String?
    var contextName: String?

    var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty && restores.isEmpty }
}

/// Identifies a committed row.
struct RowKey: Hashable, Sendable {
    var entityIndex: Int
    var primaryKey: Int64
}

/// What the coordinator committed, for the saving context and the merge notification.
struct SaveOutcome: Sendable {
    /// The committed row of each insert, in request order (permanent keys); for an insert
    /// upserted into another object (a uniqueness constraint), that object's row. A row copied
    /// from the context's copy of its object's row has no ``CommittedRow/values``: its
    /// ``CommittedRow/reference`` holds them.
    var inserted: [CommittedRow]
    /// The positions of the inserts that were upserted into another object.
    var upsertedInserts: Set<Int> = []
    /// The committed state, after the save, of every object the request updated or deleted:
    /// the row, or `nil` if the object no longer exists.
    var finalRows: [RowKey: CommittedRow?]
    /// What every other context merges (the payload of the saving context's
    /// ``ManagedObjectContext/didSaveNotification``), derived from the same commit: the inserted
    /// and restored objects, the rows changed, the rows deleted. The saving context takes
    /// `updated`'s rows of the objects it did not change itself with the code a merge uses.
    var changes: SaveChanges
    /// The commit to wait for with ``StoreCoordinator/waitUntilDurable(_:)`` before reporting
    /// the save; `nil` when it is durable already.
    var durabilityTicket: Int?
}
