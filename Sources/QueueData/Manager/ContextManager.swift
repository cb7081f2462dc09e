import Dispatch
import Foundation

/// Hands out one ``ManagedObjectContext`` per serial `DispatchQueue`, all sharing one store.
///
/// ```swift
/// ContextManager.shared.delegate = AppStore()          // at launch
/// let context = try ContextManager.shared.createContext(for: importQueue)
/// ```
///
/// The store loads on first use (or ``loadPersistentStore()``), configured by the
/// ``delegate``. Saves of each context are merged into every other context of the same
/// manager; contexts of different managers never see each other's saves.
/// Use ``shared`` in an app, and ``init(delegate:)`` for tests or several stores.
///
/// Loading the store (opening and migrating it) runs one load at a time on a queue of its
/// own, not on the queue the manager's state lives on: while a large store opens or migrates,
/// ``delegate``, ``isStoreLoaded`` and ``close()`` return at once (a ``close()`` during a load
/// abandons it: the load throws ``StoreError/Code/closed``), and every caller that needs the
/// store waits for the one load.
///
/// `@unchecked Sendable`: all mutable state lives on a private serial queue (the registry
/// queue), which every method enters with `sync`, never while loading the store.
public final class ContextManager: @unchecked Sendable {
    /// The process-wide manager. Set its ``delegate`` at launch.
    public static let shared = ContextManager()

    private let registryQueue = DispatchQueue(label: "QueueData.ContextManager")
    /// Where the store is opened and migrated, one load at a time: outside `registryQueue`, so
    /// that the manager's other calls (`delegate`, `isStoreLoaded`, `close()`) do not wait
    /// behind a long open or migration.
    private let loadingQueue = DispatchQueue(label: "QueueData.ContextManager.loading")
    /// Marks `loadingQueue`, to tell a call made from inside a load (a migration step or
    /// progress callback) from one that can wait for the load.
    private let loadingKey = DispatchSpecificKey<Bool>()
    /// Identifies this manager's coordinators (and so its contexts' saves) to its observers.
    let identifier = UUID()
    // Confined to `registryQueue`:
    private var storedDelegate: (any ContextManagerDelegate)?
    private var coordinator: StoreCoordinator?
    /// The contexts made, by their queue's marker.
    private let registry = ContextRegistry()
    private var storedMainContext: ManagedObjectContext?
    /// The store a ``migratePersistentStore(to:directory:name:)`` moved the manager to, used
    /// instead of the delegate's until the delegate is set again.
    private var storeOverride: (type: StoreType, configuration: StoreConfiguration)?
    /// Counts the closes: a load that began before one does not install its store.
    private var closes = 0

    /// Creates a manager configured by `delegate` (every default when `nil`).
    public init(delegate: (any ContextManagerDelegate)? = nil) {
        self.storedDelegate = delegate
        loadingQueue.setSpecific(key: loadingKey, value: true)
    }

    deinit {
        // libdispatch keys specifics by the key object's address: the mark goes before the key,
        // or a key allocated at the same address later would read it.
        loadingQueue.setSpecific(key: loadingKey, value: nil)
    }

    /// The configuration: model, store name, type and directory. Held strongly.
    ///
    /// Read when the store loads; set it before the first context is created (a change
    /// takes effect at the next load, after ``close()``).
    public var delegate: (any ContextManagerDelegate)? {
        get { registryQueue.sync { storedDelegate } }
        set {
            registryQueue.sync {
                storedDelegate = newValue
                storeOverride = nil
            }
        }
    }

    /// Whether the store is loaded.
    public var isStoreLoaded: Bool {
        registryQueue.sync { coordinator != nil }
    }

    /// The model of the loaded store, or `nil` before it loads.
    public var managedObjectModel: ManagedObjectModel? {
        registryQueue.sync { coordinator?.model }
    }

    /// Loads the store now rather than at the first context. Does nothing if it is loaded.
    ///
    /// - Throws: ``StoreError`` if the store cannot be opened (nothing is modified).
    public func loadPersistentStore() throws {
        _ = try loadedCoordinator()
    }

