import Foundation
import QueueData

/// The benchmark record as an earlier version stored it: `age` was an `Int16`, and a
/// `legacy` attribute has since been removed.
final class RecordV1: ManagedObject {
    override class var entityName: String { "Record" }
    @Attribute var name: String = ""
    @Attribute var age: Int16 = 0
    @Attribute var score: Double = 0
    @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var legacy: String = "old"
}

/// A store of `RecordV1`, or of the current `Record`, in `directory`.
struct MigrationBenchmark: ContextManagerDelegate {
    let directory: URL
    let type: StoreType
    let isVersion1: Bool
    var managedObjectModel: ManagedObjectModel {
        ManagedObjectModel([isVersion1 ? RecordV1.self : Record.self])
    }
    var persistentStoreName: String { "Benchmark" }
    var persistentStoreType: StoreType { type }
    var storeDirectory: URL { directory }
}

/// The median time of `open` over `repetitions` runs (after a warm-up), each on a fresh copy
/// of `template` installed as the store (the copy is not timed).
func medianOpenSeconds(
    repetitions: Int,
    template: URL,
    store: URL,
    _ open: () throws -> Void
) throws -> Double {
    var times: [Double] = []
    for _ in 0...repetitions {
        try? FileManager.default.removeItem(at: store)
        try FileManager.default.copyItem(at: template, to: store)
        let start = DispatchTime.now().uptimeNanoseconds
        try open()
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
    times.removeFirst()
    times.sort()
    return times[times.count / 2]
}

/// Migrating open (widen `age`, drop `legacy`, write the new store, keep the original) against
/// a plain open of the same rows with the current model, for one store type.
func migrationMeasurement(_ type: StoreType, fileExtension: String, count: Int, repetitions: Int) throws
    -> Measurement
{
    let directory = benchmarkDirectory("migration-\(fileExtension)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = directory.appendingPathComponent("Benchmark.\(fileExtension)")
    let template = directory.appendingPathComponent("template-v1")
    let current = directory.appendingPathComponent("template-v2")

    let writer = ContextManager(delegate: MigrationBenchmark(directory: directory, type: type, isVersion1: true))
    let context = try writer.createContext()
    try context.performAndWait {
        for value in makeRecords(count) {
            let record = context.insert(RecordV1.self)
            record.name = value.name
            record.age = Int16(value.age)
            record.score = value.score
            record.created = value.created
        }
        try context.save()
    }
    writer.close()
    try FileManager.default.moveItem(at: store, to: template)

    var migratedSize = 0
    let migrating = try medianOpenSeconds(repetitions: repetitions, template: template, store: store) {
        let manager = ContextManager(delegate: MigrationBenchmark(directory: directory, type: type, isVersion1: false))
        try manager.loadPersistentStore()
        manager.close()
        migratedSize = fileSize(store)
    }
    try FileManager.default.copyItem(at: store, to: current)
    let plain = try medianOpenSeconds(repetitions: repetitions, template: current, store: store) {
        let manager = ContextManager(delegate: MigrationBenchmark(directory: directory, type: type, isVersion1: false))
        try manager.loadPersistentStore()
        manager.close()
    }
    return Measurement(
        workload: "migrating open of \(count) rows (\(fileExtension))", subject: migrating, baseline: plain,
        baselineName: "open of the migrated store", unit: "ms", goal: nil,
        note: String(
            format: "%.1f MB before, %.1f MB after", Double(fileSize(template)) / 1e6, Double(migratedSize) / 1e6))
}
