import Foundation
import Testing

@testable import QueueData

@Suite("Model discovery")
struct ManagedObjectModelTests {
    @Test("attributes are discovered in declaration order with their types, optionality and defaults")
    func discoversAttributes() throws {
        let entity = try #require(testModel.entity(for: AllTypes.self))
        #expect(entity.name == "AllTypes")
        #expect(entity.managedObjectClass == AllTypes.self)
        let summary = entity.attributes.map { "\($0.name):\($0.type.rawValue)\($0.isOptional ? "?" : "")" }
        #expect(
            summary == [
                "bool:boolean", "int:integer64", "int16:integer16", "int32:integer32", "int64:integer64",
                "double:double", "float:float", "string:string", "date:date", "data:binaryData", "uuid:uuid",
                "url:uri", "decimal:decimal", "optionalString:string?", "optionalInt:integer64?",
                "address:transformable", "optionalAddress:transformable?", "status:transformable",
            ])
        #expect(entity.attribute(named: "int16")?.defaultValue == .integer(2))
        #expect(entity.attribute(named: "float")?.defaultValue == .double(6.5))
        #expect(entity.attribute(named: "date")?.defaultValue == .date(Date(timeIntervalSince1970: 8)))
        #expect(entity.attribute(named: "url")?.defaultValue == .url(URL(string: "https://example.com/11")!))
        #expect(entity.attribute(named: "optionalInt")?.defaultValue == .null)
        #expect(entity.attribute(named: "address")?.defaultValue == .data(Data(#"{"street":"Main"}"#.utf8)))
        #expect(entity.attribute(named: "status")?.defaultValue == .data(Data(#""planned""#.utf8)))
        #expect(entity.attribute(named: "address")?.valueTypeName?.hasSuffix("Address") == true)
        #expect(entity.index(ofAttribute: "decimal") == 12)
        #expect(entity.attribute(named: "missing") == nil)
    }

    @Test("a subclass lists its own attributes first, then its superclass's")
    func inheritedAttributes() throws {
        let bicycle = try #require(testModel.entity(for: Bicycle.self))
        #expect(bicycle.attributes.map(\.name) == ["gears", "wheels"])
        let vehicle = try #require(testModel.entity(for: Vehicle.self))
        #expect(vehicle.attributes.map(\.name) == ["wheels"])
    }

    @Test("entity names are class names unless the class overrides entityName")
    func entityNames() throws {
        let model = try ManagedObjectModel(validating: [Renamed.self, Destination.self])
        #expect(model.entities.map(\.name) == ["CustomName", "Destination"])
        #expect(model.entity(named: "CustomName")?.managedObjectClass == Renamed.self)
        #expect(model.entity(for: Renamed.self)?.name == "CustomName")
    }

    @Test("discovery runs once per class: every model shares the entity")
    func discoveryIsCached() throws {
        let first = try ManagedObjectModel(validating: [Destination.self])
        let second = try ManagedObjectModel(validating: [Item.self, Destination.self])
        #expect(first.entity(for: Destination.self) === second.entity(for: Destination.self))
    }

    @Test("the version hash is a fixed SHA-256 of the declarations, the same on every machine")
    func versionHashIsDeterministic() throws {
        let model = try ManagedObjectModel(validating: [Destination.self])
        // SHA-256 of "Destination{country:string,name:string,rating:integer64,visited:date?}",
        // as computed by `sha256sum`.
        #expect(model.versionHash == "d72cc42adaf2092cbd64feec326aecd990b7f1767a02e9dc32e273c073a28dc9")
        let reordered = try ManagedObjectModel(validating: [Item.self, Destination.self])
        let ordered = try ManagedObjectModel(validating: [Destination.self, Item.self])
        #expect(reordered.versionHash == ordered.versionHash)
        #expect(reordered.versionHash != model.versionHash)
    }

    @Test("the version hash ignores defaults and attribute order but not types, names or optionality")
    func versionHashSensitivity() throws {
        func hash(_ attributes: [AttributeDescription]) throws -> String {
            try ManagedObjectModel(entities: [EntityDescription(name: "E", attributes: attributes)]).versionHash
        }
        let base = try hash([.init(name: "a", type: .string), .init(name: "b", type: .integer64)])
        #expect(try hash([.init(name: "b", type: .integer64), .init(name: "a", type: .string)]) == base)
        #expect(
            try hash([.init(name: "a", type: .string, defaultValue: .string("x")), .init(name: "b", type: .integer64)])
                == base)
        #expect(try hash([.init(name: "a", type: .string), .init(name: "b", type: .integer32)]) != base)
        #expect(
            try hash([.init(name: "a", type: .string, isOptional: true), .init(name: "b", type: .integer64)]) != base)
        #expect(try hash([.init(name: "a", type: .string), .init(name: "c", type: .integer64)]) != base)
        #expect(try hash([.init(name: "a", type: .string)]) != base)
    }

    @Test("SHA-256 matches the FIPS 180-4 test vectors")
    func sha256Vectors() {
        #expect(
            SHA256.hexDigest(of: Array("abc".utf8))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(of: []) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256.hexDigest(of: Array(repeating: UInt8(ascii: "a"), count: 1000))
                == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test("a class listed twice is rejected")
    func duplicateClass() {
        #expect {
            try ManagedObjectModel(validating: [Destination.self, Destination.self])
        } throws: { error in
            (error as? ModelError)?.code == .duplicateEntity && "\(error)".contains("listed twice")
        }
    }

    @Test("two entities with one name are rejected")
    func duplicateEntityName() throws {
        let one = try EntityDescription(name: "Destination", attributes: [])
        #expect {
            try ManagedObjectModel(entities: [one, try EntityDescription(name: "Destination", attributes: [])])
        } throws: { error in
            (error as? ModelError)?.code == .duplicateEntity
        }
        #expect(throws: ModelError.self) {
            try ManagedObjectModel(validating: [Destination.self, Clash.self])
        }
    }

    @Test("ManagedObject itself is not an entity")
    func baseClassRejected() {
        #expect {
            try ManagedObjectModel(validating: [ManagedObject.self])
        } throws: { error in
            (error as? ModelError)?.code == .unsupportedDeclaration
        }
    }

    @Test("entities described without classes are validated")
    func describedEntities() throws {
        #expect {
            try EntityDescription(
                name: "E", attributes: [.init(name: "a", type: .string), .init(name: "a", type: .boolean)])
        } throws: { error in
            (error as? ModelError)?.code == .duplicateAttribute && (error as? ModelError)?.attributeName == "a"
        }
        #expect {
            try EntityDescription(name: "bad/name", attributes: [])
        } throws: { error in
            (error as? ModelError)?.code == .invalidName
        }
        #expect {
            try EntityDescription(name: "E", attributes: [.init(name: "has space", type: .string)])
        } throws: { error in
            (error as? ModelError)?.code == .invalidName
        }
        #expect {
            try EntityDescription(name: "E", attributes: [.init(name: "link", type: .uri)])
        } throws: { error in
            (error as? ModelError)?.code == .invalidDefaultValue
        }
        #expect {
            try EntityDescription(
                name: "E", attributes: [.init(name: "n", type: .integer16, defaultValue: .integer(70_000))])
        } throws: { error in
            (error as? ModelError)?.code == .invalidDefaultValue
        }
        let entity = try EntityDescription(
            name: "Note",
            attributes: [.init(name: "text", type: .string), .init(name: "link", type: .uri, isOptional: true)])
        #expect(entity.attributes.map(\.defaultValue) == [.string(""), .null])
        #expect(entity.managedObjectClass == ManagedObject.self)
    }

    @Test("an invalid declaration traps with the error's message when using the non-throwing initializer")
    func invalidModelTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ManagedObjectModel([Destination.self, Destination.self])
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("invalid model"))
        #expect(message.contains("listed twice"))
    }
}

/// An entity whose name clashes with `Destination`'s.
final class Clash: ManagedObject {
    override class var entityName: String { "Destination" }
    @Attribute var value: Int = 0
}
