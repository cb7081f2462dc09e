import Dispatch
import Foundation
import QueueData

#if canImport(Glibc)
    import Glibc
#endif

// P5: several queues saving small changes durably at once. A store that syncs once per save
// can do no better than one fdatasync after another; one that syncs the saves arriving
// together as a group can.

/// Runs `body(index)` on `count` threads of their own at once (not `concurrentPerform`, which
/// runs only as many at a time as there are cores) and returns the elapsed seconds.
func secondsOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> Double {
    let group = DispatchGroup()
    let start = DispatchTime.now().uptimeNanoseconds
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(index)
            group.leave()
        }
    }
    group.wait()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// A file that several threads append to, each append followed by its own fdatasync under
/// one lock: the saves of a store without group commit.
///
/// `@unchecked Sendable`: the descriptor is used only under `lock`.
final class SyncedAppendLog: @unchecked Sendable {
    private let lock = NSLock()
    private let descriptor: Int32
    private let bytes: [UInt8]

    init(path: String, recordSize: Int) {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        precondition(descriptor >= 0)
        bytes = [UInt8](repeating: 0xA5, count: recordSize)
    }

    deinit {
        close(descriptor)
    }

    func append() {
        lock.withLock {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            precondition(written == bytes.count)
            precondition(fdatasync(descriptor) == 0)
        }
    }
}

/// `queues` contexts of a journal store holding `values`, each saving one small change
/// `savesPerQueue` times, all at once; against the same saves with one fdatasync each.
func concurrentSaversMeasurement(_ values: [RecordValue], queues: Int, savesPerQueue: Int, repetitions: Int) throws
    -> Measurement
{
    let directory = benchmarkDirectory("savers")
    defer { try? FileManager.default.removeItem(at: directory) }
    let journal = directory.appendingPathComponent("Benchmark.journal")
    let manager = ContextManager(delegate: FileStoreBenchmark(directory: directory, type: .journal))
    defer { manager.close() }
    try insertAndSave(manager, values)
    let objectsPerQueue = 10
    let contexts = try (0..<queues).map { _ in try manager.createContext() }
    // Each context changes objects of its own: the saves never conflict.
    let ownedIDs: [[ObjectID]] = try contexts.enumerated().map { index, context in
        try context.performAndWait {
            let all = try context.fetchObjectIDs(FetchRequest<Record>(fetchLimit: queues * objectsPerQueue))
            return Array(all[(index * objectsPerQueue)..<((index + 1) * objectsPerQueue)])
        }
    }
    let save: @Sendable (Int, Int) -> Void = { index, saves in
        let context = contexts[index]
        context.performAndWait {
            let objects = ownedIDs[index].map { context.object(with: $0) as! Record }
            for save in 0..<saves {
                objects[save % objectsPerQueue].score += 1
                try! context.save()
            }
        }
    }
    let saves = queues * savesPerQueue
    // Waits for the merges the saves queued on every context (automatic merging is on, as by
    // default), so that they do not run into the next timed run.
    let drain = { for context in contexts { context.performAndWait {} } }
    let recordSize = try journalRecordSize(of: contexts[0], at: journal)
    let log = SyncedAppendLog(path: directory.appendingPathComponent("append.log").path, recordSize: recordSize)

    // The three runs alternate, so that a change in the machine's load meets all three alike.
    var concurrent: [Double] = []
    var oneQueue: [Double] = []
    var synced: [Double] = []
    for _ in 0...repetitions {
        concurrent.append(secondsOnThreads(queues) { index in save(index, savesPerQueue) })
        drain()
        oneQueue.append(secondsOnThreads(1) { _ in save(0, saves) })
        drain()
        synced.append(
            secondsOnThreads(queues) { _ in
                for _ in 0..<savesPerQueue { log.append() }
            })
    }
    // The first run of each warmed up.
    let median = { (times: [Double]) in times.dropFirst().sorted()[(times.count - 1) / 2] }
    let throughput = { (seconds: Double) in Double(saves) / seconds }
    return Measurement(
        workload: "P5 \(queues) queues × \(savesPerQueue) one-object durable saves (journal)",
        subject: throughput(median(concurrent)), baseline: throughput(median(synced)),
        baselineName: "\(queues) threads, append \(recordSize) B + fdatasync per save", unit: "saves/s", goal: 4,
        note: "throughput, median of \(repetitions) runs; \(recordSize) bytes per save in the journal; "
            + "automatic merging on (the default)",
        otherBaselines: [Baseline(name: "QueueData, the same saves on one queue", value: throughput(median(oneQueue)))],
        higherIsBetter: true)
}

/// The bytes one one-object save of `context` appends to the journal at `url`.
private func journalRecordSize(of context: ManagedObjectContext, at url: URL) throws -> Int {
    try context.performAndWait {
        let object = try context.fetch(FetchRequest<Record>(fetchLimit: 1))[0]
        let before = fileSize(url)
        object.score += 1
        try context.save()
        return fileSize(url) - before
    }
}
