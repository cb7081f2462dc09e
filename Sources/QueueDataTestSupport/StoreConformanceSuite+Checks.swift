import Foundation
import QueueData

// The checks. Each one closes every manager it opens, whether it passes, fails or is stopped by
// an error, so that the next check can open the store; none traps on what a store returns.
extension StoreConformanceSuite {
    /// A new store is empty, records the model's version hash and entities, and keeps its
    /// identity across reopening.
    func checkNewStore(_ log: ConformanceLog) throws {
        let store = try makeStore()
        let contents: StoreContents
        do {
            contents = try store.open(for: conformanceModel)
        } catch {
            store.close()
            throw error
        }
        store.close()
        log.expect(contents.rows.values.allSatisfy { $0.isEmpty }, "a new store holds rows")
        log.expect(
            contents.metadata.versionHash == conformanceModel.versionHash,
            "a new store does not record the model's version hash")
        log.expect(
            Set(contents.schema.map(\.name)) == Set(conformanceModel.entities.map(\.name)),
            "a new store does not record the model's entities")
        let again = try makeStore()
        defer { again.close() }
        let reopened = try again.open(for: conformanceModel)
        log.expect(
            reopened.metadata.storeIdentifier == contents.metadata.storeIdentifier,
            "the store identifier changed on reopening")
    }

    /// Values of every type, edge cases included, survive a save and a reopen exactly.
    func checkRoundTrip(_ log: ConformanceLog) throws -> [String: [String: StoredValue]] {
        let writer = manager()
        defer { writer.close() }
        let context = try writer.createContext()
        let expected = try context.performAndWait {
            for (sequence, fill) in Self.samples.enumerated() {
                let item = context.insert(ConformanceItem.self)
                item.sequence = sequence
                fill(item)
            }
            for sequence in 0..<3 {
                let note = context.insert(ConformanceNote.self)
                note.sequence = sequence
                note.text = "note \(sequence)"
            }
            try context.save()
            return try Self.snapshot(context)
        }
        writer.close()
        let reopened = try Self.reopenedSnapshot(manager())
        Self.compare(reopened, expected, "after a save and a reopen", log)
        return expected
    }

    /// Updates, deletes and new inserts survive a reopen, and primary keys are never reused.
    func checkUpdatesAndDeletes(_ before: [String: [String: StoredValue]], _ log: ConformanceLog) throws {
        let writer = manager()
        defer { writer.close() }
        let context = try writer.createContext()
        let (highestKey, count): (Int64, Int) = try context.performAndWait {
            let items = try context.fetch(FetchRequest<ConformanceItem>(sortBy: [SortDescriptor(\.sequence)]))
            guard log.expect(items.count == Self.samples.count, "\(items.count) of \(Self.samples.count) items")
            else { return (items.map { $0.objectID.primaryKey ?? 0 }.max() ?? 0, items.count) }
            items[0].string = "changed"
            items[0].optionalString = "now set"
            items[1].double = -0.0
            items[1].optionalPayload = nil
            let highest = items.map { $0.objectID.primaryKey ?? 0 }.max() ?? 0
            context.delete(items[items.count - 1])
            try context.save()
            return (highest, items.count - 1)
        }
        writer.close()

        let second = manager()
        defer { second.close() }
        let next = try second.createContext()
        try next.performAndWait {
            let items = try next.fetch(FetchRequest<ConformanceItem>(sortBy: [SortDescriptor(\.sequence)]))
            log.expect(
                items.count == count,
                "\(items.count) items after the save, expected \(count): a deleted row came back, or rows were lost")
            if items.count >= 3 {
                log.expect(items[0].string == "changed", "an update was lost")
                log.expect(items[0].optionalString == "now set", "an update was lost")
                log.expect(items[1].double.sign == .minus, "-0.0 was not kept")
                log.expect(
                    Self.sameValues(Self.values(of: items[2]), before[Self.rowKey(items[2])] ?? [:]),
                    "an untouched row changed")
            }
            let fresh = next.insert(ConformanceItem.self)
            try next.save()
            log.expect(
                (fresh.objectID.primaryKey ?? 0) > highestKey,
                "the primary key \(fresh.objectID.primaryKey ?? 0) of a deleted row was reused")
            next.delete(fresh)
            try next.save()
        }
    }

