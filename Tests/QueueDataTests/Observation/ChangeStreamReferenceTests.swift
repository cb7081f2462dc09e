import Dispatch
import Foundation
import Testing

@testable import QueueData

final class StreamShelf: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute var label: String = ""
    @Relationship(inverse: "shelf", deleteRule: .cascade) var books: Set<StreamBook>
}

final class StreamBook: ManagedObject {
    @Attribute var title: String = ""
    @Attribute var rating: Int = 0
    @Relationship(inverse: "books") var shelf: StreamShelf?
}

let streamModel = ManagedObjectModel([StreamShelf.self, StreamBook.self])

/// A brute-force reference for change streams and history merges: random saves from several
/// contexts (inserts, upserts by a unique code, attribute and relationship updates, deletes with
/// cascades, an undone deletion saved again, child pushes), a snapshot of the store after each;
/// every save's payload, any run of them combined, the manager's stream and the history must say
/// what the snapshots say, and a context that merges the history from any earlier token must end
/// up equal to a fresh fetch.
///
/// `QUEUEDATA_STREAM_ROUNDS` and `QUEUEDATA_STREAM_SEED` run more or other rounds.
@Suite("Change streams and history merges against a brute-force reference")
struct ChangeStreamReferenceTests {
    static let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_STREAM_ROUNDS"].flatMap(Int.init) ?? 4
    static let seed = ProcessInfo.processInfo.environment["QUEUEDATA_STREAM_SEED"].flatMap(UInt64.init) ?? 5

    typealias Snapshot = [ObjectID: [StoredValue]]

    /// One posted save: its payload, the context that posted it, and whether it ran on its queue.
    struct Posted: Sendable {
        var changes: SaveChanges
        var poster: String
        var onPostersQueue: Bool
    }

    @Test("random saves: payloads, combined runs, the stream and history merges match store snapshots")
    func randomRounds() async throws {
        for round in 0..<Self.rounds {
            var generator = SeededGenerator(seed: Self.seed &* 1_000 &+ UInt64(round))
            try await runRound(&generator, round: round)
        }
    }

    /// Every object of the store, by ID, with its row's values, from a fresh context.
    static func storeSnapshot(_ manager: ContextManager) throws -> Snapshot {
        let context = try manager.createContext()
        return try context.performAndWait {
            var snapshot: Snapshot = [:]
            let objects: [ManagedObject] =
                try context.fetch(FetchRequest<StreamShelf>()) + context.fetch(FetchRequest<StreamBook>())
            for object in objects {
                snapshot[object.objectID] = values(object)
            }
            return snapshot
        }
    }

    static func values(_ object: ManagedObject) -> [StoredValue] {
        (0..<(object.entity.attributes.count + object.entity.relationships.count)).map { object._value(at: $0) }
    }