    /// The context confined to `DispatchQueue.main`.
    ///
    /// Use it from code running on the main queue: top-level code of the main thread, blocks
    /// submitted to `DispatchQueue.main`, `@MainActor` code. Merges into it run as blocks on
    /// the main queue, so they only happen while the main queue is drained (`dispatchMain()`,
    /// `RunLoop.main.run()`, or an `async` main). A server or command-line tool without a
    /// main run loop should use ``createContext()`` contexts instead.
    ///
    /// - Throws: ``StoreError`` if the store cannot be loaded.
    public var mainContext: ManagedObjectContext {
        get throws {
            if let existing = registryQueue.sync(execute: { storedMainContext }) {
                return existing
            }
            let coordinator = try loadedCoordinator()
            return try registryQueue.sync {
                if let storedMainContext {
                    return storedMainContext
                }
                let context = try context(for: .main, coordinator: coordinator)
                storedMainContext = context
                return context
            }
        }
    }

    /// The context confined to `queue`: the same one for the same queue while it is alive.
    ///
    /// The manager holds contexts weakly (except ``mainContext``): keep a reference for as
    /// long as you use the context and its objects. `queue` must be serial.
    ///
    /// - Throws: ``StoreError`` if the store cannot be loaded.
    public func createContext(for queue: DispatchQueue) throws -> ManagedObjectContext {
        let coordinator = try loadedCoordinator()
        return try registryQueue.sync { try context(for: queue, coordinator: coordinator) }
    }

    /// A context on a new private serial queue.
    ///
    /// - Throws: ``StoreError`` if the store cannot be loaded.
    public func createContext() throws -> ManagedObjectContext {
        let queue = DispatchQueue(label: "QueueData.Context.\(UUID().uuidString.prefix(8))")
        return try createContext(for: queue)
    }

    /// Compacts the store now (for the journal store: rewrites it as one snapshot), instead
    /// of waiting for it to decide. Stores that need no compaction do nothing.
    ///
    /// - Throws: ``StoreError`` if the store is not loaded, or the compaction failed (the store
    ///   still holds every committed save).
    public func compactPersistentStore() throws {
        let loaded = try registryQueue.sync { () throws -> StoreCoordinator in
            guard let coordinator = self.coordinator else {
                throw StoreError(.closed, "The store is not loaded.")
            }
            return coordinator
        }
        try loaded.sync { try loaded.compact() }
    }

    /// What loading the store would do to migrate it to the delegate's model: a dry run that
    /// reads the store without locking, creating, repairing or changing anything.
    ///
    /// Use it to log a migration, or to ask the user before one. Once the store is loaded it
    /// is up to date, and the plan is empty. The plan converts every row to find values that
    /// cannot be carried over, but does not run custom steps.
    ///
    /// - Throws: ``StoreError`` if the store cannot be read (`.corrupted`, `.unsupportedFormat`,
    ///   `.io`), or cannot be inspected (a custom store without ``PersistentStore/inspect()``).
    public func migrationPlan() throws -> MigrationPlan {
        // The store is read outside the registry queue: the manager's other calls do not wait.
        let (loaded, delegate, description) = try registryQueue.sync {
            () throws -> (StoreCoordinator?, any ContextManagerDelegate, (StoreType, StoreConfiguration)?) in
            let delegate = storedDelegate ?? DefaultContextManagerDelegate()
            if let coordinator {
                return (coordinator, delegate, nil)
            }
            return (nil, delegate, try storeDescription(of: delegate))
        }
        if let coordinator = loaded {
            return MigrationPlan(
                storedVersionHash: coordinator.model.versionHash, currentVersionHash: coordinator.model.versionHash,
                changes: [], pendingSteps: [], problems: [],
                rowCount: coordinator.sync { coordinator.rowCount })
        }
        let (type, configuration) = description!
        let store = try type.makeStore(configuration)
        return migrator(for: delegate).plan(for: try store.inspect())
    }