    /// Many small saves all survive a reopen.
    func checkManySaves(_ log: ConformanceLog) throws {
        let writer = manager()
        defer { writer.close() }
        let context = try writer.createContext()
        try context.performAndWait {
            for sequence in 100..<140 {
                let note = context.insert(ConformanceNote.self)
                note.sequence = sequence
                note.text = String(repeating: "x", count: sequence)
                try context.save()
            }
            let notes = try context.fetch(FetchRequest<ConformanceNote>(predicate: #Predicate { $0.sequence < 3 }))
            for note in notes {
                note.text += " (edited)"
                try context.save()
            }
        }
        writer.close()
        let reader = manager()
        defer { reader.close() }
        let context2 = try reader.createContext()
        try context2.performAndWait {
            let notes = try context2.fetch(FetchRequest<ConformanceNote>(sortBy: [SortDescriptor(\.sequence)]))
            log.expect(notes.count == 43, "saves were lost: \(notes.count) of 43 notes")
            log.expect(notes.prefix(3).allSatisfy { $0.text.hasSuffix("(edited)") }, "edits were lost")
            log.expect(notes.dropFirst(3).allSatisfy { $0.text.count == $0.sequence }, "texts were damaged")
        }
    }

    /// A second opener gets `.locked`; after the first closes, it can open.
    func checkExclusiveAccess(_ log: ConformanceLog) throws {
        let first = manager()
        defer { first.close() }
        try first.loadPersistentStore()
        let second = manager()
        defer { second.close() }
        do {
            try second.loadPersistentStore()
            log.fail("a second opener was let in while the store was open")
        } catch let error as StoreError where error.code == .locked {
        } catch {
            log.fail("a second opener got \(error), not StoreError .locked")
        }
        first.close()
        second.close()
        let third = manager()
        defer { third.close() }
        try third.loadPersistentStore()
    }

    /// A model with a changed attribute is refused, and the store still opens with its own.
    func checkIncompatibleModel(_ log: ConformanceLog) throws {
        let changed = manager(incompatibleConformanceModel)
        do {
            defer { changed.close() }
            try changed.loadPersistentStore()
            log.fail("a model with a changed attribute type was accepted")
        } catch let error as StoreError where error.code == .incompatibleModel {
        } catch {
            log.fail("a model with a changed attribute type was refused with \(error), not .incompatibleModel")
        }
        try expectUnchangedNotes("refusing a model changed the store", log)
    }

    /// Checks that the store still opens with the original model and holds its 43 notes.
    func expectUnchangedNotes(_ message: String, _ log: ConformanceLog) throws {
        let original = manager()
        defer { original.close() }
        let context = try original.createContext()
        let count = try context.performAndWait { try context.count(for: FetchRequest<ConformanceNote>()) }
        log.expect(count == 43, "\(message): \(count) of 43 notes")
    }

    /// A model with an added and a renamed attribute either migrates, keeping every row and
    /// migrating once, or — for a store without ``PersistentStore/replaceContents(with:keepingOriginalAs:)``
    /// — is refused with `.incompatibleModel` and leaves the store as it was.
    func checkMigration(_ log: ConformanceLog) throws {
        let migrating = manager(migratedConformanceModel)
        do {
            defer { migrating.close() }
            try migrating.loadPersistentStore()
        } catch let error as StoreError where error.code == .incompatibleModel {
            try expectUnchangedNotes("a refused migration changed the store", log)
            return
        }
        for pass in ["after migrating", "after reopening the migrated store"] {
            let reader = manager(migratedConformanceModel)
            defer { reader.close() }
            let context = try reader.createContext()
            try context.performAndWait {
                let notes = try context.fetch(
                    FetchRequest<ConformanceNoteMigrated>(sortBy: [SortDescriptor(\.sequence)]))
                log.expect(notes.count == 43, "\(pass): \(notes.count) of 43 notes")
                log.expect(
                    notes.prefix(3).allSatisfy { $0.body.hasPrefix("note ") && $0.body.hasSuffix("(edited)") },
                    "\(pass): a renamed attribute lost its values")
                log.expect(notes.allSatisfy { $0.pinned }, "\(pass): an added attribute did not get its default")
            }
        }
        let store = try makeStore()
        defer { store.close() }
        let contents = try store.open(for: migratedConformanceModel)
        log.expect(
            contents.metadata.versionHash == migratedConformanceModel.versionHash,
            "the migrated store does not record the new model")
    }
}
