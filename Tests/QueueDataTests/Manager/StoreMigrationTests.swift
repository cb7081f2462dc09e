import Foundation
import Testing

@testable import QueueData

@Suite("migratePersistentStore")
struct StoreMigrationTests {
    /// A graph with every kind of relationship, saved in `manager`'s store.
    private func seedGraph(_ manager: ContextManager) throws -> [ObjectID] {
        let context = try manager.createContext()
        return try context.performAndWait {
            let ada = context.insert(Explorer.self)
            ada.name = "Ada"
            let passport = context.insert(Passport.self)
            passport.number = "P-1"
            ada.passport = passport
            let tags = (0..<3).map { index -> Tag in
                let tag = context.insert(Tag.self)
                tag.label = "t\(index)"
                return tag
            }
            for index in 0..<20 {
                let expedition = context.insert(Expedition.self)
                expedition.title = "E\(index), \"quoted\"\n"
                expedition.leader = ada
                expedition.tags = Set(tags.prefix(index % 4))
                expedition.waypoints = (0..<(index % 3)).map { step in
                    let waypoint = context.insert(Waypoint.self)
                    waypoint.name = "w\(step)"
                    return waypoint
                }
            }
            try context.save()
            let doomed = try context.fetch(FetchRequest<Expedition>(fetchLimit: 2))
            doomed.forEach(context.delete)
            try context.save()
            return [ada.objectID] + (try context.fetch(FetchRequest<Expedition>()).map(\.objectID))
        }
    }

    /// Every expedition as text: its title, leader, waypoints in order and tags.
    private func graphText(_ manager: ContextManager) throws -> [String] {
        let context = try manager.createContext()
        return try context.performAndWait {
            try context.fetch(FetchRequest<Expedition>()).map { expedition in
                "\(expedition.objectID) \(expedition.title) \(expedition.leader?.name ?? "-") "
                    + "\(expedition.waypoints.map(\.name)) \(expedition.tags.map(\.label).sorted())"
            }
        }
    }

    @Test(arguments: [("journal", "json"), ("json", "journal")])
    func convertsAndMovesTheManagerToTheNewStore(from source: String, to target: String) throws {
        let directory = TemporaryDirectory("convert")
        let sourceType: StoreType = source == "json" ? .jsonFile : .journal
        let targetType: StoreType = target == "json" ? .jsonFile : .journal
        let manager = ContextManager(
            delegate: ConversionDelegate(model: graphModel, type: sourceType, directory: directory.url))
        defer { manager.close() }
        let ids = try seedGraph(manager)
        let before = try graphText(manager)
        let original = try directory.bytes(of: "Travel.\(source)")

        let url = try manager.migratePersistentStore(to: targetType)
        #expect(url == directory.file("Travel.\(target)").standardizedFileURL)
        #expect(try directory.bytes(of: "Travel.\(source)") == original)
        #expect(!directory.contents.contains { $0.contains("converting") || $0.contains("tmp-") })
        // The manager now runs on the new store: same rows, same IDs, and it takes saves.
        #expect(try graphText(manager) == before)
        let context = try manager.createContext()
        try context.performAndWait {
            let ada = try context.existingObject(with: ids[0], as: Explorer.self)
            #expect(ada.passport?.number == "P-1")
            ada.name = "Ada L."
            try context.save()
        }
        manager.close()
        #expect(try directory.bytes(of: "Travel.\(source)") == original)

        // The one-line swap: a delegate naming the new type opens the converted store.
        let swapped = ContextManager(
            delegate: ConversionDelegate(model: graphModel, type: targetType, directory: directory.url))
        defer { swapped.close() }
        let names = try swapped.createContext().performAndWaitFetchNames()
        #expect(names == ["Ada L."])
        #expect(try graphText(swapped).count == before.count)
    }

    @Test(
        "to .inMemory: the rows and IDs move into memory, take saves, and stay across a close",
        arguments: ["journal", "json"])
    func convertsToMemory(from source: String) throws {
        let directory = TemporaryDirectory("convert-memory")
        let manager = ContextManager(
            delegate: ConversionDelegate(
                model: graphModel, type: source == "json" ? .jsonFile : .journal, directory: directory.url))
        defer { manager.close() }
        let ids = try seedGraph(manager)
        let before = try graphText(manager)
        let original = try directory.bytes(of: "Travel.\(source)")

        #expect(try manager.migratePersistentStore(to: .inMemory) == nil)
        #expect(try graphText(manager) == before, "the rows are in the in-memory store")
        let context = try manager.createContext()
        try context.performAndWait {
            let ada = try context.existingObject(with: ids[0], as: Explorer.self)
            #expect(ada.passport?.number == "P-1")
            ada.name = "Ada L."
            try context.save()
        }
        manager.close()
        // Reloaded while the manager uses the converted store: the same store, with the save.
        let reader = try manager.createContext()
        let name = try reader.performAndWait { try reader.existingObject(with: ids[0], as: Explorer.self).name }
        #expect(name == "Ada L.")
        #expect(try directory.bytes(of: "Travel.\(source)") == original, "the original is untouched")
    }