    /// Converts the store to another type and/or place — Core Data's
    /// `migratePersistentStore(_:to:options:type:)` — and moves the manager to the new store.
    ///
    /// ```swift
    /// // The app ran on a journal; it now wants a JSON store, with its data.
    /// try ContextManager.shared.migratePersistentStore(to: .jsonFile)
    /// ```
    ///
    /// The store is loaded if it is not (migrating it to the model as a load does), then the
    /// manager is closed as by ``close()`` — every context is invalidated, so that no save
    /// can slip in — and every committed row is written as a store of `type` at
    /// `<directory>/<name>.<extension>`: under a temporary name, synchronized, read back and
    /// compared with the rows, and only then given its name and the directory synchronized. A
    /// crash or an error leaves no store, or a complete one, under the new name. The original
    /// store is kept as it was (delete its files once you no longer need them). The store keeps
    /// its identifier, so object IDs and their URIs stay valid.
    ///
    /// The manager then loads the new store (at the next context, or
    /// ``loadPersistentStore()``), until its ``delegate`` is set again: make the delegate
    /// describe the new store for the next launch — the one-line swap of
    /// ``ContextManagerDelegate/persistentStoreType``. For ``StoreType/inMemory`` the rows (and
    /// the history) go into one ``InMemoryStore``, which the manager loads again after a
    /// ``close()`` while it uses the converted store; it lasts as long as the process.
    ///
    /// - Parameters:
    ///   - type: The new store's type (``StoreType/journal``, ``StoreType/jsonFile``, or a
    ///     custom one, which needs ``PersistentStore/replaceContents(with:keepingOriginalAs:)``
    ///     and ``PersistentStore/inspect()``).
    ///   - directory: Its directory; `nil` keeps the current one.
    ///   - name: Its name; `nil` keeps the current one.
    /// - Returns: The new store's file (`nil` for a store without one).
    /// - Throws: ``StoreError``: as ``loadPersistentStore()`` when the store cannot be loaded,
    ///   `.invalidConfiguration` when a store exists at the destination or its name is
    ///   invalid — nothing is changed then, and every context goes on working; `.io`;
    ///   `.corrupted` when the new store does not read back as the rows. The manager is
    ///   closed after a failed write, and loads the original store again.
    @discardableResult
    public func migratePersistentStore(to type: StoreType, directory: URL? = nil, name: String? = nil) throws -> URL? {
        let loaded = try loadedCoordinator()
        return try registryQueue.sync {
            guard let coordinator, coordinator === loaded else {
                throw StoreError(.closed, "The manager was closed while its store was loading for the conversion.")
            }
            let delegate = storedDelegate ?? DefaultContextManagerDelegate()
            let (_, current) = try storeDescription(of: delegate)
            var destination = current
            destination.directory = directory ?? current.directory
            destination.name = name ?? current.name
            destination.seedStoreURL = nil
            // Everything checkable is checked before closing: a refused call leaves every
            // context working.
            // An in-memory destination is one store, filled here and loaded from then on (a
            // new `InMemoryStore` for each load would be empty).
            var type = type
            if case .inMemory = type.kind {
                type = StoreType(kind: .inMemoryStore(InMemoryStore()))
            }
            try StoreConversion.checkDestination(type, configuration: destination)
            let state = try coordinator.sync { try coordinator.durableState() }
            closeLocked()
            let url = try StoreConversion.write(state, model: coordinator.model, as: type, configuration: destination)
            storeOverride = (type, destination)
            return url
        }
    }

    /// Closes the store and invalidates every context of this manager (child contexts made of
    /// them included). Saves nothing.
    ///
    /// Using a context or object of this manager afterwards traps. The next context (or
    /// ``loadPersistentStore()``) loads the store again, reading the delegate afresh, so the
    /// same store can be reopened — by tests, or after switching stores.
    public func close() {
        registryQueue.sync { closeLocked() }
    }

    /// ``close()``, on `registryQueue`.
    private func closeLocked() {
        closes += 1
        let open = registry.entries.values.compactMap(\.context)
        for context in open {
            context.invalidate(.managerClosed)
        }
        storedMainContext = nil
        registry.entries = [:]
        if let coordinator {
            coordinator.sync { coordinator.close() }
        }
        coordinator = nil
        _ = open
    }

