import Dispatch
import Foundation

/// Owns a store and its committed rows; commits the contexts' saves one at a time.
///
/// Every method runs on the coordinator's serial queue (contexts, the manager and the
/// synchronization queue call in with ``sync(_:)``, which traps on re-entrance instead of
/// deadlocking), which serializes saves and makes conflict checks and commits one step: no
/// other save can slip in between. The main entry points check they are on it.
///
/// `@unchecked Sendable`: the mutable state (`tables`, `store`, ...) is only touched
/// on `queue`, except `synchronizedCommits`, only touched on the journal's synchronization
/// queue; everything else is immutable after `init`.
final class StoreCoordinator: @unchecked Sendable {
    /// Where all state lives: enter it with ``sync(_:)``, never `queue.sync` directly.
    let queue: DispatchQueue
    /// Marks `queue`, for ``sync(_:)``'s re-entrance check.
    let queueKey = DispatchSpecificKey<Bool>()
    /// Identifies this coordinator in save notifications, so that only its contexts merge them.
    let identifier = UUID()
    /// The manager that made this coordinator (its change streams follow every coordinator it
    /// makes), or `nil`.
    let managerIdentifier: UUID?
    let model: ManagedObjectModel
    let storeIdentifier: UUID
    /// One key per entity, shared by all its object IDs.
    let entityKeys: [EntityKey]

    private(set) var store: (any PersistentStore)?
    /// The rows after every commit so far: what the next commit is checked and applied against.
    private(set) var tables: [EntityTable]
    /// The rows after every durable commit: what contexts read. The same as `tables` except
    /// while group-committed saves wait for their synchronization (see
    /// ``waitUntilDurable(_:)``), so that no context sees rows a failed sync could still lose.
    var durableTables: [EntityTable] = []
    /// How many commits reached the store, and how many of them are durable.
    var appendedCommits = 0
    var durableCommits = 0
    /// The store's ``PersistentStore/synchronizationQueue`` (group commit); `nil` for stores
    /// that commit durably on `queue`.
    let synchronizationQueue: DispatchQueue?
    /// The store's file, for errors raised after it was closed.
    let storeURL: URL?
    /// How many commits the journal's synchronizations made durable: touched only on the
    /// journal's synchronization queue (a follower's check there needs no hop to `queue`).
    var synchronizedCommits = 0
    /// Why commits are refused after a group commit's synchronization failed.
    var durabilityFailure: StoreError?
    /// The committed rows' values of every uniqueness constraint.
    var uniquenessIndexes: [UniquenessIndex]
    /// The store's metadata; `nextPrimaryKeys` is kept in `tables`.
    private let baseMetadata: StoreMetadata
    /// The persistent history after every commit so far (`nil`: not tracked); see
    /// StoreCoordinator+History.swift.
    var history: StoreHistory?
    /// For each transaction of `history`: the commit that recorded it (0 for those the store
    /// returned when it opened), so that only durable ones are read.
    var historyCommits: [Int] = []

