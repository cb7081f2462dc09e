// qd-bench: QueueData against baselines measured in the same run.
//
//   swift run -c release --package-path Benchmarks qd-bench [--quick] [--only NAME[,NAME...]] [--records N]
//
// `--only` runs the groups whose name contains one of the NAMEs (`--only goals`: the groups
// of the P1–P10 table). Groups: memory, attribute, insert, fetch, filter, journal, json,
// savers, migration, graph, fanout, unique, conflict, merge, throughput, observation, index,
// export, compaction, history, scale (`--scale-sizes N,N,...`: the sizes it runs, 100k and 1M
// unless given).
//
// Every figure is a median of several runs, and is reported as a ratio against a baseline
// measured in the same process: absolute times drift on shared machines, ratios much less.

import Dispatch
import Foundation
import QueueData

let arguments = CommandLine.arguments.dropFirst()
let quick = arguments.contains("--quick")
let only: [String]? = arguments.firstIndex(of: "--only").flatMap { index in
    arguments.index(after: index) < arguments.endIndex ? arguments[arguments.index(after: index)] : nil
}.map { names in
    names.split(separator: ",").flatMap { name in
        // The groups that print the rows of the issue's P1–P10 table.
        name == "goals"
            ? ["memory", "attribute", "fetch", "filter", "journal", "json", "savers", "merge"] : [String(name)]
    }
}
// `--records N` runs the same workloads at another size (the scale runs: 1M).
let recordsOverride: Int? = arguments.firstIndex(of: "--records").flatMap { index in
    arguments.index(after: index) < arguments.endIndex ? Int(arguments[arguments.index(after: index)]) : nil
}
let count = recordsOverride ?? (quick ? 10_000 : 100_000)
let repetitions = quick ? 3 : (count > 100_000 ? 3 : 5)

func shouldRun(_ name: String) -> Bool {
    only.map { names in names.contains { name.localizedCaseInsensitiveContains($0) } } ?? true
}

let records = makeRecords(count)
var results: [Measurement] = []
print(
    "qd-bench: \(count) records, median of \(repetitions) runs\(quick ? " (quick)" : ""); SQLite "
        + "\(SQLiteBaseline.libraryVersion), \(ProcessInfo.processInfo.activeProcessorCount) cores\n")

/// A manager whose store holds `values`, and a context on it.
func loadedManager(_ values: [RecordValue] = records) throws -> ContextManager {
    let manager = ContextManager(delegate: BenchmarkStore())
    try insertAndSave(manager, values)
    return manager
}

// MARK: P10 — memory per object

// First, while earlier workloads have fragmented the heap least.
if shouldRun("memory") {
    results.append(try memoryMeasurement(records))
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
            baselineName: "stored property", unit: "ns", goal: 1.5,
            note: String(
                format: "outside perform, on the queue via queue.sync: %.2f ns (%.1f× the stored property)",
                attributeGetRawQueue / operations * 1e9, attributeGetRawQueue / plainGet)))
    results.append(
        Measurement(
            workload: "P8 attribute get (String), \(size) objects", subject: attributeStringGet / operations,
            baseline: plainStringGet / operations, baselineName: "stored property", unit: "ns", goal: 1.5))
    results.append(
        Measurement(
            workload: "P8 attribute set (Int), \(size) objects", subject: attributeSet / operations,
            baseline: plainSet / operations,
            baselineName: "stored property", unit: "ns", goal: 1.5))
    context.performAndWait { context.rollback() }
}

// MARK: Insert, fetch, filter + sort (in-memory store vs in-memory SQLite)

