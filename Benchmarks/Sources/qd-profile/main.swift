// qd-profile: one workload per run, for instruction counts under callgrind.
//
//   swift build -c release --package-path Benchmarks --product qd-profile
//   valgrind --tool=callgrind Benchmarks/.build/release/qd-profile WORKLOAD N
//
// Per-row costs are the difference between two sizes (10k and 20k, say) divided by the
// difference in rows, so that one-time costs drop out. Every workload but `seed`, `write` and
// `open` (and their `-json` forms) first inserts and saves N records into an in-memory store (the `seed` workload
// alone): subtract a `seed` run of the same size to get the workload's own cost.
//
// Workloads: seed, fetch (every row into a fresh context, dropped at the block's end), filter
// (`age > 50` sorted by name), top (the first 20 of that), count (`age > 50`), get (sum the
// ages of every fetched object 10 times, fetch included), set (set every fetched object's age
// once, fetch included), journal (insert + durable save into a journal store), write (a journal
// store of N records in DIR, then exit), open (open the journal store in DIR and close it),
// write-json and open-json (the same with a JSON store), lookup
// (1,000 fetches of one record by an indexed code, in one block, in a store of N: its per-lookup
// cost is a run's total less a `lookup-seed` run's, over 1,000; `top-index` makes 1,000 fetches of
// the top 10 by that code, descending, each followed by a reset), save-one (N one-object durable
// saves on a journal store of 10,000 records: its "per row" is per save), save-one-coded and
// save-one-unique (N one-object saves on an in-memory store of STORE records with an indexed or
// a unique code, STORE the third argument; `-age` forms change an attribute that is not indexed),
// graph-seed and graph-link (N children of a model with a relationship inserted and saved,
// unlinked or each with one of N / 10 parents).

import Foundation
import QueueData

final class Record: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Attribute var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

final class Coded: ManagedObject {
    @Attribute(.indexed) var code: String = ""
    @Attribute var age: Int = 0
}

final class UniqueCoded: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute var age: Int = 0
}

/// A parent and a child with the benchmark record's attributes, related both ways: a model
/// whose saves translate temporary keys and keep inverses (the `graph-` workloads).
final class GraphParent: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "parent", deleteRule: .cascade) var children: Set<GraphChild>
}

final class GraphChild: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Relationship(inverse: "children") var parent: GraphParent?
}

struct GraphStore: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([GraphParent.self, GraphChild.self]) }
    var persistentStoreName: String { "Graph" }
    var persistentStoreType: StoreType { .inMemory }
}

struct CodedStore: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([Coded.self]) }
    var persistentStoreName: String { "Coded" }
    var persistentStoreType: StoreType { .inMemory }
}

struct UniqueCodedStore: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([UniqueCoded.self]) }
    var persistentStoreName: String { "UniqueCoded" }
    var persistentStoreType: StoreType { .inMemory }
}

/// N one-object saves on an in-memory store of `storeSize` records of `Entity`, each changing
/// one record's code (`changingCode`) or only its age.
func saveOne<Entity: ManagedObject>(
    _: Entity.Type, delegate: some ContextManagerDelegate, count: Int, storeSize: Int, changingCode: Bool,
    code codePath: ReferenceWritableKeyPath<Entity, String>, age agePath: ReferenceWritableKeyPath<Entity, Int>
) throws {
    let manager = ContextManager(delegate: delegate)
    let context = try manager.createContext()
    try context.performAndWait {
        for index in 0..<storeSize {
            let record = context.insert(Entity.self)
            record[keyPath: codePath] = code(index)
            record[keyPath: agePath] = index % 100
        }
        try context.save()
        let records = try context.fetch(FetchRequest<Entity>())
        for index in 0..<count {
            let record = records[(index &* 7919) % records.count]
            if changingCode {
                record[keyPath: codePath] = code(storeSize + index)
            } else {
                record[keyPath: agePath] &+= 1
            }
            try context.save()
        }
    }
    manager.close()
}

/// The code of record `index`.
func code(_ index: Int) -> String {
    "SKU-" + String(index + 100_000_000)
}