    /// Opens `store` for `model` and loads its rows, migrating them first when the store was
    /// written with another model or has custom steps to run.
    ///
    /// A migration converts every row in memory, checks the result loads, and only then asks
    /// the store to replace its contents (keeping the original as
    /// `pre-migration-<old version hash prefix>`).
    ///
    /// - Throws: ``StoreError`` if the store cannot be opened, is incompatible with the
    ///   model and cannot be migrated (nothing is written), a migration fails, or the store
    ///   holds rows that do not fit its schema. The store is closed again on failure.
    init(
        model: ManagedObjectModel,
        store: any PersistentStore,
        label: String,
        migrator: Migrator? = nil,
        managerIdentifier: UUID? = nil,
        tracksHistory: Bool = false
    ) throws {
        self.queue = DispatchQueue(label: "QueueData.StoreCoordinator.\(label)")
        queue.setSpecific(key: queueKey, value: true)
        self.model = model
        self.managerIdentifier = managerIdentifier
        var contents = try store.open(for: model)
        // A store that recorded history keeps recording it; one that can starts when asked.
        let history = contents.history ?? (tracksHistory && store.keepsHistory ? StoreHistory() : nil)
        do {
            if let problem = history?.problem {
                throw StoreError(.corrupted, "The store's persistent history is damaged: \(problem).")
            }
            let migrator = migrator ?? Migrator(model: model)
            if migrator.isNeeded(for: contents) {
                let originalHash = contents.metadata.versionHash
                // What is migrated must first be sound under its own schema: a damaged store is
                // refused as damaged, with the place, and the migration never meets rows it
                // cannot read.
                try Self.checkStored(contents)
                let migration = try migrator.migrate(contents)
                contents = migration.contents
                do {
                    self.tables = try Self.loadTables(contents, model: model)
                    self.uniquenessIndexes = try Self.uniquenessIndexes(of: tables, model: model)
                } catch let error as StoreError where error.code == .corrupted {
                    // The original loaded; what makes the migrated rows unusable is the migration.
                    throw StoreError(
                        .migrationFailed,
                        "The migrated rows are inconsistent: \(error.message) Nothing was changed.",
                        underlyingError: error)
                }
                try store.replaceContents(
                    with: Self.state(of: tables, metadata: contents.metadata, model: model, history: history),
                    keepingOriginalAs: "pre-migration-\(originalHash.prefix(12))")
                migration.progress.finish()
            } else {
                self.tables = try Self.loadTables(contents, model: model)
                self.uniquenessIndexes = try Self.uniquenessIndexes(of: tables, model: model)
            }
        } catch var error as StoreError {
            store.close()
            error.url = error.url ?? store.storeURL
            throw error
        } catch {
            store.close()
            throw error
        }
        self.store = store
        self.synchronizationQueue = store.synchronizationQueue
        self.storeURL = store.storeURL
        self.baseMetadata = contents.metadata
        self.storeIdentifier = contents.metadata.storeIdentifier
        self.entityKeys = model.entities.enumerated().map { index, entity in
            EntityKey(entityName: entity.name, storeIdentifier: contents.metadata.storeIdentifier, entityIndex: index)
        }
        self.durableTables = tables
        self.history = history
        self.historyCommits = Array(repeating: 0, count: history?.transactions.count ?? 0)
    }

    /// Closes the store when the last context and the manager are gone without `close()`,
    /// so its files and lock are released.
    deinit {
        // Nobody else holds the coordinator any more: its state is this thread's now.
        store?.close()
    }

    /// Checks `contents` against the schema they were written with, as an open without
    /// migration checks them against the model.
    private static func checkStored(_ contents: StoreContents) throws {
        let storedModel: ManagedObjectModel
        do {
            storedModel = try ManagedObjectModel(entities: contents.schema)
        } catch {
            throw StoreError(.corrupted, "The store's schema is not a valid model: \(error)")
        }
        guard storedModel.versionHash == contents.metadata.versionHash else {
            throw StoreError(
                .corrupted,
                "The store's versionHash (\(contents.metadata.versionHash.prefix(12))) is not the hash of its own "
                    + "schema (\(storedModel.versionHash.prefix(12))).")
        }
        _ = try loadTables(contents, model: storedModel)
    }

