import Dispatch
import Foundation
import QueueData

/// What persistent history costs, on journals of `values` with history off and on, measured in
/// the same run: a one-object save (p50, p99), reading the history of those saves, and opening
/// a journal whose snapshot holds that history.
func historyMeasurements(_ values: [RecordValue], iterations: Int, repetitions: Int) throws -> [Measurement] {
    var results: [Measurement] = []
    let plainDirectory = benchmarkDirectory("history-off")
    let trackedDirectory = benchmarkDirectory("history-on")
    defer {
        try? FileManager.default.removeItem(at: plainDirectory)
        try? FileManager.default.removeItem(at: trackedDirectory)
    }
    let plain = ContextManager(delegate: FileStoreBenchmark(directory: plainDirectory, type: .journal))
    let tracked = ContextManager(
        delegate: FileStoreBenchmark(directory: trackedDirectory, type: .journal, tracksHistory: true))
    try insertAndSave(plain, values)
    try insertAndSave(tracked, values)
    let start = try {
        let context = try tracked.createContext()
        return try context.performAndWait { try context.currentHistoryToken() }
    }()
    // Alternating rounds, so that a slow stretch of the machine hits both.
    var plainSaves: [Double] = []
    var trackedSaves: [Double] = []
    for _ in 0..<4 {
        plainSaves += try timedUpdates(plain, iterations: iterations / 4)
        trackedSaves += try timedUpdates(tracked, iterations: iterations / 4)
    }
    plainSaves.sort()
    trackedSaves.sort()
    results.append(
        Measurement(
            workload: "History: one-object save on \(values.count) (journal), p50",
            subject: percentile(trackedSaves, 0.5),
            baseline: percentile(plainSaves, 0.5), baselineName: "the same save, history off", unit: "µs", goal: 1.1,
            note: "\(iterations) saves each, alternating"))
    results.append(
        Measurement(
            workload: "History: one-object save on \(values.count) (journal), p99",
            subject: percentile(trackedSaves, 0.99), baseline: percentile(plainSaves, 0.99),
            baselineName: "the same save, history off", unit: "µs", goal: 1.1))

    // Reading the history of those saves, against fetching as many objects.
    let reader = try tracked.createContext()
    let transactionCount = try reader.performAndWait { try reader.history(after: start).count }
    let read = try medianSeconds(repetitions: repetitions) {
        let transactions = try reader.performAndWait { try reader.history(after: start) }
        precondition(transactions.count == transactionCount)
    }
    let fetch = try medianSeconds(repetitions: repetitions) {
        let context = try plain.createContext()
        let objects = try context.performAndWait {
            try context.fetch(FetchRequest<Record>(fetchLimit: transactionCount))
        }
        precondition(objects.count == transactionCount)
    }
    results.append(
        Measurement(
            workload: "History: history(after:) of \(transactionCount) transactions", subject: read, baseline: fetch,
            baselineName: "fetch of \(transactionCount) objects into a new context", unit: "ms", goal: nil))

    // Opening a journal whose snapshot holds the history, against the same rows without.
    try plain.compactPersistentStore()
    try tracked.compactPersistentStore()
    plain.close()
    tracked.close()
    func openSeconds(_ directory: URL, _ history: Bool) throws -> Double {
        try medianSeconds(repetitions: repetitions) {
            let manager = ContextManager(
                delegate: FileStoreBenchmark(directory: directory, type: .journal, tracksHistory: history))
            try manager.loadPersistentStore()
            manager.close()
        }
    }
    let openPlain = try openSeconds(plainDirectory, false)
    let openTracked = try openSeconds(trackedDirectory, true)
    results.append(
        Measurement(
            workload: "History: open \(values.count) journal with \(transactionCount) transactions of history",
            subject: openTracked, baseline: openPlain, baselineName: "the same rows without history", unit: "ms",
            goal: nil,
            note: "the history holds \(values.count + transactionCount) object changes: the first save inserted "
                + "every row, then one update per save; opening decodes them as it decodes rows"))
    return results
}
