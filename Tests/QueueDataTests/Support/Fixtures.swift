import Dispatch
import Foundation
import QueueData

final class Destination: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var country: String = ""
    @Attribute var rating: Int = 0
    @Attribute var visited: Date? = nil
}

struct Address: Codable, Hashable {
    var street: String
    var zip: Int?
}

enum Status: String, Codable {
    case planned, booked
}

final class AllTypes: ManagedObject {
    @Attribute var bool: Bool = false
    @Attribute var int: Int = 1
    @Attribute var int16: Int16 = 2
    @Attribute var int32: Int32 = 3
    @Attribute var int64: Int64 = 4
    @Attribute var double: Double = 5.5
    @Attribute var float: Float = 6.5
    @Attribute var string: String = "seven"
    @Attribute var date: Date = Date(timeIntervalSince1970: 8)
    @Attribute var data: Data = Data([9])
    @Attribute var uuid: UUID = UUID(uuidString: "00000000-0000-0000-0000-00000000000A")!
    @Attribute var url: URL = URL(string: "https://example.com/11")!
    @Attribute var decimal: Decimal = Decimal(string: "12.34")!
    @Attribute var optionalString: String? = nil
    @Attribute var optionalInt: Int?
    @Attribute var address: Address = Address(street: "Main", zip: nil)
    @Attribute var optionalAddress: Address? = nil
    @Attribute var status: Status = .planned
}

class Vehicle: ManagedObject {
    @Attribute var wheels: Int = 4
}

final class Bicycle: Vehicle {
    @Attribute var gears: Int = 1
}

final class Counter: ManagedObject {
    @Attribute var owner: Int = 0
    @Attribute var value: Int = 0
}

final class Item: ManagedObject {
    @Attribute var owner: Int = 0
    @Attribute var sequence: Int = 0
}

final class Renamed: ManagedObject {
    override class var entityName: String { "CustomName" }
    @Attribute var title: String = "untitled"
}

/// Records what `awakeFromInsert` and `validateForSave` did.
final class Trip: ManagedObject {
    @Attribute var title: String = ""
    @Attribute var days: Int = 0
    @Attribute var createdAt: Date? = nil

    override func awakeFromInsert() {
        super.awakeFromInsert()
        createdAt = Date(timeIntervalSince1970: 1_000)
        days = 1
    }

    override func validateForSave() throws {
        try super.validateForSave()
        var failures: [ValidationError.Failure] = []
        if title.isEmpty {
            failures.append(.init(objectID: nil, entityName: "", property: "title", reason: "must not be empty"))
        }
        if days < 1 {
            failures.append(.init(objectID: nil, entityName: "", property: "days", reason: "must be at least 1"))
        }
        if !failures.isEmpty {
            throw ValidationError(failures: failures)
        }
    }
}

/// The model every test manager uses unless it says otherwise.
let testModel = ManagedObjectModel([
    Destination.self, AllTypes.self, Vehicle.self, Bicycle.self, Counter.self, Item.self, Trip.self,
])

/// A delegate for tests: in-memory unless told otherwise.
struct TestStoreDelegate: ContextManagerDelegate {
    var model: ManagedObjectModel = testModel
    var storeType: StoreType = .inMemory
    var name: String = "QueueDataTests"
    var migrates = true
    var steps: [MigrationStep] = []
    var onProgress: (@Sendable (MigrationProgress) -> Void)?
    var tracksHistory = false

    var managedObjectModel: ManagedObjectModel { model }
    var tracksPersistentHistory: Bool { tracksHistory }
    var persistentStoreName: String { name }
    var persistentStoreType: StoreType { storeType }
    var shouldUseAutomaticLightweightMigration: Bool { migrates }
    var migrationSteps: [MigrationStep] { steps }
    func migrationDidProgress(_ progress: MigrationProgress) { onProgress?(progress) }
}

/// A new manager on its own store.
func makeManager(
    model: ManagedObjectModel = testModel,
    storeType: StoreType = .inMemory,
    migrates: Bool = true
) -> ContextManager {
    ContextManager(delegate: TestStoreDelegate(model: model, storeType: storeType, migrates: migrates))
}

/// A context on a new serial queue with a readable label.
func makeContext(_ manager: ContextManager, _ label: String) throws -> ManagedObjectContext {
    try manager.createContext(for: DispatchQueue(label: label))
}

/// Waits until every block already queued on each context's queue (merges included) ran.
func flush(_ contexts: ManagedObjectContext...) {
    for context in contexts {
        context.performAndWait {}
    }
}

/// Inserts and saves destinations named `names` (ratings 0, 1, 2, … in order).
@discardableResult
func seedDestinations(_ context: ManagedObjectContext, _ names: [String]) throws -> [ObjectID] {
    try context.performAndWait {
        let objects = names.enumerated().map { index, name in
            let destination = context.insert(Destination.self)
            destination.name = name
            destination.rating = index
            return destination
        }
        try context.save()
        return objects.map(\.objectID)
    }
}

/// A context that keeps every object it registers (`retainsRegisteredObjects`), for tests
/// that find objects again with `registeredObjects` or rely on a stale registered instance
/// in a later block.
func makeRetainingContext(_ manager: ContextManager, _ label: String) throws -> ManagedObjectContext {
    let context = try makeContext(manager, label)
    context.performAndWait { context.retainsRegisteredObjects = true }
    return context
}

extension ManagedObjectContext {
    /// The context, set to keep every object it registers (see `makeRetainingContext`).
    func retainingRegisteredObjects() -> ManagedObjectContext {
        performAndWait { retainsRegisteredObjects = true }
        return self
    }
}

/// A manager whose in-memory store holds `count` destinations named "d0", "d1", … rated
/// 0, 1, …, and their IDs in that order.
func seededDestinations(_ count: Int, _ label: String) throws -> (ContextManager, [ObjectID]) {
    let manager = makeManager()
    let seeder = try makeContext(manager, "\(label)-seed")
    let ids = try seeder.performAndWait {
        var inserted: [Destination] = []
        for number in 0..<count {
            let destination = seeder.insert(Destination.self)
            destination.name = "d\(number)"
            destination.rating = number
            inserted.append(destination)
        }
        try seeder.save()
        return inserted.map(\.objectID)
    }
    return (manager, ids)
}
