import Foundation
import Testing

@testable import QueueData

/// What the objects below saw in `prepareForDeletion()`: "<label> <state>", by test label prefix.
private let deletionLog = Locked<[String]>([])

private func entries(_ prefix: String) -> [String] {
    deletionLog.withLock { $0.filter { $0.hasPrefix(prefix) } }
}

/// A folder whose documents go with it.
final class Binder: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "binder", deleteRule: .cascade) var sheets: Set<Sheet>

    override func prepareForDeletion() {
        super.prepareForDeletion()
        deletionLog.withLock {
            $0.append("\(label) deleted=\(isDeleted) sheets=\(sheets.count)")
        }
    }
}

/// A document; deleting one named "…self" deletes itself again from its hook, one named
/// "…twin" deletes its twin (by label) too.
final class Sheet: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "sheets") var binder: Binder?

    override func prepareForDeletion() {
        super.prepareForDeletion()
        deletionLog.withLock {
            $0.append("\(label) deleted=\(isDeleted) binder=\(binder?.label ?? "none")")
        }
        guard let context = managedObjectContext else { return }
        if label.hasSuffix("self") {
            context.delete(self)
        }
        if label.hasSuffix("twin") {
            let twin = "\(label)-other"
            if let other = try? context.fetch(FetchRequest<Sheet>(predicate: #Predicate { $0.label == twin })).first {
                context.delete(other)
            }
        }
    }
}

/// A ledger that refuses to be deleted while locked; its entries go with it.
final class Ledger: ManagedObject {
    @Attribute var locked: Bool = false
    @Relationship(inverse: "ledger", deleteRule: .cascade) var entries: Set<LedgerEntry>

    override func validateForDelete() throws {
        try super.validateForDelete()
        if locked {
            throw ValidationError(property: "locked", reason: "a locked ledger cannot be deleted")
        }
    }
}

/// An entry that refuses to be deleted once audited (also when its ledger's deletion cascades).
final class LedgerEntry: ManagedObject {
    @Attribute var audited: Bool = false
    @Relationship(inverse: "entries") var ledger: Ledger?

    override func validateForDelete() throws {
        try super.validateForDelete()
        if audited {
            throw ValidationError(reason: "audited")
        }
    }
}

private let binderModel = ManagedObjectModel([Binder.self, Sheet.self, Ledger.self, LedgerEntry.self])

