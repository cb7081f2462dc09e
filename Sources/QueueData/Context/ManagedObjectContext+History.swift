import Foundation

/// Persistent history: what the store's saves changed, kept as transactions (see the "Undo,
/// Child Contexts and History" article). History is tracked when the manager's delegate asks for
/// it (``ContextManagerDelegate/tracksPersistentHistory``) on a store that can keep it (the
/// journal and in-memory stores), or when the store recorded it before.
extension ManagedObjectContext {
    /// The author recorded with this context's saves in the persistent history (`nil` by
    /// default), to tell an app's own changes from an import's or a tool's when reading it back.
    ///
    /// - Important: Call on the context's queue.
    public var transactionAuthor: String? {
        get {
            checkConfined()
            return transactionAuthorValue
        }
        set {
            checkConfined()
            transactionAuthorValue = newValue
        }
    }

    /// The token of the last durable transaction of the store's history: keep it, and ask later
    /// for what changed since with ``history(after:author:entityName:)``.
    ///
    /// - Throws: ``HistoryError/Code/notTracked`` when the store keeps no history;
    ///   ``StoreError/Code/closed`` when it was closed.
    /// - Important: Call on the context's queue.
    public func currentHistoryToken() throws -> HistoryToken {
        checkConfined()
        return try coordinator.sync { try coordinator.currentHistoryToken() }
    }

    /// The transactions committed after `token`, oldest first: every save of any context of the
    /// store, in this run or an earlier one, that is durable.
    ///
    /// - Parameters:
    ///   - token: Where to start: a ``HistoryToken`` from ``currentHistoryToken()`` or a
    ///     transaction; `nil` for every transaction kept.
    ///   - author: Only transactions of this ``transactionAuthor``.
    ///   - entityName: Only changes to objects of this entity and its subentities; a transaction
    ///     without one is left out.
    /// - Throws: ``HistoryError``: `.notTracked`; `.expiredToken` when transactions after
    ///   `token` were purged; `.invalidToken` for a token of another store or beyond its history.
    ///   ``StoreError/Code/closed`` when the store was closed.
    /// - Important: Call on the context's queue.
    public func history(
        after token: HistoryToken?,
        author: String? = nil,
        entityName: String? = nil
    ) throws -> [HistoryTransaction] {
        checkConfined()
        let stored = try coordinator.sync { try coordinator.historyTransactions(after: token) }
        var entityNames: Set<String>?
        if let entityName {
            let indexes = model.entityIndexes(named: entityName, includingSubentities: true)
            entityNames = indexes.isEmpty ? [entityName] : Set(indexes.map { model.entities[$0].name })
        }
        var keys: [String: EntityKey] = [:]
        var transactions: [HistoryTransaction] = []
        for transaction in stored where author == nil || transaction.author == author {
            var changes: [HistoryChange] = []
            for entity in transaction.entities where entityNames?.contains(entity.entityName) ?? true {
                let key = historyEntityKey(entity.entityName, cache: &keys)
                for primaryKey in entity.inserted {
                    changes.append(HistoryChange(objectID: ObjectID(key: key, rawValue: primaryKey), kind: .insert))
                }
                for update in entity.updated {
                    changes.append(
                        HistoryChange(
                            objectID: ObjectID(key: key, rawValue: update.primaryKey), kind: .update,
                            updatedProperties: Set(update.properties)))
                }
                for primaryKey in entity.deleted {
                    changes.append(HistoryChange(objectID: ObjectID(key: key, rawValue: primaryKey), kind: .delete))
                }
            }
            if entityNames != nil && changes.isEmpty {
                continue
            }
            transactions.append(
                HistoryTransaction(
                    token: HistoryToken(
                        storeIdentifier: coordinator.storeIdentifier, transactionNumber: transaction.number),
                    timestamp: transaction.timestamp, author: transaction.author, contextName: transaction.contextName,
                    changes: changes))
        }
        return transactions
    }

    /// The transactions after `token` that changed objects of `entity` (or of its subclasses):
    /// ``history(after:author:entityName:)`` with the class's entity.
    ///
    /// - Important: Call on the context's queue.
    public func history<Object: ManagedObject>(
        after token: HistoryToken?,
        author: String? = nil,
        entity: Object.Type
    ) throws -> [HistoryTransaction] {
        checkConfined()
        guard let index = model.entityIndexes(for: entity, includingSubentities: false).first else {
            fatalError("QueueData: \(entity) is not an entity of the context's model; add it to the model.")
        }
        return try history(after: token, author: author, entityName: model.entities[index].name)
    }

