import Dispatch
import Foundation
import QueueData
import Testing

final class HistoryUniqueCode: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute var label: String = ""
}

@Suite("Persistent history: what a transaction records")
struct HistoryChangeContentTests {
    func graph(_ kind: HistoryStore, _ directory: TemporaryDirectory) -> ContextManager {
        switch kind {
        case .journal: return journalManager(directory, model: graphModel, tracksHistory: true)
        case .inMemory:
            return ContextManager(
                delegate: TestStoreDelegate(model: graphModel, storeType: .inMemory, tracksHistory: true))
        }
    }

    @Test(
        "a relationship change appears on both sides; a cascade and a nullified inverse are part of the save that caused them",
        arguments: HistoryStore.allCases)
    func relationships(_ kind: HistoryStore) throws {
        let directory = TemporaryDirectory("history-content-rel")
        let manager = graph(kind, directory)
        defer { manager.close() }
        let context = try makeContext(manager, "g")
        let (explorerID, expeditionID, waypointID, tagID) = try context.performAndWait {
            let e = context.insert(Explorer.self)
            e.name = "e"
            let x = context.insert(Expedition.self)
            x.title = "x"
            let w = context.insert(Waypoint.self)
            w.name = "w"
            let t = context.insert(Tag.self)
            t.label = "t"
            try context.save()
            return (e.objectID, x.objectID, w.objectID, t.objectID)
        }
        let t1 = try context.performAndWait { try context.currentHistoryToken() }
        // to-one set from the to-one side: both sides recorded
        try context.performAndWait {
            let x = try context.existingObject(with: expeditionID, as: Expedition.self)
            x.leader = try context.existingObject(with: explorerID, as: Explorer.self)
            try context.save()
        }
        var txs = try context.performAndWait { try context.history(after: t1) }
        #expect(txs.count == 1)
        #expect(
            Set(txs[0].changes.map(\.summary)) == [
                "U Expedition \(expeditionID.primaryKey!) leader", "U Explorer \(explorerID.primaryKey!) expeditions",
            ])
        // to-many from the to-many side
        let t2 = try context.performAndWait { try context.currentHistoryToken() }
        try context.performAndWait {
            let x = try context.existingObject(with: expeditionID, as: Expedition.self)
            let w = try context.existingObject(with: waypointID, as: Waypoint.self)
            let t = try context.existingObject(with: tagID, as: Tag.self)
            x.waypoints = [w]
            x.tags = [t]
            try context.save()
        }
        txs = try context.performAndWait { try context.history(after: t2) }
        #expect(
            Set(txs[0].changes.map(\.summary)) == [
                "U Expedition \(expeditionID.primaryKey!) tags,waypoints",
                "U Waypoint \(waypointID.primaryKey!) expedition",
                "U Tag \(tagID.primaryKey!) expeditions",
            ])
        // order: entity by entity
        let entityOrder = txs[0].changes.map(\.objectID.entityName)
        var seen: [String] = []
        for name in entityOrder where seen.last != name { seen.append(name) }
        #expect(Set(seen).count == seen.count, "\(entityOrder)")
        // cascade delete: explorer deletes expeditions; expedition cascades waypoints; tag nullified
        let t3 = try context.performAndWait { try context.currentHistoryToken() }
        try context.performAndWait {
            context.delete(try context.existingObject(with: explorerID))
            try context.save()
        }
        txs = try context.performAndWait { try context.history(after: t3) }
        #expect(txs.count == 1)
        #expect(
            Set(txs[0].changes.map(\.summary)) == [
                "D Explorer \(explorerID.primaryKey!)", "D Expedition \(expeditionID.primaryKey!)",
                "D Waypoint \(waypointID.primaryKey!)", "U Tag \(tagID.primaryKey!) expeditions",
            ])
    }

    @Test(
        "an undone deletion is an insert; an insert deleted before its save, or a value set back, is no transaction; an update then a delete is a delete",
        arguments: HistoryStore.allCases)
    func undoAndCombos(_ kind: HistoryStore) throws {
        let directory = TemporaryDirectory("history-content-undo")
        let manager = kind.manager(directory)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "u")
        let ids = try seedDestinations(context, ["a", "b"])
        let t0 = try context.performAndWait { try context.currentHistoryToken() }
        try context.performAndWait {
            context.undoManager = UndoManager()
            context.delete(try context.existingObject(with: ids[0]))
            try context.save()
            context.undo()
            try context.save()
        }
        var txs = try context.performAndWait { try context.history(after: t0) }
        #expect(
            txs.map(\.summary) == ["-: D Destination \(ids[0].primaryKey!)", "-: I Destination \(ids[0].primaryKey!)"])
        let t1 = try context.performAndWait { try context.currentHistoryToken() }
        try context.performAndWait {
            context.undoManager = nil
            let n = context.insert(Destination.self)
            n.name = "n"
            context.delete(n)
            try context.save()
        }
        txs = try context.performAndWait { try context.history(after: t1) }
        #expect(txs.isEmpty)
        try context.performAndWait {
            let b = try context.existingObject(with: ids[1], as: Destination.self)
            b.rating = 42
            context.delete(b)
            try context.save()
        }
        txs = try context.performAndWait { try context.history(after: t1) }
        #expect(txs.map(\.summary) == ["-: D Destination \(ids[1].primaryKey!)"])
        // setting the same value: no transaction
        let t2 = try context.performAndWait { try context.currentHistoryToken() }
        try context.performAndWait {
            let a = try context.existingObject(with: ids[0], as: Destination.self)
            a.name = "x"
            a.name = "a"
            try context.save()
        }
        txs = try context.performAndWait { try context.history(after: t2) }
        #expect(txs.isEmpty)
    }

    @Test("the entity filter keeps a subentity's changes", arguments: HistoryStore.allCases)
    func subentities(_ kind: HistoryStore) throws {
        let directory = TemporaryDirectory("history-content-sub")
        let manager = kind.manager(directory)
        defer { manager.close() }
        let context = try makeContext(manager, "s")
        try context.performAndWait {
            context.insert(Bicycle.self).gears = 3
            try context.save()
            context.insert(Vehicle.self).wheels = 3
            try context.save()
            context.insert(Destination.self).name = "d"
            try context.save()
        }
        let vehicles = try context.performAndWait { try context.history(after: nil, entity: Vehicle.self) }
        let bikes = try context.performAndWait { try context.history(after: nil, entity: Bicycle.self) }
        let byName = try context.performAndWait { try context.history(after: nil, entityName: "Vehicle") }
        #expect(vehicles.map(\.transactionNumber) == [1, 2])
        #expect(byName.map(\.transactionNumber) == [1, 2])
        #expect(bikes.map(\.transactionNumber) == [1])
    }

    @Test("a save refused by validation or a merge conflict is no transaction", arguments: HistoryStore.allCases)
    func failedSaves(_ kind: HistoryStore) throws {
        let directory = TemporaryDirectory("history-content-fail")
        let manager = kind.manager(directory)
        defer { manager.close() }
        let a = try makeContext(manager, "a")
        let b = try makeContext(manager, "b")
        let ids = try seedDestinations(a, ["x"])
        let t0 = try a.performAndWait { try a.currentHistoryToken() }
        a.performAndWait {
            a.insert(Trip.self).title = ""
            #expect(throws: ValidationError.self) { try a.save() }
            a.rollback()
        }
        // A conflict the default policy refuses.
        try a.performAndWait {
            a.automaticallyMergesChangesFromOtherContexts = false
            (try a.existingObject(with: ids[0], as: Destination.self)).rating = 1
        }
        try b.performAndWait {
            (try b.existingObject(with: ids[0], as: Destination.self)).rating = 2
            try b.save()
        }
        a.performAndWait {
            _ = #expect(throws: MergeConflictError.self) { try a.save() }
        }
        let txs = try b.performAndWait { try b.history(after: t0) }
        #expect(txs.map(\.summary) == ["-: U Destination \(ids[0].primaryKey!) rating"])
        let current = try a.performAndWait { try a.currentHistoryToken() }
        #expect(current.transactionNumber == t0.transactionNumber + 1)
    }

    @Test("an upsert is recorded as an update of the existing object, not an insert", arguments: HistoryStore.allCases)
    func upsert(_ kind: HistoryStore) throws {
        let directory = TemporaryDirectory("history-content-upsert")
        let model = ManagedObjectModel([HistoryUniqueCode.self])
        let manager: ContextManager
        switch kind {
        case .journal: manager = journalManager(directory, model: model, tracksHistory: true)
        case .inMemory:
            manager = ContextManager(
                delegate: TestStoreDelegate(model: model, storeType: .inMemory, tracksHistory: true))
        }
        defer { manager.close() }
        let context = try makeContext(manager, "up")
        let first = try context.performAndWait {
            context.mergePolicy = .mergeByPropertyObjectTrump
            let u = context.insert(HistoryUniqueCode.self)
            u.code = "A"
            u.label = "one"
            try context.save()
            return u.objectID
        }
        let t0 = try context.performAndWait { try context.currentHistoryToken() }
        try context.performAndWait {
            let u = context.insert(HistoryUniqueCode.self)
            u.code = "A"
            u.label = "two"
            try context.save()
        }
        let txs = try context.performAndWait { try context.history(after: t0) }
        #expect(txs.map(\.summary) == ["-: U HistoryUniqueCode \(first.primaryKey!) label"])
    }
}
