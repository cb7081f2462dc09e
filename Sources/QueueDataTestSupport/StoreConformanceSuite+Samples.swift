import Foundation
import QueueData

// The values every store must keep, and how the suite compares them.
extension StoreConformanceSuite {

    /// Values every store must keep exactly.
    static let samples: [@Sendable (ConformanceItem) -> Void] = [
        { _ in },
        { item in
            item.flag = true
            item.int = Int.min
            item.int16 = Int16.min
            item.int32 = Int32.max
            item.int64 = Int64.max
            item.double = .nan
            item.float = -Float.infinity
            item.string = "Zürich, 東京, 👋\u{0000}\u{001F} \"quoted\" \\ back\nslash\ttab"
            item.date = Date(timeIntervalSinceReferenceDate: 123_456_789.123_456_7)
            item.data = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 * 7) })
            item.uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
            item.url = URL(fileURLWithPath: "/tmp/a dir/ñ.txt")
            item.decimal = Decimal(string: "-12345678901234567890.123456789")!
            item.optionalString = ""
            item.optionalDate = Date(timeIntervalSince1970: -1e9)
            item.payload = ConformancePayload(label: "nested \"json\"", numbers: [1, -2, 3])
            item.optionalPayload = ConformancePayload(label: "", numbers: [])
        },
        { item in
            item.int = Int.max
            item.double = .infinity
            item.float = 1.1
            item.string = String(repeating: "long string ", count: 2_000)
            item.data = Data((0..<262_144).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            item.date = Date.distantPast
            item.decimal = Decimal(string: "0.000000000000000000000000000001")!
            item.optionalString = "present"
        },
        { item in
            item.double = -0.0
            item.float = -0.0
            item.int16 = Int16.max
            item.int32 = Int32.min
            item.int64 = Int64.min
            item.date = Date.distantFuture
            item.url = URL(string: "https://example.com/path?query=a%20b#fragment")!
        },
    ]

    static func values(of object: ManagedObject) -> [String: StoredValue] {
        Dictionary(uniqueKeysWithValues: object.entity.attributes.map { ($0.name, object.value(forKey: $0.name)) })
    }

    /// Every sample row by ``rowKey(_:)``: a store must keep each row's values under its own
    /// primary key (values moved between rows are a failure, even if every value survives).
    static func snapshot(_ context: ManagedObjectContext) throws -> [String: [String: StoredValue]] {
        var result: [String: [String: StoredValue]] = [:]
        for item in try context.fetch(FetchRequest<ConformanceItem>()) where item.sequence < 1_000 {
            result[rowKey(item)] = values(of: item)
        }
        for note in try context.fetch(FetchRequest<ConformanceNote>()) {
            result[rowKey(note)] = values(of: note)
        }
        return result
    }

    /// `Entity #primaryKey`.
    static func rowKey(_ object: ManagedObject) -> String {
        "\(object.entity.name) #\(object.objectID.primaryKey ?? 0)"
    }

    static func reopenedSnapshot(_ manager: ContextManager) throws -> [String: [String: StoredValue]] {
        defer { manager.close() }
        let context = try manager.createContext()
        return try context.performAndWait { try snapshot(context) }
    }

    /// Equal, with doubles compared bit for bit (NaN equals NaN, -0.0 differs from 0.0).
    static func sameValues(_ lhs: [String: StoredValue], _ rhs: [String: StoredValue]) -> Bool {
        guard lhs.keys == rhs.keys else { return false }
        return lhs.allSatisfy { key, value in
            switch (value, rhs[key]!) {
            case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern
            case (.date(let a), .date(let b)):
                return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
            case (let a, let b): return a == b
            }
        }
    }

    static func compare(
        _ actual: [String: [String: StoredValue]],
        _ expected: [String: [String: StoredValue]],
        _ when: String,
        _ log: ConformanceLog
    ) {
        let missing = expected.keys.filter { actual[$0] == nil }.sorted()
        let extra = actual.keys.filter { expected[$0] == nil }.sorted()
        log.expect(missing.isEmpty, "rows \(missing) were lost \(when)")
        log.expect(extra.isEmpty, "rows \(extra) appeared \(when)")
        for (key, values) in expected.sorted(by: { $0.key < $1.key }) {
            guard let found = actual[key] else { continue }
            for (name, value) in values.sorted(by: { $0.key < $1.key })
            where !sameValues([name: value], [name: found[name] ?? .null]) {
                log.fail("row \(key) attribute \(name) is \(found[name] ?? .null), expected \(value) \(when)")
            }
        }
    }
}
