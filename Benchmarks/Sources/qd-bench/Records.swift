import Foundation
import QueueData

/// The benchmark record: `{id, name (12 chars), age 0–99, score Double, created Date}`. The
/// object's primary key is its id.
final class Record: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// The same record as a plain class: the stored-property baseline.
final class PlainRecord {
    var id: Int64
    var name: String
    var age: Int
    var score: Double
    var created: Date

    init(_ value: RecordValue) {
        id = value.id
        name = value.name
        age = value.age
        score = value.score
        created = value.created
    }
}

/// One generated record.
struct RecordValue: Sendable {
    var id: Int64
    var name: String
    var age: Int
    var score: Double
    var created: Date
}

/// Deterministic records (SplitMix64), identical in every run.
func makeRecords(_ count: Int) -> [RecordValue] {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    let letters = Array("abcdefghijklmnopqrstuvwxyz")
    return (0..<count).map { index in
        var name = ""
        for _ in 0..<12 {
            name.append(letters[Int(next() % 26)])
        }
        return RecordValue(
            id: Int64(index + 1), name: name, age: Int(next() % 100), score: Double(next() % 1_000_000) / 100,
            created: Date(timeIntervalSince1970: 1_600_000_000 + Double(next() % 100_000_000)))
    }
}

/// The in-memory workloads' configuration (the file-store workloads use `FileStoreBenchmark`).
struct BenchmarkStore: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([Record.self]) }
    var persistentStoreName: String { "Benchmark" }
    var persistentStoreType: StoreType { .inMemory }
}

// The access loops, identical for both kinds of record and never inlined into the timing code.

@inline(never)
func sumAges(_ records: [PlainRecord]) -> Int {
    var sum = 0
    for record in records { sum &+= record.age }
    return sum
}

@inline(never)
func sumAges(_ records: [Record]) -> Int {
    var sum = 0
    for record in records { sum &+= record.age }
    return sum
}

@inline(never)
func sumNameLengths(_ records: [PlainRecord]) -> Int {
    var sum = 0
    for record in records { sum &+= record.name.utf8.count }
    return sum
}

@inline(never)
func sumNameLengths(_ records: [Record]) -> Int {
    var sum = 0
    for record in records { sum &+= record.name.utf8.count }
    return sum
}

@inline(never)
func setAges(_ records: [PlainRecord], _ seed: Int) {
    var id = 0
    for record in records {
        id &+= 1
        record.age = (seed &+ id) & 127
    }
}

@inline(never)
func setAges(_ records: [Record], _ seed: Int) {
    var id = 0
    for record in records {
        id &+= 1
        record.age = (seed &+ id) & 127
    }
}
