import CMalloc
import Foundation
import QueueData

#if canImport(Glibc)
    import Glibc
#endif

// P10: the memory an object costs, measured in this process between phases. Freed memory
// is given back to the system (`malloc_trim`) before each reading, so that what earlier
// workloads freed neither hides nor inflates a phase's growth.

/// The process's memory at one moment.
struct MemoryReading {
    /// Resident pages, from /proc/self/statm, in bytes.
    var resident: Int
    /// Bytes of live heap allocations (glibc's `mallinfo2`: arenas plus mmapped blocks).
    var heap: Int

    static func now() -> MemoryReading {
        malloc_trim(0)
        let info = mallinfo2()
        return MemoryReading(resident: residentBytes(), heap: Int(info.uordblks + info.hblkhd))
    }

    private static func residentBytes() -> Int {
        // statm: size resident shared text lib data dt, in pages.
        let fields = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8))?.split(separator: " ") ?? []
        guard fields.count > 1, let pages = Int(fields[1]) else { fatalError("cannot read /proc/self/statm") }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }
}

/// Resident memory per object with `values` in a journal store and one context holding them
/// all, against GRDB with the same rows fetched as `Codable` structs.
func memoryMeasurement(_ values: [RecordValue]) throws -> Measurement {
    let directory = benchmarkDirectory("memory")
    defer { try? FileManager.default.removeItem(at: directory) }
    let count = Double(values.count)
    do {
        let writer = ContextManager(delegate: FileStoreBenchmark(directory: directory, type: .journal))
        try insertAndSave(writer, values)
        writer.close()
    }
    let grdbPath = directory.appendingPathComponent("grdb.sqlite").path
    try makeGRDBDatabase(values, at: grdbPath)

    // QueueData: the store opened, then one context that fetched every object.
    let start = MemoryReading.now()
    let manager = ContextManager(delegate: FileStoreBenchmark(directory: directory, type: .journal))
    try manager.loadPersistentStore()
    let opened = MemoryReading.now()
    let context = try manager.createContext()
    let objects = try context.performAndWait { try context.fetch(FetchRequest<Record>()) }
    precondition(objects.count == values.count)
    let fetched = MemoryReading.now()
    withExtendedLifetime((manager, context, objects)) {}
    manager.close()

    // GRDB: the database opened and every row fetched into structs.
    let grdbStart = MemoryReading.now()
    let database = try GRDBBaseline(path: grdbPath, durable: false, create: false)
    let structs = try database.fetchAll()
    precondition(structs.count == values.count)
    let grdbFetched = MemoryReading.now()
    withExtendedLifetime(structs) {}
    try database.close()

    let perObject = { (bytes: Int) in Double(bytes) / count }
    return Measurement(
        workload: "P10 resident memory, \(values.count) objects in a journal store + one context",
        subject: perObject(fetched.resident - start.resident),
        baseline: perObject(grdbFetched.resident - grdbStart.resident),
        baselineName: "GRDB open + fetch all into structs", unit: "B", goal: nil,
        note: String(
            format: "per object: store %.0f B + context %.0f B resident; live heap %.0f B (store %.0f B + "
                + "context %.0f B); GRDB live heap %.0f B",
            perObject(opened.resident - start.resident), perObject(fetched.resident - opened.resident),
            perObject(fetched.heap - start.heap), perObject(opened.heap - start.heap),
            perObject(fetched.heap - opened.heap), perObject(grdbFetched.heap - grdbStart.heap)),
        absoluteGoal: 150)
}
