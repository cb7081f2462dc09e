import Foundation

/// Configures a ``ContextManager``: the model and where and how its store lives.
///
/// Every requirement has a default, so a delegate only states what differs:
///
/// ```swift
/// final class AppStore: ContextManagerDelegate {
///     var managedObjectModel: ManagedObjectModel { ManagedObjectModel([Destination.self]) }
///     var persistentStoreName: String { "Travel" }
/// }
/// ContextManager.shared.delegate = AppStore()
/// ```
///
/// The manager holds its delegate strongly and reads it when the store loads (the first
/// context, ``ContextManager/loadPersistentStore()``); changes take effect at the next load
/// after ``ContextManager/close()``.
public protocol ContextManagerDelegate: Sendable {
    /// The entities of the store. Default: an empty model.
    var managedObjectModel: ManagedObjectModel { get }
    /// The store's name: its files are `<storeDirectory>/<name>.<extension>`. Default: the
    /// process name. Must not contain `/` or be `.` or `..`.
    var persistentStoreName: String { get }
    /// The backend. Default: ``StoreType/journal``.
    var persistentStoreType: StoreType { get }
    /// The directory of the store's files. Default: `$XDG_DATA_HOME/<name>`, or
    /// `~/.local/share/<name>` when `XDG_DATA_HOME` is unset or not absolute.
    var storeDirectory: URL { get }
    /// Whether a store written with another model may be migrated automatically, by a mapping
    /// inferred from the schema the store recorded (see the "Migration" article); when
    /// `false`, such a store is refused with ``StoreError/Code/incompatibleModel``. Default: `true`.
    var shouldUseAutomaticLightweightMigration: Bool { get }
    /// A store to copy in on first run, when none exists yet. Default: `nil`.
    var seedStoreURL: URL? { get }
    /// Hand-written migration steps, oldest first: each runs once per store, after the
    /// inferred changes (see ``MigrationStep``). Default: none.
    var migrationSteps: [MigrationStep] { get }
    /// Called as a migration progresses, on the thread loading the store. The manager's other
    /// calls (``ContextManager/delegate``, ``ContextManager/isStoreLoaded``, `close()`) work
    /// meanwhile, here and on other threads: the store loads outside the queue they use. Asking
    /// the manager for a context or the store from here traps with a message (the load cannot
    /// wait for itself). Default: does nothing.
    func migrationDidProgress(_ progress: MigrationProgress)
    /// Whether the store keeps a persistent history of every save (Core Data's
    /// `NSPersistentHistoryTrackingKey`): read it with
    /// ``ManagedObjectContext/history(after:author:entityName:)``. The journal and in-memory
    /// stores keep it; the JSON store cannot (history requests throw
    /// ``HistoryError/Code/notTracked``). Once a store has recorded history it keeps recording it,
    /// whatever this says, so that no token ever misses a save. Default: `false`.
    var tracksPersistentHistory: Bool { get }
}

extension ContextManagerDelegate {
    /// An empty model.
    public var managedObjectModel: ManagedObjectModel { ManagedObjectModel.empty }

    /// The process name.
    public var persistentStoreName: String { ProcessInfo.processInfo.processName }

    /// ``StoreType/journal``.
    public var persistentStoreType: StoreType { .journal }

    /// `$XDG_DATA_HOME/<name>`, or `~/.local/share/<name>`.
    public var storeDirectory: URL {
        ContextManager.defaultStoreDirectory(
            name: persistentStoreName, environment: ProcessInfo.processInfo.environment)
    }

    /// `true`.
    public var shouldUseAutomaticLightweightMigration: Bool { true }

    /// `nil`.
    public var seedStoreURL: URL? { nil }

    /// None.
    public var migrationSteps: [MigrationStep] { [] }

    /// Does nothing.
    public func migrationDidProgress(_ progress: MigrationProgress) {}

    /// `false`.
    public var tracksPersistentHistory: Bool { false }
}

extension ManagedObjectModel {
    /// A model without entities.
    static let empty = try! ManagedObjectModel(entities: [])
}

/// The delegate of a manager nobody configured: every default.
struct DefaultContextManagerDelegate: ContextManagerDelegate {}
