import Foundation
import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory on the same disk as the build (fsync must reach a real device).
func benchmarkDirectory(_ label: String) -> URL {
    let url = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        .appendingPathComponent(".build/qd-bench-\(label)-\(UUID().uuidString.prefix(8))", isDirectory: true)
    try? FileManager.default.removeItem(at: url)
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

struct FileStoreBenchmark: ContextManagerDelegate {
    let directory: URL
    let type: StoreType
    var tracksHistory = false
    var tracksPersistentHistory: Bool { tracksHistory }
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([Record.self]) }
    var persistentStoreName: String { "Benchmark" }
    var persistentStoreType: StoreType { type }
    var storeDirectory: URL { directory }
}

/// Inserts `values` and saves once.
func insertAndSave(_ manager: ContextManager, _ values: [RecordValue]) throws {
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
}

/// Times `iterations` one-object updates with a save each; returns the sorted latencies.
func timedUpdates(_ manager: ContextManager, iterations: Int) throws -> [Double] {
    let context = try manager.createContext()
    return try context.performAndWait {
        let records = try context.fetch(FetchRequest<Record>(fetchLimit: iterations))
        var times: [Double] = []
        for (index, record) in records.enumerated() {
            record.score += 1
            record.age = (record.age + index) % 100
            let start = DispatchTime.now().uptimeNanoseconds
            try context.save()
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return times.sorted()
    }
}

/// Times appending `size` bytes and `fdatasync` to a file, `iterations` times.
func timedAppends(size: Int, iterations: Int, in directory: URL) -> [Double] {
    let path = directory.appendingPathComponent("append.log").path
    let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
    precondition(descriptor >= 0)
    defer { close(descriptor) }
    let bytes = [UInt8](repeating: 0xA5, count: size)
    var times: [Double] = []
    for _ in 0..<iterations {
        let start = DispatchTime.now().uptimeNanoseconds
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, size) }
        precondition(written == size)
        precondition(fdatasync(descriptor) == 0)
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
    return times.sorted()
}

/// Writes `bytes` durably: a temporary file, fsync, rename, fsync of the directory.
func writeDurably(_ bytes: Data, to url: URL) {
    let directory = url.deletingLastPathComponent().path
    let temporary = url.path + ".tmp"
    let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(descriptor >= 0)
    bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            precondition(written > 0)
            offset += written
        }
    }
    precondition(fsync(descriptor) == 0)
    close(descriptor)
    precondition(rename(temporary, url.path) == 0)
    let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY)
    precondition(fsync(directoryDescriptor) == 0)
    close(directoryDescriptor)
}

/// The records as `Codable` values, the JSONEncoder/JSONDecoder baseline.
struct CodableRecord: Codable {
    var id: Int64
    var name: String
    var age: Int
    var score: Double
    var created: Date
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

func fileSize(_ url: URL) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? Int) ?? 0
}
