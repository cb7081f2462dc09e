import Foundation
import QueueData

// The fan-out workloads: one parent with N children, linked one child at a time, saved
// durably, and half of its children deleted, each against the same objects unlinked. Every
// workload runs at several N and reports the time per child: a per-child cost that grows
// with N is a cost quadratic in N.

/// The graph model in memory: linking without a store.
private struct FanoutMemoryStore: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([GraphParent.self, GraphChild.self]) }
    var persistentStoreName: String { "Fanout" }
    var persistentStoreType: StoreType { .inMemory }
}

/// One of the fan-out workloads.
private enum FanoutWorkload: CaseIterable {
    case link, save, delete

    func label(_ children: Int) -> String {
        switch self {
        case .link: return "F1 1 parent, insert \(children) children + child.parent = (in memory, no save)"
        case .save: return "F2 1 parent, \(children) linked children: durable save (journal)"
        case .delete: return "F3 1 parent, delete \(children / 2) of its \(children) children + durable save"
        }
    }

    var baselineName: String {
        switch self {
        case .link: return "the same inserts, unlinked"
        case .save: return "the same objects unlinked"
        case .delete: return "the same deletes, unlinked"
        }
    }

    /// What the per-child figures are per.
    var perWhat: String { self == .delete ? "deleted child" : "child" }
}

/// Inserts one parent and `values`' children, setting `child.parent = parent` on each when
/// `linked`; does not save.
///
/// - Important: Call on the context's queue.
private func insertFanout(_ values: GraphValues, into context: ManagedObjectContext, linked: Bool) {
    let parent = context.insert(GraphParent.self)
    parent.name = values.parents[0].name
    parent.rank = values.parents[0].age
    for value in values.children {
        let child = context.insert(GraphChild.self)
        child.name = value.name
        child.age = value.age
        child.score = value.score
        if linked {
            child.parent = parent
        }
    }
}

/// The one parent's children as `context` sees it (pending changes included).
///
/// - Important: Call on the context's queue.
private func childCount(in context: ManagedObjectContext) throws -> Int {
    let parents = try context.fetch(FetchRequest<GraphParent>())
    precondition(parents.count == 1, "\(parents.count) parents")
    return parents[0].children.count
}

/// Links, saves and deletes one parent's children at each of `sizes`, each against the
/// same objects unlinked.
///
/// - Parameter repetitions: Runs of each workload at a size (after a warm-up).
func fanoutMeasurements(sizes: [Int], repetitions: (Int) -> Int) throws -> [Measurement] {
    let directory = benchmarkDirectory("fanout")
    defer { try? FileManager.default.removeItem(at: directory) }
    var times: [FanoutWorkload: [(children: Int, subject: Double, baseline: Double)]] = [:]
    var notes: [FanoutWorkload: [Int: String]] = [:]
    for size in sizes {
        let values = GraphValues(parentCount: 1, childrenPerParent: size)
        let runs = repetitions(size)
        let link = try linkTimes(values, repetitions: runs)
        times[.link, default: []].append((size, link.subject, link.baseline))
        let save = try saveTimes(values, repetitions: runs, in: directory)
        times[.save, default: []].append((size, save.subject, save.baseline))
        notes[.save, default: [:]][size] = save.note
        let delete = try deleteTimes(values, repetitions: runs, in: directory)
        times[.delete, default: []].append((size, delete.subject, delete.baseline))
    }
    var results: [Measurement] = []
    for workload in FanoutWorkload.allCases {
        let rows = times[workload] ?? []
        guard let first = rows.first else { continue }
        func perChild(_ seconds: Double, _ children: Int) -> Double {
            seconds / Double(workload == .delete ? children / 2 : children)
        }
        let firstSubject = perChild(first.subject, first.children)
        let firstBaseline = perChild(first.baseline, first.children)
        for row in rows {
            let subject = perChild(row.subject, row.children)
            let baseline = perChild(row.baseline, row.children)
            var note = String(
                format: "%.2f µs per %@ (baseline %.2f µs); per %@ %.2f× (baseline %.2f×) the N = %d figure",
                subject * 1e6, workload.perWhat, baseline * 1e6, workload.perWhat, subject / firstSubject,
                baseline / firstBaseline, first.children)
            if let extra = notes[workload]?[row.children] {
                note += "; " + extra
            }
            results.append(
                Measurement(
                    workload: workload.label(row.children), subject: row.subject, baseline: row.baseline,
                    baselineName: workload.baselineName, unit: "ms", goal: nil, note: note))
        }
    }
    return results
}

