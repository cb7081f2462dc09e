/// Every committed row after a change set, as the coordinator holds it: what a store that
/// rewrites itself (the JSON store) or compacts (the journal store) writes.
///
/// A view, not a copy: it shares the coordinator's rows, so passing it costs nothing.
public struct StoreState: Sendable {
    /// The store's metadata after the change set (``StoreMetadata/nextPrimaryKeys`` included).
    public let metadata: StoreMetadata
    /// The model's entities, in the order of `entityIndex` arguments and of each row's values.
    public let entities: [EntityDescription]
    let tables: [TableSnapshot]
    /// The persistent history after the change set (purges applied), when history is tracked:
    /// what a store that keeps history writes when it rewrites or compacts itself. `nil` when
    /// history is not tracked.
    public let history: StoreHistory?

    init(metadata: StoreMetadata, entities: [EntityDescription], tables: [TableSnapshot], history: StoreHistory? = nil)
    {
        self.metadata = metadata
        self.entities = entities
        self.tables = tables
        self.history = history
    }

    /// The number of rows of the entity at `entityIndex`.
    public func rowCount(ofEntityAt entityIndex: Int) -> Int {
        tables[entityIndex].liveCount
    }

    /// Calls `body` with every row of the entity at `entityIndex`, in primary-key order.
    public func forEachRow(
        ofEntityAt entityIndex: Int,
        _ body: (_ primaryKey: Int64, _ values: [StoredValue]) throws -> Void
    ) rethrows {
        try tables[entityIndex].forEachLiveRow { row in
            try body(row.primaryKey, row.values)
        }
    }
}
