import Dispatch
import Foundation
import QueueData
import Testing

@Suite("Persistent history from many queues at once")
struct HistoryConcurrencyTests {
    @Test(
        "writers on four queues and readers on two: every save is one transaction, numbered without gaps; readers see consistent prefixes",
        arguments: HistoryStore.allCases)
    func concurrentWritersAndReaders(_ kind: HistoryStore) throws {
        let directory = TemporaryDirectory("history-concurrent")
        let manager = kind.manager(directory)
        defer { manager.close() }
        let writers = try (0..<4).map { try makeContext(manager, "writer-\($0)") }
        let readers = try (0..<2).map { try makeContext(manager, "reader-\($0)") }
        let saves = 25
        let writing = DispatchGroup()
        let reading = DispatchGroup()
        let failures = Recorder<String>()
        for (index, writer) in writers.enumerated() {
            writer.queue.async(group: writing) {
                writer.performAndWait {
                    writer.transactionAuthor = "w\(index)"
                    for save in 0..<saves {
                        let object = writer.insert(Destination.self)
                        object.name = "w\(index)-\(save)"
                        do {
                            try writer.save()
                        } catch {
                            failures.record("w\(index) save \(save): \(error)")
                        }
                    }
                }
            }
        }
        let done = Locked(false)
        for reader in readers {
            reader.queue.async(group: reading) {
                var token: HistoryToken?
                var lastSeen: Int64 = 0
                while !done.withLock({ $0 }) {
                    reader.performAndWait {
                        do {
                            let transactions = try reader.history(after: token)
                            for transaction in transactions {
                                // Each read continues exactly where the last one ended.
                                if transaction.transactionNumber != lastSeen + 1 {
                                    failures.record(
                                        "\(reader.name) saw \(transaction.transactionNumber) after \(lastSeen)")
                                }
                                lastSeen = transaction.transactionNumber
                                // What the history lists is durable: the reader finds it.
                                for change in transaction.changes where reader.object(with: change.objectID) == nil {
                                    failures.record("\(reader.name) cannot find \(change.objectID)")
                                }
                            }
                            token = transactions.last?.token ?? token
                        } catch {
                            failures.record("\(reader.name): \(error)")
                        }
                    }
                }
            }
        }
        writing.wait()
        done.withLock { $0 = true }
        reading.wait()
        #expect(failures.values.isEmpty)

        let context = try makeContext(manager, "check")
        let transactions = try context.performAndWait { try context.history(after: nil) }
        #expect(transactions.map(\.transactionNumber) == Array(1...Int64(writers.count * saves)))
        for index in writers.indices {
            let mine = transactions.filter { $0.author == "w\(index)" }
            #expect(mine.count == saves)
            let names = try context.performAndWait {
                try mine.map { transaction in
                    try transaction.changes.map { change in
                        #expect(change.kind == .insert)
                        return try context.existingObject(with: change.objectID, as: Destination.self).name
                    }
                }
            }
            #expect(names == (0..<saves).map { ["w\(index)-\($0)"] })
        }
    }

    @Test("a child context's saves reach the history when its parent saves them, as the parent's transaction")
    func childContexts() throws {
        let manager = HistoryStore.inMemory.manager(TemporaryDirectory("unused"))
        defer { manager.close() }
        let parent = try makeContext(manager, "parent")
        let child = parent.performAndWait {
            parent.transactionAuthor = "parent"
            return parent.newChildContext()
        }
        try child.performAndWait {
            child.transactionAuthor = "child"
            child.insert(Destination.self).name = "from child"
            try child.save()
        }
        #expect(try historySummaries(parent).isEmpty)
        try parent.performAndWait { try parent.save() }
        let transactions = try parent.performAndWait { try parent.history(after: nil) }
        #expect(transactions.map(\.author) == ["parent"])
        #expect(transactions.first?.contextName == "parent")
        #expect(transactions.first?.changes.map(\.kind) == [.insert])
        // A child reads the store's history through the same coordinator.
        #expect(try child.performAndWait { try child.history(after: nil) } == transactions)
    }
}