/// F1: insert the parent and its children in memory, linking each child, against the same
/// inserts unlinked.
private func linkTimes(_ values: GraphValues, repetitions: Int) throws -> (subject: Double, baseline: Double) {
    func run(linked: Bool) throws -> Double {
        try medianSeconds(
            repetitions: repetitions,
            setUp: { () throws -> (ContextManager, ManagedObjectContext) in
                let manager = ContextManager(delegate: FanoutMemoryStore())
                return (manager, try manager.createContext())
            },
            measure: { _, context in
                context.performAndWait { insertFanout(values, into: context, linked: linked) }
            },
            tearDown: { manager, context in
                let children = try context.performAndWait { () throws -> Int in
                    defer { context.rollback() }
                    return try childCount(in: context)
                }
                precondition(children == (linked ? values.children.count : 0), "the parent has \(children) children")
                manager.close()
            })
    }
    return (try run(linked: true), try run(linked: false))
}

/// The saved graph of `linked` children, kept for the delete workload.
private func fanoutTemplate(in directory: URL, linked: Bool) -> URL {
    directory.appendingPathComponent(linked ? "linked.journal" : "unlinked.journal")
}

/// F2: the durable save of the parent and its linked children (inserted untimed), against
/// the save of the same objects unlinked. Leaves the saved stores as the delete workload's
/// templates.
private func saveTimes(
    _ values: GraphValues,
    repetitions: Int,
    in directory: URL
) throws -> (subject: Double, baseline: Double, note: String) {
    let store = directory.appendingPathComponent("Graph.journal")
    var sizes: [Bool: Int] = [:]
    func run(linked: Bool) throws -> Double {
        try medianSeconds(
            repetitions: repetitions,
            setUp: { () throws -> (ContextManager, ManagedObjectContext) in
                let manager = try openGraphStore(in: directory)
                let context = try manager.createContext()
                context.performAndWait { insertFanout(values, into: context, linked: linked) }
                return (manager, context)
            },
            measure: { _, context in
                try context.performAndWait { try context.save() }
            },
            tearDown: { manager, context in
                let children = try context.performAndWait { try childCount(in: context) }
                precondition(children == (linked ? values.children.count : 0), "the parent has \(children) children")
                manager.close()
                sizes[linked] = fileSize(store)
                let template = fanoutTemplate(in: directory, linked: linked)
                try? FileManager.default.removeItem(at: template)
                try FileManager.default.moveItem(at: store, to: template)
            })
    }
    let subject = try run(linked: true)
    let baseline = try run(linked: false)
    let note = String(
        format: "journal %.2f MB linked, %.2f MB unlinked", Double(sizes[true] ?? 0) / 1e6,
        Double(sizes[false] ?? 0) / 1e6)
    return (subject, baseline, note)
}

/// F3: delete every other of the saved parent's children (by name) and save durably,
/// against deleting the same share of the unlinked children. The children are fetched
/// untimed; with a parent, deleting a child removes it from the parent's `children`.
private func deleteTimes(
    _ values: GraphValues,
    repetitions: Int,
    in directory: URL
) throws -> (subject: Double, baseline: Double) {
    let remaining = values.children.count - values.children.count / 2
    func run(linked: Bool) throws -> Double {
        try medianSeconds(
            repetitions: repetitions,
            setUp: { () throws -> (ContextManager, ManagedObjectContext, [GraphChild]) in
                let manager = try openGraphStore(in: directory, from: fanoutTemplate(in: directory, linked: linked))
                let context = try manager.createContext()
                let victims = try context.performAndWait { () throws -> [GraphChild] in
                    let children =
                        linked
                        ? Array(try context.fetch(FetchRequest<GraphParent>())[0].children)
                        : try context.fetch(FetchRequest<GraphChild>())
                    precondition(children.count == values.children.count, "\(children.count) children")
                    let sorted = children.sorted { $0.name < $1.name }
                    return (0..<sorted.count / 2).map { sorted[2 * $0] }
                }
                return (manager, context, victims)
            },
            measure: { _, context, victims in
                try context.performAndWait {
                    for child in victims {
                        context.delete(child)
                    }
                    try context.save()
                }
            },
            tearDown: { manager, _, _ in
                let check = try manager.createContext()
                let (left, linkedLeft) = try check.performAndWait {
                    (try check.count(for: FetchRequest<GraphChild>()), try childCount(in: check))
                }
                precondition(left == remaining, "\(left) children left, not \(remaining)")
                precondition(linkedLeft == (linked ? remaining : 0), "the parent has \(linkedLeft) children")
                manager.close()
            })
    }
    return (try run(linked: true), try run(linked: false))
}
