import Foundation

/// Persistent history: when tracked (the delegate asked for it and the store keeps it, or the
/// store recorded it before), every commit takes the next transaction number and its
/// ``StoredTransaction`` travels with the change set, so the store records both or neither.
/// `history` holds every transaction appended; contexts read only durable ones (those recorded by
/// commits up to `durableCommits`), as they read only durable rows. A purge rewrites the store
/// (a compaction) without the purged transactions, and takes effect here once that succeeded.
extension StoreCoordinator {
    /// The durable part of `history`.
    var durableHistory: StoreHistory? {
        guard var history else { return nil }
        let undurable = historyCommits.reversed().prefix { $0 > durableCommits }.count
        if undurable > 0 {
            history.transactions.removeLast(undurable)
            history.lastTransactionNumber = history.transactions.last?.number ?? history.purgedThrough
        }
        return history
    }

    /// The durable history, or why there is none. Call on `queue`.
    private func trackedHistory() throws -> StoreHistory {
        assertOnQueue()
        guard let store else {
            throw StoreError(.closed, "The store was closed; its manager must load it again.")
        }
        guard let history = durableHistory else {
            throw HistoryError(
                .notTracked,
                store.keepsHistory
                    ? "The store keeps no persistent history: turn it on with the delegate's "
                        + "tracksPersistentHistory."
                    : "This kind of store (\(type(of: store))) cannot keep a persistent history; use the journal or "
                        + "in-memory store.")
        }
        return history
    }

    /// The token after the last durable transaction. Call on `queue`.
    func currentHistoryToken() throws -> HistoryToken {
        let history = try trackedHistory()
        return HistoryToken(storeIdentifier: storeIdentifier, transactionNumber: history.lastTransactionNumber)
    }

    /// Checks that `token` is a place in this store's history, at or after `history`'s purge point
    /// unless `allowingExpired`.
    private func check(_ token: HistoryToken, in history: StoreHistory, allowingExpired: Bool = false) throws {
        guard token.storeIdentifier == storeIdentifier else {
            throw HistoryError(
                .invalidToken,
                "The history token \(token) belongs to another store (this one is \(storeIdentifier.uuidString)).")
        }
        guard token.transactionNumber >= 0, token.transactionNumber <= history.lastTransactionNumber else {
            throw HistoryError(
                .invalidToken,
                "The history token \(token) is beyond the store's history, which ends at transaction "
                    + "\(history.lastTransactionNumber): the store was replaced by an older copy, or the token is not "
                    + "one it handed out.")
        }
        guard allowingExpired || token.transactionNumber >= history.purgedThrough else {
            throw HistoryError(
                .expiredToken,
                "The history after \(token) was purged up to transaction \(history.purgedThrough): refetch what "
                    + "you need and continue from currentHistoryToken().")
        }
    }

    /// The durable transactions after `token` (all kept ones for `nil`). Call on `queue`.
    ///
    /// - Throws: ``HistoryError`` (`.notTracked`, `.expiredToken`, `.invalidToken`),
    ///   ``StoreError/Code/closed``.
    func historyTransactions(after token: HistoryToken?) throws -> [StoredTransaction] {
        let history = try trackedHistory()
        guard let token else { return history.transactions }
        try check(token, in: history)
        let start = history.transactions.partitioningIndex { $0.number > token.transactionNumber }
        return Array(history.transactions[start...])
    }

    /// Removes the durable transactions numbered below `token`'s, rewriting the store without
    /// them. Call on `queue`.
    ///
    /// - Throws: ``HistoryError``; ``StoreError`` when the store could not be rewritten (nothing
    ///   is purged then).
    func purgeHistory(before token: HistoryToken) throws {
        let durable = try trackedHistory()
        try check(token, in: durable, allowingExpired: true)
        try purgeHistory(through: token.transactionNumber - 1)
    }

    /// Removes the leading durable transactions committed before `date`. Call on `queue`.
    func purgeHistory(before date: Date) throws {
        let durable = try trackedHistory()
        guard let last = durable.transactions.prefix(while: { $0.timestamp < date }).last else { return }
        try purgeHistory(through: last.number)
    }

    /// Purges every transaction numbered up to `number` (a durable one's, or below).
    private func purgeHistory(through number: Int64) throws {
        guard let store, var purged = history, number > purged.purgedThrough else { return }
        let count = purged.transactions.partitioningIndex { $0.number > number }
        purged.transactions.removeFirst(count)
        purged.purgedThrough = number
        try store.compact(state(of: tables, history: purged))
        history = purged
        historyCommits.removeFirst(count)
        // The compacted store holds every commit, durably.
        didBecomeDurable(through: appendedCommits, tables: tables)
    }
}

extension Array {
    /// The index of the first element for which `belongsInSecondPartition` holds, the array being
    /// partitioned by it (every element for which it fails comes first): a binary search.
    func partitioningIndex(where belongsInSecondPartition: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = low + (high - low) / 2
            if belongsInSecondPartition(self[middle]) {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }
}
