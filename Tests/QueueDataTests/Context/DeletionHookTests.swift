import Foundation
import Testing

@testable import QueueData

/// What the objects below saw in `prepareForDeletion()` and `validateForDelete()`.
let reviewHookLog = Locked<[String]>([])

func logged(_ prefix: String) -> [String] {
    reviewHookLog.withLock { $0.filter { $0.hasPrefix(prefix) } }
}

/// A crate whose items go with it.
final class Crate: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "crate", deleteRule: .cascade) var items: Set<CrateItem>

    override func prepareForDeletion() {
        super.prepareForDeletion()
        reviewHookLog.withLock { $0.append("prepare \(label)") }
    }

    override func validateForDelete() throws {
        try super.validateForDelete()
        reviewHookLog.withLock { $0.append("validate \(label)") }
    }
}

/// An item; one labelled "…kill-<crate>" deletes the crate labelled so from its hook.
final class CrateItem: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "items") var crate: Crate?

    override func prepareForDeletion() {
        super.prepareForDeletion()
        reviewHookLog.withLock { $0.append("prepare \(label)") }
        guard let context = managedObjectContext, let range = label.range(of: "kill-") else { return }
        let target = String(label[range.upperBound...])
        if let crate = try? context.fetch(FetchRequest<Crate>(predicate: #Predicate { $0.label == target })).first {
            context.delete(crate)
        }
    }
}

let crateModel = ManagedObjectModel([Crate.self, CrateItem.self])

@Suite("Deletion hooks: what they delete")
struct DeletionHookTests {
    /// Saves crate `label` with items `label-0`, `label-1` (and `extra` items).
    private func saveCrate(_ context: ManagedObjectContext, _ label: String, extra: [String] = []) throws -> ObjectID {
        let crate = context.insert(Crate.self)
        crate.label = label
        for item in ["\(label)-0", "\(label)-1"] + extra {
            let object = context.insert(CrateItem.self)
            object.label = item
            object.crate = crate
        }
        try context.save()
        return crate.objectID
    }

    @Test(
        "a cascaded object's hook deleting another object at the save: that deletion's rules apply too",
        arguments: [false, true])
    func hookDeletionAtSaveCascades(undo: Bool) throws {
        let manager = makeManager(model: crateModel)
        defer { manager.close() }
        let context = try makeContext(manager, "review-hook-cascade")
        let tag = undo ? "u" : "n"
        try context.performAndWait {
            if undo { context.undoManager = UndoManager() }
            let first = try saveCrate(context, "\(tag)c1", extra: ["\(tag)c1-kill-\(tag)c2"])
            _ = try saveCrate(context, "\(tag)c2")
            context.delete(try context.existingObject(with: first, as: Crate.self))
        }
        try context.performAndWait {
            try context.save()
            let crates = try context.fetch(FetchRequest<Crate>()).map(\.label)
            let items = try context.fetch(FetchRequest<CrateItem>()).map {
                "\($0.label) in \($0.crate?.label ?? "none")"
            }
            #expect(crates == [])
            #expect(items == [])
        }
        #expect(
            logged("prepare \(tag)c2").sorted() == ["prepare \(tag)c2", "prepare \(tag)c2-0", "prepare \(tag)c2-1"])
        // The store agrees.
        let other = try makeContext(manager, "review-hook-cascade-other")
        let stored = try other.performAndWait { try other.count(for: FetchRequest<CrateItem>()) }
        #expect(stored == 0)
    }
}

/// A marker whose `willSave()` (or validation) deletes the crate it names, once.
final class CrateReaper: ManagedObject {
    @Attribute var target: String = ""
    @Attribute var inValidation: Bool = false

    override func willSave() {
        super.willSave()
        if !inValidation { reap() }
    }

    override func validateForSave() throws {
        try super.validateForSave()
        if inValidation { reap() }
    }

