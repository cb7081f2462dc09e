import Foundation
import Testing

@testable import QueueData

/// Packed rows: every attribute type's field holds exactly the values its stored form can, and
/// gives them back bit for bit; blocks keep every value through appends, copies, replacements
/// and deletions; typed attribute access and access by key agree.
@Suite("Row layout")
struct RowLayoutTests {
    /// Values of every stored form, including the edges (extreme integers, signed zeros, NaN,
    /// strings long enough to live on the heap).
    static let samples: [StoredValue] = [
        .null, .bool(false), .bool(true),
        .integer(0), .integer(-1), .integer(Int64(Int16.max)), .integer(Int64(Int16.min) - 1),
        .integer(Int64(Int32.max)), .integer(Int64(Int32.max) + 1), .integer(.max), .integer(.min),
        .double(0), .double(-0.0), .double(.nan), .double(.infinity), .double(1e300), .double(0.1),
        .string(""), .string("short"), .string(String(repeating: "a heap string, ", count: 8)),
        .date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: -0.0)),
        .date(Date(timeIntervalSince1970: 1_700_000_000.25)),
        .data(Data()), .data(Data([1, 2, 3])), .data(Data(repeating: 7, count: 300)), .data(Data("[1,2]".utf8)),
        .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!),
        .url(URL(string: "https://example.com/a?b=c")!), .url(URL(fileURLWithPath: "/tmp/a b")),
        .decimal(Decimal(string: "12.34")!), .decimal(Decimal(string: "-98765432109876543210.0123456789")!),
    ]

    static let types: [AttributeType] = [
        .boolean, .integer16, .integer32, .integer64, .double, .float, .string, .date, .binaryData, .uuid, .uri,
        .decimal, .transformable,
    ]

    @Test("a field takes exactly the values that fit its attribute, and gives them back bit for bit")
    func fieldsHoldWhatFits() {
        for type in Self.types {
            for isOptional in [false, true] {
                let kind = FieldKind(type, isOptional: isOptional)
                for value in Self.samples {
                    let storage = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 8)
                    defer { storage.deallocate() }
                    let fits = value.fits(type, isOptional: isOptional)
                    let stored = RowLayout.initialize(kind, storage, with: value)
                    if type == .transformable {
                        // A transformable field holds any stored value: the model checks them.
                        #expect(stored)
                    } else if type == .float {
                        // Stored as a Double: the range is the model's check, not the field's.
                        #expect(stored == value.fits(.double, isOptional: isOptional))
                    } else {
                        #expect(stored == fits, "\(value) in \(type)\(isOptional ? "?" : "")")
                    }
                    guard stored else { continue }
                    let layout = RowLayout(columnKinds: [kind], transientKinds: [], defaults: [value])
                    let read = layout.value(storage, slot: 0)
                    #expect(StoredValue.isSame(read, value), "\(value) came back as \(read)")
                    #expect(layout.isSame(storage, slot: 0, as: value))
                    #expect(layout.isSame(storage, layout.defaults, slot: 0))
                    layout.destroy(storage, slots: [0])
                }
            }
        }
    }

    @Test("fields compare as StoredValue.isSame compares their stored forms", arguments: 0..<4)
    func comparisonsAgree(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        for _ in 0..<3_000 {
            let type = Self.types.randomElement(using: &generator)!
            let isOptional = Bool.random(using: &generator)
            let fitting = Self.samples.filter { $0.fits(type, isOptional: isOptional) || type == .transformable }
            guard let lhs = fitting.randomElement(using: &generator),
                let rhs = fitting.randomElement(using: &generator)
            else { continue }
            let layout = RowLayout(
                columnKinds: [FieldKind(type, isOptional: isOptional)], transientKinds: [], defaults: [lhs])
            let row = UnsafeMutableRawPointer.allocate(byteCount: layout.rowSize, alignment: 8)
            defer { row.deallocate() }
            #expect(layout.initializeRow(row, from: [rhs]))
            #expect(layout.isSame(row, layout.defaults, slot: 0) == StoredValue.isSame(rhs, lhs))
            #expect(layout.isSame(row, slot: 0, as: lhs) == StoredValue.isSame(rhs, lhs))
            #expect(layout.setValue(lhs, in: row, slot: 0))
            #expect(layout.isSame(row, layout.defaults, slot: 0))
            layout.destroyRow(row)
        }
    }

    @Test("fields are packed by alignment, and a row that does not fit is refused whole")
    func packing() {
        let layout = RowLayout(
            columnKinds: [.bool, .string, .int16, .double, .optionalInt64, .decimal],
            transientKinds: [.optionalBool, .int64],
            defaults: [.bool(false), .string(""), .integer(0), .double(0), .null, .decimal(0), .null, .integer(0)])
        // Ordered by alignment, each field where its alignment allows, and no two overlapping.
        let spans = layout.kinds.indices.map { (layout.offsets[$0], layout.offsets[$0] + layout.kinds[$0].size) }
        for (slot, (start, end)) in spans.enumerated() {
            #expect(start % layout.kinds[slot].alignment == 0)
            for (other, (otherStart, otherEnd)) in spans.enumerated() where other != slot {
                #expect(end <= otherStart || otherEnd <= start, "slots \(slot) and \(other) overlap")
            }
        }
        #expect(layout.rowSize % 8 == 0 && layout.objectRowSize % 8 == 0)
        #expect(spans[..<6].allSatisfy { $0.1 <= layout.rowSize })
        #expect(spans[6...].allSatisfy { $0.0 >= layout.rowSize && $0.1 <= layout.objectRowSize })
        // 16 (string) + 8 + 9 (optional Int64) + 1 padding + 2 + 20 (decimal) + 1 = 57 bytes, in 64.
        #expect(layout.rowSize == 64)

        let row = UnsafeMutableRawPointer.allocate(byteCount: layout.rowSize, alignment: 8)
        defer { row.deallocate() }
        let heap = String(repeating: "x", count: 100)
        #expect(
            !layout.initializeRow(
                row, from: [.bool(true), .string(heap), .integer(70_000), .double(1), .null, .decimal(1)]))
        #expect(!layout.initializeRow(row, from: [.bool(true)]))
        #expect(
            layout.initializeRow(row, from: [.bool(true), .string(heap), .integer(7), .double(1), .null, .decimal(1)]))
        #expect(
            layout.values(row, count: 6) == [.bool(true), .string(heap), .integer(7), .double(1), .null, .decimal(1)])
        layout.destroyRow(row)
    }

    @Test("blocks keep every row through appends, copies, replacements and deletions", arguments: 0..<8)
    func blocksMatchAReference(seed: Int) {
        // Odd seeds: keys mostly follow one another (stored as the first key alone until a gap);
        // seeds from 4: versions now and then beyond 32 bits (every version then stored wide).
        let gapChance = seed % 2 == 0 ? 1.0 : 0.03
        let wideVersionChance = seed >= 4 ? 0.05 : 0
        var generator = SeededGenerator(seed: UInt64(seed) &+ 100)
        let layout = RowLayout(
            columnKinds: [.string, .optionalData, .int64, .storedValue], transientKinds: [],
            defaults: [.string(""), .null, .integer(0), .null])
        func randomRow() -> [StoredValue] {
            let text = String(
                repeating: "r\(Int.random(in: 0..<1000, using: &generator))",
                count: Int.random(in: 1...20, using: &generator))
            return [
                .string(text), Bool.random(using: &generator) ? .null : .data(Data(text.utf8)),
                .integer(Int64.random(in: .min ... .max, using: &generator)),
                Bool.random(using: &generator) ? .string(text + "!") : .data(Data([1, 2])),
            ]
        }
        var block = RowBlock(layout: layout, capacity: 64)
        var reference: [(key: Int64, version: Int64, values: [StoredValue])] = []
        var key: Int64 = [0, -50, Int64.max - 5_000, Int64(UInt32.max) - 20][seed % 4]
        var shared: [(RowBlock, [(key: Int64, version: Int64, values: [StoredValue])])] = []
        for _ in 0..<2_000 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<4 where block.count < block.capacity:
                key +=
                    Double.random(in: 0..<1, using: &generator) < gapChance
                    ? Int64.random(in: 2...40, using: &generator) : 1
                let values = randomRow()
                #expect(block.append(primaryKey: key, version: 1, values: values))
                reference.append((key, 1, values))
            case 4..<6 where !reference.isEmpty:
                let index = Int.random(in: reference.indices, using: &generator)
                let version =
                    Double.random(in: 0..<1, using: &generator) < wideVersionChance
                    ? Int64.random(in: Int64(Int32.max) - 2...Int64.max / 2, using: &generator)
                    : abs(reference[index].version) + 1
                let values = randomRow()
                #expect(block.replace(at: index, version: version, values: values))
                reference[index] = (reference[index].key, version, values)
            case 6 where !reference.isEmpty:
                let index = Int.random(in: reference.indices, using: &generator)
                if reference[index].version > 0 {
                    block.delete(at: index)
                    reference[index].version = -reference[index].version
                    reference[index].values = []
                }
            case 7:
                // A copy stays as it was while the original changes.
                shared.append((block, reference))
                block = block.copy()
                if shared.count > 4 {
                    shared.removeFirst()
                }
            default:
                // A value that does not fit leaves the row as it was.
                if !reference.isEmpty {
                    let index = Int.random(in: reference.indices, using: &generator)
                    #expect(!block.replace(at: index, version: 9, values: [.integer(1), .null, .integer(1), .null]))
                }
            }
        }
        for (copy, rows) in shared + [(block, reference)] {
            #expect(copy.count == rows.count)
            for (index, row) in rows.enumerated() {
                #expect(copy.key(index) == row.key && copy.version(index) == row.version)
                #expect(copy.isLive(index) == (row.version > 0))
                #expect(copy.committedRow(at: index).values == row.values)
                #expect(copy.index(of: row.key) == index)
                if !rows.contains(where: { $0.key == row.key &+ 1 }) {
                    #expect(copy.index(of: row.key &+ 1) == nil)
                }
            }
            if let first = rows.first {
                #expect(copy.index(of: first.key &- 1) == nil && copy.index(of: .min) == nil)
            }
        }
    }

    @Test("typed access and access by key agree on every attribute type", arguments: 0..<3)
    func typedAndKeyedAccessAgree(seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed) &+ 7)
        let manager = makeManager()
        let writer = try makeContext(manager, "typed-writer")
        let reader = try makeRetainingContext(manager, "typed-reader")
        let id = try writer.performAndWait {
            let object = writer.insert(AllTypes.self)
            try writer.save()
            return object.objectID
        }
        let shared = try reader.performAndWait { try reader.existingObject(with: id, as: AllTypes.self) }
        for _ in 0..<60 {
            let int = Int.random(in: .min ... .max, using: &generator)
            let double = [0.0, -0.0, .nan, 1e-300, Double.random(in: -1e6...1e6, using: &generator)].randomElement(
                using: &generator)!
            let text = String(repeating: "é", count: Int.random(in: 0...40, using: &generator))
            let optional: Int? = Bool.random(using: &generator) ? nil : Int.random(in: -5...5, using: &generator)
            try writer.performAndWait {
                let object = try writer.existingObject(with: id, as: AllTypes.self)
                object.int = int
                object.double = double
                object.string = text
                object.optionalInt = optional
                object.int16 = Int16(truncatingIfNeeded: int)
                object.bool.toggle()
                #expect(object.value(forKey: "int") == .integer(Int64(int)))
                #expect(StoredValue.isSame(object.value(forKey: "double"), .double(double)))
                #expect(object.value(forKey: "string") == .string(text))
                #expect(object.value(forKey: "optionalInt") == (optional.map { .integer(Int64($0)) } ?? .null))
                object.setValue(.integer(Int64(int / 2)), forKey: "int")
                object.setValue(.string(text + "!"), forKey: "string")
                #expect(object.int == int / 2 && object.string == text + "!")
                try writer.save()
            }
            flush(reader)
            reader.performAndWait {
                // The other context's object took the saved row (merged), read in place.
                #expect(shared.int == int / 2)
                #expect(shared.double.bitPattern == double.bitPattern)
                #expect(shared.string == text + "!")
                #expect(shared.optionalInt == optional)
                #expect(shared.int16 == Int16(truncatingIfNeeded: int))
                #expect(!shared.hasChanges)
            }
        }
    }

    @Test("a type of another module that conforms to _StoredInRow is refused by the model")
    func foreignStoredInRowTypesAreRefused() {
        #expect(throws: ModelError.self) { try ManagedObjectModel(validating: [Thermometer.self]) }
    }
}

/// A type that claims to be stored in rows as itself, which it is not (its attribute type's
/// field is a `Double`).
struct Celsius: AttributeValue, _StoredInRow, Codable {
    var degrees: Float
    static var attributeType: AttributeType { .double }
    init(degrees: Float) { self.degrees = degrees }
    init?(storedValue: StoredValue) {
        guard case .double(let value) = storedValue else { return nil }
        degrees = Float(value)
    }
    var storedValue: StoredValue { .double(Double(degrees)) }
}

final class Thermometer: ManagedObject {
    @Attribute var reading: Celsius = Celsius(degrees: 0)
}
