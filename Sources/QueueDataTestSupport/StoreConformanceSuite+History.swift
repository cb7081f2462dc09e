import Foundation
import QueueData

extension StoreConformanceSuite {
    /// For a store that keeps history: saves with history tracked come back as transactions,
    /// numbered in order, after a reopen; a purge keeps only the later ones, after a reopen too.
    func checkHistory(_ log: ConformanceLog) throws {
        let writer = manager(tracksHistory: true)
        defer { writer.close() }
        let context = try writer.createContext()
        let (start, transactions) = try context.performAndWait {
            context.transactionAuthor = "conformance"
            let start = try context.currentHistoryToken()
            for sequence in 0..<3 {
                let note = context.insert(ConformanceNote.self)
                note.sequence = -1_000 - sequence
                note.text = "history \(sequence)"
                try context.save()
            }
            let note = try context.fetch(
                FetchRequest<ConformanceNote>(predicate: #Predicate { $0.sequence == -1_000 }))[0]
            note.text = "changed"
            try context.save()
            context.delete(note)
            try context.save()
            return (start, try context.history(after: start))
        }
        guard
            log.expect(
                transactions.map(\.transactionNumber) == (1...5).map { start.transactionNumber + Int64($0) },
                "five saves with history tracked are not five transactions numbered in order: "
                    + "\(transactions.map(\.transactionNumber))")
        else { return }
        log.expect(
            transactions.map { $0.changes.map(\.kind) } == [[.insert], [.insert], [.insert], [.update], [.delete]],
            "the transactions do not record the saves' inserts, update and delete")
        log.expect(
            transactions[3].changes.first?.updatedProperties == ["text"],
            "an update's transaction does not name the changed property")
        writer.close()

        let reader = manager()
        defer { reader.close() }
        let reopened = try reader.createContext()
        let afterReopen = try reopened.performAndWait { try reopened.history(after: start) }
        log.expect(afterReopen == transactions, "the history read after a reopen differs from the one saved")
        try reopened.performAndWait { try reopened.purgeHistory(before: transactions[3].token) }
        reader.close()

        let purged = manager()
        defer { purged.close() }
        let last = try purged.createContext()
        let kept = try last.performAndWait { try last.history(after: transactions[2].token) }
        log.expect(kept == Array(transactions[3...]), "after a purge and a reopen, the kept history differs")
        let expired = try last.performAndWait { () -> Bool in
            do {
                _ = try last.history(after: transactions[0].token)
                return false
            } catch let error as HistoryError {
                return error.code == .expiredToken
            }
        }
        log.expect(expired, "a token before the purge point did not expire after a reopen")
        // Leave the notes as the later checks expect them.
        try last.performAndWait {
            for note in try last.fetch(FetchRequest<ConformanceNote>(predicate: #Predicate { $0.sequence <= -1_000 })) {
                last.delete(note)
            }
            try last.save()
        }
    }
}
