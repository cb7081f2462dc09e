import Dispatch
import Foundation
import QueueData

// The object-graph workloads: a graph of parents with children each, saved durably, deleted
// through a cascade, and read back by following `children`; and an asynchronous fetch, seen
// from the context's queue. Every baseline is measured in the same run.

/// Saves, cascade-deletes and traverses `graph` on the journal store, against raw SQLite.
///
/// - Parameters:
///   - repetitions: Runs of each durable save and cascade delete (after a warm-up).
///   - traversals: Runs of the fetch that follows `children` (after a warm-up).
func graphMeasurements(_ graph: GraphValues, repetitions: Int, traversals: Int) throws -> [Measurement] {
    let directory = benchmarkDirectory("graph")
    defer { try? FileManager.default.removeItem(at: directory) }
    let shape = "\(graph.parents.count)×\(graph.childrenPerParent)"

    // Templates of the saved graph, copied in before each run that changes the store.
    let journalTemplate = directory.appendingPathComponent("template.journal")
    let manager = try openGraphStore(in: directory)
    let context = try manager.createContext()
    try context.performAndWait { try insertGraph(graph, into: context, linking: .toOne) }
    manager.close()
    try FileManager.default.moveItem(at: directory.appendingPathComponent("Graph.journal"), to: journalTemplate)
    let sqliteTemplate = directory.appendingPathComponent("template.sqlite")
    do {
        let sqlite = GraphSQLiteBaseline(path: sqliteTemplate.path)
        sqlite.insert(graph)
    }

    var results = try graphSaveMeasurements(
        graph, shape: shape, repetitions: repetitions, in: directory, sqliteSize: fileSize(sqliteTemplate))
    results.append(
        try cascadeDeleteMeasurement(
            graph, shape: shape, repetitions: repetitions, in: directory, journalTemplate: journalTemplate,
            sqliteTemplate: sqliteTemplate))
    results.append(
        try traversalMeasurement(
            graph, shape: shape, repetitions: traversals, in: directory, journalTemplate: journalTemplate,
            sqliteTemplate: sqliteTemplate))
    return results
}

/// A manager of the graph's journal store in `directory`, loaded: a copy of `template`, or
/// a new empty store.
func openGraphStore(in directory: URL, from template: URL? = nil) throws -> ContextManager {
    let store = directory.appendingPathComponent("Graph.journal")
    try? FileManager.default.removeItem(at: store)
    if let template {
        try FileManager.default.copyItem(at: template, to: store)
    }
    let manager = ContextManager(delegate: GraphStore(directory: directory))
    try manager.loadPersistentStore()
    return manager
}

/// A copy of the SQLite database `template` at `<directory>/<name>`, opened.
private func openSQLiteCopy(of template: URL, in directory: URL, name: String) throws -> GraphSQLiteBaseline {
    let database = directory.appendingPathComponent(name)
    for suffix in ["", "-wal", "-shm"] {
        try? FileManager.default.removeItem(atPath: database.path + suffix)
    }
    try FileManager.default.copyItem(at: template, to: database)
    return GraphSQLiteBaseline(path: database.path)
}

/// Workload 1: insert the graph and save it durably, linked through either side of the
/// relationship, against raw SQLite and against the same objects unlinked.
private func graphSaveMeasurements(
    _ graph: GraphValues,
    shape: String,
    repetitions: Int,
    in directory: URL,
    sqliteSize: Int
) throws -> [Measurement] {
    let storeFile = directory.appendingPathComponent("Graph.journal")
    var journalSizes: [GraphLinking: Int] = [:]
    func save(_ linking: GraphLinking) throws -> Double {
        try medianSeconds(
            repetitions: repetitions,
            setUp: { () throws -> (ContextManager, ManagedObjectContext) in
                let manager = try openGraphStore(in: directory)
                return (manager, try manager.createContext())
            },
            measure: { _, context in
                try context.performAndWait { try insertGraph(graph, into: context, linking: linking) }
            },
            tearDown: { manager, context in
                if linking != .none {
                    let linked = try context.performAndWait {
                        try context.fetch(FetchRequest<GraphParent>(fetchLimit: 1)).first!.children.count
                    }
                    precondition(linked == graph.childrenPerParent, "a parent has \(linked) children")
                }
                manager.close()
                journalSizes[linking] = fileSize(storeFile)
            })
    }
    let viaToOne = try save(.toOne)
    let viaToMany = try save(.toMany)
    let flat = try save(.none)
    var run = 0
    let sqlite = medianSeconds(
        repetitions: repetitions,
        setUp: { () -> GraphSQLiteBaseline in
            run += 1
            return GraphSQLiteBaseline(path: directory.appendingPathComponent("insert-\(run).sqlite").path)
        },
        measure: { database in database.insert(graph) },
        tearDown: { _ in })
    let objects = graph.objectCount
    func perObject(_ bytes: Int?) -> Double { Double(bytes ?? 0) / Double(objects) }
    return [
        Measurement(
            workload: "G1 graph \(shape) insert + durable save, child.parent = (journal)", subject: viaToOne,
            baseline: sqlite, baselineName: "raw SQLite WAL+FULL, FK + index, one tx", unit: "ms", goal: nil,
            note: String(
                format: "%d objects; journal %.1f MB (%.0f B/object), SQLite file %.1f MB (%.0f B/object)",
                objects, Double(journalSizes[.toOne] ?? 0) / 1e6, perObject(journalSizes[.toOne]),
                Double(sqliteSize) / 1e6, perObject(sqliteSize))),
        Measurement(
            workload: "G1 graph \(shape) insert + durable save, parent.children = (journal)", subject: viaToMany,
            baseline: sqlite, baselineName: "raw SQLite WAL+FULL, FK + index, one tx", unit: "ms", goal: nil),
        Measurement(
            workload: "G1 graph \(shape) insert + durable save, child.parent = (journal), vs unlinked",
            subject: viaToOne, baseline: flat, baselineName: "QueueData, the same objects unlinked", unit: "ms",
            goal: nil,
            note: String(
                format: "unlinked journal %.1f MB (%.0f B/object)", Double(journalSizes[.none] ?? 0) / 1e6,
                perObject(journalSizes[.none]))),
    ]
}

