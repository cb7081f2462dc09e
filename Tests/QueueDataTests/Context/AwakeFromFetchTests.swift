import Foundation
import Testing

@testable import QueueData

/// What `awakeFromFetch()` saw, by label: "<label> <what>".
private let awakeLog = Locked<[String]>([])

private func awakenings(_ prefix: String) -> [String] {
    awakeLog.withLock { $0.filter { $0.hasPrefix(prefix) } }
}

/// A gauge that derives its display text in `awakeFromFetch()`; one labelled "…probe" fetches
/// every gauge of its prefix from the hook, one labelled "…store" sets a persistent attribute.
final class Gauge: ManagedObject {
    @Attribute var label: String = ""
    @Attribute var reading: Int = 0
    @Attribute(.transient) var display: String = ""
    @Attribute(.transient) var awakeCount: Int = 0
    @Relationship(inverse: "gauges") var panel: Panel?

    override func awakeFromFetch() {
        super.awakeFromFetch()
        awakeCount += 1
        display = "\(label)=\(reading)"
        awakeLog.withLock { $0.append("\(label) updated=\(isUpdated) changes=\(hasChanges)") }
        guard let context = managedObjectContext else { return }
        if label.hasSuffix("probe") {
            let prefix = String(label.prefix(while: { $0 != "-" }))
            let all = (try? context.fetch(FetchRequest<Gauge>(predicate: #Predicate { $0.label.starts(with: prefix) })))
            let instances = Set((all ?? []).map { ObjectIdentifier($0) })
            awakeLog.withLock { $0.append("\(label) saw \(instances.count) instances") }
        }
        if label.hasSuffix("store") {
            reading = 99
        }
        if label.hasSuffix("refresh") {
            // Unguarded: the refresh reloads the values without calling the hook again.
            context.refresh(self, mergeChanges: true)
        }
    }
}

/// A panel of gauges.
final class Panel: ManagedObject {
    @Attribute var label: String = ""
    @Attribute(.transient) var awakeCount: Int = 0
    @Relationship(inverse: "panel") var gauges: Set<Gauge>

    override func awakeFromFetch() {
        super.awakeFromFetch()
        awakeCount += 1
        awakeLog.withLock { $0.append("\(label) panel") }
    }
}

private let gaugeModel = ManagedObjectModel([Gauge.self, Panel.self])

/// Saves gauges labelled `labels` (readings 1, 2, ...) on a panel labelled `prefix`-panel.
private func seedGauges(_ context: ManagedObjectContext, _ prefix: String, _ labels: [String]) throws -> [ObjectID] {
    try context.performAndWait {
        let panel = context.insert(Panel.self)
        panel.label = "\(prefix)-panel"
        let gauges = labels.enumerated().map { offset, label in
            let gauge = context.insert(Gauge.self)
            gauge.label = label
            gauge.reading = offset + 1
            gauge.panel = panel
            return gauge
        }
        try context.save()
        return gauges.map(\.objectID)
    }
}

@Suite("awakeFromFetch()")
struct AwakeFromFetchTests {
    @Test("a fetch calls awakeFromFetch() once per object it registers, with change processing off")
    func fetchAwakesOnce() throws {
        let manager = makeManager(model: gaugeModel)
        defer { manager.close() }
        let writer = try makeRetainingContext(manager, "awake-writer")
        _ = try seedGauges(writer, "f", ["f-a", "f-b", "f-c"])
        try writer.performAndWait {
            // Inserted and saved here (and held): never loaded from the store, never awakened.
            let held = try writer.fetch(FetchRequest<Gauge>(predicate: #Predicate { $0.label.starts(with: "f-") }))
            #expect(held.allSatisfy { $0.awakeCount == 0 && $0.display.isEmpty })
        }
        #expect(awakenings("f-").isEmpty)

        let reader = try makeContext(manager, "awake-reader")
        try reader.performAndWait {
            reader.retainsRegisteredObjects = true
            let request = FetchRequest<Gauge>(
                predicate: #Predicate { $0.label.starts(with: "f-") }, sortBy: [SortDescriptor(\.label)])
            let gauges = try reader.fetch(request)
            #expect(gauges.map(\.display) == ["f-a=1", "f-b=2", "f-c=3"])
            #expect(gauges.map(\.awakeCount) == [1, 1, 1])
            #expect(
                awakenings("f-") == [
                    "f-a updated=false changes=false", "f-b updated=false changes=false",
                    "f-c updated=false changes=false",
                ])
            // Setting transients in the hook is not a change.
            #expect(!reader.hasChanges)
            #expect(gauges.allSatisfy { !$0.isUpdated && !$0.hasChanges })
            reader.processPendingChanges()
            #expect(reader.updatedObjects.isEmpty)
            // Fetched again: the same instances, not awakened again.
            let again = try reader.fetch(request)
            #expect(zip(again, gauges).allSatisfy { $0 === $1 })
            #expect(again.map(\.awakeCount) == [1, 1, 1])
            // A later change is a change as usual.
            gauges[0].display = "changed"
            #expect(gauges[0].isUpdated)
        }
    }

    @Test("every way an object is loaded into a context awakens it: by ID, relationships, enumerate, controllers")
    func everyPathAwakens() async throws {
        let manager = makeManager(model: gaugeModel)
        defer { manager.close() }
        let writer = try makeContext(manager, "awake-paths-writer")
        let ids = try seedGauges(writer, "p", ["p-a", "p-b", "p-c", "p-d"])
        let panelID = try writer.performAndWait {
            try writer.existingObject(with: ids[0], as: Gauge.self).panel!.objectID
        }

        let byID = try makeRetainingContext(manager, "awake-by-id")
        try byID.performAndWait {
            let first = try #require(byID.object(with: ids[0]) as? Gauge)
            #expect(first.awakeCount == 1 && first.display == "p-a=1")
            let second = try byID.existingObject(with: ids[1], as: Gauge.self)
            #expect(second.awakeCount == 1 && second.display == "p-b=2")
            // Following a relationship loads the panel, then its other gauges.
            let panel = try #require(first.panel)
            #expect(panel.awakeCount == 1)
            #expect(panel.gauges.count == 4)
            #expect(panel.gauges.allSatisfy { $0.awakeCount == 1 && $0.display == "\($0.label)=\($0.reading)" })
            #expect(try byID.existingObject(with: panelID, as: Panel.self) === panel)
            #expect(panel.awakeCount == 1)
        }

        let enumerating = try makeContext(manager, "awake-enumerate")
        try enumerating.performAndWait {
            var seen: [String] = []
            try enumerating.enumerate(
                FetchRequest<Gauge>(
                    predicate: #Predicate { $0.label.starts(with: "p-") }, sortBy: [SortDescriptor(\.label)]),
                batchSize: 3
            ) { gauge in
                #expect(gauge.awakeCount == 1)
                seen.append(gauge.display)
            }
            #expect(seen == ["p-a=1", "p-b=2", "p-c=3", "p-d=4"])
        }

        let controllerContext = try makeRetainingContext(manager, "awake-controller")
        try controllerContext.performAndWait {
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<Gauge>(
                    predicate: #Predicate { $0.label.starts(with: "p-") }, sortBy: [SortDescriptor(\.label)]),
                managedObjectContext: controllerContext)
            try controller.performFetch()
            let objects = controller.fetchedObjects ?? []
            #expect(objects.map(\.display) == ["p-a=1", "p-b=2", "p-c=3", "p-d=4"])
            #expect(objects.allSatisfy { $0.awakeCount == 1 })
        }

        let asynchronous = try makeRetainingContext(manager, "awake-async")
        let request = FetchRequest<Gauge>(predicate: #Predicate { $0.label.starts(with: "p-") })
        let displays = try await withCheckedThrowingContinuation { continuation in
            asynchronous.fetch(request) { result in
                continuation.resume(
                    with: result.map { gauges in gauges.map { "\($0.display) \($0.awakeCount)" }.sorted() })
            }
        }
        #expect(displays == ["p-a=1 1", "p-b=2 1", "p-c=3 1", "p-d=4 1"])
    }

    @Test("objects a fetch only matched or sorted, counts and IDs are not awakened")
    func onlyReturnedObjectsAwaken() throws {
        let manager = makeManager(model: gaugeModel)
        defer { manager.close() }
        let writer = try makeContext(manager, "awake-page-writer")
        _ = try seedGauges(writer, "q", (0..<40).map { "q-\(String(format: "%02d", $0))" })
        let reader = try makeRetainingContext(manager, "awake-page-reader")
        try reader.performAndWait {
            let all = FetchRequest<Gauge>(predicate: #Predicate { $0.label.starts(with: "q-") })
            #expect(try reader.count(for: all) == 40)
            #expect(try reader.fetchObjectIDs(all).count == 40)
            #expect(awakenings("q-").isEmpty)
            var page = FetchRequest<Gauge>(
                predicate: #Predicate { $0.label.starts(with: "q-") && $0.reading > 10 },
                sortBy: [SortDescriptor(\.reading, order: .reverse)])
            page.fetchLimit = 3
            let top = try reader.fetch(page)
            #expect(top.map(\.label) == ["q-39", "q-38", "q-37"])
            #expect(awakenings("q-").count == 3)
        }
    }

    @Test("a fetch in the hook finds the instances the outer fetch returns, each awakened once")
    func batchRegisteredFirst() throws {
        let manager = makeManager(model: gaugeModel)
        defer { manager.close() }
        let writer = try makeContext(manager, "awake-batch-writer")
        _ = try seedGauges(writer, "b", ["b-1", "b-2probe", "b-3", "b-4"])
        let reader = try makeRetainingContext(manager, "awake-batch-reader")
        try reader.performAndWait {
            let gauges = try reader.fetch(FetchRequest<Gauge>(predicate: #Predicate { $0.label.starts(with: "b-") }))
            #expect(gauges.count == 4)
            // The hook's fetch saw four instances: those the outer fetch returns, each awakened once.
            #expect(awakenings("b-2probe saw") == ["b-2probe saw 4 instances"])
            #expect(gauges.allSatisfy { $0.awakeCount == 1 })
            let registered = reader.registeredObjects.compactMap { $0 as? Gauge }
            #expect(Set(registered.map { ObjectIdentifier($0) }) == Set(gauges.map { ObjectIdentifier($0) }))
        }
    }

    @Test("refresh(_:mergeChanges:) and refreshAllObjects() awaken the objects they reload")
    func refreshAwakens() throws {
        let manager = makeManager(model: gaugeModel)
        defer { manager.close() }
        let writer = try makeContext(manager, "awake-refresh-writer")
        let ids = try seedGauges(writer, "r", ["r-a", "r-b"])
        let reader = try makeRetainingContext(manager, "awake-refresh-reader")
        try reader.performAndWait {
            let gauge = try reader.existingObject(with: ids[0], as: Gauge.self)
            #expect(gauge.awakeCount == 1)
            reader.automaticallyMergesChangesFromOtherContexts = false
        }
        try writer.performAndWait {
            try writer.existingObject(with: ids[0], as: Gauge.self).reading = 10
            try writer.save()
        }
        try reader.performAndWait {
            let gauge = try reader.existingObject(with: ids[0], as: Gauge.self)
            // Discarding: transients back to their defaults, then recomputed by the hook.
            reader.refresh(gauge, mergeChanges: false)
            #expect(gauge.awakeCount == 1)
            #expect(gauge.display == "r-a=10")
            #expect(!gauge.hasChanges)
            // Keeping changes: transients kept, the hook runs again.
            gauge.label = "r-a2"
            reader.refresh(gauge, mergeChanges: true)
            #expect(gauge.awakeCount == 2)
            #expect(gauge.display == "r-a2=10")
            #expect(gauge.isUpdated)
            let panel = try #require(gauge.panel)
            #expect(panel.awakeCount == 1)
            reader.refreshAllObjects()
            #expect(gauge.awakeCount == 3)
            #expect(panel.awakeCount == 2)
        }
    }

    @Test("a persistent value set in the hook is not a change and records nothing to undo")
    func persistentSetIsNotAChange() throws {
        let manager = makeManager(model: gaugeModel)
        defer { manager.close() }
        let writer = try makeContext(manager, "awake-store-writer")
        let ids = try seedGauges(writer, "s", ["s-store"])
        let reader = try makeRetainingContext(manager, "awake-store-reader")
        try reader.performAndWait {
            reader.undoManager = UndoManager()
            let gauge = try reader.existingObject(with: ids[0], as: Gauge.self)
            #expect(gauge.reading == 99)
            #expect(!gauge.isUpdated && !reader.hasChanges)
            #expect(reader.undoManager?.canUndo == false)
            // Nothing to save.
            try reader.save()
        }
        try writer.performAndWait {
            // The store still holds 1 (counting loads no object, so no hook runs).
            let ones = try writer.count(for: FetchRequest<Gauge>(predicate: #Predicate { $0.reading == 1 }))
            #expect(ones == 1)
        }
        try reader.performAndWait {
            // A later change of the object saves it with the value the hook set.
            let gauge = try reader.existingObject(with: ids[0], as: Gauge.self)
            gauge.label = "s-store2"
            #expect(gauge.changedValues().keys.sorted() == ["label", "reading"])
            try reader.save()
        }
        try writer.performAndWait {
            // Saved along with the label.
            let nines = try writer.count(for: FetchRequest<Gauge>(predicate: #Predicate { $0.reading == 99 }))
            #expect(nines == 1)
        }
    }

    @Test("a hook refreshing its own object runs once; private contexts matching for another run no hook")
    func refreshInHookAndPrivateContexts() async throws {
        let manager = makeManager(model: gaugeModel)
        defer { manager.close() }
        let writer = try makeContext(manager, "awake-private-writer")
        let ids = try seedGauges(writer, "h", ["h-refresh", "h-b", "h-c"])
        let reader = try makeRetainingContext(manager, "awake-private-reader")
        try reader.performAndWait {
            let gauge = try reader.existingObject(with: ids[0], as: Gauge.self)
            #expect(gauge.awakeCount == 1 && gauge.display == "h-refresh=1" && !gauge.hasChanges)
            #expect(awakenings("h-refresh") == ["h-refresh updated=false changes=false"])
            // An unsaved change here makes a fetch of committed values (through the panel) run in a
            // private context: its objects get no hook; the objects returned are this context's.
            gauge.panel!.label = "h-renamed"
            var committed = FetchRequest<Gauge>(
                predicate: #Predicate { $0.panel?.label == "h-panel" }, sortBy: [SortDescriptor(\.label)])
            committed.includesPendingChanges = false
            let matched = try reader.fetch(committed)
            #expect(matched.map(\.label) == ["h-b", "h-c", "h-refresh"])
            #expect(matched.allSatisfy { $0.awakeCount == 1 })
            #expect(awakenings("h-").filter { $0.contains(" updated=") }.count == 3)
            // The panel the private context read through is not awakened there.
            #expect(awakenings("h-").filter { $0.hasSuffix(" panel") } == ["h-panel panel"])
        }
        // An asynchronous fetch matches in a private context: one call per object, here.
        let asynchronous = try makeRetainingContext(manager, "awake-private-async")
        let counts = try await withCheckedThrowingContinuation { continuation in
            asynchronous.fetch(FetchRequest<Gauge>(predicate: #Predicate { $0.panel?.label == "h-panel" })) {
                continuation.resume(with: $0.map { $0.map(\.awakeCount) })
            }
        }
        #expect(counts == [1, 1, 1])
        #expect(awakenings("h-").filter { $0.contains(" updated=") }.count == 6)
        #expect(awakenings("h-").filter { $0.hasSuffix(" panel") } == ["h-panel panel"])
    }

    @Test("a child context awakens the objects it loads from its parent")
    func childContextAwakens() throws {
        let manager = makeManager(model: gaugeModel)
        defer { manager.close() }
        let parent = try makeContext(manager, "awake-parent")
        let ids = try seedGauges(parent, "c", ["c-a"])
        let child = parent.performAndWait { parent.newChildContext() }
        try child.performAndWait {
            let gauge = try child.existingObject(with: ids[0], as: Gauge.self)
            #expect(gauge.awakeCount == 1 && gauge.display == "c-a=1")
            #expect(!child.hasChanges)
        }
    }
}