    private func runRound(_ generator: inout SeededGenerator, round: Int) async throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: streamModel, tracksHistory: true))
        defer { manager.close() }
        let contexts = try (0..<3).map { try makeContext(manager, "saver\($0)") }
        let keys = contexts.map { context in
            let key = DispatchSpecificKey<String>()
            context.queue.setSpecific(key: key, value: context.name)
            return key
        }
        defer {
            for (context, key) in zip(contexts, keys) { context.queue.setSpecific(key: key, value: nil) }
        }
        for context in contexts {
            context.performAndWait { context.mergePolicy = .mergeByPropertyObjectTrump }
        }
        contexts[0].performAndWait { contexts[0].undoManager = UndoManager() }
        // The sentinel: touched only at the end, to tell the stream's consumer to stop.
        let sentinel = try contexts[1].performAndWait {
            let shelf = contexts[1].insert(StreamShelf.self)
            shelf.code = "sentinel"
            try contexts[1].save()
            return shelf.objectID
        }
        for context in contexts { flush(context) }

        let posted = Locked<[Posted]>([])
        let names = Set(contexts.map(\.name))
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveNotification, object: nil, queue: nil
        ) { notification in
            guard let changes = SaveChanges(notification), let poster = notification.object as? ManagedObjectContext,
                names.contains(poster.name)
            else { return }
            let onQueue = keys.contains { DispatchQueue.getSpecific(key: $0) == poster.name }
            posted.withLock { $0.append(Posted(changes: changes, poster: poster.name, onPostersQueue: onQueue)) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let stream = manager.changes
        let consumer = Task { () -> [SaveChanges] in
            var received: [SaveChanges] = []
            for await changes in stream {
                received.append(changes)
                if changes.updatedObjectIDs.contains(sentinel) { break }
            }
            return received
        }

        let startToken = try contexts[0].performAndWait { try contexts[0].currentHistoryToken() }
        var snapshots: [Snapshot] = [try Self.storeSnapshot(manager)]
        var tokens: [HistoryToken] = [startToken]
        /// Lagging contexts: not merging, holding what they fetched at a step (an index of
        /// `snapshots`).
        var lagging: [(context: ManagedObjectContext, at: Int)] = []

        func recordSaves(_ place: String) throws {
            let count = posted.withLock { $0.count }
            while snapshots.count < count + 1 {
                snapshots.append(try Self.storeSnapshot(manager))
                tokens.append(try contexts[0].performAndWait { try contexts[0].currentHistoryToken() })
            }
            #expect(snapshots.count == count + 1, "\(place)")
        }

        let steps = 30
        var codeCounter = 0
        for step in 0..<steps {
            let place = "round \(round) step \(step)"
            for context in contexts { flush(context) }
            let live = snapshots.last!.keys.filter { $0 != sentinel }.sorted {
                ($0.entityName, $0.rawValue) < ($1.entityName, $1.rawValue)
            }
            let shelves = live.filter { $0.entityName == "StreamShelf" }
            let books = live.filter { $0.entityName == "StreamBook" }
            let index = Int.random(in: 0..<contexts.count, using: &generator)
            let context = contexts[index]
            let operation = Int.random(in: 0..<8, using: &generator)
            let choices = (0..<6).map { _ in Int.random(in: 0..<1_000, using: &generator) }
            func pick(_ ids: [ObjectID], _ choice: Int) -> ObjectID? { ids.isEmpty ? nil : ids[choice % ids.count] }
            switch operation {
            case 0, 1:
                // Inserts: a shelf (an upsert when its code exists), books on shelves.
                codeCounter += 1
                let code = "c\(choices[0] % 6)"
                try context.performAndWait {
                    let shelf = context.insert(StreamShelf.self)
                    shelf.code = code
                    shelf.label = "l\(codeCounter)"
                    for offset in 0..<(choices[1] % 3) {
                        let book = context.insert(StreamBook.self)
                        book.title = "t\(codeCounter)-\(offset)"
                        if let id = pick(shelves, choices[2] + offset), choices[3] % 2 == 0 {
                            book.shelf = try context.existingObject(with: id, as: StreamShelf.self)
                        } else {
                            book.shelf = shelf
                        }
                    }
                    try context.save()
                }
            case 2, 3:
                // Updates: attributes and relationships.
                try context.performAndWait {
                    if let id = pick(books, choices[0]) {
                        let book = try context.existingObject(with: id, as: StreamBook.self)
                        book.rating += 1 + choices[1] % 3
                        if choices[2] % 2 == 0 {
                            book.shelf = try pick(shelves, choices[3]).map {
                                try context.existingObject(with: $0, as: StreamShelf.self)
                            }
                        }
                    }
                    if let id = pick(shelves, choices[4]), choices[5] % 2 == 0 {
                        try context.existingObject(with: id, as: StreamShelf.self).label += "'"
                    }
                    try context.save()
                }
            case 4:
                // Deletes: a book, or a shelf with its books (cascade).
                try context.performAndWait {
                    if let id = pick(choices[0] % 2 == 0 ? shelves : books, choices[1]) {
                        context.delete(try context.existingObject(with: id))
                    }
                    if let id = pick(books, choices[2]), choices[3] % 3 == 0 {
                        let book = try context.existingObject(with: id, as: StreamBook.self)
                        if !book.isDeleted { book.rating += 10 }
                    }
                    try context.save()
                }
            case 5:
                // A deletion saved, undone, and saved again (in the context with an undo manager).
                let undoing = contexts[0]
                guard let id = pick(choices[0] % 2 == 0 ? shelves : books, choices[1]) else { continue }
                try undoing.performAndWait {
                    undoing.delete(try undoing.existingObject(with: id))
                    try undoing.save()
                }
                try recordSaves(place)
                try undoing.performAndWait {
                    _ = undoing.undo()
                    try undoing.save()
                }
            case 6:
                // A child's push, then its parent's save.
                let child = context.performAndWait { context.newChildContext() }
                try child.performAndWait {
                    let book = child.insert(StreamBook.self)
                    book.title = "child\(codeCounter)"
                    if let id = pick(shelves, choices[0]) {
                        book.shelf = try child.existingObject(with: id, as: StreamShelf.self)
                    }
                    if let id = pick(books, choices[1]) {
                        try child.existingObject(with: id, as: StreamBook.self).rating += 1
                    }
                    if let id = pick(books, choices[2]), choices[3] % 2 == 0 {
                        child.delete(try child.existingObject(with: id))
                    }
                    try child.save()
                }
                try context.performAndWait { try context.save() }
            default:
                // A lagging context: fetches everything now and merges nothing.
                let laggard = try manager.createContext()
                try laggard.performAndWait {
                    laggard.automaticallyMergesChangesFromOtherContexts = false
                    laggard.retainsRegisteredObjects = true
                    _ = try laggard.fetch(FetchRequest<StreamShelf>())
                    _ = try laggard.fetch(FetchRequest<StreamBook>())
                }
                lagging.append((laggard, snapshots.count - 1))
            }
            try recordSaves(place)
        }
        // The sentinel tells the consumer to stop.
        try contexts[1].performAndWait {
            try contexts[1].existingObject(with: sentinel, as: StreamShelf.self).label = "end"
            try contexts[1].save()
        }
        try recordSaves("round \(round) end")
        let all = posted.withLock { $0 }
        let payloads = all.map(\.changes)
        let final = snapshots.last!

        // Delivery: on the poster's queue, by the context that saved.
        let allOnQueue = all.allSatisfy { $0.onPostersQueue }
        #expect(allOnQueue, "round \(round)")

        // Every run of saves, combined, against the snapshots around it.
        for start in 0..<payloads.count {
            var combined = payloads[start]
            for end in (start + 1)...payloads.count {
                if end > start + 1 { combined = combined.combined(with: payloads[end - 1]) }
                let runDeleted = Set(payloads[start..<end].flatMap(\.deletedObjectIDs))
                check(
                    combined, from: snapshots[start], to: snapshots[end], deletedOnTheWay: runDeleted,
                    "round \(round) saves \(start)..<\(end)")
            }
        }

        // The stream: its values combined are every save combined.
        let received = try await withTimeout { await consumer.value }
        let streamed = received.dropFirst().reduce(received[0]) { $0.combined(with: $1) }
        check(
            streamed, from: snapshots[0], to: final, deletedOnTheWay: Set(payloads.flatMap(\.deletedObjectIDs)),
            "round \(round) stream (\(received.count) values for \(payloads.count) saves)")

        // The history: one transaction per save, saying what its payload says.
        try contexts[2].performAndWait {
            let transactions = try contexts[2].history(after: startToken)
            #expect(transactions.count == payloads.count, "round \(round)")
            for (transaction, payload) in zip(transactions, payloads) {
                let kinds = Dictionary(grouping: transaction.changes, by: \.kind).mapValues { Set($0.map(\.objectID)) }
                #expect(kinds[.insert] ?? [] == payload.insertedObjectIDs, "round \(round) \(transaction.token)")
                #expect(kinds[.update] ?? [] == payload.updatedObjectIDs, "round \(round) \(transaction.token)")
                #expect(kinds[.delete] ?? [] == payload.deletedObjectIDs, "round \(round) \(transaction.token)")
            }
            // Filtered by entity: the same changes of that entity, after every token.
            for token in tokens {
                let everything = try contexts[2].history(after: token)
                let books = try contexts[2].history(after: token, entity: StreamBook.self)
                let expected = everything.compactMap { transaction -> [HistoryChange]? in
                    let kept = transaction.changes.filter { $0.objectID.entityName == "StreamBook" }
                    return kept.isEmpty ? nil : kept
                }
                #expect(books.map(\.changes) == expected, "round \(round) after \(token)")
            }
        }

        // Lagging contexts merge the history from any token at or before what they fetched.
        for (laggard, at) in lagging {
            let from = Int.random(in: 0...at, using: &generator)
            try laggard.performAndWait {
                laggard.mergeChanges(from: try laggard.history(after: tokens[from]))
                var held: Snapshot = [:]
                for object in laggard.registeredObjects where !object.isDeleted {
                    held[object.objectID] = Self.values(object)
                }
                let fetched: [ManagedObject] =
                    try laggard.fetch(FetchRequest<StreamShelf>()) + laggard.fetch(FetchRequest<StreamBook>())
                var fetchedValues: Snapshot = [:]
                for object in fetched { fetchedValues[object.objectID] = Self.values(object) }
                #expect(fetchedValues == final, "round \(round) laggard from \(at) merging after \(from)")
                for (id, values) in held where final[id] != values {
                    Issue.record(
                        "round \(round) laggard from \(at) after \(from): \(id) holds \(values), store \(final[id].map { "\($0)" } ?? "nothing")"
                    )
                }
            }
        }
    }

    /// Checks that `changes` says how the store went from `before` to `after`.
    private func check(
        _ changes: SaveChanges, from before: Snapshot, to after: Snapshot, deletedOnTheWay: Set<ObjectID>,
        _ place: String
    ) {
        let beforeIDs = Set(before.keys)
        let afterIDs = Set(after.keys)
        #expect(changes.deletedObjectIDs == beforeIDs.subtracting(afterIDs), "\(place): deleted")
        let inserted = changes.insertedObjectIDs
        #expect(inserted.isSuperset(of: afterIDs.subtracting(beforeIDs)), "\(place): inserted")
        let reinserted = inserted.subtracting(afterIDs.subtracting(beforeIDs))
        #expect(
            reinserted.isSubset(of: beforeIDs.intersection(afterIDs).intersection(deletedOnTheWay)),
            "\(place): reinserted \(reinserted.subtracting(deletedOnTheWay))")
        #expect(changes.updatedObjectIDs.isSubset(of: afterIDs), "\(place): updated objects that are gone")
        for id in beforeIDs.intersection(afterIDs) where before[id] != after[id] {
            #expect(
                changes.updatedObjectIDs.contains(id) || inserted.contains(id), "\(place): \(id) changed, not reported")
        }
        for (id, row) in changes.updated {
            guard let values = after[id] else { continue }
            #expect(Array(row.values.prefix(values.count)) == values, "\(place): \(id) updated with stale values")
        }
    }

    private func withTimeout<Value: Sendable>(_ body: @escaping @Sendable () async -> Value) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try await Task.sleep(nanoseconds: 30_000_000_000)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else { throw CancellationError() }
            return value
        }
    }
}
