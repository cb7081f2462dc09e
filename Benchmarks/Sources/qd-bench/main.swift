// qd-bench: QueueData against baselines measured in the same run.
//
//   swift run -c release --package-path Benchmarks qd-bench [--quick] [--only NAME]
//
// Every figure is a median of several runs, and is reported as a ratio against a baseline
// measured in the same process: absolute times drift on shared machines, ratios much less.

import Dispatch
import Foundation
import QueueData

let arguments = CommandLine.arguments.dropFirst()
let quick = arguments.contains("--quick")
let only: String? = arguments.firstIndex(of: "--only").flatMap { index in
    arguments.index(after: index) < arguments.endIndex ? arguments[arguments.index(after: index)] : nil
}
let count = quick ? 10_000 : 100_000
let repetitions = quick ? 3 : 5

func shouldRun(_ name: String) -> Bool {
    only.map { name.localizedCaseInsensitiveContains($0) } ?? true
}

let records = makeRecords(count)
var results: [Measurement] = []
print("qd-bench: \(count) records, median of \(repetitions) runs\(quick ? " (quick)" : "")\n")

/// A manager whose store holds `values`, and a context on it.
func loadedManager(_ values: [RecordValue] = records) throws -> ContextManager {
    let manager = ContextManager(delegate: BenchmarkStore())
    let context = try manager.createContext()
    try context.performAndWait {
        for value in values {
            let record = context.insert(Record.self)
            record.name = value.name
            record.age = value.age
            record.score = value.score
            record.created = value.created
        }
        try context.save()
    }
    return manager
}

// MARK: P8 — attribute access

// Measured at two sizes: a working set that fits in the cache, and one that does not (there
// the extra memory an object's row takes is what costs).
for size in quick ? [10_000] : [10_000, count] where shouldRun("attribute") {
    let manager = try loadedManager(Array(records.prefix(size)))
    let context = try manager.createContext()
    let objects = try context.performAndWait { try context.fetch(FetchRequest<Record>()) }
    let plain = records.prefix(size).map(PlainRecord.init)
    let passes = max(1, (quick ? 200_000 : 5_000_000) / size)
    let operations = Double(objects.count * passes)

    let plainGet = medianSeconds(repetitions: repetitions) {
        for _ in 0..<passes { blackHole(sumAges(opaque(plain))) }
    }
    let attributeGet = context.performAndWait {
        medianSeconds(repetitions: repetitions) {
            for _ in 0..<passes { blackHole(sumAges(opaque(objects))) }
        }
    }
    let attributeGetRawQueue = context.queue.sync {
        medianSeconds(repetitions: repetitions) {
            for _ in 0..<passes { blackHole(sumAges(opaque(objects))) }
        }
    }
    let plainStringGet = medianSeconds(repetitions: repetitions) {
        for _ in 0..<passes { blackHole(sumNameLengths(opaque(plain))) }
    }
    let attributeStringGet = context.performAndWait {
        medianSeconds(repetitions: repetitions) {
            for _ in 0..<passes { blackHole(sumNameLengths(opaque(objects))) }
        }
    }
    var flip = 0
    let plainSet = medianSeconds(repetitions: repetitions) {
        for _ in 0..<passes {
            flip += 1
            setAges(opaque(plain), flip)
        }
    }
    let attributeSet = context.performAndWait {
        medianSeconds(repetitions: repetitions) {
            for _ in 0..<passes {
                flip += 1
                setAges(opaque(objects), flip)
            }
        }
    }
    results.append(
        Measurement(
            workload: "P8 attribute get (Int), \(size) objects", subject: attributeGet / operations,
            baseline: plainGet / operations,
            baselineName: "stored property", unit: "ns", goal: 3,
            note: String(
                format: "outside perform, on the queue via queue.sync: %.2f ns (%.1f× the stored property)",
                attributeGetRawQueue / operations * 1e9, attributeGetRawQueue / plainGet)))
    results.append(
        Measurement(
            workload: "P8 attribute get (String), \(size) objects", subject: attributeStringGet / operations,
            baseline: plainStringGet / operations, baselineName: "stored property", unit: "ns", goal: 3))
    results.append(
        Measurement(
            workload: "P8 attribute set (Int), \(size) objects", subject: attributeSet / operations,
            baseline: plainSet / operations,
            baselineName: "stored property", unit: "ns", goal: 3))
    context.performAndWait { context.rollback() }
}

// MARK: Insert, fetch, filter + sort (in-memory store vs in-memory SQLite)

if shouldRun("insert") {
    let subject = try medianSeconds(repetitions: repetitions) {
        let manager = ContextManager(delegate: BenchmarkStore())
        let context = try manager.createContext()
        try context.performAndWait {
            for value in records {
                let record = context.insert(Record.self)
                record.name = value.name
                record.age = value.age
                record.score = value.score
                record.created = value.created
            }
            try context.save()
        }
        manager.close()
    }
    let baseline = medianSeconds(repetitions: repetitions) {
        let sqlite = SQLiteBaseline(path: ":memory:")
        sqlite.insert(records)
    }
    results.append(
        Measurement(
            workload: "insert \(count) + save (in-memory)", subject: subject, baseline: baseline,
            baselineName: "raw SQLite :memory:", unit: "ms", goal: 1,
            note: "in-memory store vs in-memory SQLite; the durable journal store is the Stores issue"))
}

if shouldRun("fetch") || shouldRun("filter") {
    let manager = try loadedManager()
    let sqlite = SQLiteBaseline(path: ":memory:")
    sqlite.insert(records)

    if shouldRun("fetch") {
        let subject = try medianSeconds(repetitions: repetitions) {
            let context = try manager.createContext()
            try context.performAndWait {
                let all = try context.fetch(FetchRequest<Record>())
                var sum = 0
                for record in all { sum &+= record.age }
                precondition(all.count == count)
                blackHole(sum)
            }
        }
        let baseline = medianSeconds(repetitions: repetitions) {
            let all = sqlite.select("SELECT id, name, age, score, created FROM record")
            precondition(all.count == count)
            blackHole(all)
        }
        results.append(
            Measurement(
                workload: "fetch all \(count) (fresh context)", subject: subject, baseline: baseline,
                baselineName: "raw SQLite into structs", unit: "ms", goal: 1))
    }

    if shouldRun("filter") {
        var matches = 0
        let subject = try medianSeconds(repetitions: repetitions) {
            let context = try manager.createContext()
            try context.performAndWait {
                let request = FetchRequest<Record>(
                    predicate: #Predicate { $0.age > 50 }, sortBy: [SortDescriptor(\.name)])
                let result = try context.fetch(request)
                matches = result.count
                blackHole(result)
            }
        }
        var baselineMatches = 0
        let baseline = medianSeconds(repetitions: repetitions) {
            let result = sqlite.select("SELECT id, name, age, score, created FROM record WHERE age > 50 ORDER BY name")
            baselineMatches = result.count
            blackHole(result)
        }
        precondition(matches == baselineMatches, "QueueData found \(matches), SQLite \(baselineMatches)")
        results.append(
            Measurement(
                workload: "age > 50 sorted by name (\(matches) rows)", subject: subject, baseline: baseline,
                baselineName: "raw SQLite", unit: "ms", goal: 1))
    }
}

printTable(results)