    @Test func refusesAnExistingDestinationAndChangesNothing() throws {
        let directory = TemporaryDirectory("convert-exists")
        let manager = ContextManager(
            delegate: ConversionDelegate(model: graphModel, type: .journal, directory: directory.url))
        defer { manager.close() }
        _ = try seedGraph(manager)
        let context = try manager.createContext()
        let ada = try context.performAndWait { try context.fetch(FetchRequest<Explorer>())[0] }
        try directory.write(Array("{}".utf8), to: "Travel.json")
        let error = #expect(throws: StoreError.self) { try manager.migratePersistentStore(to: .jsonFile) }
        #expect(error?.code == .invalidConfiguration)
        #expect(try directory.bytes(of: "Travel.json") == Array("{}".utf8))
        // Refused before closing: the context and its objects go on working, and save.
        try context.performAndWait {
            #expect(ada.name == "Ada")
            ada.name = "Ada L."
            try context.save()
        }
        #expect(try graphText(manager).count == 18)
        // So is converting a store onto itself, and an invalid name.
        #expect(throws: StoreError.self) { try manager.migratePersistentStore(to: .journal) }
        #expect(throws: StoreError.self) { try manager.migratePersistentStore(to: .jsonFile, name: "a/b") }
        let names = try context.performAndWait { try context.fetch(FetchRequest<Explorer>()).map(\.name) }
        #expect(names == ["Ada L."])
    }

    /// A conversion that fails at any file-system operation of the new store leaves nothing under
    /// the new name and no temporary file; the manager loads the original again.
    @Test func failedConversionsLeaveNothingBehind() throws {
        let dryRun = TemporaryDirectory("convert-dry")
        let counting = FaultyFileSystem()
        do {
            let manager = ContextManager(
                delegate: ConversionDelegate(model: graphModel, type: .journal, directory: dryRun.url))
            _ = try seedGraph(manager)
            try manager.migratePersistentStore(
                to: .custom {
                    try JournalStore(directory: $0.directory, name: $0.name, seedStoreURL: nil, fileSystem: counting)
                }, name: "Copy")
            manager.close()
        }
        let operations = counting.count
        #expect(operations > 5)
        for failing in 1...operations {
            let directory = TemporaryDirectory("convert-fail")
            let faulty = FaultyFileSystem()
            let manager = ContextManager(
                delegate: ConversionDelegate(model: graphModel, type: .journal, directory: directory.url))
            defer { manager.close() }
            _ = try seedGraph(manager)
            let before = try graphText(manager)
            faulty.reset(failAt: failing, fault: .error(EIO))
            do {
                try manager.migratePersistentStore(
                    to: .custom {
                        try JournalStore(directory: $0.directory, name: $0.name, seedStoreURL: nil, fileSystem: faulty)
                    }, name: "Copy")
                // A failure the store shrugs off (removing an old backup) still gives a complete store.
                let copy = ContextManager(
                    delegate: ConversionDelegate(
                        model: graphModel, type: .journal, directory: directory.url, name: "Copy"))
                defer { copy.close() }
                #expect(try graphText(copy) == before, "operation \(failing)")
                manager.close()
                try FileManager.default.removeItem(at: directory.file("Copy.journal"))
                try FileManager.default.removeItem(at: directory.file("Copy.lock"))
                manager.delegate = ConversionDelegate(model: graphModel, type: .journal, directory: directory.url)
            } catch is StoreError {
                #expect(
                    !directory.contents.contains { $0.hasPrefix("Copy") }, "operation \(failing): \(directory.contents)"
                )
            }
            #expect(try graphText(manager) == before)
        }
    }
}

private struct ConversionDelegate: ContextManagerDelegate {
    var model: ManagedObjectModel
    var type: StoreType
    var directory: URL
    var name = "Travel"
    var managedObjectModel: ManagedObjectModel { model }
    var persistentStoreName: String { name }
    var persistentStoreType: StoreType { type }
    var storeDirectory: URL { directory }
}

extension ManagedObjectContext {
    fileprivate func performAndWaitFetchNames() throws -> [String] {
        try performAndWait { try fetch(FetchRequest<Explorer>()).map(\.name) }
    }
}
