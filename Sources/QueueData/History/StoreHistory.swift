/// A store's persistent history: the transactions it keeps, and where numbering stands.
public struct StoreHistory: Sendable, Hashable {
    /// The transactions kept, in ascending number order.
    public var transactions: [StoredTransaction]
    /// Every transaction numbered up to this one was purged (0: none was).
    public var purgedThrough: Int64
    /// The number of the last transaction ever recorded (0: none), kept or purged: the next one
    /// is numbered after it, so numbers are never reused.
    public var lastTransactionNumber: Int64

    /// Creates a history; the default is an empty one, where tracking starts.
    public init(transactions: [StoredTransaction] = [], purgedThrough: Int64 = 0, lastTransactionNumber: Int64 = 0) {
        self.transactions = transactions
        self.purgedThrough = purgedThrough
        self.lastTransactionNumber = lastTransactionNumber
    }

    /// The problem with a history read from a store, if any: numbers must ascend, lie after the
    /// purge point and at or before the last number, and keys must be positive. Stores refuse a
    /// history with a problem as damage.
    var problem: String? {
        guard purgedThrough >= 0, lastTransactionNumber >= purgedThrough else {
            return "the history's purge point (\(purgedThrough)) is after its last transaction number "
                + "(\(lastTransactionNumber)) or negative"
        }
        var previous = purgedThrough
        for transaction in transactions {
            guard transaction.number > previous else {
                return "the history's transaction \(transaction.number) does not come after \(previous)"
            }
            guard transaction.timestamp.timeIntervalSince1970.isFinite else {
                return "the history's transaction \(transaction.number) has no valid timestamp"
            }
            for entity in transaction.entities {
                let keys = entity.inserted + entity.updated.map(\.primaryKey) + entity.deleted
                guard keys.allSatisfy({ $0 > 0 }) else {
                    return "the history's transaction \(transaction.number) names a non-positive key of "
                        + "'\(entity.entityName)'"
                }
            }
            previous = transaction.number
        }
        guard previous <= lastTransactionNumber else {
            return "the history's transaction \(previous) is after its last transaction number \(lastTransactionNumber)"
        }
        return nil
    }

    /// Adds `transaction`, the next one.
    mutating func append(_ transaction: StoredTransaction) {
        transactions.append(transaction)
        lastTransactionNumber = transaction.number
    }
}