    /// The key of an entity named in the history: the model's, or one of its own for an entity the
    /// model no longer has.
    private func historyEntityKey(_ entityName: String, cache: inout [String: EntityKey]) -> EntityKey {
        if let index = model.entityIndexes[entityName] {
            return coordinator.entityKeys[index]
        }
        if let key = cache[entityName] {
            return key
        }
        let key = EntityKey(entityName: entityName, storeIdentifier: coordinator.storeIdentifier, entityIndex: nil)
        cache[entityName] = key
        return key
    }

    /// Removes the transactions before `token`'s (the one it names stays, so `token` stays valid
    /// for ``history(after:author:entityName:)``), rewriting the store without them (a compaction
    /// of the journal). Tokens before the purge point expire.
    ///
    /// - Throws: ``HistoryError`` (`.notTracked`, `.invalidToken`); ``StoreError`` when the store
    ///   could not be rewritten: nothing is purged then.
    /// - Important: Call on the context's queue.
    public func purgeHistory(before token: HistoryToken) throws {
        checkConfined()
        try coordinator.sync { try coordinator.purgeHistory(before: token) }
    }

    /// Removes the transactions committed before `date`: every transaction from the start of the
    /// history up to the first one committed at or after `date` (timestamps follow the clock,
    /// which may step back).
    ///
    /// - Throws: As ``purgeHistory(before:)-(HistoryToken)``.
    /// - Important: Call on the context's queue.
    public func purgeHistory(before date: Date) throws {
        checkConfined()
        try coordinator.sync { try coordinator.purgeHistory(before: date) }
    }

    /// Brings the context up to date with `transactions` (from ``history(after:author:entityName:)``),
    /// as a merge of the saves they record: registered objects they updated take their current
    /// committed values (local unsaved edits stay), objects they deleted leave the context,
    /// objects they inserted that the context does not hold are reported as inserted; one ``objectsDidChangeNotification`` says
    /// what changed. Objects take their values as they are now, so the transactions may be in any
    /// order, old, or already merged; changes to other stores' objects or to entities the model
    /// no longer has are ignored.
    ///
    /// - Important: Call on the context's queue. A child context traps: merge into its parent.
    public func mergeChanges(from transactions: [HistoryTransaction]) {
        checkConfined()
        if parent != nil {
            fatalError(
                "QueueData: mergeChanges(from:) was called on child context '\(name)'. A child sees the store "
                    + "through its parent: merge the history into the parent context.")
        }
        var inserted = Set<ObjectID>()
        var touched: [Int: [Int64]] = [:]
        var seen = Set<ObjectID>()
        for transaction in transactions {
            for change in transaction.changes {
                guard let primaryKey = change.objectID.primaryKey, let entityIndex = entityIndex(of: change.objectID)
                else { continue }
                if change.kind == .insert {
                    inserted.insert(change.objectID)
                }
                if seen.insert(change.objectID).inserted {
                    touched[entityIndex, default: []].append(primaryKey)
                }
            }
        }
        guard !touched.isEmpty else { return }
        let entityIndexes = touched.keys.sorted()
        let rows: [[CommittedRow?]]
        do {
            rows = try coordinator.sync {
                try entityIndexes.map { try coordinator.committedRows(entityIndex: $0, primaryKeys: touched[$0]!) }
            }
        } catch {
            return  // The store was closed: there is nothing to catch up with.
        }
        var insertedIDs: [ObjectID] = []
        var updated: [(ObjectID, CommittedRow)] = []
        var deleted: [ObjectID] = []
        for (entityIndex, entityRows) in zip(entityIndexes, rows) {
            for (primaryKey, row) in zip(touched[entityIndex]!, entityRows) {
                let objectID = ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: primaryKey)
                if let row {
                    // An object the context holds is known here already: not news.
                    if inserted.contains(objectID) && registry[entityIndex][primaryKey] == nil {
                        insertedIDs.append(objectID)
                    }
                    updated.append((objectID, row))
                } else {
                    deleted.append(objectID)
                }
            }
        }
        confinement.withMarkedBlock {
            merge(
                SaveChanges(
                    coordinatorIdentifier: coordinator.identifier, inserted: insertedIDs, updated: updated,
                    deleted: deleted))
        }
    }
}
