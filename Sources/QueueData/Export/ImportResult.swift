/// What an import did.
public struct ImportResult: Sendable, Hashable {
    /// The records the file held.
    public var recordCount: Int
    /// The objects inserted.
    public var insertedCount: Int
    /// The records merged into an existing object by a uniqueness constraint (upserts).
    public var updatedCount: Int

    /// Creates a result.
    public init(recordCount: Int, insertedCount: Int, updatedCount: Int) {
        self.recordCount = recordCount
        self.insertedCount = insertedCount
        self.updatedCount = updatedCount
    }
}
