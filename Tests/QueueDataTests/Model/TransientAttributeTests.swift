import Foundation
import Testing

@testable import QueueData

/// A destination with a selection state and a draft note that live in memory only.
final class Pin: ManagedObject {
    @Attribute var name: String = ""
    @Attribute(.transient) var isSelected: Bool = false
    @Attribute var rating: Int = 0
    @Attribute(.transient) var draft: String = "(none)"
}

/// `Pin` without its transient attributes: the same stored entity.
final class PinStored: ManagedObject {
    override class var entityName: String { "Pin" }
    @Attribute var name: String = ""
    @Attribute var rating: Int = 0
}

final class UniqueTransient: ManagedObject {
    @Attribute([.transient, .unique]) var code: String = ""
}

let pinModel = ManagedObjectModel([Pin.self])

@Suite("Transient attributes")
struct TransientAttributeTests {
    @Test("not part of the model: the version hash and stored attributes are those of the entity without them")
    func notInTheModelHash() throws {
        let entity = try #require(pinModel.entities.first)
        #expect(entity.attributes.map(\.name) == ["name", "rating"])
        #expect(entity.transientAttributes.map(\.name) == ["isSelected", "draft"])
        #expect(pinModel.versionHash == ManagedObjectModel([PinStored.self]).versionHash)
    }

    @Test(
        "a change like any other, never stored; the saving context's object keeps it",
        arguments: LifecycleStore.allCases)
    func trackedNeverStored(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("transient-\(store)")
        let manager = store.manager(directory, model: pinModel)
        let context = try makeContext(manager, "pins")
        let recorder = ObjectsDidChangeRecorder(context)
        let id = try context.performAndWait {
            let pin = context.insert(Pin.self)
            pin.name = "Lisbon"
            pin.draft = "inserted with a draft"
            try context.save()
            #expect(pin.draft == "inserted with a draft", "a save keeps the value in memory")
            return pin.objectID
        }
        _ = recorder.removeAll()
        try context.performAndWait {
            let pin = context.object(with: id) as! Pin
            pin.isSelected = true
            #expect(pin.isUpdated && pin.hasChanges && context.hasChanges)
            #expect(context.updatedObjects == [pin])
            #expect(pin.changedValues().isEmpty, "changedValues() lists persistent attributes")
            try context.save()  // nothing to write
            #expect(!context.hasChanges)
            #expect(pin.isSelected)
        }
        #expect(recorder.changes.first == .init(updated: [id]))
        func expectDefaults(_ manager: ContextManager) throws {
            let reader = try makeContext(manager, "reader")
            try reader.performAndWait {
                let pin = try reader.existingObject(with: id, as: Pin.self)
                #expect(pin.name == "Lisbon")
                #expect(!pin.isSelected && pin.draft == "(none)", "a fetched object starts with the defaults")
            }
        }
        try expectDefaults(manager)
        manager.close()
        if store != .memory {
            let reopened = store.manager(directory, model: pinModel)
            try expectDefaults(reopened)
            reopened.close()
        }
        if store == .json {
            let document = try String(decoding: directory.bytes(of: "Store.json"), as: UTF8.self)
            #expect(document.contains("Lisbon") && !document.contains("draft") && !document.contains("isSelected"))
        }
    }