@Suite("prepareForDeletion(), validateForDelete() and refreshAllObjects()")
struct PrepareForDeletionTests {
    @Test("delete(_:) calls prepareForDeletion() once, first, with the object's relationships in place")
    func deleteCallsHook() throws {
        let manager = makeManager(model: binderModel)
        defer { manager.close() }
        let context = try makeContext(manager, "prepare-delete")
        try context.performAndWait {
            let binder = context.insert(Binder.self)
            binder.label = "a-binder"
            let sheet = context.insert(Sheet.self)
            sheet.label = "a-sheet"
            sheet.binder = binder
            let loose = context.insert(Sheet.self)
            loose.label = "a-self"
            let twin = context.insert(Sheet.self)
            twin.label = "a-twin"
            context.insert(Sheet.self).label = "a-twin-other"
            try context.save()

            context.delete(sheet)
            #expect(entries("a-sheet") == ["a-sheet deleted=false binder=a-binder"])
            context.delete(sheet)  // already deleted: no second call
            #expect(entries("a-sheet").count == 1)
            #expect(sheet.isDeleted)

            context.delete(loose)  // deletes itself again from the hook: one call
            #expect(entries("a-self") == ["a-self deleted=false binder=none"])
            #expect(loose.isDeleted)

            context.delete(twin)  // the hook deletes another object, whose hook runs too
            #expect(
                entries("a-twin") == ["a-twin deleted=false binder=none", "a-twin-other deleted=false binder=none"])
            try context.save()
            #expect(try context.count(for: FetchRequest<Sheet>()) == 0)

            // An inserted object discarded by a deletion gets the call too.
            let fresh = context.insert(Sheet.self)
            fresh.label = "a-fresh"
            context.delete(fresh)
            #expect(entries("a-fresh") == ["a-fresh deleted=false binder=none"])
        }
    }

    @Test("a cascade calls prepareForDeletion() on each object it deletes, once; a merged deletion calls none")
    func cascadeCallsHookMergeDoesNot() throws {
        let manager = makeManager(model: binderModel)
        defer { manager.close() }
        let context = try makeContext(manager, "prepare-cascade")
        let other = try makeContext(manager, "prepare-cascade-other")
        let binderID = try context.performAndWait {
            let binder = context.insert(Binder.self)
            binder.label = "b-binder"
            for index in 0..<3 {
                let sheet = context.insert(Sheet.self)
                sheet.label = "b-sheet\(index)"
                sheet.binder = binder
            }
            try context.save()
            return binder.objectID
        }
        // The other context holds the objects, then merges their deletion: no call there.
        try other.performAndWait {
            other.retainsRegisteredObjects = true
            let held = try other.fetch(FetchRequest<Sheet>())
            #expect(held.count == 3)
        }
        try context.performAndWait {
            let binder = try context.existingObject(with: binderID, as: Binder.self)
            context.delete(binder)
            #expect(entries("b-binder") == ["b-binder deleted=false sheets=3"])
            try context.save()
            #expect(
                entries("b-sheet").sorted() == (0..<3).map { "b-sheet\($0) deleted=false binder=b-binder" })
        }
        try other.performAndWait {
            let left = try other.count(for: FetchRequest<Sheet>())
            #expect(left == 0)
            #expect(other.registeredObjects.isEmpty)
        }
        #expect(entries("b-").count == 4)
    }

    @Test("validateForDelete() refuses a deletion at save, cascaded ones included; the context keeps its changes")
    func validateForDelete() throws {
        let manager = makeManager(model: binderModel)
        defer { manager.close() }
        let context = try makeContext(manager, "validate-delete")
        let other = try makeContext(manager, "validate-delete-other")
        try context.performAndWait {
            context.retainsRegisteredObjects = true
            let locked = context.insert(Ledger.self)
            locked.locked = true
            let open = context.insert(Ledger.self)
            let audited = context.insert(LedgerEntry.self)
            audited.audited = true
            audited.ledger = open
            let plain = context.insert(LedgerEntry.self)
            plain.ledger = open
            try context.save()

            context.delete(locked)
            context.delete(open)  // cascades to both entries, one of them audited
            let error = try #require(throws: ValidationError.self) { try context.save() }
            let failures = error.failures.map {
                "\($0.objectID == locked.objectID ? "locked" : "audited") \($0.entityName) \($0.property ?? "-") \($0.reason)"
            }
            #expect(
                failures.sorted() == [
                    "audited LedgerEntry - audited", "locked Ledger locked a locked ledger cannot be deleted",
                ])
            #expect(error.failures.contains { $0.objectID == audited.objectID })
            #expect(locked.isDeleted && open.isDeleted && audited.isDeleted && plain.isDeleted)
            #expect(context.hasChanges)

            // Nothing was written; once the refusals are gone, the save goes through.
            context.rollback()
            audited.audited = false
            context.delete(open)
            try context.save()
        }
        try other.performAndWait {
            let ledgers = try other.count(for: FetchRequest<Ledger>())
            let entries = try other.count(for: FetchRequest<LedgerEntry>())
            #expect(ledgers == 1)
            #expect(entries == 0)
        }
    }

    @Test("refreshAllObjects() refreshes every registered object keeping unsaved changes, in one notification")
    func refreshAll() throws {
        let manager = makeManager(model: binderModel)
        defer { manager.close() }
        let context = try makeContext(manager, "refresh-all")
        let other = try makeContext(manager, "refresh-all-other")
        let ids = try context.performAndWait {
            context.automaticallyMergesChangesFromOtherContexts = false
            context.retainsRegisteredObjects = true
            let binders = (0..<3).map { index in
                let binder = context.insert(Binder.self)
                binder.label = "r\(index)"
                return binder
            }
            try context.save()
            return binders.map(\.objectID)
        }
        try other.performAndWait {
            let binders = try ids.map { try other.existingObject(with: $0, as: Binder.self) }
            binders[0].label = "r0 changed"
            binders[1].label = "r1 changed"
            other.delete(binders[2])
            try other.save()
        }
        let notifications = Locked<[ObjectsDidChange]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil
        ) { notification in
            if let changes = ObjectsDidChange(notification) {
                notifications.withLock { $0.append(changes) }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try context.performAndWait {
            let binders = try ids.map { try #require(context.registeredObject(for: $0) as? Binder) }
            let sheet = context.insert(Sheet.self)
            sheet.label = "r-sheet"
            sheet.binder = binders[1]  // an unsaved change to binders[1]
            context.processPendingChanges()
            notifications.withLock { $0.removeAll() }
            #expect(binders.map(\.label) == ["r0", "r1", "r2"])

            context.refreshAllObjects()
            #expect(binders[0].label == "r0 changed")
            #expect(binders[1].label == "r1 changed")
            #expect(binders[1].sheets.map(\.label) == ["r-sheet"])  // kept
            #expect(binders[1].hasChanges)
            #expect(binders[2].isDeleted && binders[2].managedObjectContext == nil)
            #expect(sheet.isInserted && sheet.binder === binders[1])
            let changes = notifications.withLock { $0 }
            #expect(changes.count == 1)
            #expect(changes.first?.refreshedObjectIDs == [ids[0], ids[1]])
            #expect(changes.first?.deletedObjectIDs == [ids[2]])

            // Based on the refreshed versions: the save does not conflict (the policy is .error).
            binders[0].label = "r0 mine"
            try context.save()
        }
        try other.performAndWait {
            let first = try other.existingObject(with: ids[0], as: Binder.self)
            #expect(first.label == "r0 mine")
            #expect(first.sheets.isEmpty)
            #expect(try other.existingObject(with: ids[1], as: Binder.self).sheets.map(\.label) == ["r-sheet"])
        }
    }
}