struct Store: ContextManagerDelegate {
    var type: StoreType = .inMemory
    var directory: URL = FileManager.default.temporaryDirectory
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([Record.self]) }
    var persistentStoreName: String { "Profile" }
    var persistentStoreType: StoreType { type }
    var storeDirectory: URL { directory }
}

/// Deterministic records (SplitMix64), as qd-bench makes them.
func seed(_ manager: ContextManager, _ count: Int) throws {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    let letters = Array("abcdefghijklmnopqrstuvwxyz")
    let context = try manager.createContext()
    try context.performAndWait {
        for _ in 0..<count {
            var name = ""
            for _ in 0..<12 { name.append(letters[Int(next() % 26)]) }
            let record = context.insert(Record.self)
            record.name = name
            record.age = Int(next() % 100)
            record.score = Double(next() % 1_000_000) / 100
            record.created = Date(timeIntervalSince1970: 1_600_000_000 + Double(next() % 100_000_000))
        }
        try context.save()
    }
}

@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

let arguments = CommandLine.arguments
guard arguments.count >= 3, let count = Int(arguments[2]) else {
    print("usage: qd-profile WORKLOAD N [DIR]")
    exit(2)
}
let workload = arguments[1]
let directory = URL(fileURLWithPath: arguments.count > 3 ? arguments[3] : NSTemporaryDirectory())

switch workload {
case "lookup", "lookup-seed", "top-index":
    let manager = ContextManager(delegate: CodedStore())
    let loader = try manager.createContext()
    try loader.performAndWait {
        for index in 0..<count {
            let record = loader.insert(Coded.self)
            record.code = code(index)
            record.age = index % 100
        }
        try loader.save()
    }
    let context = try manager.createContext()
    try context.performAndWait {
        var state: UInt64 = 12345
        for _ in 0..<1_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1
            let wanted = code(Int(state >> 33) % count)
            if workload == "top-index" {
                var request = FetchRequest<Coded>(sortedBy: [AttributeSort("code", ascending: false)], fetchLimit: 10)
                request.includesSubentities = false
                let found = try context.fetch(request)
                precondition(found.count == 10)
                blackHole(wanted)
                context.reset()
            } else if workload == "lookup" {
                let found = try context.fetch(FetchRequest<Coded>(where: "code", equals: wanted))
                precondition(found.count == 1)
                blackHole(found[0].age)
            } else {
                blackHole(wanted)
            }
        }
    }
    manager.close()
case "write", "write-json":
    let manager = ContextManager(
        delegate: Store(type: workload == "write" ? .journal : .jsonFile, directory: directory))
    try seed(manager, count)
    manager.close()
case "open", "open-json":
    let manager = ContextManager(
        delegate: Store(type: workload == "open" ? .journal : .jsonFile, directory: directory))
    try manager.loadPersistentStore()
    manager.close()
case "save-one":
    // N one-object durable saves (each sets one record's age) on a journal store of 10,000
    // records: the per-save cost is a 2N run's total less an N run's, over N.
    let target = directory.appendingPathComponent("qd-profile-\(ProcessInfo.processInfo.processIdentifier)")
    defer { try? FileManager.default.removeItem(at: target) }
    let manager = ContextManager(delegate: Store(type: .journal, directory: target))
    try seed(manager, 10_000)
    let context = try manager.createContext()
    try context.performAndWait {
        let records = try context.fetch(FetchRequest<Record>())
        for index in 0..<count {
            records[(index &* 7919) % records.count].age &+= 1
            try context.save()
        }
    }
    manager.close()
case "save-one-coded", "save-one-coded-age", "save-one-unique", "save-one-unique-age":
    // N one-object saves on an in-memory store of STORE records (the third argument, 10,000
    // unless given) with an indexed code (`save-one-coded`) or a unique one (`save-one-unique`),
    // each changing one record's code or, with `-age`, only its age: the per-save cost is a 2N
    // run's total less an N run's, over N; compare two store sizes to see whether a save grows
    // with the store.
    let storeSize = arguments.count > 3 ? Int(arguments[3]) ?? 10_000 : 10_000
    let changingCode = !workload.hasSuffix("-age")
    if workload.hasPrefix("save-one-coded") {
        try saveOne(
            Coded.self, delegate: CodedStore(), count: count, storeSize: storeSize, changingCode: changingCode,
            code: \.code, age: \.age)
    } else {
        try saveOne(
            UniqueCoded.self, delegate: UniqueCodedStore(), count: count, storeSize: storeSize,
            changingCode: changingCode, code: \.code, age: \.age)
    }
