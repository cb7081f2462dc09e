import Foundation
import QueueData
import Testing

@Suite("Persistent history across migrations and store conversions")
struct HistoryMigrationTests {
    /// A manager tracking history on the journal `Store` in `directory`, with `model`.
    func manager(_ directory: TemporaryDirectory, _ model: ManagedObjectModel) -> ContextManager {
        journalManager(directory, model: model, tracksHistory: true)
    }

    @Test("a migration keeps the history as recorded (the old property names); tokens stay valid and numbering goes on")
    func migration() throws {
        let directory = TemporaryDirectory("history-migration")
        let version1 = try thingModel([AttributeDescription(name: "name", type: .string)])
        let version2 = try thingModel([
            AttributeDescription(name: "title", type: .string, originalName: "name"),
            AttributeDescription(name: "extra", type: .integer64, defaultValue: .integer(0)),
        ])
        var manager = manager(directory, version1)
        var context = try makeContext(manager, "v1")
        let (id, token) = try context.performAndWait {
            let thing = context.insert(entityName: "Thing")
            thing.setValue(.string("a"), forKey: "name")
            try context.save()
            let token = try context.currentHistoryToken()
            thing.setValue(.string("b"), forKey: "name")
            try context.save()
            return (thing.objectID, token)
        }
        let before = try context.performAndWait { try context.history(after: nil) }
        manager.close()

        manager = self.manager(directory, version2)
        defer { manager.close() }
        context = try makeContext(manager, "v2")
        try context.performAndWait {
            #expect(try context.history(after: nil) == before)
            #expect(try context.history(after: token).map(\.summary) == ["-: U Thing \(id.primaryKey!) name"])
            let thing = try context.existingObject(with: id)
            thing.setValue(.string("c"), forKey: "title")
            try context.save()
            let after = try context.history(after: before.last!.token)
            #expect(after.map(\.transactionNumber) == [3])
            #expect(after.map(\.summary) == ["-: U Thing \(id.primaryKey!) title"])
        }
    }

    @Test("converting a journal to another journal keeps the history; to the JSON store, the rows only")
    func conversion() throws {
        let directory = TemporaryDirectory("history-conversion")
        var manager = journalManager(directory, tracksHistory: true)
        try saveOneByOne(manager, ["a", "b"])
        var context = try makeContext(manager, "reader")
        let before = try context.performAndWait { try context.history(after: nil) }
        try manager.migratePersistentStore(to: .journal, directory: directory.url, name: "Copy")
        context = try makeContext(manager, "reader")
        #expect(try context.performAndWait { try context.history(after: nil) } == before)
        try saveOneByOne(manager, ["c"])
        #expect(try context.performAndWait { try context.history(after: before.last!.token) }.count == 1)

        try manager.migratePersistentStore(to: .jsonFile, directory: directory.url, name: "AsJSON")
        context = try makeContext(manager, "reader")
        #expect(try childlessNames(manager) == ["a", "b", "c"])
        let error = #expect(throws: HistoryError.self) {
            try context.performAndWait { try context.history(after: nil) }
        }
        #expect(error?.code == .notTracked)
        manager.close()
        _ = manager
        manager = journalManager(directory, name: "Copy", tracksHistory: true)
        defer { manager.close() }
        context = try makeContext(manager, "reader")
        let summaries = try historySummaries(context)
        #expect(summaries.count == 3, "\(summaries)")
    }
}
