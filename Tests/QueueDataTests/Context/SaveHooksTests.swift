import Dispatch
import Foundation
import Testing

@testable import QueueData

/// What the save hooks of the objects below did, in order (the suite runs serialized).
let hookLog = Locked<[String]>([])

private func log(_ entry: String) {
    hookLog.withLock { $0.append(entry) }
}

/// An invoice whose total `willSave()` computes from its lines, and which logs its hooks.
final class Invoice: ManagedObject {
    @Attribute var number: String = ""
    @Attribute var total: Int = 0
    @Attribute var stamp: Int = 0
    @Relationship(inverse: "invoice", deleteRule: .cascade) var lines: Set<InvoiceLine>

    override func willSave() {
        super.willSave()
        log("willSave \(number)\(isDeleted ? " (deleted)" : "")")
        guard !isDeleted else { return }
        let sum = lines.reduce(0) { $0 + $1.amount }
        if total != sum {
            total = sum  // another round: this object changed
        }
    }

    override func validateForSave() throws {
        try super.validateForSave()
        log("validate \(number)")
    }

    override func didSave() {
        super.didSave()
        log(
            "didSave \(number) \(objectID.isTemporaryID ? "temporary" : "permanent")"
                + "\(isDeleted ? " deleted" : "")\(managedObjectContext == nil ? " gone" : "")")
    }
}

final class InvoiceLine: ManagedObject {
    @Attribute var amount: Int = 0
    @Relationship(inverse: "lines") var invoice: Invoice?

    override func willSave() {
        super.willSave()
        log("willSave line \(amount)\(isDeleted ? " (deleted)" : "")")
    }
}

/// A counter whose `willSave()` converges in steps, or never (`target` < 0).
final class Ticker: ManagedObject {
    @Attribute var count: Int = 0
    @Attribute var target: Int = 0

    override func willSave() {
        super.willSave()
        log("willSave ticker \(count)")
        if target < 0 {
            count += 1
        } else if count < target {
            count += 1
        }
    }
}

let hooksModel = ManagedObjectModel([Invoice.self, InvoiceLine.self, Ticker.self])

@Suite("Save hooks: willSave, didSave and willSaveNotification", .serialized)
struct SaveHooksTests {
    private func context(_ store: LifecycleStore, _ directory: TemporaryDirectory) throws -> (
        ContextManager, ManagedObjectContext
    ) {
        hookLog.withLock { $0.removeAll() }
        let manager = store.manager(directory, model: hooksModel)
        return (manager, try makeContext(manager, "hooks"))
    }

    @Test(
        "Core Data's order: will-save notification, willSave, validation, commit, didSave, did-save notification",
        arguments: LifecycleStore.allCases)
    func order(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("hooks-\(store)")
        let (manager, context) = try context(store, directory)
        let observers = [ManagedObjectContext.willSaveNotification, ManagedObjectContext.didSaveNotification].map {
            name in
            NotificationCenter.default.addObserver(forName: name, object: context, queue: nil) { notification in
                log(notification.name == ManagedObjectContext.willSaveNotification ? "will-save" : "did-save")
            }
        }
        defer { observers.forEach(NotificationCenter.default.removeObserver) }
        try context.performAndWait {
            let invoice = context.insert(Invoice.self)
            invoice.number = "A"
            let line = context.insert(InvoiceLine.self)
            line.amount = 5
            line.invoice = invoice
            try context.save()
            #expect(invoice.total == 5, "willSave's change is saved")
        }
        let entries = hookLog.withLock { $0 }
        #expect(entries.first == "will-save")
        #expect(entries.last == "did-save")
        // willSave on both objects, then again on the invoice (it changed), then validation.
        let willSaves = entries.filter { $0.hasPrefix("willSave") }
        #expect(willSaves.filter { $0 == "willSave A" }.count == 2)
        #expect(willSaves.contains("willSave line 5"))
        let lastWillSave = try #require(entries.lastIndex { $0.hasPrefix("willSave") })
        let validation = try #require(entries.firstIndex(of: "validate A"))
        let didSave = try #require(entries.firstIndex(of: "didSave A permanent"))
        #expect(lastWillSave < validation && validation < didSave)

        let reader = try makeContext(manager, "reader")
        let total = try reader.performAndWait { try reader.fetch(FetchRequest<Invoice>()).first?.total }
        #expect(total == 5)
        manager.close()
    }

    @Test("willSave runs for inserted, updated and deleted objects, cascades included; didSave after the commit")
    func deletedObjects() throws {
        let directory = TemporaryDirectory("hooks-delete")
        let (manager, context) = try context(.memory, directory)
        try context.performAndWait {
            let invoice = context.insert(Invoice.self)
            invoice.number = "B"
            context.insert(InvoiceLine.self).invoice = invoice
            try context.save()
            hookLog.withLock { $0.removeAll() }
            context.delete(invoice)  // cascades to the line when saved
            try context.save()
        }
        let entries = hookLog.withLock { $0 }
        #expect(entries.contains("willSave B (deleted)"))
        #expect(entries.contains("willSave line 0 (deleted)"))
        #expect(!entries.contains("validate B"), "deleted objects are not validated")
        #expect(entries.contains("didSave B permanent deleted gone"))
        manager.close()
    }

