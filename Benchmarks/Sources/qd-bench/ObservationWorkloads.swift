import Dispatch
import Foundation
import QueueData

/// A fetched-results controller of every record, sorted by name, following saves of another
/// context: one changed object, then 1,000, against re-fetching every record sorted.
func observationMeasurements(_ values: [RecordValue], repetitions: Int) throws -> [Measurement] {
    let manager = try loadedManager(values)
    defer { manager.close() }
    let board = try manager.createContext()
    let writer = try manager.createContext()
    let request = FetchRequest<Record>(sortBy: [SortDescriptor(\.name)])
    let ids = try writer.performAndWait { try writer.fetchObjectIDs(FetchRequest<Record>()) }

    // The baseline: what a list without a controller does, fetch everything again.
    let refetch = try board.performAndWait {
        try medianSeconds(repetitions: repetitions) { blackHole(try board.fetch(request).count) }
    }
    board.performAndWait { board.reset() }

    var flip = 0
    /// Saves a change of `changed` objects' names in the writer, and waits until the board's
    /// context merged it (and its controllers followed).
    func saveAndFlush(_ changed: Int) throws {
        flip += 1
        let suffix = flip
        try writer.performAndWait {
            for index in 0..<changed {
                let record = writer.object(with: ids[(index * 97 + flip) % ids.count]) as! Record
                record.name = "changed \(suffix) \(index)"
            }
            try writer.save()
        }
        board.performAndWait {}
    }
    let withoutController = try medianSeconds(repetitions: repetitions) { try saveAndFlush(1) }
    let thousandWithoutController = try medianSeconds(repetitions: repetitions) { try saveAndFlush(1_000) }
    var results: [Measurement] = []
    for batchSize in [0, 1_000] {
        var batched = request
        batched.fetchBatchSize = batchSize
        let controller = try board.performAndWait {
            let controller = FetchedResultsController(fetchRequest: batched, managedObjectContext: board)
            try controller.performFetch()
            return controller
        }
        let one = try medianSeconds(repetitions: repetitions) { try saveAndFlush(1) }
        let thousand = try medianSeconds(repetitions: repetitions) { try saveAndFlush(1_000) }
        let kind = batchSize == 0 ? "" : ", fetchBatchSize \(batchSize)"
        results.append(
            Measurement(
                workload: "controller of \(values.count) objects\(kind): a 1-object merge", subject: one,
                baseline: refetch, baselineName: "re-fetch \(values.count) sorted", unit: "ms", goal: nil,
                note: String(
                    format: "save + merge + controller update; the same save and merge without a controller: %.3f ms",
                    withoutController * 1e3),
                otherBaselines: [Baseline(name: "save + merge, no controller", value: withoutController)]))
        results.append(
            Measurement(
                workload: "controller of \(values.count) objects\(kind): 1,000 objects changed by one save",
                subject: thousand, baseline: refetch, baselineName: "re-fetch \(values.count) sorted", unit: "ms",
                goal: nil,
                note: String(
                    format: "save + merge + controller update; the same save and merge without a controller: %.3f ms",
                    thousandWithoutController * 1e3),
                otherBaselines: [Baseline(name: "save + merge, no controller", value: thousandWithoutController)]))
        withExtendedLifetime(controller) {}
        board.performAndWait { board.reset() }
    }
    return results
}