if shouldRun("insert") {
    let subject = try medianSeconds(repetitions: repetitions) {
        let manager = ContextManager(delegate: BenchmarkStore())
        try insertAndSave(manager, records)
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
    let grdb = try GRDBBaseline()
    try grdb.insert(records)

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
        let grdbFetch = try medianSeconds(repetitions: repetitions) {
            let all = try grdb.fetchAll()
            precondition(all.count == count)
            blackHole(all)
        }
        results.append(
            Measurement(
                workload: "P2 fetch all \(count) (fresh context, in-memory store)", subject: subject,
                baseline: baseline, baselineName: "raw SQLite :memory: into structs", unit: "ms", goal: 0.8,
                otherBaselines: [Baseline(name: "GRDB Codable records, :memory:", value: grdbFetch)]))
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
        let grdbFilter = try medianSeconds(repetitions: repetitions) {
            let result = try grdb.fetchOlderThan50SortedByName()
            precondition(result.count == matches)
            blackHole(result)
        }
        results.append(
            Measurement(
                workload: "P3 age > 50 sorted by name (\(matches) of \(count), in-memory store)", subject: subject,
                baseline: baseline, baselineName: "raw SQLite :memory:", unit: "ms", goal: 0.7,
                otherBaselines: [Baseline(name: "GRDB query interface, :memory:", value: grdbFilter)]))

        // The same query by attribute name: a range constraint and an attribute sort read the
        // rows' values directly, with no key path (Core Data's string keys).
        var namedOrder: [String] = []
        let namedSubject = try medianSeconds(repetitions: repetitions) {
            let context = try manager.createContext()
            try context.performAndWait {
                var request = FetchRequest<Record>(where: "age", in: 51...)
                request.attributeSorts = [AttributeSort("name")]
                let result = try context.fetch(request)
                precondition(result.count == matches, "by name: \(result.count) of \(matches)")
                namedOrder = result.map(\.name)
                blackHole(result)
            }
        }
        let expected = sqlite.select("SELECT id, name, age, score, created FROM record WHERE age > 50 ORDER BY name")
        precondition(namedOrder == expected.map(\.name), "by name: a different order than SQLite's")
        results.append(
            Measurement(
                workload: "P3 by name: age in 51... sorted by AttributeSort(\"name\") (\(matches) of \(count))",
                subject: namedSubject, baseline: baseline, baselineName: "raw SQLite :memory:", unit: "ms", goal: 0.7,
                otherBaselines: [Baseline(name: "GRDB query interface, :memory:", value: grdbFilter)]))

        // The predicate alone: counting matches makes no objects and sorts nothing.
        var counted = 0
        let countSubject = try medianSeconds(repetitions: repetitions) {
            let context = try manager.createContext()
            try context.performAndWait {
                counted = try context.count(for: FetchRequest<Record>(predicate: #Predicate { $0.age > 50 }))
            }
        }
        let countBaseline = medianSeconds(repetitions: repetitions) {
            precondition(sqlite.scalar("SELECT count(*) FROM record WHERE age > 50") == counted)
        }
        // Foundation's evaluation of the same predicate on plain structs: what a fetch cost per
        // row before predicates were compiled, without the objects.
        let valuePredicate = #Predicate<RecordValue> { $0.age > 50 }
        let evaluated = try medianSeconds(repetitions: repetitions) {
            var matching = 0
            for record in records where try valuePredicate.evaluate(record) {
                matching += 1
            }
            precondition(matching == counted)
        }
        results.append(
            Measurement(
                workload: "count age > 50 (\(counted) of \(count), in-memory store)", subject: countSubject,
                baseline: countBaseline, baselineName: "raw SQLite :memory: count(*)", unit: "ms", goal: nil,
                otherBaselines: [Baseline(name: "Foundation evaluate on \(count) structs", value: evaluated)]))
    }
}

// MARK: File stores

/// GRDB's open + fetch all of the records (P7's baseline), measured once for both stores.
var grdbOpenAndFetch: Double?

/// The median time GRDB takes to open a database of the records and fetch them all: the
/// database at `path` if given, else one made for it.
@MainActor
func grdbOpenAndFetchSeconds(path: String? = nil) throws -> Double {
    if let grdbOpenAndFetch {
        return grdbOpenAndFetch
    }
    let directory = benchmarkDirectory("grdb")
    defer { try? FileManager.default.removeItem(at: directory) }
    let database = path ?? directory.appendingPathComponent("grdb.sqlite").path
    if path == nil {
        try makeGRDBDatabase(records, at: database)
    }
    let seconds = try grdbOpenAndFetchAllSeconds(path: database, count: count, repetitions: repetitions)
    grdbOpenAndFetch = seconds
    return seconds
}

if shouldRun("journal") {
    let directory = benchmarkDirectory("journal")
    defer { try? FileManager.default.removeItem(at: directory) }
    var journalInsert = 0.0
    var journalSize = 0
    var managers: [ContextManager] = []
    journalInsert = try medianSeconds(repetitions: quick ? 1 : 3) {
        managers.forEach { $0.close() }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("Benchmark.journal"))
        let manager = ContextManager(delegate: FileStoreBenchmark(directory: directory, type: .journal))
        try insertAndSave(manager, records)
        managers = [manager]
    }
    journalSize = fileSize(directory.appendingPathComponent("Benchmark.journal"))
    let sqliteDirectory = benchmarkDirectory("sqlite")
    defer { try? FileManager.default.removeItem(at: sqliteDirectory) }
    let sqliteInsert = medianSeconds(repetitions: quick ? 1 : 3) {
        let path = sqliteDirectory.appendingPathComponent("bench-\(UUID().uuidString).sqlite").path
        let sqlite = SQLiteBaseline(path: path, durable: true)
        sqlite.insert(records)
    }
    // The last database GRDB wrote is P4's and P7's.
    var grdbPath = ""
    let grdbInsert = try medianSeconds(repetitions: quick ? 1 : 3) {
        grdbPath = sqliteDirectory.appendingPathComponent("grdb-\(UUID().uuidString).sqlite").path
        try makeGRDBDatabase(records, at: grdbPath)
    }
    results.append(
        Measurement(
            workload: "P1 insert \(count) + durable save (journal)", subject: journalInsert, baseline: sqliteInsert,
            baselineName: "raw SQLite WAL+FULL, one tx", unit: "ms", goal: 1,
            note: String(
                format: "journal file %.1f MB, %.0f bytes per record", Double(journalSize) / 1e6,
                Double(journalSize) / Double(count)),
            otherBaselines: [Baseline(name: "GRDB Codable records, WAL+FULL, one tx", value: grdbInsert)]))

    let iterations = quick ? 50 : 300
    let manager = managers[0]
    let before = fileSize(directory.appendingPathComponent("Benchmark.journal"))
    let saves = try timedUpdates(manager, iterations: iterations)
    let recordSize = (fileSize(directory.appendingPathComponent("Benchmark.journal")) - before) / iterations
    let appends = timedAppends(size: recordSize, iterations: iterations, in: directory)
    let grdb = try GRDBBaseline(path: grdbPath, durable: true, create: false)
    let grdbUpdates = try grdb.timedUpdates(iterations: iterations)
    try grdb.close()
    let grdbName = "GRDB update, WAL+FULL, a tx each"
    results.append(
        Measurement(
            workload: "P4 one-object save on \(count) (journal), p50", subject: percentile(saves, 0.5),
            baseline: percentile(appends, 0.5), baselineName: "append \(recordSize) B + fdatasync", unit: "µs",
            goal: 1.1,
            note: "\(recordSize) bytes per one-object update record (header 24 B); \(iterations) saves",
            otherBaselines: [Baseline(name: grdbName, value: percentile(grdbUpdates, 0.5))]))
    results.append(
        Measurement(
            workload: "P4 one-object save on \(count) (journal), p99", subject: percentile(saves, 0.99),
            baseline: percentile(appends, 0.99), baselineName: "append \(recordSize) B + fdatasync", unit: "µs",
            goal: 1.1, otherBaselines: [Baseline(name: grdbName, value: percentile(grdbUpdates, 0.99))]))
    manager.close()

    let openJournal = try medianSeconds(repetitions: repetitions) {
        let reopened = ContextManager(delegate: FileStoreBenchmark(directory: directory, type: .journal))
        let context = try reopened.createContext()
        let all = try context.performAndWait { try context.fetch(FetchRequest<Record>()) }
        precondition(all.count == count)
        reopened.close()
    }
    let encoded = try JSONEncoder().encode(
        records.map { CodableRecord(id: $0.id, name: $0.name, age: $0.age, score: $0.score, created: $0.created) })
    let jsonBaselineURL = directory.appendingPathComponent("baseline.json")
    try encoded.write(to: jsonBaselineURL)
    let decode = try medianSeconds(repetitions: repetitions) {
        let decoded = try JSONDecoder().decode([CodableRecord].self, from: Data(contentsOf: jsonBaselineURL))
        precondition(decoded.count == count)
    }
    results.append(
        Measurement(
            workload: "P7 open \(count) journal + fetch all", subject: openJournal,
            baseline: try grdbOpenAndFetchSeconds(path: grdbPath), baselineName: "GRDB open + fetch all Codable",
            unit: "ms", goal: 0.5,
            otherBaselines: [Baseline(name: "read + JSONDecoder of the rows", value: decode)]))
}

if shouldRun("json") {
    let directory = benchmarkDirectory("json")
    defer { try? FileManager.default.removeItem(at: directory) }
    let manager = ContextManager(delegate: FileStoreBenchmark(directory: directory, type: .jsonFile))
    try insertAndSave(manager, records)
    let saves = try timedUpdates(manager, iterations: quick ? 3 : 7)
    manager.close()
    let codable = records.map {
        CodableRecord(id: $0.id, name: $0.name, age: $0.age, score: $0.score, created: $0.created)
    }
    let baselineURL = directory.appendingPathComponent("baseline.json")
    let encodeAndWrite = try medianSeconds(repetitions: quick ? 3 : 7) {
        writeDurably(try JSONEncoder().encode(codable), to: baselineURL)
    }
    let documentSize = fileSize(directory.appendingPathComponent("Benchmark.json"))
    results.append(
        Measurement(
            workload: "P6 JSON store full save of \(count)", subject: percentile(saves, 0.5), baseline: encodeAndWrite,
            baselineName: "JSONEncoder + durable write", unit: "ms", goal: 0.2,
            note: String(
                format: "document %.1f MB; JSONEncoder output %.1f MB", Double(documentSize) / 1e6,
                Double(fileSize(baselineURL)) / 1e6)))

    let openJSON = try medianSeconds(repetitions: repetitions) {
        let reopened = ContextManager(delegate: FileStoreBenchmark(directory: directory, type: .jsonFile))
        let context = try reopened.createContext()
        let all = try context.performAndWait { try context.fetch(FetchRequest<Record>()) }
        precondition(all.count == count)
        reopened.close()
    }
    let decode = try medianSeconds(repetitions: repetitions) {
        let decoded = try JSONDecoder().decode([CodableRecord].self, from: Data(contentsOf: baselineURL))
        precondition(decoded.count == count)
    }
    results.append(
        Measurement(
            workload: "P7 open \(count) JSON store + fetch all", subject: openJSON,
            baseline: try grdbOpenAndFetchSeconds(), baselineName: "GRDB open + fetch all Codable", unit: "ms",
            goal: 0.5, otherBaselines: [Baseline(name: "read + JSONDecoder of the rows", value: decode)]))
    let loadJSON = try medianSeconds(repetitions: repetitions) {
        let reopened = ContextManager(delegate: FileStoreBenchmark(directory: directory, type: .jsonFile))
        try reopened.loadPersistentStore()
        reopened.close()
    }
    results.append(
        Measurement(
            workload: "JSON store open (read + decode \(count) rows)", subject: loadJSON, baseline: decode,
            baselineName: "read + JSONDecoder of the rows", unit: "ms", goal: 0.5))
}

// MARK: P5 — concurrent durable saves

if shouldRun("savers") {
    results.append(
        try concurrentSaversMeasurement(
            records, queues: 8, savesPerQueue: quick ? 100 : 500, repetitions: quick ? 1 : 3))
}

// MARK: Migration

if shouldRun("migration") {
    results.append(try migrationMeasurement(.journal, fileExtension: "journal", count: count, repetitions: repetitions))
    results.append(try migrationMeasurement(.jsonFile, fileExtension: "json", count: count, repetitions: repetitions))
}

// MARK: Object graph

if shouldRun("graph") {
    let graph = GraphValues(parentCount: quick ? 1_000 : 10_000, childrenPerParent: 10)
    results += try graphMeasurements(graph, repetitions: 3, traversals: repetitions)
    results.append(try asyncFetchMeasurement(records, repetitions: repetitions))
}

// MARK: Fan-out and uniqueness

if shouldRun("fanout") {
    // Small sizes take a few milliseconds: more runs keep their medians steady.
    results += try fanoutMeasurements(sizes: quick ? [1_000, 4_000] : [1_000, 4_000, 16_000, 32_000]) { children in
        quick || children > 4_000 ? 3 : 7
    }
}

if shouldRun("unique") {
    results += try uniqueMeasurements(
        records, upserts: count / 10, repetitions: repetitions, saveRepetitions: quick ? 1 : 3)
}

// MARK: Concurrency

if shouldRun("conflict") {
    let size = quick ? 2_000 : 10_000
    var plain = 0.0
    var resolved = 0.0
    for _ in 0..<(quick ? 2 : 3) {
        let manager = try loadedManager(Array(records.prefix(size)))
        let writer = try manager.createContext()
        let other = try manager.createContext()
        let objects = try writer.performAndWait {
            writer.automaticallyMergesChangesFromOtherContexts = false
            writer.mergePolicy = .mergeByPropertyObjectTrump
            return try writer.fetch(FetchRequest<Record>())
        }
        // A save of `size` updates with no other writer.
        plain += try writer.performAndWait {
            for object in objects { object.age = (object.age + 1) % 100 }
            let start = DispatchTime.now().uptimeNanoseconds
            try writer.save()
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }
        // The same save after another context changed every object: every update conflicts.
        try other.performAndWait {
            for object in try other.fetch(FetchRequest<Record>()) { object.score += 1 }
            try other.save()
        }
        resolved += try writer.performAndWait {
            for object in objects { object.age = (object.age + 1) % 100 }
            let start = DispatchTime.now().uptimeNanoseconds
            try writer.save()
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }
        manager.close()
    }
    results.append(
        Measurement(
            workload: "\(size)-object save, every object in conflict (objectTrump)", subject: resolved,
            baseline: plain, baselineName: "the same save, no other writer", unit: "ms", goal: nil))
}

if shouldRun("merge") {
    let objectsPerSave = 1_000
    let receivers = 8
    let manager = try loadedManager(Array(records.prefix(objectsPerSave)))
    let writer = try manager.createContext()
    let contexts = try (0..<receivers).map { _ in try manager.createContext() }
    // Each context holds the objects it fetched (as a screen showing them would): a context
    // lets go of the objects nothing references, and a merge skips objects it does not hold.
    let held = try contexts.map { context in
        try context.performAndWait {
            context.automaticallyMergesChangesFromOtherContexts = false
            return try context.fetch(FetchRequest<Record>())
        }
    }
    let captured = NotificationCapture(object: writer)
    var merge = 0.0
    let rounds = quick ? 5 : 20
    var mergeTimes: [Double] = []
    for round in 0..<rounds {
        try writer.performAndWait {
            for object in try writer.fetch(FetchRequest<Record>()) { object.age = (object.age + round + 1) % 100 }
            try writer.save()
        }
        let notification = captured.last!
        var total = 0.0
        for context in contexts {
            total += context.performAndWait {
                let start = DispatchTime.now().uptimeNanoseconds
                context.mergeChanges(fromContextDidSave: notification)
                return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            }
        }
        mergeTimes.append(total / Double(objectsPerSave * receivers))
    }
    mergeTimes.sort()
    merge = mergeTimes[mergeTimes.count / 2]
    // The floor: assigning the same values through the attribute setters, per object per context.
    let baseline =
        try medianSeconds(repetitions: repetitions) {
            for context in contexts {
                try context.performAndWait {
                    for object in try context.fetch(FetchRequest<Record>()) {
                        object.age = (object.age + 1) % 100
                        object.score += 1
                    }
                    context.rollback()
                }
            }
        } / Double(objectsPerSave * receivers)
    results.append(
        Measurement(
            workload: "P9 merge of \(objectsPerSave) updated objects into \(receivers) contexts, per object",
            subject: merge,
            baseline: baseline, baselineName: "fetch + set 2 attributes + rollback", unit: "µs", goal: nil,
            absoluteGoal: 0.5e-6))
    withExtendedLifetime(held) {}
    manager.close()
}

if shouldRun("throughput") {
    let queues = 8
    let savesPerQueue = quick ? 200 : 1_000
    let manager = try loadedManager(Array(records.prefix(queues * 10)))
    let contexts = try (0..<queues).map { _ in try manager.createContext() }
    let ownedIDs: [[ObjectID]] = try contexts.enumerated().map { index, context in
        try context.performAndWait {
            let all = try context.fetchObjectIDs(FetchRequest<Record>(sortBy: [SortDescriptor(\.name)]))
            return Array(all[(index * 10)..<(index * 10 + 10)])
        }
    }
    let hammer: @Sendable (Int, Int) -> Void = { index, saves in
        let context = contexts[index]
        context.performAndWait {
            let objects = ownedIDs[index].map { context.object(with: $0) as! Record }
            for save in 0..<saves {
                objects[save % 10].age = (objects[save % 10].age + 1) % 100
                try! context.save()
            }
        }
    }
    let parallel = medianSeconds(repetitions: repetitions) {
        DispatchQueue.concurrentPerform(iterations: queues) { index in hammer(index, savesPerQueue) }
    }
    let serial = medianSeconds(repetitions: repetitions) {
        hammer(0, queues * savesPerQueue)
    }
    results.append(
        Measurement(
            workload: "\(queues) queues × \(savesPerQueue) saves on disjoint objects (in-memory)", subject: parallel,
            baseline: serial, baselineName: "one queue, the same saves", unit: "ms", goal: nil,
            note: String(
                format: "%.0f saves/s on 8 queues, %.0f on one", Double(queues * savesPerQueue) / parallel,
                Double(queues * savesPerQueue) / serial)))
    manager.close()
}

// MARK: Observation — a fetched-results controller following saves

if shouldRun("export") {
    // 100k and 1M records (10k in quick mode), each in a store of its own.
    results += try exportMeasurements(
        sizes: quick || count >= 1_000_000 ? [count] : [count, 1_000_000], repetitions: 3)
}

if shouldRun("observation") {
    results += try observationMeasurements(records, repetitions: repetitions)
}

// MARK: P11 — fetch one object by an indexed key

if shouldRun("index") {
    results += try indexMeasurements(
        sizes: quick ? [10_000] : [100_000, 1_000_000], lookups: quick ? 200 : 1_000, repetitions: repetitions)
}

// MARK: P4c — saves while the journal compacts itself

if shouldRun("compaction") {
    results += try compactionMeasurements(
        sizes: quick || count >= 1_000_000 ? [count] : [count, 1_000_000], compactions: 2)
}

// MARK: Scale — how costs grow from 100k to 1M (and 10M) records

if shouldRun("scale") {
    // `--scale-sizes 100000,1000000,10000000` runs other sizes (10M takes several GB and minutes).
    let sizes: [Int] =
        arguments.firstIndex(of: "--scale-sizes").flatMap { index in
            arguments.index(after: index) < arguments.endIndex
                ? arguments[arguments.index(after: index)].split(separator: ",").compactMap { Int($0) } : nil
        } ?? (quick ? [10_000, 20_000] : [100_000, 1_000_000])
    results += try scaleMeasurements(sizes: sizes, repetitions: quick ? 1 : 3, saves: quick ? 50 : 300)
}

// MARK: Persistent history — what tracking costs

if shouldRun("history") {
    results += try historyMeasurements(
        Array(records.prefix(10_000)), iterations: quick ? 100 : 400, repetitions: repetitions)
}

printTable(results)