/// Workload 2: fetch the parents, delete them (their children cascade), save durably.
private func cascadeDeleteMeasurement(
    _ graph: GraphValues,
    shape: String,
    repetitions: Int,
    in directory: URL,
    journalTemplate: URL,
    sqliteTemplate: URL
) throws -> Measurement {
    var sizeAfter = 0
    let subject = try medianSeconds(
        repetitions: repetitions,
        setUp: { () throws -> (ContextManager, ManagedObjectContext) in
            let manager = try openGraphStore(in: directory, from: journalTemplate)
            return (manager, try manager.createContext())
        },
        measure: { _, context in
            try context.performAndWait {
                let parents = try context.fetch(FetchRequest<GraphParent>())
                precondition(parents.count == graph.parents.count)
                for parent in parents {
                    context.delete(parent)
                }
                try context.save()
            }
        },
        tearDown: { manager, context in
            let left = try context.performAndWait {
                try context.count(for: FetchRequest<GraphParent>()) + context.count(for: FetchRequest<GraphChild>())
            }
            precondition(left == 0, "\(left) objects left after the cascade")
            manager.close()
            sizeAfter = fileSize(directory.appendingPathComponent("Graph.journal"))
        })
    let baseline = try medianSeconds(
        repetitions: repetitions,
        setUp: { try openSQLiteCopy(of: sqliteTemplate, in: directory, name: "delete.sqlite") },
        measure: { database in database.deleteAllParents() },
        tearDown: { database in precondition(database.count("child") == 0) })
    return Measurement(
        workload: "G2 cascade delete of \(shape) + durable save (journal)", subject: subject, baseline: baseline,
        baselineName: "raw SQLite DELETE FROM parent, ON DELETE CASCADE", unit: "ms", goal: nil,
        note: String(
            format: "QueueData time includes fetching the parents (the children load as the cascade reaches "
                + "them); journal %.1f MB before, %d bytes after (a save that leaves the log mostly dead compacts it)",
            Double(fileSize(journalTemplate)) / 1e6, sizeAfter))
}

/// Workload 3: a fresh context fetches every parent, reads `children` on each and an
/// attribute of every child.
private func traversalMeasurement(
    _ graph: GraphValues,
    shape: String,
    repetitions: Int,
    in directory: URL,
    journalTemplate: URL,
    sqliteTemplate: URL
) throws -> Measurement {
    let expected = graph.childAgeSum
    let manager = try openGraphStore(in: directory, from: journalTemplate)
    defer { manager.close() }
    let subject = try medianSeconds(repetitions: repetitions) {
        let context = try manager.createContext()
        try context.performAndWait {
            let parents = try context.fetch(FetchRequest<GraphParent>())
            var sum = 0
            for parent in parents {
                for child in parent.children {
                    sum &+= child.age
                }
            }
            precondition(sum == expected, "children's ages add up to \(sum), not \(expected)")
            blackHole(parents)
        }
    }
    let sqlite = try openSQLiteCopy(of: sqliteTemplate, in: directory, name: "read.sqlite")
    let baseline = medianSeconds(repetitions: repetitions) {
        let rows = sqlite.parentsAndChildren()
        precondition(rows.ageSum == expected && rows.parents.count == graph.parents.count)
        blackHole(rows)
    }
    let joined = medianSeconds(repetitions: repetitions) {
        let rows = sqlite.joinedParentsAndChildren()
        precondition(rows.ageSum == expected && rows.children == graph.children.count)
        blackHole(rows)
    }
    return Measurement(
        workload: "G3 fetch \(graph.parents.count) parents, read children + child.age (fresh context)",
        subject: subject, baseline: baseline, baselineName: "raw SQLite parents, then children by parent_id",
        unit: "ms", goal: nil,
        note: String(
            format: "raw SQLite with one join: %.1f ms (QueueData %.2f× that)", joined * 1e3, subject / joined))
}