    @Test("willSave is called again until it stops changing objects")
    func converges() throws {
        let directory = TemporaryDirectory("hooks-converge")
        let (manager, context) = try context(.memory, directory)
        try context.performAndWait {
            let ticker = context.insert(Ticker.self)
            ticker.target = 3
            try context.save()
            #expect(ticker.count == 3)
        }
        #expect(
            hookLog.withLock { $0 } == [
                "willSave ticker 0", "willSave ticker 1", "willSave ticker 2", "willSave ticker 3",
            ])
        manager.close()
    }

    @Test("a willSave that never stops changing fails the save with ValidationError; nothing is written")
    func neverConverges() throws {
        let directory = TemporaryDirectory("hooks-forever")
        let (manager, context) = try context(.memory, directory)
        try context.performAndWait {
            let ticker = context.insert(Ticker.self)
            ticker.target = -1
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(error.failures.count == 1)
            #expect(error.failures.first?.reason.contains("willSave()") == true)
            #expect(ticker.isInserted && context.hasChanges)
            #expect(try context.count(for: FetchRequest<Ticker>(includesPendingChanges: false)) == 0)
        }
        manager.close()
    }

    @Test("nothing to save: no notification, no hook; changes set back: willSave and didSave, no did-save")
    func nothingToSave() throws {
        let directory = TemporaryDirectory("hooks-nothing")
        let (manager, context) = try context(.memory, directory)
        let posted = Locked(0)
        let observers = [ManagedObjectContext.willSaveNotification, ManagedObjectContext.didSaveNotification].map {
            NotificationCenter.default.addObserver(forName: $0, object: context, queue: nil) { _ in
                posted.withLock { $0 += 1 }
            }
        }
        defer { observers.forEach(NotificationCenter.default.removeObserver) }
        try context.performAndWait {
            try context.save()
            let invoice = context.insert(Invoice.self)
            try context.save()
            hookLog.withLock { $0.removeAll() }
            posted.withLock { $0 = 0 }
            try context.save()  // nothing changed since
            invoice.number = "x"
            invoice.number = ""  // set back: a change that is no change
            try context.save()
        }
        #expect(
            hookLog.withLock { $0 }.filter { $0.hasPrefix("willSave") || $0.hasPrefix("didSave") } == [
                "willSave ", "didSave  permanent",
            ], "the empty save calls no hook; the set-back save calls both, once")
        #expect(posted.withLock { $0 } == 1, "only the will-save of the save whose changes were set back")
        manager.close()
    }

    @Test("every object that had willSave gets didSave, one whose values were set back too", arguments: [false, true])
    func didSavePairsWillSave(inChild: Bool) throws {
        let directory = TemporaryDirectory("hooks-pairs")
        let (manager, root) = try context(.memory, directory)
        try root.performAndWait {
            root.insert(Invoice.self).number = "A"
            root.insert(Invoice.self).number = "B"
            try root.save()
        }
        let context = inChild ? root.performAndWait { root.newChildContext() } : root
        try context.performAndWait {
            let invoices = try context.fetch(FetchRequest<Invoice>(sortBy: [SortDescriptor(\.number)]))
            hookLog.withLock { $0.removeAll() }
            invoices[0].number = "A2"
            invoices[1].number = "x"
            invoices[1].number = "B"  // set back: nothing to write for it
            try context.save()
            #expect(!context.hasChanges)
        }
        let entries = hookLog.withLock { $0 }
        #expect(entries.filter { $0.hasPrefix("willSave") }.sorted() == ["willSave A2", "willSave B"])
        #expect(entries.filter { $0.hasPrefix("didSave") }.sorted() == ["didSave A2 permanent", "didSave B permanent"])
        manager.close()
    }

    @Test("a will-save observer may still change objects, and the save includes the change; from another queue")
    func observerChanges() async throws {
        let directory = TemporaryDirectory("hooks-observer")
        let (manager, context) = try context(.journal, directory)
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.willSaveNotification, object: context, queue: nil
        ) { _ in
            for case let invoice as Invoice in context.insertedObjects {
                invoice.stamp = 42
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try await context.performChanges {
            context.insert(Invoice.self).number = "C"
        }
        let reader = try makeContext(manager, "reader")
        let stamp = try await reader.perform { try reader.fetch(FetchRequest<Invoice>()).first?.stamp }
        #expect(stamp == 42)
        manager.close()
    }
}
