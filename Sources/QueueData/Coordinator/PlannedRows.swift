/// The new values of the rows a commit writes, by key, while the planner repairs relationships:
/// the inserted rows by position — their keys were handed out in order, per entity, so a key
/// finds its row by a subtraction, with no hashing — and the other rows (updated, restored, or
/// added because an inverse changes) in a dictionary.
struct PlannedRows {
    /// Per entity, the first key of its inserted rows (`Int64.max` without any).
    private var firstInsertedKeys: [Int64]
    /// Per entity, the inserted rows' values by key less the first key (`nil` in a gap: a key
    /// handed to an insert that was upserted into another row).
    private var insertedRows: [[[StoredValue]?]]
    private var otherRows: [RowKey: [StoredValue]] = [:]

    /// The rows of `inserts`, each entity's keys increasing.
    init(entityCount: Int, inserts: some Sequence<(entityIndex: Int, key: Int64, values: [StoredValue])>) {
        var first = [Int64](repeating: .max, count: entityCount)
        var last = [Int64](repeating: .min, count: entityCount)
        for insert in inserts {
            first[insert.entityIndex] = Swift.min(first[insert.entityIndex], insert.key)
            last[insert.entityIndex] = Swift.max(last[insert.entityIndex], insert.key)
        }
        firstInsertedKeys = first
        insertedRows = (0..<entityCount).map { entity in
            first[entity] <= last[entity] ? Array(repeating: nil, count: Int(last[entity] - first[entity]) + 1) : []
        }
        for insert in inserts {
            insertedRows[insert.entityIndex][Int(insert.key - first[insert.entityIndex])] = insert.values
        }
    }

    /// The position of `key` among its entity's inserted rows, if it is one.
    private func insertedPosition(_ key: RowKey) -> Int? {
        let offset = key.primaryKey &- firstInsertedKeys[key.entityIndex]
        guard key.primaryKey >= firstInsertedKeys[key.entityIndex], offset < insertedRows[key.entityIndex].count,
            insertedRows[key.entityIndex][Int(offset)] != nil
        else { return nil }
        return Int(offset)
    }

    /// Whether `key` is a row the commit inserts.
    func isInserted(_ key: RowKey) -> Bool {
        insertedPosition(key) != nil
    }

    /// The planned values of the row `key`, or `nil` if the commit does not write it (yet).
    subscript(key: RowKey) -> [StoredValue]? {
        get {
            if let position = insertedPosition(key) {
                return insertedRows[key.entityIndex][position]
            }
            return otherRows[key]
        }
        set {
            if let position = insertedPosition(key), let newValue {
                insertedRows[key.entityIndex][position] = newValue
            } else {
                otherRows[key] = newValue
            }
        }
    }
}
