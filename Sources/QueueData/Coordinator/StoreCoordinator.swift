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
    /// Where all state lives: private to this file, entered only with ``sync(_:)``.
    private let queue: DispatchQueue
    /// Marks `queue`, for ``sync(_:)``'s re-entrance check.
    private let queueKey = DispatchSpecificKey<Bool>()
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
        // The built-in file stores hand their rows over as they decoded them (see `loadTables`).
        var contents =
            try (store as? JournalStore)?.open(for: model, packingRows: true)
            ?? (store as? JSONFileStore)?.open(for: model, packingRows: true)
            ?? store.open(for: model)
        // A store that recorded history keeps recording it; one that can starts when asked.
        let history = contents.history ?? (tracksHistory && store.keepsHistory ? StoreHistory() : nil)
        do {
            if let problem = history?.problem {
                throw StoreError(.corrupted, "The store's persistent history is damaged: \(problem).")
            }
            let migrator = migrator ?? Migrator(model: model)
            if migrator.isNeeded(for: contents) {
                contents.unpackRows()
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
                // Accepted: a built-in file store lets go of the originals earlier migrations
                // kept (an open refused above keeps them, to roll back by hand).
                (store as? JournalStore)?.lifecycle.contentsAccepted()
                (store as? JSONFileStore)?.lifecycle.contentsAccepted()
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
            EntityKey(
                entityName: entity.name, storeIdentifier: contents.metadata.storeIdentifier, entityIndex: index,
                entity: entity)
        }
        self.durableTables = tables
        self.history = history
        self.historyCommits = Array(repeating: 0, count: history?.transactions.count ?? 0)
    }

    /// Closes the store when the last context and the manager are gone without `close()`,
    /// so its files and lock are released.
    deinit {
        // libdispatch keys specifics by the key object's address: the mark goes before the key,
        // or a key allocated at the same address later would read it.
        defer { queue.setSpecific(key: queueKey, value: nil) }
        // The store is closed on the coordinator's queue, like every other call it gets (a store
        // may rely on its calls never running concurrently); inline when the last reference went
        // away on that queue already, where waiting for it would wait for itself. Nothing else
        // holds the coordinator, so nothing else can be running there.
        guard let store else { return }
        if isOnQueue {
            store.close()
        } else {
            queue.sync { store.close() }
        }
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
            // The file store's rows as it decoded them when they are all in key order (the rule),
            // otherwise as stored rows.
            let entityPacked = contents.packedRows?[entity.name]
            let packed = entityPacked.flatMap { $0.isInKeyOrder ? $0 : nil }
            let rows = packed != nil ? [] : entityPacked?.storedRows() ?? contents.rows[entity.name] ?? []
            let nextKey = contents.metadata.nextPrimaryKeys[entity.name] ?? 1
            guard nextKey > 0, nextKey < Int64.max else {
                throw StoreError(
                    .corrupted, "The store's next primary key of '\(entity.name)' is out of range (\(nextKey)).")
            }
            guard let stored = storedEntities[entity.name] else {
                guard rows.isEmpty, (packed?.count ?? 0) == 0 else {
                    throw StoreError(.corrupted, "The store has rows of '\(entity.name)' but no schema for it.")
                }
                var table = EntityTable(layout: entity.rowLayout, rows: [], nextPrimaryKey: nextKey)
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
            var loader = TableLoader(
                entity: entity, storedColumnCount: stored.columnCount, nextKey: nextKey, locator: contents.rowLocator)
            if let packed, isIdentity {
                // The file store's rows as it decoded them: no array per row.
                try packed.forEachRowInKeyOrder { try loader.take($0, storedCount: $1.count, values: $1) }
            } else {
                for row in packed?.storedRows() ?? rows {  // (packed: a schema in another column order)
                    // (A row of the wrong width is refused before its values are looked at.)
                    let values =
                        isIdentity || row.values.count != stored.columnCount
                        ? row.values : mapping.map { row.values[$0] }
                    try values.withUnsafeBufferPointer {
                        try loader.take(row.primaryKey, storedCount: row.values.count, values: $0)
                    }
                }
            }
            var table = loader.finish()
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
                    for key in RelationshipKeys.decode(row.block.layout.value(row.fields, slot: column)) {
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
                                || RelationshipKeys.contains(row.primaryKey, in: target.values[link.inverseColumn])
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
        let planned = try CommitPlanner(
            model: model, coordinatorIdentifier: identifier, entityKeys: entityKeys, tables: tables,
            uniquenessIndexes: uniquenessIndexes
        ).plan(request)
        var changeSet = planned.changeSet
        if history != nil || !(store is JournalStore || store is JSONFileStore) {
            // The journal encodes inserted rows from the tables, and the JSON store writes the
            // resulting state; every other store, and the history, takes them as values.
            changeSet.unpackInsertedRows()
        }
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
            try record(changeSet, in: store, resultingState: state(of: planned.tables, history: updatedHistory))
            if let updatedHistory {
                history = updatedHistory
                historyCommits.append(appendedCommits)
            }
        }
        let before = tables
        tables = planned.tables
        if durableCommits == appendedCommits {
            durableTables = tables
        }
        updateUniquenessIndexes(before: before, written: planned.written, deleted: planned.deleted)
        var outcome = planned.outcome
        // A save that wrote nothing still read rows of saves that may not be durable yet.
        outcome.durabilityTicket = durableCommits < appendedCommits ? appendedCommits : nil
        return outcome
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

// MARK: Confinement (here, for the queue is private to this file)

/// The coordinator's confinement: everything it holds lives on its serial `queue`, entered from
/// outside only through ``sync(_:)``, which turns the one way to deadlock — entering the queue
/// from code already running on it (a store, a custom merge policy or an observer calling back
/// into QueueData during a commit) — into a trap that says so.
extension StoreCoordinator {
    /// Runs `body` on the coordinator's queue and returns its result.
    ///
    /// Call from anywhere but the coordinator's queue: from there (directly, or from a queue it
    /// is waiting on) the call traps instead of deadlocking.
    func sync<Result>(_ body: () throws -> Result) rethrows -> Result {
        if DispatchQueue.getSpecific(key: queueKey) != nil {
            fatalError(
                "QueueData: the store coordinator was entered from its own queue: code that runs during a commit "
                    + "(a PersistentStore, a merge policy, an observer called from it) called back into QueueData. "
                    + "It would wait for itself: do that work after the save returns.")
        }
        // The same, when the call comes from another queue this one is waiting on (a context's
        // queue entered with sync from inside a commit): libdispatch knows.
        dispatchPrecondition(condition: .notOnQueue(queue))
        return try queue.sync(execute: body)
    }

    /// Traps unless called on the coordinator's queue: the check of the methods that touch its
    /// state (one queue-ownership test, like swift-nio's `assertInEventLoop`).
    func assertOnQueue() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    /// Whether the caller runs on the coordinator's queue.
    var isOnQueue: Bool {
        DispatchQueue.getSpecific(key: queueKey) != nil
    }

    /// Traps if called on the coordinator's queue: the check of every blocking wait for work
    /// that needs the queue (waiting there would wait for itself).
    func assertNotOnQueue() {
        dispatchPrecondition(condition: .notOnQueue(queue))
    }
}
