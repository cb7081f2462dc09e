import Dispatch
import Foundation
import QueueData
import Testing

@Suite("Persistent history: transactions, tokens, filters, purging, catching up")
struct HistoryTests {
    @Test(
        "each save is one transaction: its author, context, inserts, updates with their properties, deletes",
        arguments: HistoryStore.allCases)
    func transactionsRecordSaves(_ kind: HistoryStore) throws {
        let directory = TemporaryDirectory("history")
        let manager = kind.manager(directory)
        defer { manager.close() }
        let context = try makeContext(manager, "editor")
        let start = try context.performAndWait { try context.currentHistoryToken() }
        #expect(start.transactionNumber == 0)
        let ids = try context.performAndWait {
            context.transactionAuthor = "app"
            let a = context.insert(Destination.self)
            a.name = "a"
            let b = context.insert(Destination.self)
            b.name = "b"
            try context.save()
            return [a.objectID, b.objectID]
        }
        try context.performAndWait {
            context.transactionAuthor = "sync"
            let a = try context.existingObject(with: ids[0], as: Destination.self)
            a.rating = 5
            a.country = "FR"
            context.delete(try context.existingObject(with: ids[1]))
            try context.save()
            // A save with nothing to write is no transaction.
            try context.save()
        }
        let transactions = try context.performAndWait { try context.history(after: nil) }
        #expect(transactions.map(\.transactionNumber) == [1, 2])
        #expect(
            transactions.map(\.summary) == [
                "app: I Destination \(ids[0].primaryKey!); I Destination \(ids[1].primaryKey!)",
                "sync: D Destination \(ids[1].primaryKey!); U Destination \(ids[0].primaryKey!) country,rating",
            ])
        #expect(transactions.allSatisfy { $0.contextName == "editor" })
        #expect(transactions[0].timestamp <= transactions[1].timestamp)
        #expect(transactions[1].changes.first { $0.kind == .delete }?.objectID == ids[1])
        let current = try context.performAndWait { try context.currentHistoryToken() }
        #expect(current == transactions[1].token)
        #expect(start < transactions[0].token && transactions[0].token < current)
        #expect(try context.performAndWait { try context.history(after: transactions[0].token) } == [transactions[1]])
        #expect(try context.performAndWait { try context.history(after: current) }.isEmpty)
        #expect(try context.performAndWait { try context.history(after: start) } == transactions)
        // Filters: by author, by entity.
        #expect(try context.performAndWait { try context.history(after: nil, author: "sync") } == [transactions[1]])
        #expect(try context.performAndWait { try context.history(after: nil, entity: Trip.self) }.isEmpty)
        #expect(
            try context.performAndWait { try context.history(after: nil, entityName: "Destination") } == transactions)
    }

    @Test("tokens are Codable and survive a reopen; another store's token or one beyond the history is refused")
    func tokensAcrossReopens() throws {
        let directory = TemporaryDirectory("history-tokens")
        var manager = journalManager(directory, tracksHistory: true)
        try saveOneByOne(manager, ["a", "b"])
        var context = try makeContext(manager, "reader")
        let token = try context.performAndWait { try context.currentHistoryToken() }
        let encoded = try JSONEncoder().encode(token)
        manager.close()

        manager = journalManager(directory, tracksHistory: true)
        try saveOneByOne(manager, ["c"])
        manager.close()
        manager = journalManager(directory, tracksHistory: true)
        defer { manager.close() }
        context = try makeContext(manager, "reader")
        let decoded = try JSONDecoder().decode(HistoryToken.self, from: encoded)
        #expect(decoded == token)
        let later = try context.performAndWait { try context.history(after: decoded) }
        #expect(later.map(\.transactionNumber) == [3])
        #expect(later.first?.changes.map(\.kind) == [.insert])

        let foreign = HistoryToken(storeIdentifier: UUID(), transactionNumber: 1)
        let beyond = HistoryToken(storeIdentifier: token.storeIdentifier, transactionNumber: 4)
        for bad in [foreign, beyond] {
            let error = #expect(throws: HistoryError.self) {
                try context.performAndWait { try context.history(after: bad) }
            }
            #expect(error?.code == .invalidToken)
        }
    }

    @Test(
        "purging removes the transactions before a token, durably; older tokens expire, later ones stay valid",
        arguments: HistoryStore.allCases)
    func purging(_ kind: HistoryStore) throws {
        let directory = TemporaryDirectory("history-purge")
        let open = kind.opener(directory)
        var manager = open()
        try saveOneByOne(manager, ["a", "b", "c", "d"])
        var context = try makeContext(manager, "purger")
        let all = try context.performAndWait { try context.history(after: nil) }
        #expect(all.count == 4)
        try context.performAndWait { try context.purgeHistory(before: all[2].token) }
        #expect(try historySummaries(context) == all[2...].map(\.summary))
        let expired = #expect(throws: HistoryError.self) {
            try context.performAndWait { try context.history(after: all[0].token) }
        }
        #expect(expired?.code == .expiredToken)
        // The token named and the one before it (the purge point) stay valid.
        #expect(try context.performAndWait { try context.history(after: all[1].token) } == Array(all[2...]))
        #expect(try context.performAndWait { try context.history(after: all[2].token) } == [all[3]])
        // Purging again before an earlier point changes nothing.
        try context.performAndWait { try context.purgeHistory(before: all[0].token) }
        #expect(try context.performAndWait { try context.history(after: nil) } == Array(all[2...]))
        manager.close()

        manager = open()
        context = try makeContext(manager, "purger")
        #expect(try historySummaries(context) == all[2...].map(\.summary))
        #expect(try context.performAndWait { try context.history(after: nil) } == Array(all[2...]))
        #expect(try context.performAndWait { try context.currentHistoryToken() } == all[3].token)
        try saveOneByOne(manager, ["e"])
        // Numbers go on after the purge, never reused.
        #expect(try context.performAndWait { try context.history(after: all[3].token) }.map(\.transactionNumber) == [5])
        // Purging everything by date: the history is empty, the numbering goes on.
        try context.performAndWait { try context.purgeHistory(before: Date.distantFuture) }
        #expect(try context.performAndWait { try context.history(after: nil) }.isEmpty)
        let end = try context.performAndWait { try context.currentHistoryToken() }
        #expect(end.transactionNumber == 5)
        #expect(try context.performAndWait { try context.history(after: end) }.isEmpty)
        manager.close()
        manager = open()
        defer { manager.close() }
        try saveOneByOne(manager, ["f"])
        context = try makeContext(manager, "purger")
        #expect(try context.performAndWait { try context.history(after: end) }.map(\.transactionNumber) == [6])
    }

    @Test("without tracking, or on the JSON store, history requests throw notTracked and saves work")
    func notTracked() throws {
        let directory = TemporaryDirectory("history-off")
        for manager in [
            makeManager(), journalManager(directory, name: "Off"),
            jsonManager(directory, name: "JSON", tracksHistory: true),
        ] {
            defer { manager.close() }
            try saveOneByOne(manager, ["a"])
            let context = try makeContext(manager, "reader")
            for request in [
                { _ = try context.history(after: nil) }, { _ = try context.currentHistoryToken() },
                { try context.purgeHistory(before: Date()) },
            ] as [() throws -> Void] {
                let error = #expect(throws: HistoryError.self) { try context.performAndWait(request) }
                #expect(error?.code == .notTracked)
            }
        }
    }

    @Test("turning history on for an existing journal starts it at the next save; the journal keeps recording it")
    func startingOnAnExistingJournal() throws {
        let directory = TemporaryDirectory("history-start")
        var manager = journalManager(directory)
        try saveOneByOne(manager, ["old"])
        manager.close()
        #expect(try directory.bytes(of: "Store.journal")[8] == 3)  // Format 3: no history.

        manager = journalManager(directory, tracksHistory: true)
        var context = try makeContext(manager, "reader")
        #expect(try context.performAndWait { try context.history(after: nil) }.isEmpty)
        // Opening wrote nothing.
        #expect(try directory.bytes(of: "Store.journal")[8] == 3)
        try saveOneByOne(manager, ["new"])
        #expect(try directory.bytes(of: "Store.journal")[8] == 4)
        manager.close()

        // Opened without asking for history, the journal still records it.
        manager = journalManager(directory)
        defer { manager.close() }
        try saveOneByOne(manager, ["newer"])
        context = try makeContext(manager, "reader")
        let transactions = try context.performAndWait { try context.history(after: nil) }
        #expect(transactions.map(\.transactionNumber) == [1, 2])
        #expect(try childlessNames(manager) == ["new", "newer", "old"])
    }

    @Test("mergeChanges(from:) brings a context that does not merge automatically up to date")
    func mergingTransactions() throws {
        let manager = HistoryStore.inMemory.manager(TemporaryDirectory("unused"))
        defer { manager.close() }
        let writer = try makeContext(manager, "writer")
        let reader = try makeRetainingContext(manager, "reader")
        let ids = try seedDestinations(writer, ["a", "b"])
        let (a, token) = try reader.performAndWait {
            reader.automaticallyMergesChangesFromOtherContexts = false
            let a = try reader.existingObject(with: ids[0], as: Destination.self)
            _ = try reader.existingObject(with: ids[1])
            a.country = "local edit"
            return (a, try reader.currentHistoryToken())
        }
        try writer.performAndWait {
            (try writer.existingObject(with: ids[0], as: Destination.self)).rating = 99
            writer.delete(try writer.existingObject(with: ids[1]))
            writer.insert(Destination.self).name = "c"
            try writer.save()
        }
        let changes = Recorder<ObjectsDidChange>()
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: reader, queue: nil
        ) { notification in
            if let payload = ObjectsDidChange(notification) { changes.record(payload) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try reader.performAndWait {
            #expect(a.rating == 0)
            let transactions = try reader.history(after: token)
            reader.mergeChanges(from: transactions)
            #expect(a.rating == 99)
            #expect(a.country == "local edit")
            #expect(reader.object(with: ids[1]) == nil)
            #expect(try reader.fetch(FetchRequest<Destination>()).map(\.name).sorted() == ["a", "c"])
            // Merging the same transactions again changes nothing.
            reader.mergeChanges(from: transactions)
        }
        let posted = changes.values
        #expect(posted.count == 1)
        #expect(posted.first?.updatedObjectIDs == [ids[0]])
        #expect(posted.first?.deletedObjectIDs == [ids[1]])
        #expect(posted.first?.insertedObjectIDs.count == 1)
    }
}

/// The names of the destinations a fresh context of `manager` fetches, sorted.
func childlessNames(_ manager: ContextManager) throws -> [String] {
    let context = try makeContext(manager, "names")
    return try context.performAndWait {
        try context.fetch(FetchRequest<Destination>()).map(\.name).sorted()
    }
}
