import Foundation
import QueueData

// The checks that need control over the stores' I/O (``StoreConformanceSuite/faults``). They
// leave the store as they found it: what they save, they delete again.
extension StoreConformanceSuite {
    /// The sequence numbers of the items these checks save, apart from the samples'.
    private static let faultSequences = 1_000..<1_005

    /// Every save acknowledged before a power loss survives it, whole.
    func checkDurability(_ faults: Faults, _ log: ConformanceLog) throws {
        let writer = manager()
        defer { writer.close() }
        let context = try writer.createContext()
        try context.performAndWait {
            for sequence in Self.faultSequences {
                let item = context.insert(ConformanceItem.self)
                item.sequence = sequence
                item.string = "acknowledged \(sequence)"
                try context.save()
            }
        }
        faults.losePower()
        writer.close()
        faults.restorePower()

        let reader = manager()
        defer { reader.close() }
        let readerContext = try reader.createContext()
        try readerContext.performAndWait {
            let survivors = try Self.faultItems(readerContext)
            let missing = Self.faultSequences.filter { sequence in
                !survivors.contains { $0.sequence == sequence && $0.string == "acknowledged \(sequence)" }
            }
            log.expect(
                missing.isEmpty,
                "saves acknowledged before a power loss were lost: \(missing.count) of \(Self.faultSequences.count)")
            for item in survivors {
                readerContext.delete(item)
            }
            try readerContext.save()
        }
    }

    /// A save whose writes fail throws, keeps its changes and is not visible; the store then
    /// refuses later commits until it is reopened; every save acknowledged before survives.
    func checkFailedWrites(_ faults: Faults, _ log: ConformanceLog) throws {
        let writer = manager()
        defer {
            faults.failWrites(false)
            writer.close()
        }
        let context = try writer.createContext()
        let observer = try writer.createContext()
        try context.performAndWait {
            let kept = context.insert(ConformanceItem.self)
            kept.sequence = Self.faultSequences.lowerBound
            kept.string = "before the failure"
            try context.save()

            faults.failWrites(true)
            let failed = context.insert(ConformanceItem.self)
            failed.sequence = Self.faultSequences.lowerBound + 1
            failed.string = "while writes fail"
            do {
                try context.save()
                log.fail("a save succeeded while every write and sync failed")
            } catch {
                log.expect(error is StoreError, "a failed write was reported as \(error), not a StoreError")
                log.expect(failed.isInserted, "a failed save did not keep its changes")
            }
            faults.failWrites(false)
            if failed.isInserted {
                do {
                    try context.save()
                    log.fail("after a failed write, the store accepted a commit without being reopened")
                } catch {
                    log.expect(error is StoreError, "a commit after a failed write was refused with \(error)")
                }
            }
        }
        let seen = try observer.performAndWait { try Self.faultItems(observer).map(\.string) }
        log.expect(
            !seen.contains("while writes fail"), "another context saw the objects of a save whose writes failed")
        faults.failWrites(false)
        writer.close()

        let reader = manager()
        defer { reader.close() }
        let readerContext = try reader.createContext()
        try readerContext.performAndWait {
            let survivors = try Self.faultItems(readerContext)
            log.expect(
                survivors.contains { $0.string == "before the failure" },
                "a save acknowledged before a failed write was lost")
            // The failed save may have reached the store (written, never confirmed): whole, or not at all.
            for item in survivors where item.sequence == Self.faultSequences.lowerBound + 1 {
                log.expect(item.string == "while writes fail", "a failed save left a damaged row")
            }
            for item in survivors {
                readerContext.delete(item)
            }
            try readerContext.save()
        }
    }

    /// The items the fault checks saved.
    private static func faultItems(_ context: ManagedObjectContext) throws -> [ConformanceItem] {
        let range = faultSequences
        let low = range.lowerBound
        let high = range.upperBound
        return try context.fetch(
            FetchRequest<ConformanceItem>(
                predicate: #Predicate { $0.sequence >= low && $0.sequence < high },
                sortBy: [SortDescriptor(\.sequence)]))
    }
}
