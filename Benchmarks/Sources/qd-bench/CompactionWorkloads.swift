import Dispatch
import Foundation
import QueueData

/// P4 while the journal compacts itself: saves of one object holding 64 KB of text, on a
/// journal store of `size` records, until the store has compacted itself `compactions` times
/// (each save grows the log; past 1 MiB and twice the live data, the journal rewrites itself
/// as one snapshot). Reports the slowest save and the 99th percentile against the time the
/// same store takes to compact on demand (`compactPersistentStore()`: the work a save did
/// inside itself when compaction was not written off the saving path), and the median save.
func compactionMeasurements(sizes: [Int], compactions: Int) throws -> [Measurement] {
    var results: [Measurement] = []
    for size in sizes {
        let directory = benchmarkDirectory("compaction")
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = directory.appendingPathComponent("Benchmark.journal")
        let manager = ContextManager(delegate: FileStoreBenchmark(directory: directory, type: .journal))
        try insertAndSave(manager, makeRecords(size))

        // What the compacting save used to include: a snapshot of the whole store, written and
        // synchronized, renamed over the journal (median of 3).
        var compactTimes: [Double] = []
        for _ in 0..<3 {
            let start = DispatchTime.now().uptimeNanoseconds
            try manager.compactPersistentStore()
            compactTimes.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        compactTimes.sort()
        let snapshotSize = fileSize(journal)

        let context = try manager.createContext()
        var times: [Double] = []
        var seen = 0
        try context.performAndWait {
            let record = try context.fetch(FetchRequest<Record>(fetchLimit: 1))[0]
            var previousSize = fileSize(journal)
            // A bound, in case the store never compacts (it would be a bug: reported below).
            let limit = 40 * max(16, fileSize(journal) / 65_536 + 1)
            while seen < compactions, times.count < limit {
                record.name = String(repeating: Character(UnicodeScalar(UInt8(97 + times.count % 26))), count: 65_536)
                let start = DispatchTime.now().uptimeNanoseconds
                try context.save()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                let newSize = fileSize(journal)
                if newSize < previousSize {
                    seen += 1
                }
                previousSize = newSize
            }
        }
        manager.close()
        precondition(seen == compactions, "the journal compacted itself \(seen) times in \(times.count) saves")
        let sorted = times.sorted()
        let note = String(
            format: "%d saves of 64 KB, %d compactions; a snapshot of the store is %.1f MB", times.count, seen,
            Double(snapshotSize) / 1e6)
        let onDemand = "compactPersistentStore() of the same store"
        results.append(
            Measurement(
                workload: "P4c slowest 64 KB save while the journal compacts itself, \(size) records",
                subject: sorted.last!, baseline: compactTimes[1], baselineName: onDemand, unit: "ms", goal: 0.5,
                note: note,
                otherBaselines: [Baseline(name: "median save", value: percentile(sorted, 0.5))]))
        results.append(
            Measurement(
                workload: "P4c 64 KB save p99 while the journal compacts itself, \(size) records",
                subject: percentile(sorted, 0.99), baseline: compactTimes[1], baselineName: onDemand, unit: "ms",
                goal: 0.5, otherBaselines: [Baseline(name: "median save", value: percentile(sorted, 0.5))]))
    }
    return results
}
