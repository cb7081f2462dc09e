import Foundation
import Testing

@_spi(StoreTool) @testable import QueueData

@Suite("qd and the persistent history")
struct HistoryToolTests {
    @Test("qd inspect reports the history; qd import's saves are recorded with the author \"qd import\"")
    func inspectAndImport() throws {
        let directory = TemporaryDirectory("history-qd")
        var manager = journalManager(directory, tracksHistory: true)
        try saveOneByOne(manager, ["a", "b"])
        // The app keeps its token, and quits; another process (qd) changes the store meanwhile.
        let app = try makeContext(manager, "app")
        let saved = try JSONEncoder().encode(try app.performAndWait { try app.currentHistoryToken() })
        manager.close()
        let store = directory.file("Store.journal")
        try directory.write(Array("{\"name\": \"imported\"}\n".utf8), to: "more.jsonl")
        let imported = try runProcess(
            qdExecutablePath, ["import", store.path, "--entity", "Destination", directory.file("more.jsonl").path])
        #expect(imported.status == 0, "\(imported.standardError)")

        manager = journalManager(directory, tracksHistory: true)
        let context = try makeContext(manager, "reader")
        let transactions = try context.performAndWait { try context.history(after: nil) }
        #expect(transactions.map(\.author) == [nil, nil, "qd import"])
        #expect(transactions.last?.changes.map(\.kind) == [.insert])
        // The app, back, catches up from its token: exactly what the other process did.
        let token = try JSONDecoder().decode(HistoryToken.self, from: saved)
        let missed = try context.performAndWait { try context.history(after: token) }
        #expect(missed == [transactions[2]])
        let names = try context.performAndWait {
            try missed[0].changes.map { try context.existingObject(with: $0.objectID, as: Destination.self).name }
        }
        #expect(names == ["imported"])
        manager.close()

        let text = try runProcess(qdExecutablePath, ["inspect", store.path])
        #expect(text.status == 0, "\(text.standardError)")
        #expect(
            text.standardOutput.contains("3 transactions kept (1 to 3), purged through 0; authors: qd import"),
            "\(text.standardOutput)")
        let json = try runProcess(qdExecutablePath, ["inspect", store.path, "--json"])
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [String: Any])
        let history = try #require(report["history"] as? [String: Any])
        #expect(history["transactions"] as? Int == 3)
        #expect(history["lastTransactionNumber"] as? Int == 3)
        #expect(history["authors"] as? [String] == ["qd import"])

        let untracked = TemporaryDirectory("history-qd-off")
        let plain = journalManager(untracked)
        try saveOneByOne(plain, ["a"])
        plain.close()
        let off = try runProcess(qdExecutablePath, ["inspect", untracked.file("Store.journal").path])
        #expect(off.standardOutput.contains("History           not tracked"), "\(off.standardOutput)")
    }
}