/// What a fetch run on the context's queue reports back to the waiting thread.
///
/// `@unchecked Sendable`: written on the context's queue before `done` is signaled, read
/// only after waiting on it.
private final class FetchOutcome: @unchecked Sendable {
    var count = 0
    var seconds = 0.0
    let done = DispatchSemaphore(value: 0)
}

/// Workload 4: how long the context's queue stays blocked during an asynchronous fetch of
/// `records` (`age > 50` sorted by name), against a synchronous fetch inside `perform`,
/// which blocks the queue for the whole fetch. Each run uses a fresh context, so that every
/// matching object is registered.
func asyncFetchMeasurement(_ records: [RecordValue], repetitions: Int) throws -> Measurement {
    let manager = ContextManager(delegate: BenchmarkStore())
    defer { manager.close() }
    try insertAndSave(manager, records)
    let request = FetchRequest<Record>(predicate: #Predicate { $0.age > 50 }, sortBy: [SortDescriptor(\.name)])
    let expected = records.count(where: { $0.age > 50 })

    var asyncLatencies: [Double] = []
    var syncLatencies: [Double] = []
    var asyncTimes: [Double] = []
    var syncTimes: [Double] = []
    for round in 0...repetitions {
        // Asynchronous: match on a private queue, register and deliver on the context's.
        let context = try manager.createContext()
        let outcome = FetchOutcome()
        var probe = QueueProbe(context.queue)
        let start = DispatchTime.now().uptimeNanoseconds
        context.fetch(request) { result in
            outcome.count = (try? result.get().count) ?? -1
            outcome.done.signal()
        }
        outcome.done.wait()
        let asyncTime = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let asyncProbes = probe.stop()
        precondition(outcome.count == expected, "asynchronous fetch found \(outcome.count), not \(expected)")

        // Synchronous, inside `perform`: the queue is blocked for the whole fetch.
        let blocked = try manager.createContext()
        probe = QueueProbe(blocked.queue)
        blocked.perform {
            let start = DispatchTime.now().uptimeNanoseconds
            outcome.count = (try? blocked.fetch(request).count) ?? -1
            outcome.seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            outcome.done.signal()
        }
        outcome.done.wait()
        let syncProbes = probe.stop()
        precondition(outcome.count == expected, "fetch found \(outcome.count), not \(expected)")

        // The first round warms up.
        if round > 0 {
            asyncLatencies += asyncProbes
            syncLatencies += syncProbes
            asyncTimes.append(asyncTime)
            syncTimes.append(outcome.seconds)
        }
    }
    // What the private queue does before the context's queue is involved: match the
    // committed rows, sort, and keep the IDs.
    var committedOnly = request
    committedOnly.includesPendingChanges = false
    let matchIDs = try medianSeconds(repetitions: repetitions) {
        let context = try manager.createContext()
        let ids = try context.performAndWait { try context.fetchObjectIDs(committedOnly) }
        precondition(ids.count == expected)
    }
    asyncLatencies.sort()
    syncLatencies.sort()
    let asyncP99 = percentile(asyncLatencies, 0.99)
    let syncDuration = syncTimes.sorted()[syncTimes.count / 2]
    return Measurement(
        workload: "G4 async fetch of \(records.count) (\(expected) match), queue probe p99",
        subject: asyncP99, baseline: syncDuration, baselineName: "sync fetch in perform: queue blocked", unit: "ms",
        goal: nil,
        note: String(
            format: "async: probe p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d probes (every ~1 ms); "
                + "completion after %.1f ms (fetchObjectIDs of the committed rows alone: %.1f ms). "
                + "Sync fetch in perform: %.1f ms, its probes p99 %.2f ms, max %.2f ms",
            percentile(asyncLatencies, 0.5) * 1e3, asyncP99 * 1e3, asyncLatencies.last! * 1e3, asyncLatencies.count,
            asyncTimes.sorted()[asyncTimes.count / 2] * 1e3, matchIDs * 1e3, syncDuration * 1e3,
            percentile(syncLatencies, 0.99) * 1e3, syncLatencies.last! * 1e3))
}
