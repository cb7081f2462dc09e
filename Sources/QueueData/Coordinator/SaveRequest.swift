/// What a context asks the coordinator to commit: its pending changes as values.
struct SaveRequest: Sendable {
    struct Insert: Sendable {
        var entityIndex: Int
        var values: [StoredValue]
    }

    struct Update: Sendable {
        var entityIndex: Int
        var primaryKey: Int64
        /// The committed version the context's changes are based on.
        var baseVersion: Int64
        /// Changed slots, ascending, and their new values.
        var changedSlots: [Int]
        var changedValues: [StoredValue]
    }

    struct Delete: Sendable {
        var entityIndex: Int
        var primaryKey: Int64
        var baseVersion: Int64
    }

    var inserts: [Insert] = []
    var updates: [Update] = []
    var deletes: [Delete] = []

    var isEmpty: Bool { inserts.isEmpty && updates.isEmpty && deletes.isEmpty }
}

/// What the coordinator committed, for the saving context and the merge notification.
struct SaveOutcome: Sendable {
    /// The committed row of each insert, in request order (permanent keys, version 1).
    var inserted: [CommittedRow]
    /// The committed row of each update, in request order.
    var updated: [CommittedRow]
    /// The keys of the requested deletes, in request order (including rows another context
    /// had already deleted).
    var deleted: [Int64]
}
