import Foundation
import QueueData
import Testing

@Suite("Managed objects")
struct ManagedObjectTests {
    @Test("a new object starts with the declared defaults")
    func defaults() throws {
        let context = try makeContext(makeManager(), "defaults")
        context.performAndWait {
            let object = context.insert(AllTypes.self)
            #expect(object.bool == false)
            #expect(object.int == 1)
            #expect(object.int16 == 2)
            #expect(object.int32 == 3)
            #expect(object.int64 == 4)
            #expect(object.double == 5.5)
            #expect(object.float == 6.5)
            #expect(object.string == "seven")
            #expect(object.date == Date(timeIntervalSince1970: 8))
            #expect(object.data == Data([9]))
            #expect(object.uuid == UUID(uuidString: "00000000-0000-0000-0000-00000000000A"))
            #expect(object.url == URL(string: "https://example.com/11"))
            #expect(object.decimal == Decimal(string: "12.34"))
            #expect(object.optionalString == nil)
            #expect(object.optionalInt == nil)
            #expect(object.address == Address(street: "Main", zip: nil))
            #expect(object.optionalAddress == nil)
            #expect(object.status == .planned)
        }
    }

    @Test("every supported type round-trips through a save and a fetch in another context")
    func everyTypeRoundTrips() throws {
        let manager = makeManager()
        let writer = try makeContext(manager, "writer")
        let reader = try makeContext(manager, "reader")
        let uuid = UUID()
        let date = Date(timeIntervalSinceReferenceDate: 123_456.789)
        let id = try writer.performAndWait {
            let object = writer.insert(AllTypes.self)
            object.bool = true
            object.int = Int.min
            object.int16 = Int16.max
            object.int32 = Int32.min
            object.int64 = Int64.max
            object.double = -0.125
            object.float = Float.greatestFiniteMagnitude
            object.string = "héllo, wörld 👋"
            object.date = date
            object.data = Data((0...255).map { UInt8($0) })
            object.uuid = uuid
            object.url = URL(fileURLWithPath: "/tmp/a b")
            object.decimal = Decimal(string: "-98765432109876543210.0123456789")!
            object.optionalString = "present"
            object.optionalInt = 0
            object.address = Address(street: "Rua Augusta", zip: 1100)
            object.optionalAddress = Address(street: "Second", zip: nil)
            object.status = .booked
            try writer.save()
            return object.objectID
        }
        try reader.performAndWait {
            let object = try reader.existingObject(with: id, as: AllTypes.self)
            #expect(object.bool == true)
            #expect(object.int == Int.min)
            #expect(object.int16 == Int16.max)
            #expect(object.int32 == Int32.min)
            #expect(object.int64 == Int64.max)
            #expect(object.double == -0.125)
            #expect(object.float == Float.greatestFiniteMagnitude)
            #expect(object.string == "héllo, wörld 👋")
            #expect(object.date == date)
            #expect(object.data == Data((0...255).map { UInt8($0) }))
            #expect(object.uuid == uuid)
            #expect(object.url == URL(fileURLWithPath: "/tmp/a b"))
            #expect(object.decimal == Decimal(string: "-98765432109876543210.0123456789"))
            #expect(object.optionalString == "present")
            #expect(object.optionalInt == 0)
            #expect(object.address == Address(street: "Rua Augusta", zip: 1100))
            #expect(object.optionalAddress == Address(street: "Second", zip: nil))
            #expect(object.status == .booked)
            object.optionalString = nil
            object.optionalAddress = nil
            try reader.save()
        }
        writer.performAndWait {
            let object = writer.object(with: id) as? AllTypes
            #expect(object?.optionalString == nil)
            #expect(object?.optionalAddress == nil)
            #expect(object?.value(forKey: "optionalAddress") == .null)
        }
    }

    @Test("state flags follow the object through insert, save, update and delete")
    func lifecycleFlags() throws {
        let context = try makeContext(makeManager(), "flags")
        try context.performAndWait {
            let object = context.insert(Destination.self)
            #expect(object.isInserted && !object.isUpdated && !object.isDeleted && object.hasChanges)
            #expect(object.managedObjectContext === context)
            try context.save()
            #expect(!object.isInserted && !object.isUpdated && !object.isDeleted && !object.hasChanges)
            object.rating = 3
            #expect(object.isUpdated && object.hasChanges)
            #expect(context.updatedObjects == [object])
            try context.save()
            #expect(!object.isUpdated && !object.hasChanges)
            context.delete(object)
            #expect(object.isDeleted && object.hasChanges)
            #expect(context.deletedObjects == [object])
            try context.save()
            #expect(object.isDeleted)
            #expect(object.managedObjectContext == nil)
            #expect(!context.hasChanges)
            #expect(context.registeredObjects.isEmpty)
        }
    }

    @Test("setting an equal value is not a change")
    func equalValueIsNotAChange() throws {
        let context = try makeContext(makeManager(), "equal")
        let id = try seedDestinations(context, ["Oslo"])[0]
        context.performAndWait {
            let object = context.object(with: id) as! Destination
            object.name = "Oslo"
            object.rating = 0
            #expect(!object.isUpdated)
            #expect(!context.hasChanges)
        }
    }

