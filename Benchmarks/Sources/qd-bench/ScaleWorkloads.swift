import Foundation
import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// How the engine's costs grow with the store (the engine issue's scale goals), on a journal store
/// of the benchmark records at each of `sizes`: opening the store (P12, against GRDB opening and
/// fetching the same rows), memory per object, a predicate scan, a sorted page, and a one-object
/// save. Every figure after the smallest size is also compared with the smallest size's, scaled
/// linearly (for the save: not scaled, since it must not grow): a ratio ≤ 1 is linear or better.
func scaleMeasurements(sizes: [Int], repetitions: Int, saves: Int) throws -> [Measurement] {
    var results: [Measurement] = []
    /// The figures at the smallest size: per record for the linear ones, absolute for the save.
    var first: (size: Int, open: Double, bytes: Double, scan: Double, page: Double, p50: Double, p99: Double)?
    for size in sizes {
        let values = makeRecords(size)
        let directory = benchmarkDirectory("scale-\(size)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let delegate = FileStoreBenchmark(directory: directory, type: .journal)
        do {
            let writer = ContextManager(delegate: delegate)
            try insertAndSave(writer, values)
            writer.close()
        }
        let journalBytes = fileSize(directory.appendingPathComponent("Benchmark.journal"))

        // Opening: the load alone, and the load and a fetch of every object (P12's shape).
        let open = try medianSeconds(repetitions: repetitions) {
            let manager = ContextManager(delegate: delegate)
            try manager.loadPersistentStore()
            manager.close()
        }
        let openAndFetch = try medianSeconds(repetitions: repetitions) {
            let manager = ContextManager(delegate: delegate)
            let context = try manager.createContext()
            let all = try context.performAndWait { try context.fetch(FetchRequest<Record>()) }
            precondition(all.count == size)
            manager.close()
        }
        let grdbPath = directory.appendingPathComponent("grdb.sqlite").path
        try makeGRDBDatabase(values, at: grdbPath)
        let grdb = try grdbOpenAndFetchAllSeconds(path: grdbPath, count: size, repetitions: repetitions)
        try? FileManager.default.removeItem(atPath: grdbPath)

        // Memory: the live heap the open store and one context holding every object add.
        let heapBefore = liveHeap()
        let manager = ContextManager(delegate: delegate)
        defer { manager.close() }
        let holder = try manager.createContext()
        let held = try holder.performAndWait { try holder.fetch(FetchRequest<Record>()) }
        let bytesPerObject = Double(liveHeap() - heapBefore) / Double(size)
        blackHole(held.count)

        // A scan (every row matched by a predicate) and a sorted page (the top 20 of the matches).
        let context = try manager.createContext()
        var matches = 0
        let scan = try medianSeconds(repetitions: repetitions) {
            matches = try context.performAndWait {
                try context.count(for: FetchRequest<Record>(predicate: #Predicate { $0.age > 50 }))
            }
        }
        let page = try medianSeconds(repetitions: repetitions) {
            try context.performAndWait {
                var request = FetchRequest<Record>(
                    predicate: #Predicate { $0.age > 50 }, sortBy: [SortDescriptor(\.name)])
                request.fetchLimit = 20
                let found = try context.fetch(request)
                precondition(found.count == 20)
                context.reset()
            }
        }
        let saveTimes = try timedUpdates(manager, iterations: saves)
        let (p50, p99) = (percentile(saveTimes, 0.5), percentile(saveTimes, 0.99))

        let label = size >= 1_000_000 ? "\(size / 1_000_000)M" : "\(size / 1_000)k"
        results.append(
            Measurement(
                workload: "P12 open \(label) journal + fetch all", subject: openAndFetch, baseline: grdb,
                baselineName: "GRDB open + fetch all Codable", unit: "ms", goal: 0.5,
                note: String(
                    format: "load alone %.1f ms; journal %.1f MB; %d records", open * 1e3, Double(journalBytes) / 1e6,
                    size),
                otherBaselines: [Baseline(name: "the load alone", value: open)]))
        guard let first else {
            first = (size, open, bytesPerObject, scan, page, p50, p99)
            results.append(
                Measurement(
                    workload: "scale \(label): memory per object (journal store + one context)",
                    subject: bytesPerObject, baseline: bytesPerObject, baselineName: "itself (the smallest size)",
                    unit: "B", goal: nil))
            results.append(
                Measurement(
                    workload: "scale \(label): count age > 50 (\(matches) matches)", subject: scan, baseline: scan,
                    baselineName: "itself (the smallest size)", unit: "ms", goal: nil))
            results.append(
                Measurement(
                    workload: "scale \(label): top 20 of age > 50 sorted by name", subject: page, baseline: page,
                    baselineName: "itself (the smallest size)", unit: "ms", goal: nil))
            results.append(
                Measurement(
                    workload: "scale \(label): one-object save, p50 / p99", subject: p50, baseline: p50,
                    baselineName: "itself (the smallest size)", unit: "µs", goal: nil,
                    note: String(format: "p99 %.1f µs; %d saves", p99 * 1e6, saves)))
            continue
        }
        let growth = Double(size) / Double(first.size)
        let smallest = first.size >= 1_000_000 ? "\(first.size / 1_000_000)M" : "\(first.size / 1_000)k"
        results.append(
            Measurement(
                workload: "scale \(label): store open (load alone)", subject: open, baseline: first.open * growth,
                baselineName: "\(smallest)'s × \(Int(growth)) (linear)", unit: "ms", goal: 1))
        results.append(
            Measurement(
                workload: "scale \(label): memory per object (journal store + one context)",
                subject: bytesPerObject, baseline: first.bytes, baselineName: "\(smallest)'s (constant)", unit: "B",
                goal: 1))
        results.append(
            Measurement(
                workload: "scale \(label): count age > 50 (\(matches) matches)", subject: scan,
                baseline: first.scan * growth, baselineName: "\(smallest)'s × \(Int(growth)) (linear)", unit: "ms",
                goal: 1))
        results.append(
            Measurement(
                workload: "scale \(label): top 20 of age > 50 sorted by name", subject: page,
                baseline: first.page * growth, baselineName: "\(smallest)'s × \(Int(growth)) (linear)", unit: "ms",
                goal: 1))
        results.append(
            Measurement(
                workload: "scale \(label): one-object save, p50", subject: p50, baseline: first.p50,
                baselineName: "\(smallest)'s (must not grow)", unit: "µs", goal: 1.3,
                note: String(format: "%d saves", saves)))
        results.append(
            Measurement(
                workload: "scale \(label): one-object save, p99", subject: p99, baseline: first.p99,
                baselineName: "\(smallest)'s (must not grow)", unit: "µs", goal: 1.3))
    }
    return results
}
