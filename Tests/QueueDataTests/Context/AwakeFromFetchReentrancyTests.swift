import Foundation
import Testing

@testable import QueueData

/// A crate whose `awakeFromFetch()` caches the items tagged with its label, fetched there.
final class AwakeCrate: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "crate") var items: Set<AwakeItem>
    /// The hook's fetch: the instances it registered or found.
    var cached: [AwakeItem] = []

    override func awakeFromFetch() {
        super.awakeFromFetch()
        guard let context = managedObjectContext else { return }
        let label = self.label
        cached = (try? context.fetch(FetchRequest<AwakeItem>(predicate: #Predicate { $0.tag == label }))) ?? []
    }
}

/// An item; one tagged "…-raise" sets its indexed `level` to 100 in `awakeFromFetch()`.
final class AwakeItem: ManagedObject {
    @Attribute var tag: String = ""
    @Attribute(.indexed) var level: Int = 0
    @Attribute(.transient) var note: String = ""
    @Relationship(inverse: "items") var crate: AwakeCrate?
    var refreshedInHook = false

    override func awakeFromFetch() {
        super.awakeFromFetch()
        if tag.hasSuffix("-raise") {
            level = 100
        }
        if tag.hasSuffix("-self"), !refreshedInHook, let context = managedObjectContext {
            refreshedInHook = true
            context.refresh(self, mergeChanges: true)
            // Still in the outer call: not a change either.
            note = "refreshed"
            return
        }
        if tag.hasSuffix("-delete") {
            managedObjectContext?.delete(self)
        }
        note = "awake"
    }
}

private let awakeCrateModel = ManagedObjectModel([AwakeCrate.self, AwakeItem.self])

/// Saves a crate labelled `label` holding `count` items tagged `label`.
private func seedCrate(_ context: ManagedObjectContext, _ label: String, count: Int) throws {
    try context.performAndWait {
        let crate = context.insert(AwakeCrate.self)
        crate.label = label
        for index in 0..<count {
            let item = context.insert(AwakeItem.self)
            item.tag = label
            item.level = index
            item.crate = crate
        }
        try context.save()
    }
}

@Suite("awakeFromFetch() re-entrancy")
struct AwakeFromFetchReentrancyTests {
    /// Checks that `items` are the context's instances, the same the crate's hook fetched.
    private func expectOneInstancePerID(_ items: [AwakeItem], _ context: ManagedObjectContext) throws {
        let crate = try #require(items.first?.crate)
        #expect(crate.cached.count == items.count)
        for item in items {
            #expect(context.registeredObject(for: item.objectID) === item)
            #expect(crate.cached.contains { $0 === item })
        }
    }

    // Before: the scan's copy of the registry did not see the items the crate's hook (run when
    // the predicate followed `crate`) registered, and the fetch registered a second instance of
    // each over them.
    @Test("a fetch whose predicate loads an object whose awakeFromFetch() fetches registers one instance per ID")
    func fetchDuringScan() throws {
        let manager = makeManager(model: awakeCrateModel)
        defer { manager.close() }
        try seedCrate(try makeContext(manager, "awake-scan-writer"), "x", count: 4)
        let reader = try makeRetainingContext(manager, "awake-scan-reader")
        try reader.performAndWait {
            let items = try reader.fetch(FetchRequest<AwakeItem>(predicate: #Predicate { $0.crate?.label == "x" }))
            #expect(items.count == 4)
            try expectOneInstancePerID(items, reader)
        }
        let sorted = try makeRetainingContext(manager, "awake-scan-sorted")
        try sorted.performAndWait {
            var request = FetchRequest<AwakeItem>(
                predicate: #Predicate { $0.crate?.label == "x" }, sortBy: [SortDescriptor(\.level)])
            request.fetchLimit = 3
            let items = try sorted.fetch(request)
            #expect(items.map(\.level) == [0, 1, 2])
            for item in items {
                #expect(sorted.registeredObject(for: item.objectID) === item)
                #expect(item.crate?.cached.contains { $0 === item } == true)
            }
        }
    }

    @Test("enumerate and a controller register one instance per ID when a hook fetches during their scan")
    func enumerateAndControllerDuringScan() throws {
        let manager = makeManager(model: awakeCrateModel)
        defer { manager.close() }
        try seedCrate(try makeContext(manager, "awake-enum-writer"), "y", count: 5)
        let request = FetchRequest<AwakeItem>(predicate: #Predicate { $0.crate?.label == "y" })

        let enumerating = try makeRetainingContext(manager, "awake-enum-reader")
        try enumerating.performAndWait {
            var seen: [AwakeItem] = []
            try enumerating.enumerate(request, batchSize: 2) { seen.append($0) }
            #expect(seen.count == 5)
            try expectOneInstancePerID(seen, enumerating)
        }

        let controllerContext = try makeRetainingContext(manager, "awake-controller-reader")
        try controllerContext.performAndWait {
            var sortedRequest = request
            sortedRequest.sortDescriptors = [SortDescriptor(\.level)]
            let controller = FetchedResultsController(
                fetchRequest: sortedRequest, managedObjectContext: controllerContext)
            try controller.performFetch()
            let items = controller.fetchedObjects ?? []
            #expect(items.map(\.level) == [0, 1, 2, 3, 4])
            try expectOneInstancePerID(items, controllerContext)
        }
    }
}

@Suite("awakeFromFetch() and indexes")
struct AwakeFromFetchIndexTests {
    // Before: the index lookups knew only the committed values and the pending updates, and a
    // value the hook set is neither: `where: "level", equals: 100` found nothing while the
    // predicate `level == 100` found the item, and `equals: 1` (its committed value) nothing.
    @Test("an indexed attribute set in awakeFromFetch() is found by index lookups as by predicate scans")
    func indexedValueSetInHook() throws {
        let manager = makeManager(model: awakeCrateModel)
        defer { manager.close() }
        let writer = try makeContext(manager, "awake-index-writer")
        try writer.performAndWait {
            for (offset, tag) in ["i-raise", "i-b", "i-c"].enumerated() {
                let item = writer.insert(AwakeItem.self)
                item.tag = tag
                item.level = offset + 1
            }
            try writer.save()
        }
        let reader = try makeContext(manager, "awake-index-reader")
        try reader.performAndWait {
            let all = try reader.fetch(FetchRequest<AwakeItem>(sortBy: [SortDescriptor(\.tag)]))
            #expect(all.map(\.level) == [2, 3, 100])
            #expect(!reader.hasChanges)
            for level in [1, 2, 100] {
                let scanned = try reader.fetch(FetchRequest<AwakeItem>(predicate: #Predicate { $0.level == level }))
                let looked = try reader.fetch(FetchRequest<AwakeItem>(where: "level", equals: level))
                #expect(looked.map(\.tag) == scanned.map(\.tag), "level \(level)")
                #expect(try reader.count(for: FetchRequest<AwakeItem>(where: "level", equals: level)) == scanned.count)
            }
            #expect(try reader.fetch(FetchRequest<AwakeItem>(where: "level", in: 50...)).map(\.tag) == ["i-raise"])
            // A page read in the index's order places it by its value too.
            var top = FetchRequest<AwakeItem>(sortBy: [SortDescriptor(\.level, order: .reverse)])
            top.fetchLimit = 1
            #expect(try reader.fetch(top).map(\.tag) == ["i-raise"])
            withExtendedLifetime(all) {}
        }
    }
}

@Suite("awakeFromFetch() refreshing or deleting its own object")
struct AwakeFromFetchOwnObjectTests {
    // Before: the inner call took the object out of its awakening state, and the outer call's
    // `note = "refreshed"` made the object updated.
    @Test("a hook that refreshes its own object or deletes it: values set after are still not changes")
    func refreshOrDeleteOwnObject() throws {
        let manager = makeManager(model: awakeCrateModel)
        defer { manager.close() }
        let writer = try makeContext(manager, "awake-own-writer")
        try writer.performAndWait {
            for tag in ["o-self", "o-delete", "o-plain"] {
                writer.insert(AwakeItem.self).tag = tag
            }
            try writer.save()
        }
        let reader = try makeContext(manager, "awake-own-reader")
        try reader.performAndWait {
            let items = try reader.fetch(FetchRequest<AwakeItem>(sortBy: [SortDescriptor(\.tag)]))
            #expect(items.map(\.tag) == ["o-delete", "o-plain", "o-self"])
            #expect(items.map(\.note) == ["awake", "awake", "refreshed"])
            #expect(items[0].isDeleted)
            #expect(!items[1].isUpdated && !items[2].isUpdated)
            reader.processPendingChanges()
            #expect(reader.updatedObjects.isEmpty)
            #expect(reader.deletedObjects.map(\.objectID) == [items[0].objectID])
            try reader.save()
        }
        let remaining = try reader.performAndWait { try reader.count(for: FetchRequest<AwakeItem>()) }
        #expect(remaining == 2)
    }
}