case "graph-seed", "graph-link", "graph-link-many", "graph-cascade":
    // N children inserted and saved in one save into an in-memory store of the graph model:
    // unlinked (`graph-seed`), or each given one of N / 10 parents (the parents' inserts
    // included in the cost) by `child.parent = parent` (`graph-link`) or by
    // `parent.children = [its 10 children]` (`graph-link-many`); `graph-cascade` then fetches
    // the parents in a fresh context and deletes them (their children cascade) in one save.
    let manager = ContextManager(delegate: GraphStore())
    let context = try manager.createContext()
    try context.performAndWait {
        var parent: GraphParent?
        var children: Set<GraphChild> = []
        for index in 0..<count {
            let child = context.insert(GraphChild.self)
            child.name = code(index)
            child.age = index % 100
            child.score = Double(index)
            guard workload != "graph-seed" else { continue }
            if index % 10 == 0 {
                if let parent, workload == "graph-link-many" {
                    parent.children = children
                    children = []
                }
                parent = context.insert(GraphParent.self)
                parent!.name = code(index)
            }
            if workload == "graph-link-many" {
                children.insert(child)
            } else {
                child.parent = parent
            }
        }
        if let parent, workload == "graph-link-many" {
            parent.children = children
        }
        try context.save()
    }
    if workload == "graph-cascade" {
        let deleter = try manager.createContext()
        try deleter.performAndWait {
            for parent in try deleter.fetch(FetchRequest<GraphParent>()) {
                deleter.delete(parent)
            }
            try deleter.save()
        }
    }
    manager.close()
case "get-outside":
    // Gets on the queue outside the context's blocks (P8's "outside perform"), through
    // `queue.sync`: the confinement's slow path.
    let manager = ContextManager(delegate: Store())
    try seed(manager, count)
    let context = try manager.createContext()
    let all = try context.performAndWait { try context.fetch(FetchRequest<Record>()) }
    context.queue.sync {
        var sum = 0
        for _ in 0..<10 {
            for record in all { sum &+= record.age }
        }
        blackHole(sum)
    }
    manager.close()
case "journal":
    let target = directory.appendingPathComponent("qd-profile-\(ProcessInfo.processInfo.processIdentifier)")
    defer { try? FileManager.default.removeItem(at: target) }
    let manager = ContextManager(delegate: Store(type: .journal, directory: target))
    try seed(manager, count)
    manager.close()
default:
    let manager = ContextManager(delegate: Store())
    try seed(manager, count)
    let context = try manager.createContext()
    try context.performAndWait {
        switch workload {
        case "seed":
            break
        case "fetch":
            blackHole(try context.fetch(FetchRequest<Record>()))
        case "filter":
            blackHole(
                try context.fetch(
                    FetchRequest<Record>(predicate: #Predicate { $0.age > 50 }, sortBy: [SortDescriptor(\.name)])))
        case "top":
            blackHole(
                try context.fetch(
                    FetchRequest<Record>(
                        predicate: #Predicate { $0.age > 50 }, sortBy: [SortDescriptor(\.name)], fetchLimit: 20)))
        case "filter-names":
            var request = FetchRequest<Record>(where: "age", in: 51...)
            request.attributeSorts = [AttributeSort("name")]
            blackHole(try context.fetch(request))
        case "count":
            blackHole(try context.count(for: FetchRequest<Record>(predicate: #Predicate { $0.age > 50 })))
        case "get":
            let all = try context.fetch(FetchRequest<Record>())
            var sum = 0
            for _ in 0..<10 {
                for record in all { sum &+= record.age }
            }
            blackHole(sum)
        case "set":
            let all = try context.fetch(FetchRequest<Record>())
            for record in all { record.age &+= 1 }
            context.rollback()
        default:
            print("unknown workload \(workload)")
            exit(2)
        }
    }
    manager.close()
}
