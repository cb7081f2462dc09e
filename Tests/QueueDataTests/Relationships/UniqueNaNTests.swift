import Foundation
import Testing

@testable import QueueData

/// A reading whose value must be unique (a `Double`, which can be NaN).
final class GaugeReading: ManagedObject {
    @Attribute(.unique) var value: Double = 0
    @Attribute var label: String = ""
}

@Suite("Uniqueness constraints on a Double that is NaN")
struct UniqueNaNTests {
    @Test("a NaN is not constrained (as nil, and as SQLite stores it), and the index does not keep it")
    func nanIsNotConstrained() throws {
        let manager = makeManager(model: ManagedObjectModel([GaugeReading.self]))
        defer { manager.close() }
        try manager.loadPersistentStore()
        let context = try makeContext(manager, "readings")
        let coordinator = context.coordinator
        let indexed = { coordinator.sync { coordinator.uniquenessIndexes[0].rows.count } }
        let nans = try context.performAndWait {
            let nans = (0..<3).map { index in
                let reading = context.insert(GaugeReading.self)
                reading.value = .nan
                reading.label = "nan \(index)"
                return reading
            }
            context.insert(GaugeReading.self).value = 5
            try context.save()
            return nans
        }
        #expect(indexed() == 1)
        try context.performAndWait {
            for round in 0..<20 {
                nans[round % nans.count].label = "round \(round)"
                try context.save()
            }
            // A NaN set to a value is constrained from then on, and one set back is not.
            nans[0].value = 7
            try context.save()
            nans[1].value = 7
            #expect(throws: (any Error).self) { try context.save() }
            context.rollback()
            nans[0].value = .nan
            try context.save()
            nans[1].value = 7
            try context.save()
            #expect(try context.count(for: FetchRequest<GaugeReading>()) == 4)
        }
        #expect(indexed() == 2)
    }
}
