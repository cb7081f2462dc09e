import Dispatch
import Foundation
import QueueData
import Testing

/// The checks every ``PersistentStore`` must pass, runnable from your own tests.
///
/// ```swift
/// import QueueDataTestSupport
/// import Testing
///
/// @Test func myStoreConforms() throws {
///     let directory = ... // an empty directory for this test
///     try StoreConformanceSuite { try MyStore(directory: directory) }.run()
/// }
/// ```
///
/// `makeStore` is called many times; every store it returns must use the same (initially
/// empty) location, so that what one store committed, the next one opens. The suite drives
/// the store through a ``ContextManager`` and records each failed check as a test issue, then
/// goes on with the next check: a store that loses rows, ignores deletes or throws where it
/// should not gets a list of everything wrong with it, not a crash. An error a store throws
/// in the middle of a check is recorded as that check's failure.
///
/// The checks, in order: a new store is empty and keeps its identity; values of every type
/// survive a save and a reopen exactly; updates and deletes survive, and primary keys are never
/// reused; many small saves all survive; a second opener gets ``StoreError/Code/locked``
/// (unless ``checksExclusiveAccess`` is `false`); with ``faults``, every acknowledged save
/// survives a power loss, and a save whose writes fail throws, keeps its changes, and makes
/// the store refuse later commits until it is reopened, and for a store with group commit
/// (a ``PersistentStore/synchronizationQueue``) the same holds for saves of several queues at
/// once; a store that keeps history (``PersistentStore/keepsHistory``) returns every
/// transaction it was given, after a reopen, and after a purge only those kept; a model with a
/// changed attribute is
/// refused without changing the store; and last, a model with an added and a renamed attribute
/// is migrated (by a store that implements
/// ``PersistentStore/replaceContents(with:keepingOriginalAs:)``) or refused unchanged.
public struct StoreConformanceSuite: Sendable {
    /// Makes a store over the suite's location.
    public var makeStore: @Sendable () throws -> any PersistentStore
    /// Whether to check that a second opener gets ``StoreError/Code/locked`` (default `true`).
    public var checksExclusiveAccess: Bool
    /// Control over the stores' I/O, for the durability and failed-write checks; `nil` (the
    /// default) skips those two checks.
    public var faults: Faults?

    /// Control over the I/O of the stores `makeStore` returns, as a test's file-system seam
    /// gives it: the suite uses it to check that acknowledged saves are durable and that a
    /// failed write is reported.
    public struct Faults: Sendable {
        /// Simulates a power loss now: whatever the stores wrote but did not make durable is
        /// lost, and the stores that are open can no longer write (their processes are gone).
        public var losePower: @Sendable () -> Void
        /// Ends the power loss: stores made after it read what survived, and write again.
        public var restorePower: @Sendable () -> Void
        /// From `true` until `false`: every write and sync of the stores fails (a full disk, a
        /// failing device).
        public var failWrites: @Sendable (Bool) -> Void

        /// Creates the hooks.
        public init(
            losePower: @escaping @Sendable () -> Void,
            restorePower: @escaping @Sendable () -> Void,
            failWrites: @escaping @Sendable (Bool) -> Void
        ) {
            self.losePower = losePower
            self.restorePower = restorePower
            self.failWrites = failWrites
        }
    }

    /// One failed check of a run.
    public struct Failure: Sendable, Hashable, CustomStringConvertible {
        /// The check, as the suite names it (`"round trip"`, `"updates and deletes"`, …).
        public let check: String
        /// What was wrong.
        public let message: String

        /// `check: message`.
        public var description: String { "\(check): \(message)" }
    }

    /// Creates the suite for the stores `makeStore` returns.
    public init(
        checksExclusiveAccess: Bool = true,
        faults: Faults? = nil,
        makeStore: @escaping @Sendable () throws -> any PersistentStore
    ) {
        self.makeStore = makeStore
        self.checksExclusiveAccess = checksExclusiveAccess
        self.faults = faults
    }

    /// Runs every check, in order, on the suite's location (which must start empty).
    ///
    /// Every failed check is recorded as a test issue at `sourceLocation` (unless
    /// `recordsIssues` is `false`) and returned; the run goes on after a failure.
    ///
    /// - Parameters:
    ///   - recordsIssues: Whether failures are recorded as Swift Testing issues (default
    ///     `true`); `false` only returns them.
    ///   - sourceLocation: Where recorded issues point.
    /// - Returns: The failures, in the order they were found; empty when the store conforms.
    /// - Throws: Nothing today: errors of the store are failures of the check they stop.
    @discardableResult
    public func run(recordsIssues: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [Failure]
    {
        let log = ConformanceLog(recordsIssues: recordsIssues, sourceLocation: sourceLocation)
        log.attempt("new store") { try checkNewStore(log) }
        var expected: [String: [String: StoredValue]] = [:]
        log.attempt("round trip") { expected = try checkRoundTrip(log) }
        log.attempt("updates and deletes") { try checkUpdatesAndDeletes(expected, log) }
        log.attempt("many saves") { try checkManySaves(log) }
        if checksExclusiveAccess {
            log.attempt("exclusive access") { try checkExclusiveAccess(log) }
        }
        if let faults {
            log.attempt("durability") { try checkDurability(faults, log) }
            log.attempt("failed writes") { try checkFailedWrites(faults, log) }
            if (try? makeStore().synchronizationQueue) != nil {
                log.attempt("group commit") { try checkGroupCommit(faults, log) }
            }
        }
        if (try? makeStore().keepsHistory) == true {
            log.attempt("history") { try checkHistory(log) }
        }
        log.attempt("incompatible model") { try checkIncompatibleModel(log) }
        log.attempt("migration") { try checkMigration(log) }
        return log.failures
    }

    func manager(_ model: ManagedObjectModel = conformanceModel, tracksHistory: Bool = false) -> ContextManager {
        ContextManager(
            delegate: ConformanceDelegate(model: model, makeStore: makeStore, tracksHistory: tracksHistory))
    }
}

/// The failures of one run, recorded as test issues as they are found.
///
/// Used on the thread that runs the suite only (the checks wait for every context they use).
final class ConformanceLog {
    private(set) var failures: [StoreConformanceSuite.Failure] = []
    private let recordsIssues: Bool
    private let sourceLocation: SourceLocation
    /// The check running now, named in failures.
    private var check = ""

    init(recordsIssues: Bool, sourceLocation: SourceLocation) {
        self.recordsIssues = recordsIssues
        self.sourceLocation = sourceLocation
    }

    /// Runs the check `name`; an error it throws is its failure.
    func attempt(_ name: String, _ body: () throws -> Void) {
        check = name
        do {
            try body()
        } catch {
            fail("stopped by an error: \(error)")
        }
    }

    /// Records a failure of the current check.
    func fail(_ message: String) {
        let failure = StoreConformanceSuite.Failure(check: check, message: message)
        failures.append(failure)
        if recordsIssues {
            Issue.record("\(failure)", sourceLocation: sourceLocation)
        }
    }

    /// Records `message` unless `condition` holds; returns `condition`.
    @discardableResult
    func expect(_ condition: Bool, _ message: @autoclosure () -> String) -> Bool {
        if !condition {
            fail(message())
        }
        return condition
    }
}
