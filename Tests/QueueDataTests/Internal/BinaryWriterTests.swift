import Foundation
import Testing

@testable import QueueData

/// What the journal's writer writes, its reader reads back: every kind of value, varints at
/// every length, fixed-width integers, and a buffer that grows many times on the way.
@Suite("Binary writer")
struct BinaryWriterTests {
    /// One thing to write, and how to check it was read back.
    enum Item: Equatable {
        case byte(UInt8)
        case varint(UInt64)
        case signed(Int64)
        case uint16(UInt16)
        case uint32(UInt32)
        case uint64(UInt64)
        case value(StoredValue)
        case string(String)
        case uuid(UUID)
        case raw([UInt8])
    }

    static func randomItem(_ random: inout SeededGenerator) -> Item {
        func integer() -> UInt64 {
            // Every length of varint: a random value cut to a random number of bits.
            let bits = Int(random.next() % 65)
            return bits == 64 ? random.next() : random.next() & ((1 << UInt64(bits)) - 1)
        }
        let strings = ["", "a", "plain ascii", "é, ß, 日本, 🎉", String(repeating: "x", count: 300)]
        switch random.next() % 10 {
        case 0: return .byte(UInt8(truncatingIfNeeded: random.next()))
        case 1: return .varint(integer())
        case 2: return .signed(Int64(bitPattern: integer()) * (random.next() % 2 == 0 ? 1 : -1))
        case 3: return .uint16(UInt16(truncatingIfNeeded: random.next()))
        case 4: return .uint32(UInt32(truncatingIfNeeded: random.next()))
        case 5: return .uint64(random.next())
        case 6: return .string(strings[Int(random.next() % UInt64(strings.count))])
        case 7: return .uuid(UUID())
        case 8: return .raw((0..<Int(random.next() % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        default:
            let values: [StoredValue] = [
                .null, .bool(true), .bool(false), .integer(Int64(bitPattern: integer())), .integer(.min),
                .double(Double(bitPattern: random.next())), .double(-0.0),
                .string(strings[Int(random.next() % UInt64(strings.count))]),
                .date(Date(timeIntervalSinceReferenceDate: Double(Int64(bitPattern: random.next()) % 1_000_000_000))),
                .data(Data((0..<Int(random.next() % 70)).map { _ in UInt8(truncatingIfNeeded: random.next()) })),
                .uuid(UUID()), .url(URL(string: "https://example.com/\(random.next() % 1000)")!),
                .decimal(Decimal(string: "12345.6789")!),
            ]
            return .value(values[Int(random.next() % UInt64(values.count))])
        }
    }

    @Test("everything written reads back in order, across many growths of the buffer", arguments: [1, 2, 3, 4])
    func roundTrips(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        for round in 0..<40 {
            let items = (0..<Int(random.next() % 400)).map { _ in Self.randomItem(&random) }
            var writer = BinaryWriter(capacity: round % 2 == 0 ? 0 : 4096)
            for item in items {
                switch item {
                case .byte(let byte): writer.write(byte)
                case .varint(let value): writer.writeVarint(value)
                case .signed(let value): writer.writeSignedVarint(value)
                case .uint16(let value): writer.writeUInt16(value)
                case .uint32(let value): writer.writeUInt32(value)
                case .uint64(let value): writer.writeUInt64(value)
                case .value(let value): writer.writeValue(value)
                case .string(let string): writer.writeString(string)
                case .uuid(let uuid): writer.writeUUID(uuid)
                case .raw(let bytes): writer.write(contentsOf: bytes)
                }
            }
            let bytes = writer.bytes
            #expect(bytes.count == writer.count)
            try bytes.withUnsafeBytes { buffer in
                var reader = BinaryReader(buffer)
                for item in items {
                    let read: Item
                    switch item {
                    case .byte: read = .byte(try reader.readByte())
                    case .varint: read = .varint(try reader.readVarint())
                    case .signed: read = .signed(try reader.readSignedVarint())
                    case .uint16: read = .uint16(try reader.readUInt16())
                    case .uint32: read = .uint32(try reader.readUInt32())
                    case .uint64: read = .uint64(try reader.readUInt64())
                    case .value: read = .value(try reader.readValue())
                    case .string: read = .string(try reader.readString())
                    case .uuid: read = .uuid(try reader.readUUID())
                    case .raw(let expected): read = .raw(Array(try reader.readBytes(expected.count)))
                    }
                    #expect(read == item, "seed \(seed), round \(round)")
                }
                #expect(reader.isAtEnd, "nothing left over")
            }
        }
    }

    @Test("varints and fixed-width integers take the bytes the format says")
    func layout() {
        var writer = BinaryWriter()
        writer.writeVarint(0)
        writer.writeVarint(127)
        writer.writeVarint(128)
        writer.writeVarint(UInt64.max)
        writer.writeUInt16(0x0102)
        writer.writeUInt32(0x0304_0506)
        writer.writeSignedVarint(-1)
        #expect(
            writer.bytes == [
                0x00, 0x7F, 0x80, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x02, 0x01, 0x06,
                0x05, 0x04, 0x03, 0x01,
            ])
        writer.setUInt32(0xAABB_CCDD, at: 1)
        #expect(Array(writer.bytes.prefix(5)) == [0x00, 0xDD, 0xCC, 0xBB, 0xAA])
        #expect(writer.withUnsafeBytes { $0.count } == 21)
    }
}
