import Foundation
import Testing

@testable import QueueData

/// The validation hooks the objects below ran: "<code> <hook>".
private let validationLog = Locked<[String]>([])

private func calls(_ prefix: String) -> [String] {
    validationLog.withLock { $0.filter { $0.hasPrefix(prefix) } }
}

/// A permit: a new one needs a code, a saved one's code never changes, and one whose note is
/// "refuse" fails `validateForSave()` too.
final class Permit: ManagedObject {
    @Attribute var code: String = ""
    @Attribute var revision: Int = 0
    @Attribute var note: String = ""

    private func log(_ hook: String) {
        let label = code.isEmpty ? note : code
        validationLog.withLock { $0.append("\(label) \(hook)") }
    }

    override func validateForSave() throws {
        try super.validateForSave()
        log("save")
        if note.hasSuffix("refuse") {
            throw ValidationError(property: "note", reason: "refused by validateForSave")
        }
    }

    override func validateForInsert() throws {
        try super.validateForInsert()
        log("insert")
        if code.isEmpty {
            throw ValidationError(property: "code", reason: "a new permit needs a code")
        }
    }

    override func validateForUpdate() throws {
        try super.validateForUpdate()
        log("update")
        if changedValues()["code"] != nil {
            throw ValidationError(property: "code", reason: "a saved permit's code never changes")
        }
    }

    override func validateForDelete() throws {
        try super.validateForDelete()
        log("delete")
    }
}

private let permitModel = ManagedObjectModel([Permit.self])

@Suite("validateForInsert() and validateForUpdate()")
struct InsertUpdateValidationTests {
    @Test("an inserted object gets validateForSave() then validateForInsert(); a refusal saves nothing")
    func insertValidation() throws {
        let manager = makeManager(model: permitModel)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "validate-insert")
        let other = try makeContext(manager, "validate-insert-other")
        try context.performAndWait {
            let permit = context.insert(Permit.self)
            permit.note = "i-blank"
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(error.failures.count == 1)
            #expect(error.failures.first?.property == "code")
            #expect(error.failures.first?.reason == "a new permit needs a code")
            #expect(error.failures.first?.objectID == permit.objectID)
            #expect(error.failures.first?.entityName == "Permit")
            #expect(calls("i-blank") == ["i-blank save", "i-blank insert"])
            // The context keeps its changes: fix and save again.
            #expect(permit.isInserted && context.hasChanges)
            permit.code = "i-1"
            try context.save()
            #expect(calls("i-1") == ["i-1 save", "i-1 insert"])
        }
        let stored = try other.performAndWait { try other.count(for: FetchRequest<Permit>()) }
        #expect(stored == 1)
    }

    @Test("an updated object gets validateForSave() then validateForUpdate(), never validateForInsert()")
    func updateValidation() throws {
        let manager = makeManager(model: permitModel)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "validate-update")
        try context.performAndWait {
            let permit = context.insert(Permit.self)
            permit.code = "u-1"
            try context.save()
            #expect(calls("u-") == ["u-1 save", "u-1 insert"])

            permit.revision = 2
            try context.save()
            #expect(calls("u-") == ["u-1 save", "u-1 insert", "u-1 save", "u-1 update"])

            permit.code = "u-2"
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(error.failures.map(\.reason) == ["a saved permit's code never changes"])
            #expect(calls("u-2") == ["u-2 save", "u-2 update"])
            #expect(permit.isUpdated)
            context.rollback()
            #expect(permit.code == "u-1")

            // A deletion gets validateForDelete() only.
            context.delete(permit)
            try context.save()
            #expect(calls("u-1").suffix(1) == ["u-1 delete"])
            #expect(try context.count(for: FetchRequest<Permit>()) == 0)
        }
    }

    @Test("failures of validateForSave() and validateForInsert() are reported together, with the others'")
    func failuresReportedTogether() throws {
        let manager = makeManager(model: permitModel)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "validate-together")
        try context.performAndWait {
            let saved = context.insert(Permit.self)
            saved.code = "t-saved"
            try context.save()

            let blank = context.insert(Permit.self)
            blank.note = "t-refuse"
            saved.code = "t-renamed"
            let error = try #require(throws: ValidationError.self) { try context.save() }
            #expect(
                Set(error.failures.map(\.reason)) == [
                    "refused by validateForSave", "a new permit needs a code", "a saved permit's code never changes",
                ])
            #expect(Set(error.failures.compactMap(\.objectID)) == [blank.objectID, saved.objectID])
            // Nothing written: the store still has the saved code.
            var committed = FetchRequest<Permit>(predicate: #Predicate { $0.code == "t-saved" })
            committed.includesPendingChanges = false
            #expect(try context.count(for: committed) == 1)
        }
    }
}