    /// Closes the store once the work already submitted to this manager's contexts is done:
    /// every block queued on a context's queue before the call — `perform` blocks, merges —
    /// runs first, and every asynchronous fetch in flight delivers its result; then the manager
    /// closes as ``close()`` does (saving nothing: a block that should save must call `save()`
    /// itself).
    ///
    /// ```swift
    /// context.perform { importBatch(context); try? context.save() }   // already queued
    /// await manager.closeGracefully()                                  // the import runs first
    /// ```
    ///
    /// The contexts waited for include the child contexts of this manager's contexts
    /// (``ManagedObjectContext/newChildContext(for:)``), after their parents.
    ///
    /// Use it to shut down while blocks may still be queued: ``close()`` invalidates the
    /// contexts at once, and a queued block of yours that then uses its context traps. Blocks
    /// submitted after the call — including blocks the waited-for blocks submit in turn — are
    /// not waited for (an asynchronous fetch started meanwhile may be): stop submitting work
    /// before closing. When the manager has a
    /// ``mainContext``, this waits for the main queue too, which must be drained (an `async`
    /// main, `dispatchMain()`, a run loop); never call it from a block the main queue is
    /// running and awaits nothing else.
    public func closeGracefully() async {
        let open = registryQueue.sync { () -> [ManagedObjectContext] in
            var open = registry.entries.values.compactMap(\.context)
            if let storedMainContext, !open.contains(where: { $0 === storedMainContext }) {
                open.append(storedMainContext)
            }
            return open
        }
        // Child contexts (``ManagedObjectContext/newChildContext(for:)``) are not in the registry:
        // each context's live children are read on its queue, and waited for after it.
        var pending = open
        while !pending.isEmpty {
            let context = pending.removeFirst()
            // Once the context's asynchronous fetches in flight are done, a block on its queue: the
            // queue is serial, so once it runs, every block queued before it has run.
            let children = await withCheckedContinuation {
                (continuation: CheckedContinuation<UncheckedSendableBox<[ManagedObjectContext]>, Never>) in
                context.asynchronousFetches.notify(queue: context.queue) {
                    // On the context's queue, where its list of children lives.
                    let children = context.children.compactMap { $0.context }
                    continuation.resume(returning: UncheckedSendableBox(children))
                }
            }
            pending += children.value
        }
        close()
    }

    // MARK: Internals (on `registryQueue`)

    /// The context confined to `queue`, on `coordinator` (the loaded one).
    private func context(for queue: DispatchQueue, coordinator: StoreCoordinator) throws -> ManagedObjectContext {
        guard coordinator === self.coordinator else {
            throw StoreError(.closed, "The manager was closed while its store was loading; create the context again.")
        }
        let marker = QueueMarker.marker(of: queue)
        let key = ObjectIdentifier(marker)
        if let existing = registry.entries[key]?.context, existing.confinement.isValid {
            return existing
        }
        let context = ManagedObjectContext(
            queue: queue, name: nil, coordinator: coordinator,
            onDeinit: { [registryQueue, weak registry] in
                // The cleanup holds the registry, never the manager: were it to hold the manager
                // even while it runs, letting go of the manager then would leave the last
                // reference (and with it the store's close and its lock) to this block, a moment
                // later on the registry's queue.
                registryQueue.async { [weak registry] in
                    guard let registry, registry.entries[key]?.context == nil else { return }
                    registry.entries[key] = nil
                }
            })
        registry.entries[key] = WeakContext(context: context, marker: marker)
        return context
    }

    /// The loaded store's coordinator, loading the store first if needed: on `loadingQueue`, one
    /// load at a time, outside `registryQueue` (so every other call of the manager goes on
    /// while a store opens or migrates). Call off `registryQueue`.
    ///
    /// - Throws: ``StoreError`` from the load; `.closed` when the manager was closed meanwhile.
    private func loadedCoordinator() throws -> StoreCoordinator {
        dispatchPrecondition(condition: .notOnQueue(registryQueue))
        if let loaded = registryQueue.sync(execute: { coordinator }) {
            return loaded
        }
        guard DispatchQueue.getSpecific(key: loadingKey) == nil else {
            fatalError(
                "QueueData: a context or the store was asked of a ContextManager while it loads its store (from a "
                    + "migration step or migrationDidProgress, say): the load cannot wait for itself. Note what you "
                    + "need there, and use the manager once loadPersistentStore() (or the first context) returns.")
        }
        return try loadingQueue.sync {
            // Another caller may have loaded the store while this one waited.
            let (loaded, delegate, description, closesBefore) = try registryQueue.sync {
                () throws -> (StoreCoordinator?, any ContextManagerDelegate, (StoreType, StoreConfiguration)?, Int) in
                let delegate = storedDelegate ?? DefaultContextManagerDelegate()
                if let coordinator {
                    return (coordinator, delegate, nil, self.closes)
                }
                return (nil, delegate, try storeDescription(of: delegate), self.closes)
            }
            if let loaded {
                return loaded
            }
            let (type, configuration) = description!
            let store = try type.makeStore(configuration)
            let opened = try StoreCoordinator(
                model: delegate.managedObjectModel, store: store, label: delegate.persistentStoreName,
                migrator: migrator(for: delegate), managerIdentifier: identifier,
                tracksHistory: delegate.tracksPersistentHistory)
            let installed = registryQueue.sync { () -> Bool in
                guard self.closes == closesBefore else { return false }
                self.coordinator = opened
                return true
            }
            guard installed else {
                opened.sync { opened.close() }
                throw StoreError(.closed, "The manager was closed while its store was loading.")
            }
            return opened
        }
    }

