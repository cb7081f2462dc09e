import Foundation
import QueueData
import QueueDataTestSupport
import Testing

/// A disk for the stores of these tests: an in-memory store holds what is durable; writes can
/// be made to fail, and power can be lost.
///
/// `@unchecked Sendable`: its state is behind a lock (tests may use locks; `Sources/` may not).
final class SimulatedDisk: @unchecked Sendable {
    let durable = InMemoryStore()
    private let lock = NSLock()
    private var failing = false
    /// Incremented by each power loss: a store opened before it can no longer write.
    private var generation = 0

    var isFailing: Bool { lock.withLock { failing } }
    var currentGeneration: Int { lock.withLock { generation } }

    var faults: StoreConformanceSuite.Faults {
        StoreConformanceSuite.Faults(
            losePower: { self.lock.withLock { self.generation += 1 } },
            restorePower: {},
            failWrites: { failing in self.lock.withLock { self.failing = failing } })
    }
}

/// A store on a ``SimulatedDisk`` with one deliberate defect (or none), to check that the
/// conformance suite finds each defect and reports it without crashing.
///
/// `@unchecked Sendable`: the coordinator calls it on one queue at a time.
final class DefectiveStore: PersistentStore, @unchecked Sendable {
    enum Defect: String, CaseIterable, CustomTestStringConvertible {
        /// Only the first row a commit inserts into each entity is kept (the suite's earlier
        /// version trapped on the empty and short fetches this leads to).
        case losesRows
        /// Deletions are not recorded.
        case ignoresDeletes
        /// Each row is read back with the values of the next row of its entity.
        case reordersValues
        /// Commits stay in memory until the store is closed.
        case commitsNonDurably
        /// A failed write is reported as a success.
        case reportsSuccessAfterFailedWrite
        var testDescription: String { rawValue }
    }

    private let disk: SimulatedDisk
    private let defect: Defect?
    private var generation = 0
    private var pending: [(ChangeSet, StoreState)] = []
    private var failed = false

    init(_ disk: SimulatedDisk, defect: Defect?) {
        self.disk = disk
        self.defect = defect
    }

    func open(for model: ManagedObjectModel) throws -> StoreContents {
        generation = disk.currentGeneration
        let contents = try disk.durable.open(for: model)
        guard defect == .reordersValues else { return contents }
        var rows = contents.rows
        for (entity, entityRows) in rows where entityRows.count > 1 {
            let sorted = entityRows.sorted { $0.primaryKey < $1.primaryKey }
            rows[entity] = sorted.indices.map { index in
                StoredRow(primaryKey: sorted[index].primaryKey, values: sorted[(index + 1) % sorted.count].values)
            }
        }
        return StoreContents(metadata: contents.metadata, schema: contents.schema, rows: rows)
    }

    func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        guard generation == disk.currentGeneration else {
            throw StoreError(.io, "The power was lost.")
        }
        if failed {
            throw StoreError(.closed, "A write failed; reopen the store.")
        }
        if disk.isFailing {
            if defect == .reportsSuccessAfterFailedWrite {
                return
            }
            failed = true
            throw StoreError(.io, "Injected write failure.")
        }
        var changes = changes
        for index in changes.entities.indices {
            switch defect {
            case .losesRows:
                changes.entities[index].inserted = Array(changes.entities[index].inserted.prefix(1))
            case .ignoresDeletes:
                changes.entities[index].deleted = []
            default:
                break
            }
        }
        if defect == .commitsNonDurably {
            pending.append((changes, resultingState))
        } else {
            try disk.durable.commit(changes, resultingState: resultingState)
        }
    }

    func close() {
        if generation == disk.currentGeneration {
            for (changes, state) in pending {
                try? disk.durable.commit(changes, resultingState: state)
            }
        }
        pending = []
        disk.durable.close()
    }
}

@Suite("The conformance suite reports broken stores")
struct ConformanceSuiteTests {
    /// What the suite must report for each defect: a failure of the check that finds it.
    static let expectedChecks: [DefectiveStore.Defect: String] = [
        .losesRows: "round trip",
        .ignoresDeletes: "updates and deletes",
        .reordersValues: "round trip",
        .commitsNonDurably: "durability",
        .reportsSuccessAfterFailedWrite: "failed writes",
    ]

    @Test("a conforming store on the simulated disk passes every check")
    func conformingStorePasses() throws {
        let disk = SimulatedDisk()
        let failures = try StoreConformanceSuite(faults: disk.faults) { DefectiveStore(disk, defect: nil) }.run()
        #expect(failures.isEmpty)
    }

    @Test("each defect is found by its check, and the suite runs to the end", arguments: DefectiveStore.Defect.allCases)
    func findsDefect(_ defect: DefectiveStore.Defect) throws {
        let disk = SimulatedDisk()
        let suite = StoreConformanceSuite(faults: disk.faults) { DefectiveStore(disk, defect: defect) }
        let failures = try suite.run(recordsIssues: false)
        let check = try #require(Self.expectedChecks[defect])
        #expect(failures.contains { $0.check == check }, "\(failures)")
        // The run went on to the last check: the store's notes were checked after migration
        // was refused (a failure there would name the migration check).
        #expect(!failures.contains { $0.message.contains("stopped by an error") && $0.check == "migration" })
    }

    @Test("failures are recorded as test issues, each naming its check")
    func recordsIssues() throws {
        let disk = SimulatedDisk()
        let suite = StoreConformanceSuite(faults: disk.faults) { DefectiveStore(disk, defect: .losesRows) }
        var failures: [StoreConformanceSuite.Failure] = []
        try withKnownIssue {
            failures = try suite.run()
        } matching: { issue in
            issue.description.contains("round trip:") || issue.description.contains("updates and deletes:")
                || issue.description.contains("many saves:") || issue.description.contains("incompatible model:")
                || issue.description.contains("migration:") || issue.description.contains("durability:")
                || issue.description.contains("failed writes:")
        }
        #expect(failures.contains { $0.description.hasPrefix("round trip: rows ") })
    }

    @Test("what each defect is reported as")
    func messages() throws {
        func failures(_ defect: DefectiveStore.Defect) throws -> [String] {
            let disk = SimulatedDisk()
            return try StoreConformanceSuite(faults: disk.faults) { DefectiveStore(disk, defect: defect) }
                .run(recordsIssues: false).map(\.description)
        }
        #expect(
            try failures(.losesRows).contains {
                $0.hasPrefix("round trip: rows [\"ConformanceItem #") && $0.contains("were lost")
            })
        #expect(try failures(.ignoresDeletes).contains { $0.contains("a deleted row came back") })
        #expect(try failures(.reordersValues).contains { $0.hasPrefix("round trip: row ") && $0.contains("expected") })
        #expect(
            try failures(.commitsNonDurably).contains {
                $0 == "durability: saves acknowledged before a power loss were lost: 5 of 5"
            })
        #expect(
            try failures(.reportsSuccessAfterFailedWrite).contains {
                $0 == "failed writes: a save succeeded while every write and sync failed"
            })
    }

    @Test("a store that cannot be opened at all fails every check with its error, and nothing traps")
    func unopenableStore() throws {
        let failures = try StoreConformanceSuite {
            throw StoreError(.io, "No disk.")
        }.run(recordsIssues: false)
        #expect(failures.count >= 6)
        #expect(failures.allSatisfy { $0.message.contains("No disk.") })
        #expect(failures.first?.check == "new store")
    }
}