    @Test("changedValues and committedValues report the differences and the stored values")
    func changedAndCommittedValues() throws {
        let context = try makeContext(makeManager(), "changed")
        try context.performAndWait {
            let object = context.insert(Destination.self)
            object.name = "Quito"
            #expect(object.changedValues() == ["name": .string("Quito")])
            #expect(object.committedValues(forKeys: nil).isEmpty)
            try context.save()
            #expect(object.changedValues().isEmpty)
            object.rating = 7
            object.country = "Ecuador"
            #expect(object.changedValues() == ["rating": .integer(7), "country": .string("Ecuador")])
            #expect(
                object.committedValues(forKeys: ["rating", "name"]) == [
                    "rating": .integer(0), "name": .string("Quito"),
                ])
            #expect(object.committedValues(forKeys: nil).count == 4)
            object.rating = 0
            #expect(object.changedValues() == ["country": .string("Ecuador")])
        }
    }

    @Test("awakeFromInsert runs once, on insert, and may set values")
    func awakeFromInsert() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "awake")
        let id = try context.performAndWait {
            let trip = context.insert(Trip.self)
            #expect(trip.createdAt == Date(timeIntervalSince1970: 1_000))
            #expect(trip.days == 1)
            trip.title = "Alps"
            try context.save()
            return trip.objectID
        }
        let other = try makeContext(manager, "awake-reader")
        other.performAndWait {
            let trip = other.object(with: id) as! Trip
            #expect(trip.createdAt == Date(timeIntervalSince1970: 1_000))
            #expect(trip.days == 1)
        }
    }

    @Test("entities without subclasses are read and written by key")
    func keyValueAccess() throws {
        let note = try EntityDescription(
            name: "Note",
            attributes: [
                .init(name: "text", type: .string), .init(name: "pinned", type: .boolean),
                .init(name: "due", type: .date, isOptional: true),
            ])
        let model = try ManagedObjectModel(entities: [note])
        let manager = makeManager(model: model)
        let writer = try makeContext(manager, "kv-writer")
        try writer.performAndWait {
            let object = writer.insert(entityName: "Note")
            #expect(type(of: object) == ManagedObject.self)
            #expect(object.value(forKey: "text") == .string(""))
            object.setValue(.string("buy milk"), forKey: "text")
            object.setValue(.bool(true), forKey: "pinned")
            try writer.save()
        }
        let reader = try makeContext(manager, "kv-reader")
        try reader.performAndWait {
            let notes = try reader.fetch(FetchRequest<ManagedObject>(entityName: "Note"))
            #expect(notes.count == 1)
            #expect(notes[0].value(forKey: "text") == .string("buy milk"))
            #expect(notes[0].value(forKey: "pinned") == .bool(true))
            #expect(notes[0].value(forKey: "due") == .null)
            #expect(notes[0].entity.name == "Note")
        }
    }

    @Test("objects are equal and hashed by identity, which a save does not change")
    func identity() throws {
        let manager = makeManager()
        let context = try makeContext(manager, "identity")
        let id = try context.performAndWait {
            let a = context.insert(Destination.self)
            let b = context.insert(Destination.self)
            // Equal values, different objects.
            #expect(a != b)
            #expect(Set([a, b, a]).count == 2)
            let set: Set<ManagedObject> = [a, b]
            let temporaryID = a.objectID
            try context.save()
            // The save gave `a` a permanent ID; it is still the same object, with the same hash.
            #expect(a.objectID != temporaryID)
            #expect(set.contains(a) && set.contains(b))
            // The context hands out that one instance, by ID or by fetch.
            let byID = try #require(context.object(with: a.objectID))
            #expect(byID === a)
            #expect(byID == a && byID.hashValue == a.hashValue)
            let fetched = try context.fetch(FetchRequest<Destination>())
            #expect(fetched.count == 2 && fetched.contains { $0 === a } && fetched.contains { $0 === b })
            return a.objectID
        }
        // Another context has its own instance of the same row.
        let other = try makeContext(manager, "identity-other")
        other.performAndWait {
            let object = other.object(with: id)
            #expect(object?.objectID == id)
            #expect(object?.managedObjectContext === other)
        }
    }
}

@Suite("Transformable values by key")
struct TransformableByKeyTests {
    @Test("a transformable attribute set by key must hold one JSON value")
    func invalidJSONTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let context = try manager.createContext(for: DispatchQueue(label: "kv"))
            context.performAndWait {
                context.insert(AllTypes.self).setValue(.data(Data("not json".utf8)), forKey: "address")
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("does not fit AllTypes.address, of type transformable"))
    }

    @Test("a transformable attribute accepts any JSON value by key")
    func validJSON() throws {
        let context = try makeContext(makeManager(), "kv-json")
        context.performAndWait {
            let object = context.insert(AllTypes.self)
            object.setValue(.data(Data(#" {"street": "By Key", "zip": 7} "#.utf8)), forKey: "address")
            #expect(object.address == Address(street: "By Key", zip: 7))
        }
    }
}