    static func loadTables(_ contents: StoreContents, model: ManagedObjectModel) throws -> [EntityTable] {
        guard contents.metadata.versionHash == model.versionHash else {
            throw StoreError(
                .incompatibleModel,
                "The store returned rows of a different model (version \(contents.metadata.versionHash.prefix(12)), "
                    + "current \(model.versionHash.prefix(12))) after migrating.")
        }
        let storedEntities = Dictionary(contents.schema.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var tables: [EntityTable] = []
        for entity in model.entities {
            let rows = contents.rows[entity.name] ?? []
            let nextKey = contents.metadata.nextPrimaryKeys[entity.name] ?? 1
            guard nextKey > 0, nextKey < Int64.max else {
                throw StoreError(
                    .corrupted, "The store's next primary key of '\(entity.name)' is out of range (\(nextKey)).")
            }
            guard let stored = storedEntities[entity.name] else {
                guard rows.isEmpty else {
                    throw StoreError(.corrupted, "The store has rows of '\(entity.name)' but no schema for it.")
                }
                var table = EntityTable(rows: [], nextPrimaryKey: nextKey)
                table.index(columns: entity.indexedColumns)
                tables.append(table)
                continue
            }
            // Map the stored column order onto the model's: the hash ignores order.
            let mapping: [Int] =
                try entity.attributes.map { attribute in
                    guard let index = stored.index(ofAttribute: attribute.name) else {
                        throw StoreError(
                            .corrupted,
                            "The store's schema of '\(entity.name)' lacks the attribute '\(attribute.name)'.")
                    }
                    return index
                }
                + entity.relationships.map { relationship in
                    guard let index = stored.column(ofRelationship: relationship.name) else {
                        throw StoreError(
                            .corrupted,
                            "The store's schema of '\(entity.name)' lacks the relationship '\(relationship.name)'.")
                    }
                    return index
                }
            let isIdentity = mapping == Array(mapping.indices) && stored.columnCount == mapping.count
            var seen = Set<Int64>()
            var committed: [CommittedRow] = []
            committed.reserveCapacity(rows.count)
            /// A refusal of `row`, with its place in the file when the store knows it.
            func refusal(_ row: StoredRow, _ message: String) -> StoreError {
                var error = StoreError(.corrupted, message)
                contents.rowLocator?.locate(&error, entity.name, row.primaryKey)
                return error
            }
            for row in rows {
                guard row.primaryKey > 0, row.primaryKey < Int64.max, seen.insert(row.primaryKey).inserted,
                    row.values.count == stored.columnCount
                else {
                    throw refusal(
                        row,
                        "Row \(row.primaryKey) of '\(entity.name)' is duplicated, has a non-positive key, "
                            + "or has \(row.values.count) values for \(stored.columnCount) columns.")
                }
                guard row.primaryKey < nextKey else {
                    throw refusal(
                        row,
                        "Row \(row.primaryKey) of '\(entity.name)' has a key at or above the store's next primary key "
                            + "(\(nextKey)): keys would be handed out twice.")
                }
                let values = isIdentity ? row.values : mapping.map { row.values[$0] }
                for (value, attribute) in zip(values, entity.attributes)
                where !value.fits(attribute.type, isOptional: attribute.isOptional) {
                    throw refusal(
                        row,
                        "Row \(row.primaryKey) of '\(entity.name)' holds \(value) in '\(attribute.name)', "
                            + "which is of type \(attribute.type.rawValue).")
                }
                for (column, check) in entity.attributeDecodingChecks {
                    do {
                        try check(values[column])
                    } catch {
                        let attribute = entity.attributes[column]
                        throw refusal(
                            row,
                            "Row \(row.primaryKey) of '\(entity.name)' holds a value in '\(attribute.name)' that does not "
                                + "decode as its declared type \(attribute.valueTypeName ?? "(transformable)"): \(error)"
                        )
                    }
                }
                for (value, relationship) in zip(values[entity.attributes.count...], entity.relationships)
                where !relationship.accepts(value) || RelationshipKeys.decode(value).contains(where: { $0 <= 0 }) {
                    throw refusal(
                        row,
                        "Row \(row.primaryKey) of '\(entity.name)' holds \(value) in the relationship "
                            + "'\(relationship.name)', which is not a valid reference.")
                }
                committed.append(CommittedRow(primaryKey: row.primaryKey, version: 1, values: values))
            }
            var table = EntityTable(rows: committed, nextPrimaryKey: nextKey)
            table.index(columns: entity.indexedColumns)
            tables.append(table)
        }
        try checkReferences(tables, model: model, locator: contents.rowLocator)
        return tables
    }

    /// Checks that every relationship points to rows that exist and point back: a store edited
    /// by hand may not.
    private static func checkReferences(
        _ tables: [EntityTable],
        model: ManagedObjectModel,
        locator: RowLocator?
    ) throws {
        // Missing rows first (the more telling error), then one-sided references.
        for checksInverse in [false, true] {
            do {
                try checkReferences(tables, model: model, inverses: checksInverse)
            } catch let failure as ReferenceFailure {
                var error = StoreError(.corrupted, failure.message)
                locator?.locate(&error, failure.entityName, failure.primaryKey)
                throw error
            }
        }
    }

    /// A reference that does not hold: where, and why.
    private struct ReferenceFailure: Error {
        var entityName: String
        var primaryKey: Int64
        var message: String
    }

    private static func checkReferences(_ tables: [EntityTable], model: ManagedObjectModel, inverses: Bool) throws {
        for (entityIndex, entity) in model.entities.enumerated() where !entity.relationships.isEmpty {
            let links = model.relationshipLinks[entityIndex]
            try tables[entityIndex].snapshot.forEachLiveRow { row in
                for (offset, link) in links.enumerated() {
                    let column = entity.attributes.count + offset
                    for key in RelationshipKeys.decode(row.values[column]) {
                        let destination = model.entities[link.destinationIndex]
                        guard let target = tables[link.destinationIndex].row(for: key) else {
                            throw ReferenceFailure(
                                entityName: entity.name, primaryKey: row.primaryKey,
                                message:
                                    "\(entity.name) \(row.primaryKey)'s relationship '\(link.relationship.name)' refers to "
                                    + "\(destination.name) \(key), which does not exist.")
                        }
                        guard
                            !inverses
                                || RelationshipKeys.decode(target.values[link.inverseColumn]).contains(row.primaryKey)
                        else {
                            throw ReferenceFailure(
                                entityName: entity.name, primaryKey: row.primaryKey,
                                message:
                                    "\(entity.name) \(row.primaryKey)'s relationship '\(link.relationship.name)' refers to "
                                    + "\(destination.name) \(key), whose inverse '\(link.inverse.name)' does not refer back."
                            )
                        }
                    }
                }
            }
        }
    }

    // MARK: Reading (call on `queue`)

    /// Snapshots of the given entities' committed rows.
    func snapshots(of entityIndexes: [Int]) throws -> [TableSnapshot] {
        assertOnQueue()
        try checkOpen()
        return entityIndexes.map { durableTables[$0].snapshot }
    }

    /// The committed row of one object, if it exists.
    func committedRow(entityIndex: Int, primaryKey: Int64) throws -> CommittedRow? {
        assertOnQueue()
        try checkOpen()
        return durableTables[entityIndex].row(for: primaryKey)
    }

    /// The committed rows of several objects of one entity (`nil` for missing ones).
    func committedRows(entityIndex: Int, primaryKeys: [Int64]) throws -> [CommittedRow?] {
        assertOnQueue()
        try checkOpen()
        return primaryKeys.map { durableTables[entityIndex].row(for: $0) }
    }

    /// The number of committed rows.
    var rowCount: Int {
        durableTables.reduce(0) { $0 + $1.liveCount }
    }

    private func checkOpen() throws {
        guard store != nil else {
            throw StoreError(.closed, "The store was closed; its manager must load it again.")
        }
    }

    // MARK: Committing (call on `queue`)

    /// Checks, resolves, commits and applies one save, in one step on the coordinator's queue.
    ///
    /// Every updated or deleted object whose committed version is no longer the one its
    /// context last saw is a conflict, settled by the request's merge policy.
    ///
    /// A store with group commit (the journal) appends the save without waiting for the disk:
    /// the outcome's ``SaveOutcome/durabilityTicket`` is then to be passed to
    /// ``waitUntilDurable(_:)`` before the save is reported. Other stores commit durably here.
    ///
    /// - Throws: ``MergeConflictError`` for conflicts the policy leaves failing;
    ///   ``StoreError`` when the store cannot commit. Nothing is applied on failure.
    func commit(_ request: SaveRequest) throws -> SaveOutcome {
        assertOnQueue()
        guard let store else {
            throw StoreError(.closed, "The store was closed; its manager must load it again.")
        }
        if let durabilityFailure {
            throw StoreError(
                .closed, "The store refuses commits after a failed write or sync; its manager must load it again.",
                url: store.storeURL, underlyingError: durabilityFailure)
        }
        // Keys for the inserted rows come first: relationships in this save refer to them.
        var nextKeys = tables.map(\.nextPrimaryKey)
        var insertKeys: [Int64] = []
        insertKeys.reserveCapacity(request.inserts.count)
        var permanentKeys: [Int64: Int64] = [:]
        for insert in request.inserts {
            let key = nextKeys[insert.entityIndex]
            guard key < Int64.max else {
                throw StoreError(.io, "The primary keys of '\(model.entities[insert.entityIndex].name)' are exhausted.")
            }
            nextKeys[insert.entityIndex] = key + 1
            insertKeys.append(key)
            permanentKeys[insert.temporaryKey] = key
        }
        let relational = hasRelationships
        var request = request
        if relational {
            for index in request.inserts.indices {
                request.inserts[index].values = translatingTemporaryKeys(
                    request.inserts[index].values, entityIndex: request.inserts[index].entityIndex,
                    permanentKeys: permanentKeys)
            }
            for index in request.updates.indices {
                let update = request.updates[index]
                let translated = translatingTemporaryKeys(
                    update.objectValues, entityIndex: update.entityIndex, permanentKeys: permanentKeys)
                request.updates[index].changedValues = update.changedSlots.map { translated[$0] }
            }
            for index in request.restores.indices {
                request.restores[index].values = translatingTemporaryKeys(
                    request.restores[index].values, entityIndex: request.restores[index].entityIndex,
                    permanentKeys: permanentKeys)
            }
        }
        var plan = CommitPlan()
        // Rows written back by an undo: restored where they are still deleted; where another
        // save wrote them back meanwhile, an update of what the context last saw.
        for restore in request.restores {
            let key = RowKey(entityIndex: restore.entityIndex, primaryKey: restore.primaryKey)
            if tables[restore.entityIndex].row(for: restore.primaryKey) == nil {
                plan.restores.append((key, restore.values, restore.baseVersion))
            } else {
                let slots = restore.values.indices.filter {
                    !StoredValue.isSame(restore.values[$0], restore.snapshot[$0])
                }
                request.updates.append(
                    SaveRequest.Update(
                        entityIndex: restore.entityIndex, primaryKey: restore.primaryKey,
                        baseVersion: restore.baseVersion, snapshot: restore.snapshot, changedSlots: slots,
                        changedValues: slots.map { restore.values[$0] }))
            }
        }
        /// A conflicting object: what the context based its change on, what is committed now,
        /// and what the context wants (`nil`: delete).
        struct Conflicting {
            var key: RowKey
            var baseVersion: Int64
            var snapshot: [StoredValue]
            var current: CommittedRow?
            var objectValues: [StoredValue]?
        }
        var conflicting: [Conflicting] = []

        for update in request.updates {
            let key = RowKey(entityIndex: update.entityIndex, primaryKey: update.primaryKey)
            let current = tables[update.entityIndex].row(for: update.primaryKey)
            if let current, current.version == update.baseVersion {
                plan.updates.append((key, update.objectValues, update.changedSlots))
            } else if relational, let current,
                onlyToManyChanged(entityIndex: key.entityIndex, snapshot: update.snapshot, committed: current.values)
            {
                // Only to-many relationships changed meanwhile: additions and removals merge.
                let object = update.objectValues
                var merged = current.values
                for slot in update.changedSlots {
                    merged[slot] = object[slot]
                }
                merged = mergingToMany(
                    merged, entityIndex: key.entityIndex, snapshot: update.snapshot, object: object,
                    committed: current.values)
                plan.updates.append(
                    (key, merged, merged.indices.filter { !StoredValue.isSame(merged[$0], current.values[$0]) }))
            } else {
                conflicting.append(
                    Conflicting(
                        key: key, baseVersion: update.baseVersion, snapshot: update.snapshot, current: current,
                        objectValues: update.objectValues))
            }
        }
        for delete in request.deletes {
            let key = RowKey(entityIndex: delete.entityIndex, primaryKey: delete.primaryKey)
            guard let current = tables[delete.entityIndex].row(for: delete.primaryKey) else {
                continue  // Deleted already: the goal is reached, no conflict.
            }
            if current.version == delete.baseVersion {
                plan.deletes.append(key)
            } else {
                conflicting.append(
                    Conflicting(
                        key: key, baseVersion: delete.baseVersion, snapshot: delete.snapshot, current: current,
                        objectValues: nil))
            }
        }

        if !conflicting.isEmpty {
            let policy = request.mergePolicy
            // Each conflict's outcome: nil keeps the store's version, .some(nil) deletes,
            // .some(row) writes the row.
            var outcomes: [[StoredValue]??] = []
            if policy.resolvesOnRows {
                outcomes = conflicting.map {
                    policy.resolveOnRows(snapshot: $0.snapshot, committed: $0.current?.values, object: $0.objectValues)
                }
            } else {
                let conflicts = conflicting.map {
                    conflict($0.key, $0.baseVersion, $0.snapshot, $0.current, objectValues: $0.objectValues)
                }
                let resolutions = policy.resolutions(for: conflicts)
                guard resolutions.count == conflicts.count else {
                    fatalError(
                        "QueueData: the merge policy '\(policy)' returned \(resolutions.count) resolutions "
                            + "for \(conflicts.count) conflicts; return one per conflict.")
                }
                let failed = zip(conflicts, resolutions).filter { $0.1 == .fail }.map(\.0)
                guard failed.isEmpty else {
                    throw MergeConflictError(conflicts: failed)
                }
                outcomes = zip(conflicting, resolutions).map { item, resolution in
                    switch resolution {
                    case .fail, .keepStoreVersion:
                        return nil
                    case .delete:
                        return .some(nil)
                    case .write(let values):
                        let entity = model.entities[item.key.entityIndex]
                        var row = item.current?.values ?? item.snapshot
                        for (name, value) in values {
                            guard let slot = entity.index(ofAttribute: name),
                                value.fits(entity.attributes[slot].type, isOptional: entity.attributes[slot].isOptional)
                            else {
                                fatalError(
                                    "QueueData: the merge policy '\(policy)' wrote \(value) to "
                                        + "'\(entity.name).\(name)', which does not exist or does not take it.")
                            }
                            row[slot] = value
                        }
                        return .some(row)
                    }
                }
            }
            let mergesToMany: Bool
            if case .overwrite = policy.kind {
                mergesToMany = false
            } else {
                mergesToMany = relational
            }
            for (item, outcome) in zip(conflicting, outcomes) {
                switch outcome {
                case .none:
                    break
                case .some(.none):
                    if item.current != nil {
                        plan.deletes.append(item.key)
                    }
                case .some(.some(var row)):
                    if mergesToMany, let current = item.current, let object = item.objectValues {
                        // To-many relationships both sides changed keep both sides' additions.
                        row = mergingToMany(
                            row, entityIndex: item.key.entityIndex, snapshot: item.snapshot, object: object,
                            committed: current.values)
                    }
                    if let current = item.current {
                        let changed = row.indices.filter { !StoredValue.isSame(row[$0], current.values[$0]) }
                        plan.updates.append((item.key, row, changed))
                    } else {
                        plan.restores.append((item.key, row, item.baseVersion))
                    }
                }
            }
        }

        var insertedValues = request.inserts.map(\.values)
        var inserts = request.inserts
        var upserts: [Int: RowKey] = [:]
        if !uniquenessIndexes.isEmpty {
            upserts = try resolveUniqueness(
                &plan, insertedValues: &insertedValues, inserts: inserts, insertKeys: insertKeys,
                policy: request.mergePolicy)
            if !upserts.isEmpty {
                let kept = inserts.indices.filter { upserts[$0] == nil }
                inserts = kept.map { inserts[$0] }
                insertKeys = kept.map { insertKeys[$0] }
                insertedValues = kept.map { insertedValues[$0] }
            }
        }
        if relational {
            try repairRelationships(&plan, insertedValues: &insertedValues, inserts: inserts, insertKeys: insertKeys)
        }
        var insertedRows: [CommittedRow] = []
        insertedRows.reserveCapacity(inserts.count)
        for (key, values) in zip(insertKeys, insertedValues) {
            insertedRows.append(CommittedRow(primaryKey: key, version: 1, values: values))
        }

        // The change set, built in place, one array per entity: appending to a copy taken out
        // of a dictionary would copy the whole array on every append.
        var changes = model.entities.map { ChangeSet.EntityChanges(entityName: $0.name) }
        // The tables after the change, built on a copy: only the chunks it touches are copied,
        // and nothing is applied unless the store commits.
        var updatedTables = tables
        var changedRows: [(entityIndex: Int, row: CommittedRow)] = []
        var restoredRows: [(entityIndex: Int, row: CommittedRow)] = []
        for (insert, row) in zip(inserts, insertedRows) {
            changes[insert.entityIndex].inserted.append(StoredRow(primaryKey: row.primaryKey, values: row.values))
            updatedTables[insert.entityIndex].append(row)
        }
        for (key, values, baseVersion) in plan.restores {
            let row = updatedTables[key.entityIndex].restore(
                primaryKey: key.primaryKey, values: values, versionAtLeast: baseVersion)
            changes[key.entityIndex].inserted.append(StoredRow(primaryKey: key.primaryKey, values: values))
            restoredRows.append((key.entityIndex, row))
        }
        for (key, values, changedSlots) in plan.updates where !changedSlots.isEmpty {
            let version = (tables[key.entityIndex].row(for: key.primaryKey)?.version ?? 0) + 1
            let row = CommittedRow(primaryKey: key.primaryKey, version: version, values: values)
            changes[key.entityIndex].updated.append(
                ChangeSet.RowUpdate(primaryKey: key.primaryKey, changedAttributes: changedSlots, values: values))
            updatedTables[key.entityIndex].replace(with: row)
            changedRows.append((key.entityIndex, row))
        }
        for key in plan.deletes {
            changes[key.entityIndex].deleted.append(key.primaryKey)
            updatedTables[key.entityIndex].remove(key.primaryKey)
        }
        var nextPrimaryKeys: [String: Int64] = [:]
        for (index, key) in nextKeys.enumerated() where key != tables[index].nextPrimaryKey {
            nextPrimaryKeys[model.entities[index].name] = key
            updatedTables[index].nextPrimaryKey = key
        }
        var changeSet = ChangeSet(entities: changes.filter { !$0.isEmpty }, nextPrimaryKeys: nextPrimaryKeys)
        if !changeSet.entities.isEmpty {
            var updatedHistory = history
            if let history {
                let transaction = StoredTransaction(
                    number: history.lastTransactionNumber + 1, timestamp: Date(), author: request.author,
                    contextName: request.contextName, changes: changeSet,
                    columnNames: { [model] in model.entitiesByName[$0]!.columnName($1) })
                changeSet.transaction = transaction
                updatedHistory?.append(transaction)
            }
            try record(changeSet, in: store, resultingState: state(of: updatedTables, history: updatedHistory))
            if let updatedHistory {
                history = updatedHistory
                historyCommits.append(appendedCommits)
            }
        }
        let before = tables
        tables = updatedTables
        if durableCommits == appendedCommits {
            durableTables = tables
        }
        updateUniquenessIndexes(
            before: before,
            written: zip(inserts, insertedRows).map { ($0.entityIndex, $1) } + restoredRows + changedRows,
            deleted: plan.deletes)

        var finalRows: [RowKey: CommittedRow?] = [:]
        for update in request.updates {
            let key = RowKey(entityIndex: update.entityIndex, primaryKey: update.primaryKey)
            finalRows[key] = .some(tables[key.entityIndex].row(for: key.primaryKey))
        }
        for delete in request.deletes {
            let key = RowKey(entityIndex: delete.entityIndex, primaryKey: delete.primaryKey)
            finalRows[key] = .some(tables[key.entityIndex].row(for: key.primaryKey))
        }
        for restore in request.restores {
            let key = RowKey(entityIndex: restore.entityIndex, primaryKey: restore.primaryKey)
            finalRows[key] = .some(tables[key.entityIndex].row(for: key.primaryKey))
        }
        // Every insert's row, in request order: an upserted one's is the row it went into.
        var allInsertedRows = insertedRows
        if !upserts.isEmpty {
            var rowsByKey: [RowKey: CommittedRow] = [:]
            for (insert, row) in zip(inserts, insertedRows) {
                rowsByKey[RowKey(entityIndex: insert.entityIndex, primaryKey: row.primaryKey)] = row
            }
            var kept = insertedRows.makeIterator()
            allInsertedRows = request.inserts.indices.map { position in
                guard let target = upserts[position] else { return kept.next()! }
                return rowsByKey[target] ?? tables[target.entityIndex].row(for: target.primaryKey)!
            }
        }
        // A save that wrote nothing still read rows of saves that may not be durable yet.
        return SaveOutcome(
            inserted: allInsertedRows, upsertedInserts: Set(upserts.keys), finalRows: finalRows,
            changedRows: changedRows, restoredRows: restoredRows, deletedKeys: plan.deletes,
            durabilityTicket: durableCommits < appendedCommits ? appendedCommits : nil)
    }

    /// Runs ``repairInverses(rows:written:deleted:temporaryKeys:)`` over the plan and the
    /// inserted rows, and takes its result back into them.
    private func repairRelationships(
        _ plan: inout CommitPlan,
        insertedValues: inout [[StoredValue]],
        inserts: [SaveRequest.Insert],
        insertKeys: [Int64]
    ) throws {
        var rows: [RowKey: [StoredValue]] = [:]
        var written: [RowKey] = []
        var temporaryKeys: [RowKey: Int64] = [:]
        for (insert, (key, values)) in zip(inserts, zip(insertKeys, insertedValues)) {
            let rowKey = RowKey(entityIndex: insert.entityIndex, primaryKey: key)
            rows[rowKey] = values
            written.append(rowKey)
            temporaryKeys[rowKey] = insert.temporaryKey
        }
        for restore in plan.restores {
            rows[restore.key] = restore.values
            written.append(restore.key)
        }
        for update in plan.updates {
            rows[update.key] = update.values
            written.append(update.key)
        }
        try repairInverses(rows: &rows, written: &written, deleted: Set(plan.deletes), temporaryKeys: temporaryKeys)
        for (index, (insert, key)) in zip(inserts, insertKeys).enumerated() {
            insertedValues[index] = rows[RowKey(entityIndex: insert.entityIndex, primaryKey: key)]!
        }
        for index in plan.restores.indices {
            plan.restores[index].values = rows[plan.restores[index].key]!
        }
        let inserted = Set(temporaryKeys.keys)
        let restored = Set(plan.restores.map(\.key))
        plan.updates = written.filter { !inserted.contains($0) && !restored.contains($0) }.compactMap { key in
            guard let values = rows[key], let current = tables[key.entityIndex].row(for: key.primaryKey) else {
                return nil
            }
            return (key, values, values.indices.filter { !StoredValue.isSame(values[$0], current.values[$0]) })
        }
    }

    /// The changes a commit makes, once conflicts are resolved.
    struct CommitPlan {
        var updates: [(key: RowKey, values: [StoredValue], changedSlots: [Int])] = []
        var restores: [(key: RowKey, values: [StoredValue], baseVersion: Int64)] = []
        var deletes: [RowKey] = []
    }

    private func conflict(
        _ key: RowKey,
        _ baseVersion: Int64,
        _ snapshot: [StoredValue],
        _ current: CommittedRow?,
        objectValues: [StoredValue]?
    ) -> MergeConflict {
        let entity = model.entities[key.entityIndex]
        func named(_ values: [StoredValue]) -> [String: StoredValue] {
            Dictionary(uniqueKeysWithValues: values.indices.map { (entity.columnName($0), values[$0]) })
        }
        return MergeConflict(
            objectID: ObjectID(key: entityKeys[key.entityIndex], rawValue: key.primaryKey),
            snapshotVersion: baseVersion, committedVersion: current?.version, snapshotValues: named(snapshot),
            committedValues: current.map { named($0.values) }, objectValues: objectValues.map(named))
    }

    /// Every durable committed row: what a conversion to another store writes.
    ///
    /// - Throws: ``StoreError/Code/closed`` when the store was closed.
    func durableState() throws -> StoreState {
        assertOnQueue()
        try checkOpen()
        return state(of: durableTables, history: durableHistory)
    }

    /// The store's rows as `tables` hold them, with `history`.
    func state(of tables: [EntityTable], history: StoreHistory?) -> StoreState {
        Self.state(of: tables, metadata: baseMetadata, model: model, history: history)
    }

    static func state(
        of tables: [EntityTable],
        metadata: StoreMetadata,
        model: ManagedObjectModel,
        history: StoreHistory?
    ) -> StoreState {
        var metadata = metadata
        // Entities the model no longer has keep their counters (see `Migrator.migrate`).
        for (entity, table) in zip(model.entities, tables) {
            metadata.nextPrimaryKeys[entity.name] = table.nextPrimaryKey
        }
        return StoreState(
            metadata: metadata, entities: model.entities, tables: tables.map(\.snapshot), history: history)
    }

    /// Asks the store to compact itself from the current rows.
    ///
    /// - Throws: ``StoreError`` if the store is closed or the compaction failed (the store
    ///   still holds every committed save).
    func compact() throws {
        assertOnQueue()
        guard let store else {
            throw StoreError(.closed, "The store was closed; its manager must load it again.")
        }
        try store.compact(state(of: tables, history: history))
        // The compacted store holds every commit, durably.
        didBecomeDurable(through: appendedCommits, tables: tables)
    }

    /// Closes the store. Later calls throw ``StoreError/Code/closed``.
    func close() {
        assertOnQueue()
        store?.close()
        store = nil
        tables = []
        durableTables = []
        history = nil
        historyCommits = []
    }
}
