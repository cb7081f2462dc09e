import Foundation
import Testing

@testable import QueueData

@Suite("Migration edge cases")
struct MigrationEdgeTests {
    @Test(
        "a date that is not finite fails a migration to String, naming the row, and nothing is written",
        arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteDateToString(_ seconds: Double) throws {
        let old = try thingModel([AttributeDescription(name: "value", type: .date)])
        let new = try thingModel([AttributeDescription(name: "value", type: .string)])
        let store = try store(old, [["value": .date(Date(timeIntervalSinceReferenceDate: seconds))]])
        #expect {
            try inMemoryManager(store, new).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .migrationFailed, mentioning: "Row 1 of 'Thing'", "not finite", "Nothing was changed")
        }
        #expect(try store.inspect()?.metadata.versionHash == old.versionHash)
        #expect(try !inMemoryManager(store, new).migrationPlan().canMigrate)
    }
}