    private func reap() {
        guard !isDeleted, let context = managedObjectContext else { return }
        let target = self.target
        if let crate = try? context.fetch(FetchRequest<Crate>(predicate: #Predicate { $0.label == target })).first {
            context.delete(crate)
        }
    }
}

private let reaperModel = ManagedObjectModel([Crate.self, CrateItem.self, CrateReaper.self])

@Suite("Deletion hooks: what willSave() and validation delete")
struct SaveTimeDeletionTests {
    @Test(
        "a deletion made by willSave() or validateForSave() applies its rules, calls the hooks and is validated",
        arguments: [false, true])
    func saveTimeDeletion(inValidation: Bool) throws {
        let manager = makeManager(model: reaperModel)
        defer { manager.close() }
        let context = try makeContext(manager, "review-reaper")
        let tag = inValidation ? "sv" : "sw"
        try context.performAndWait {
            let crate = context.insert(Crate.self)
            crate.label = tag
            for index in 0..<2 {
                let item = context.insert(CrateItem.self)
                item.label = "\(tag)-\(index)"
                item.crate = crate
            }
            try context.save()
            let reaper = context.insert(CrateReaper.self)
            reaper.inValidation = inValidation
            reaper.target = tag
            try context.save()
            let items = try context.fetch(FetchRequest<CrateItem>()).map(\.label)
            #expect(items == [])
        }
        #expect(logged("prepare \(tag)").sorted() == ["prepare \(tag)", "prepare \(tag)-0", "prepare \(tag)-1"])
        #expect(logged("validate \(tag)") == ["validate \(tag)"])
        let other = try makeContext(manager, "review-reaper-other")
        let stored = try other.performAndWait { try other.count(for: FetchRequest<CrateItem>()) }
        #expect(stored == 0)
    }
}

@Suite("Deletion hooks: a child deleting its parent's unsaved objects")
struct DeletionHookPushTests {
    @Test("a child deleting objects its parent inserted: the push calls no hook in the parent")
    func childDeletesParentInserts() throws {
        let manager = makeManager(model: crateModel)
        defer { manager.close() }
        let parent = try makeContext(manager, "review-push-parent")
        let id = parent.performAndWait {
            parent.retainsRegisteredObjects = true
            let crate = parent.insert(Crate.self)
            crate.label = "pi"
            for index in 0..<2 {
                let item = parent.insert(CrateItem.self)
                item.label = "pi-\(index)"
                item.crate = crate
            }
            return crate.objectID
        }
        let child = parent.performAndWait { parent.newChildContext() }
        try child.performAndWait {
            child.delete(try child.existingObject(with: id, as: Crate.self))
            try child.save()
        }
        #expect(logged("prepare pi").sorted() == ["prepare pi", "prepare pi-0", "prepare pi-1"])
        try parent.performAndWait {
            #expect(parent.insertedObjects.isEmpty)
            try parent.save()
        }
        #expect(logged("prepare pi").count == 3)
    }
}

/// A shelf whose boxes go with it.
final class HookShelf: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "shelf", deleteRule: .cascade) var boxes: Set<HookBox>
}

/// A box whose things go with it.
final class HookBox: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "boxes") var shelf: HookShelf?
    @Relationship(inverse: "box", deleteRule: .cascade) var things: Set<HookThing>

    override func prepareForDeletion() {
        super.prepareForDeletion()
        reviewHookLog.withLock { $0.append("prepare \(label)") }
    }
}

/// A thing in a box.
final class HookThing: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "things") var box: HookBox?

    override func prepareForDeletion() {
        super.prepareForDeletion()
        reviewHookLog.withLock { $0.append("prepare \(label)") }
    }
}

private let shelfModel = ManagedObjectModel([HookShelf.self, HookBox.self, HookThing.self])

@Suite("Deletion hooks: a merged deletion's rules")
struct MergedDeletionHookTests {
    @Test("a merged deletion cascading to an object linked here unsaved, and on to its own cascades, calls no hook")
    func mergedCascadeCallsNoHook() throws {
        let manager = makeManager(model: shelfModel)
        defer { manager.close() }
        let context = try makeContext(manager, "merged-hooks")
        let other = try makeContext(manager, "merged-hooks-other")
        let doomedID = try context.performAndWait {
            context.retainsRegisteredObjects = true
            let kept = context.insert(HookShelf.self)
            let doomed = context.insert(HookShelf.self)
            let box = context.insert(HookBox.self)
            box.label = "mh-box"
            box.shelf = kept
            for index in 0..<2 {
                let thing = context.insert(HookThing.self)
                thing.label = "mh-thing\(index)"
                thing.box = box
            }
            try context.save()
            box.shelf = doomed  // unsaved: the merge's cascade takes the box, then its things
            return doomed.objectID
        }
        try other.performAndWait {
            other.delete(try other.existingObject(with: doomedID, as: HookShelf.self))
            try other.save()
        }
        flush(context)
        try context.performAndWait {
            #expect(context.deletedObjects.count == 3)
            try context.save()
            #expect(try context.count(for: FetchRequest<HookThing>()) == 0)
        }
        #expect(logged("prepare mh-") == [])
    }
}

@Suite("refreshAllObjects() and refresh(_:mergeChanges:) of objects deleted elsewhere")
struct RefreshDeletedElsewhereTests {
    @Test("an unsaved link to an object another context deleted goes as a merge would let it go", arguments: [0, 1, 2])
    func linkToDeletedObject(mode: Int) throws {
        let manager = makeManager(model: crateModel)
        defer { manager.close() }
        let context = try makeContext(manager, "refresh-deleted-link")
        let other = try makeContext(manager, "refresh-deleted-link-other")
        let (itemID, doomedID) = try context.performAndWait {
            context.automaticallyMergesChangesFromOtherContexts = mode == 0
            context.retainsRegisteredObjects = true
            let kept = context.insert(Crate.self)
            let doomed = context.insert(Crate.self)
            let item = context.insert(CrateItem.self)
            item.crate = kept
            try context.save()
            item.crate = doomed  // unsaved
            context.processPendingChanges()
            return (item.objectID, doomed.objectID)
        }
        try other.performAndWait {
            other.delete(try other.existingObject(with: doomedID, as: Crate.self))
            try other.save()
        }
        flush(context)
        try context.performAndWait {
            switch mode {
            case 1: context.refreshAllObjects()
            case 2: context.refresh(try #require(context.registeredObject(for: doomedID)), mergeChanges: true)
            default: break  // merged
            }
            // Crate.items cascades: the item linked to the deleted crate goes too.
            let item = try #require(context.registeredObject(for: itemID) ?? context.deletedObjects.first)
            #expect(item.isDeleted)
            try context.save()
        }
        let left = try other.performAndWait { try other.count(for: FetchRequest<CrateItem>()) }
        #expect(left == 0)
    }
}
