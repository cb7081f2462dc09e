import Dispatch
import Foundation
import QueueData

// The two-phase contract of stores with group commit (a ``PersistentStore/synchronizationQueue``):
// saves from several queues at once are acknowledged only once durable, and a failed write or
// synchronization fails every save it covered and every later one.
extension StoreConformanceSuite {
    /// The sequence numbers of the items this check saves.
    private static let groupSequences = 2_000..<2_100
    /// How many queues save at once.
    private static let savers = 4

    /// Saves of several queues at once are each acknowledged only once durable; a failed write
    /// or synchronization fails the saves it covered and every later one, from every queue,
    /// until the store is reopened; what was acknowledged before survives.
    func checkGroupCommit(_ faults: Faults, _ log: ConformanceLog) throws {
        let writer = manager()
        defer {
            faults.failWrites(false)
            writer.close()
        }
        let contexts = try (0..<Self.savers).map { index in
            try writer.createContext(for: DispatchQueue(label: "QueueData.conformance.saver.\(index)"))
        }
        var next = Self.groupSequences.lowerBound
        /// One save of one new item by each context at once; the outcome of each, by sequence.
        func saveRound(_ label: String) -> [Int: Bool] {
            let sequences = (0..<Self.savers).map { next + $0 }
            next += Self.savers
            let outcomes = SaveOutcomes()
            let group = DispatchGroup()
            for (context, sequence) in zip(contexts, sequences) {
                group.enter()
                context.perform {
                    defer { group.leave() }
                    let item = context.insert(ConformanceItem.self)
                    item.sequence = sequence
                    item.string = "\(label) \(sequence)"
                    let saved: Bool
                    do {
                        try context.save()
                        saved = true
                    } catch {
                        saved = false
                        context.rollback()
                    }
                    outcomes.record(sequence, saved)
                }
            }
            group.wait()
            return outcomes.all
        }
        var acknowledged: [Int] = []
        for _ in 0..<3 {
            let outcomes = saveRound("acknowledged")
            log.expect(
                outcomes.values.allSatisfy { $0 }, "saves of \(Self.savers) queues at once failed without a fault")
            acknowledged += outcomes.filter(\.value).map(\.key)
        }
        faults.failWrites(true)
        let failing = saveRound("failing")
        log.expect(
            failing.values.allSatisfy { !$0 },
            "\(failing.values.filter { $0 }.count) of \(Self.savers) saves were acknowledged while every write and sync failed"
        )
        faults.failWrites(false)
        let after = saveRound("after")
        log.expect(
            after.values.allSatisfy { !$0 },
            "after a failed write or synchronization, \(after.values.filter { $0 }.count) saves were acknowledged "
                + "without the store being reopened")
        faults.losePower()
        writer.close()
        faults.restorePower()

        let reader = manager()
        defer { reader.close() }
        let readerContext = try reader.createContext()
        try readerContext.performAndWait {
            let low = Self.groupSequences.lowerBound
            let high = Self.groupSequences.upperBound
            let survivors = try readerContext.fetch(
                FetchRequest<ConformanceItem>(predicate: #Predicate { $0.sequence >= low && $0.sequence < high }))
            let found = Set(survivors.map(\.sequence))
            let lost = acknowledged.filter { !found.contains($0) }
            log.expect(lost.isEmpty, "acknowledged group-committed saves were lost: \(lost.sorted())")
            for item in survivors where !acknowledged.contains(item.sequence) {
                // A failed save may have reached the store (written, never confirmed): whole.
                log.expect(
                    item.string.hasSuffix(" \(item.sequence)"), "a failed save left a damaged row (\(item.string))")
            }
            for item in survivors {
                readerContext.delete(item)
            }
            try readerContext.save()
        }
    }
}

/// The outcome of each save of a round, recorded from the savers' queues: every access goes
/// through one serial queue.
private final class SaveOutcomes: @unchecked Sendable {
    private let queue = DispatchQueue(label: "QueueData.conformance.outcomes")
    private var outcomes: [Int: Bool] = [:]

    func record(_ sequence: Int, _ saved: Bool) {
        queue.sync { outcomes[sequence] = saved }
    }

    var all: [Int: Bool] { queue.sync { outcomes } }
}