    @Test("never merged into other contexts, even with a stored change in the same save")
    func neverMerged() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: pinModel))
        let writer = try makeContext(manager, "writer")
        let reader = try makeContext(manager, "reader")
        let id = try writer.performAndWait {
            let pin = writer.insert(Pin.self)
            try writer.save()
            return pin.objectID
        }
        let held = try reader.performAndWait {
            let pin = try reader.existingObject(with: id, as: Pin.self)
            pin.draft = "the reader's own"
            return pin
        }
        try writer.performAndWait {
            let pin = writer.object(with: id) as! Pin
            pin.draft = "the writer's"
            pin.isSelected = true
            pin.rating = 4
            try writer.save()
        }
        flush(reader)
        reader.performAndWait {
            #expect(held.rating == 4)
            #expect(held.draft == "the reader's own" && !held.isSelected)
        }
    }

    @Test("a transient-only change stays a change through a refresh with merging and a merge: until a save or rollback")
    func transientChangeOutlivesMerges() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: pinModel))
        defer { manager.close() }
        let context = try makeContext(manager, "transient-merge")
        let other = try makeContext(manager, "transient-merge-other")
        try context.performAndWait {
            let pin = context.insert(Pin.self)
            try context.save()
            pin.isSelected = true
            context.refresh(pin, mergeChanges: true)
            #expect(pin.isSelected && pin.isUpdated && pin.hasChanges && context.hasChanges)
            context.rollback()
            #expect(!pin.isSelected && !context.hasChanges)
        }
        // Not held by the caller: the context holds it while its change is unsaved, through a merge.
        let id = try context.performAndWait {
            let pin = context.insert(Pin.self)
            try context.save()
            return pin.objectID
        }
        context.performAndWait { (context.object(with: id) as! Pin).draft = "unsaved" }
        try other.performAndWait {
            (other.object(with: id) as! Pin).rating = 1
            try other.save()
        }
        flush(context)
        context.performAndWait {
            let pin = context.object(with: id) as! Pin
            #expect(pin.draft == "unsaved" && pin.rating == 1)
            #expect(pin.isUpdated && context.updatedObjects.contains(pin))
        }
    }

    @Test("refresh without merging and rollback put the default back; refresh with merging keeps the value")
    func refreshAndRollback() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: pinModel))
        let context = try makeContext(manager, "refresh")
        try context.performAndWait {
            let pin = context.insert(Pin.self)
            try context.save()
            pin.draft = "kept"
            context.refresh(pin, mergeChanges: true)
            #expect(pin.draft == "kept")
            context.refresh(pin, mergeChanges: false)
            #expect(pin.draft == "(none)" && !pin.hasChanges)
            pin.isSelected = true
            pin.rating = 2
            context.rollback()
            #expect(!pin.isSelected && pin.rating == 0 && !context.hasChanges)
        }
    }

    @Test(
        "adding a transient attribute to the model of an existing store needs no migration",
        arguments: [LifecycleStore.journal, .json])
    func noMigration(_ store: LifecycleStore) throws {
        let directory = TemporaryDirectory("transient-migration-\(store)")
        let before = store.manager(directory, model: ManagedObjectModel([PinStored.self]))
        let context = try makeContext(before, "before")
        try context.performAndWait {
            context.insert(PinStored.self).name = "Kyoto"
            try context.save()
        }
        before.close()
        let filesBefore = directory.contents
        let after = store.manager(directory, model: pinModel)
        #expect(try after.migrationPlan().changes.isEmpty)
        let reader = try makeContext(after, "after")
        let names = try reader.performAndWait { try reader.fetch(FetchRequest<Pin>()).map { "\($0.name) \($0.draft)" } }
        #expect(names == ["Kyoto (none)"])
        after.close()
        #expect(directory.contents == filesBefore, "no migration wrote a new store or kept an original")
    }

    @Test("entities described without a class: value(forKey:) and setValue(_:forKey:) reach transient attributes")
    func withoutSubclass() throws {
        let entity = try EntityDescription(
            name: "Note", attributes: [AttributeDescription(name: "text", type: .string)],
            transientAttributes: [AttributeDescription(name: "cursor", type: .integer64, defaultValue: .integer(-1))])
        let model = try ManagedObjectModel(entities: [entity])
        let manager = ContextManager(delegate: TestStoreDelegate(model: model))
        let context = try makeContext(manager, "untyped")
        try context.performAndWait {
            let note = context.insert(entityName: "Note")
            #expect(note.value(forKey: "cursor") == .integer(-1))
            note.setValue(.integer(7), forKey: "cursor")
            note.setValue(.string("hello"), forKey: "text")
            try context.save()
            #expect(note.value(forKey: "cursor") == .integer(7))
        }
    }

    @Test("a transient attribute cannot be unique")
    func notUnique() {
        #expect(throws: ModelError.self) { try ManagedObjectModel(validating: [UniqueTransient.self]) }
    }
}
