import Foundation
import QueueData
import Testing

@Suite("Object IDs")
struct ObjectIDTests {
    @Test("an inserted object has a temporary ID until its context saves, then a permanent one")
    func temporaryUntilSaved() throws {
        let context = try makeContext(makeManager(), "ids")
        try context.performAndWait {
            let destination = context.insert(Destination.self)
            let temporary = destination.objectID
            #expect(temporary.isTemporaryID)
            #expect(temporary.primaryKey == nil)
            #expect(temporary.entityName == "Destination")
            try context.save()
            let permanent = destination.objectID
            #expect(!permanent.isTemporaryID)
            #expect(permanent.primaryKey == 1)
            #expect(permanent != temporary)
            #expect(context.object(with: permanent) === destination)
            #expect(context.object(with: temporary) == nil)
        }
    }

    @Test("temporary IDs are unique across contexts")
    func temporaryIDsAreUnique() throws {
        let manager = makeManager()
        let first = try makeContext(manager, "first")
        let second = try makeContext(manager, "second")
        let a = first.performAndWait { first.insert(Destination.self).objectID }
        let b = second.performAndWait { second.insert(Destination.self).objectID }
        #expect(a != b)
        #expect(second.performAndWait { second.object(with: a) } == nil)
    }

    @Test("the URI form round-trips and names the store, entity and key")
    func uriRoundTrip() throws {
        let context = try makeContext(makeManager(), "uri")
        let ids = try seedDestinations(context, ["Lisbon", "Porto"])
        let uri = ids[1].uriRepresentation
        #expect(uri.scheme == "x-queuedata")
        #expect(uri.host == ids[1].storeIdentifier.uuidString)
        #expect(uri.path == "/Destination/p2")
        let decoded = try #require(ObjectID(uriRepresentation: uri))
        #expect(decoded == ids[1])
        #expect(decoded.hashValue == ids[1].hashValue)
        #expect(decoded != ids[0])
        let name = context.performAndWait { (context.object(with: decoded) as? Destination)?.name }
        #expect(name == "Porto")
    }

    @Test("Codable encodes the URI string and decodes an equal ID")
    func codableRoundTrip() throws {
        let context = try makeContext(makeManager(), "codable")
        let ids = try seedDestinations(context, ["A", "B", "C"])
        let data = try JSONEncoder().encode(ids)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("x-queuedata:"))
        let decoded = try JSONDecoder().decode([ObjectID].self, from: data)
        #expect(decoded == ids)
        #expect(Set(decoded) == Set(ids))
    }

    @Test(
        "malformed URIs are rejected",
        arguments: [
            "https://example.com/Destination/p1",
            "x-queuedata://not-a-uuid/Destination/p1",
            "x-queuedata://00000000-0000-0000-0000-000000000001/Destination/q1",
            "x-queuedata://00000000-0000-0000-0000-000000000001/Destination/p0",
            "x-queuedata://00000000-0000-0000-0000-000000000001/Destination/p-3",
            "x-queuedata://00000000-0000-0000-0000-000000000001/Destination",
            "x-queuedata://00000000-0000-0000-0000-000000000001//p1",
        ])
    func malformedURIs(_ string: String) throws {
        #expect(ObjectID(uriRepresentation: try #require(URL(string: string))) == nil)
    }

    @Test("decoding a string that is not an ID URI throws")
    func decodingGarbageThrows() {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ObjectID.self, from: Data(#""hello""#.utf8))
        }
    }

    @Test("IDs of another store are not found")
    func otherStoreIDs() throws {
        let first = try makeContext(makeManager(), "first-store")
        let second = try makeContext(makeManager(), "second-store")
        let id = try seedDestinations(first, ["Only here"])[0]
        try seedDestinations(second, ["Other"])
        second.performAndWait {
            #expect(second.object(with: id) == nil)
            #expect {
                try second.existingObject(with: id, as: Destination.self)
            } throws: { error in
                (error as? ContextError)?.code == .objectNotFound
            }
        }
    }
}