    /// The store the manager loads: the delegate's, or the one a conversion moved it to.
    private func storeDescription(of delegate: any ContextManagerDelegate) throws -> (StoreType, StoreConfiguration) {
        if let storeOverride {
            return storeOverride
        }
        return (delegate.persistentStoreType, try configuration(of: delegate))
    }

    /// The store configuration the delegate describes.
    ///
    /// - Throws: ``StoreError/Code/invalidConfiguration`` for an invalid store name.
    private func configuration(of delegate: any ContextManagerDelegate) throws -> StoreConfiguration {
        let name = delegate.persistentStoreName
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else {
            throw StoreError(
                .invalidConfiguration,
                "The store name '\(name)' is invalid: it must be a file name, without '/', and not '.' or '..'.")
        }
        return StoreConfiguration(
            name: name, directory: delegate.storeDirectory,
            shouldUseAutomaticLightweightMigration: delegate.shouldUseAutomaticLightweightMigration,
            seedStoreURL: delegate.seedStoreURL)
    }

    private func migrator(for delegate: any ContextManagerDelegate) -> Migrator {
        Migrator(
            model: delegate.managedObjectModel,
            allowsInferredMigration: delegate.shouldUseAutomaticLightweightMigration,
            steps: delegate.migrationSteps,
            progress: { progress in delegate.migrationDidProgress(progress) })
    }

    /// `$XDG_DATA_HOME/<name>` when that variable holds an absolute path, otherwise
    /// `$HOME/.local/share/<name>` (the XDG Base Directory default).
    static func defaultStoreDirectory(name: String, environment: [String: String]) -> URL {
        if let dataHome = environment["XDG_DATA_HOME"], dataHome.hasPrefix("/") {
            return URL(fileURLWithPath: dataHome, isDirectory: true).appendingPathComponent(name, isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true)
            .appendingPathComponent(".local/share", isDirectory: true)
            .appendingPathComponent(name, isDirectory: true)
    }
}

/// The contexts a manager made, by their queue's marker.
///
/// `@unchecked Sendable`: ``entries`` is read and written on the manager's `registryQueue` only.
/// A class apart from the manager so that a context's clean-up can reach it without holding
/// the manager.
private final class ContextRegistry: @unchecked Sendable {
    var entries: [ObjectIdentifier: WeakContext] = [:]
}

/// A registry entry: contexts belong to their creators.
private struct WeakContext {
    weak var context: ManagedObjectContext?
    /// Keeps the key (the marker's identity) unique while the entry exists.
    let marker: QueueMarker
}

/// Identifies a queue to the managers, stored in the queue's specifics.
///
/// `DispatchQueue` wrappers are not unique (on Linux, every `DispatchQueue.main` is a new
/// object), but a queue's specifics belong to the queue itself. A queue gets one marker, shared
/// by every manager, under one process-wide key: libdispatch keys specifics by the key object's
/// address, and a queue outlives the managers that marked it (`DispatchQueue.main` lives
/// forever), so a key that belonged to a manager would leave its mark behind when it was freed,
/// to be read through whatever key was allocated at that address next (a coordinator's queue
/// key, making the queue look like the coordinator's).
private final class QueueMarker: Sendable {
    /// The process-wide key. Never freed: nothing is ever read through it but markers.
    private static let key = DispatchSpecificKey<QueueMarker>()
    /// Where a queue gets its marker: one at a time, so that two managers making a first
    /// context for the same queue at once agree on its marker.
    private static let assignment = DispatchQueue(label: "QueueData.QueueMarker")

    /// The marker of `queue`, made and stored there the first time.
    static func marker(of queue: DispatchQueue) -> QueueMarker {
        assignment.sync {
            if let existing = queue.getSpecific(key: key) {
                return existing
            }
            let marker = QueueMarker()
            queue.setSpecific(key: key, value: marker)
            return marker
        }
    }
}
