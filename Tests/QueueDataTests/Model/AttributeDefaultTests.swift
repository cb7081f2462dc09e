import Foundation
import Testing

@testable import QueueData

/// A booking as the Getting Started article declares it: a static default, and a value of its
/// own set in `awakeFromInsert()`.
final class Booking: ManagedObject {
    @Attribute(.unique) var id: UUID = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    @Attribute var created: Date = .distantPast
    @Attribute var ticket: UUID = UUID()  // evaluated once: the same for every object

    override func awakeFromInsert() {
        super.awakeFromInsert()
        id = UUID()
        created = Date()
    }
}

@Suite("Attribute defaults")
struct AttributeDefaultTests {
    @Test("a default is evaluated once per model; awakeFromInsert gives each object its own value")
    func staticDefaultsAndAwakeFromInsert() throws {
        let manager = makeManager(model: ManagedObjectModel([Booking.self]))
        defer { manager.close() }
        let context = try makeContext(manager, "bookings")
        try context.performAndWait {
            let bookings = (0..<3).map { _ in context.insert(Booking.self) }
            #expect(Set(bookings.map(\.id)).count == 3, "awakeFromInsert set each its own id")
            #expect(bookings.allSatisfy { $0.created > .distantPast })
            #expect(Set(bookings.map(\.ticket)).count == 1, "the default is the model's, evaluated once")
            try context.save()  // the unique ids do not collide
            #expect(try context.count(for: FetchRequest<Booking>()) == 3)
        }
    }
}
