import Dispatch
import Foundation
import QueueData
import Testing

/// A brute-force reference for persistent history: random saves from several contexts (inserts,
/// updates, deletes), reopens, compactions and purges, each save's expected transaction written
/// down from what the test did; every query of the history (after any valid token, by author,
/// by entity) must return exactly the reference's transactions.
///
/// `QUEUEDATA_HISTORY_ROUNDS` and `QUEUEDATA_HISTORY_SEED` run more or other rounds.
@Suite("Persistent history against a brute-force reference")
struct HistoryRandomTests {
    static let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_HISTORY_ROUNDS"].flatMap(Int.init) ?? 6
    static let seed = ProcessInfo.processInfo.environment["QUEUEDATA_HISTORY_SEED"].flatMap(UInt64.init) ?? 11

    /// What the reference expects of one transaction.
    struct Expected: Equatable {
        var number: Int64
        var author: String
        var changes: [String]

        var summary: String { "\(author): " + changes.sorted().joined(separator: "; ") }
    }

    @Test(
        "random saves, reopens, compactions and purges: the history is exactly the reference's",
        arguments: HistoryStore.allCases)
    func randomHistory(_ kind: HistoryStore) throws {
        for round in 0..<Self.rounds {
            var generator = SeededGenerator(seed: Self.seed &* 1_000 &+ UInt64(round))
            try runRound(kind, &generator, round: round)
        }
    }

    private func runRound(_ kind: HistoryStore, _ generator: inout SeededGenerator, round: Int) throws {
        let directory = TemporaryDirectory("history-random")
        let open = kind.opener(directory)
        var manager = open()
        var contexts: [ManagedObjectContext] = []
        func makeContexts() throws {
            contexts = try (0..<3).map { index in
                let context = try makeContext(manager, "history-\(index)")
                context.performAndWait { context.transactionAuthor = "author\(index)" }
                return context
            }
        }
        try makeContexts()
        defer { manager.close() }
        var reference: [Expected] = []
        var purgedThrough: Int64 = 0
        var last: Int64 = 0
        var live: [ObjectID: Int] = [:]  // each object's rating
        var nameCounter = 0
        let steps = 30
        for step in 0..<steps {
            let place = "round \(round) step \(step)"
            for context in contexts { flush(context) }
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                // A save: inserts, updates, deletes on one context.
                let index = Int.random(in: 0..<contexts.count, using: &generator)
                let context = contexts[index]
                let insertCount = Int.random(in: 0...2, using: &generator)
                var names: [String] = []
                for _ in 0..<insertCount {
                    nameCounter += 1
                    names.append("n\(nameCounter)")
                }
                let existing = live.keys.sorted { $0.primaryKey! < $1.primaryKey! }
                let touched = existing.filter { _ in Int.random(in: 0..<4, using: &generator) == 0 }
                var updates: [(ObjectID, rating: Int, renames: Bool)] = []
                var deletes: [ObjectID] = []
                for id in touched {
                    if Bool.random(using: &generator) {
                        deletes.append(id)
                    } else {
                        updates.append(
                            (id, live[id]! + Int.random(in: 1...5, using: &generator), Bool.random(using: &generator)))
                    }
                }
                let inserted = try context.performAndWait {
                    let objects = names.map { name in
                        let object = context.insert(Destination.self)
                        object.name = name
                        return object
                    }
                    for (id, rating, renames) in updates {
                        let object = try context.existingObject(with: id, as: Destination.self)
                        object.rating = rating
                        if renames {
                            object.name += "'"
                        }
                    }
                    for id in deletes {
                        context.delete(try context.existingObject(with: id))
                    }
                    try context.save()
                    return objects.map(\.objectID)
                }
                guard !(inserted.isEmpty && updates.isEmpty && deletes.isEmpty) else { continue }
                last += 1
                var changes: [String] = []
                for id in inserted {
                    changes.append("I Destination \(id.primaryKey!)")
                    live[id] = 0
                }
                for (id, rating, renames) in updates {
                    changes.append("U Destination \(id.primaryKey!) \(renames ? "name,rating" : "rating")")
                    live[id] = rating
                }
                for id in deletes {
                    changes.append("D Destination \(id.primaryKey!)")
                    live[id] = nil
                }
                reference.append(Expected(number: last, author: "author\(index)", changes: changes))
            case 6:
                manager.close()
                manager = open()
                try makeContexts()
            case 7:
                try manager.compactPersistentStore()
            case 8:
                // A purge before a random place of the history.
                let number = Int64.random(in: purgedThrough...last + 1, using: &generator)
                let context = contexts.randomElement(using: &generator)!
                let token = HistoryToken(
                    storeIdentifier: try context.performAndWait { try context.currentHistoryToken() }.storeIdentifier,
                    transactionNumber: min(number, last))
                try context.performAndWait { try context.purgeHistory(before: token) }
                purgedThrough = max(purgedThrough, token.transactionNumber - 1)
                reference.removeAll { $0.number <= purgedThrough }
            default:
                break
            }
            // Queries: after every valid token, by author; an expired one.
            let context = contexts.randomElement(using: &generator)!
            try context.performAndWait {
                let current = try context.currentHistoryToken()
                #expect(current.transactionNumber == last, "\(place)")
                for number in purgedThrough...last {
                    let token = HistoryToken(storeIdentifier: current.storeIdentifier, transactionNumber: number)
                    let expected = reference.filter { $0.number > number }
                    let found = try context.history(after: token)
                    #expect(found.map(\.transactionNumber) == expected.map(\.number), "\(place) after \(number)")
                    #expect(found.map(\.summary) == expected.map(\.summary), "\(place) after \(number)")
                }
                let author = "author\(Int.random(in: 0..<3, using: &generator))"
                #expect(
                    try context.history(after: nil, author: author).map(\.summary)
                        == reference.filter { $0.author == author }.map(\.summary), "\(place) by \(author)")
                #expect(try context.history(after: nil, entity: Trip.self).isEmpty, "\(place)")
                if purgedThrough > 0 {
                    let expired = HistoryToken(
                        storeIdentifier: current.storeIdentifier, transactionNumber: purgedThrough - 1)
                    let error = #expect(throws: HistoryError.self, "\(place)") { try context.history(after: expired) }
                    #expect(error?.code == .expiredToken, "\(place)")
                }
            }
        }
    }
}
