import Foundation
import QueueData
import Testing

final class Parent: ManagedObject {
    @Attribute var total: Int = 0
}

/// Changes other objects from `validateForSave()`, in the way `mode` says.
final class Child: ManagedObject {
    @Attribute var amount: Int = 0
    @Attribute var mode: Int = 0
    @Attribute var parentURI: String = ""

    override func validateForSave() throws {
        try super.validateForSave()
        guard let context = managedObjectContext, let uri = URL(string: parentURI),
            let id = ObjectID(uriRepresentation: uri), let parent = context.object(with: id) as? Parent
        else { return }
        switch mode {
        case 1: parent.total += amount
        case 2: context.insert(Parent.self).total = 99
        case 3: context.delete(parent)
        default: break
        }
    }
}

let regressionModel = ManagedObjectModel([Parent.self, Child.self, AllTypes.self, Destination.self])

@Suite("Save regressions")
struct SaveRegressionTests {
    @Test("changes made by validateForSave are saved too", arguments: [1, 2, 3])
    func validationSideEffects(mode: Int) throws {
        let manager = makeManager(model: regressionModel)
        let writer = try makeContext(manager, "writer")
        let parentID = try writer.performAndWait {
            let parent = writer.insert(Parent.self)
            try writer.save()
            return parent.objectID
        }
        try writer.performAndWait {
            let child = writer.insert(Child.self)
            child.amount = 5
            child.mode = mode
            child.parentURI = parentID.uriRepresentation.absoluteString
            try writer.save()
            #expect(!writer.hasChanges)
        }
        let reader = try makeContext(manager, "reader")
        let totals = try reader.performAndWait { try reader.fetch(FetchRequest<Parent>()).map(\.total) }
        switch mode {
        case 1: #expect(totals == [5])
        case 2: #expect(totals == [0, 99])
        default: #expect(totals == [])
        }
        // The parent keeps tracking later changes.
        if mode == 1 {
            try writer.performAndWait {
                (writer.object(with: parentID) as! Parent).total += 1
                try writer.save()
            }
            let total = try reader.performAndWait { try reader.existingObject(with: parentID, as: Parent.self).total }
            #expect(total == 6)
        }
    }

    @Test("an object changed again after a discarding refresh is saved once")
    func noDuplicateUpdates() throws {
        let store = FailingStore()
        let manager = makeManager(model: regressionModel, storeType: .custom { _ in store })
        let context = try makeContext(manager, "dup")
        try context.performAndWait {
            let parent = context.insert(Parent.self)
            try context.save()
            parent.total = 1
            context.refresh(parent, mergeChanges: false)
            parent.total = 2
            try context.save()
        }
        #expect(store.commits.last?.entities.flatMap(\.updated).map(\.primaryKey) == [1])
    }

    @Test("-0.0 replacing 0.0 is a change that is saved")
    func negativeZero() throws {
        let manager = makeManager(model: regressionModel)
        let writer = try makeContext(manager, "writer")
        let id = try writer.performAndWait {
            let object = writer.insert(AllTypes.self)
            object.double = 0.0
            try writer.save()
            object.double = -0.0
            #expect(object.isUpdated)
            #expect(object.changedValues() == ["double": .double(-0.0)])
            try writer.save()
            return object.objectID
        }
        let reader = try makeContext(manager, "reader")
        let sign = try reader.performAndWait { try reader.existingObject(with: id, as: AllTypes.self).double.sign }
        #expect(sign == .minus)
    }

    @Test("a merged change to a NaN attribute is taken, not mistaken for a local edit")
    func nanMerges() throws {
        let manager = makeManager(model: regressionModel)
        let a = try makeContext(manager, "a")
        let b = try makeContext(manager, "b")
        let id = try a.performAndWait {
            let object = a.insert(AllTypes.self)
            object.double = .nan
            try a.save()
            return object.objectID
        }
        b.performAndWait { _ = b.object(with: id) }
        try a.performAndWait {
            (a.object(with: id) as! AllTypes).double = 1.0
            try a.save()
        }
        flush(b)
        try b.performAndWait {
            let object = b.object(with: id) as! AllTypes
            #expect(object.double == 1.0)
            #expect(!object.isUpdated)
            object.string = "b's edit"
            try b.save()
        }
        let c = try makeContext(manager, "c")
        let (double, string) = try c.performAndWait {
            let object = try c.existingObject(with: id, as: AllTypes.self)
            return (object.double, object.string)
        }
        #expect(double == 1.0 && string == "b's edit")
    }

    @Test("a manager dropped without close() releases its store")
    func droppedManagerClosesStore() throws {
        let store = InMemoryStore()
        do {
            let manager = makeManager(storeType: .custom { _ in store })
            try seedDestinations(makeContext(manager, "first"), ["A"])
        }
        let next = makeManager(storeType: .custom { _ in store })
        let context = try makeContext(next, "second")
        #expect(try context.performAndWait { try context.count(for: FetchRequest<Destination>()) } == 1)
    }
}

@Suite("Fetch regressions")
struct FetchRegressionTests {
    @Test(
        "extreme limits and offsets page without overflowing",
        arguments: [
            (Int.max, 1, 1), (1, Int.max, 0), (Int.max, Int.max, 0), (10, -5, 2), (-3, 0, 2), (Int.max, 0, 2),
        ])
    func extremePaging(limit: Int, offset: Int, expected: Int) throws {
        let context = try makeContext(makeManager(), "paging")
        try seedDestinations(context, ["A", "B"])
        let counts = try context.performAndWait {
            let sorted = FetchRequest<Destination>(
                sortBy: [SortDescriptor(\.name)], fetchLimit: limit, fetchOffset: offset)
            return [
                try context.fetch(FetchRequest<Destination>(fetchLimit: limit, fetchOffset: offset)).count,
                try context.fetch(sorted).count,
                try context.count(for: FetchRequest<Destination>(fetchLimit: limit, fetchOffset: offset)),
            ]
        }
        #expect(counts == [expected, expected, expected])
    }

    @Test("without pending changes, results are sorted on committed values too")
    func committedSort() throws {
        let context = try makeContext(makeManager(), "committed-sort")
        try seedDestinations(context, ["A", "B", "C"])  // ratings 0, 1, 2
        try context.performAndWait {
            let all = try context.fetch(FetchRequest<Destination>())
            all[0].rating = 10
            let top = try context.fetch(
                FetchRequest<Destination>(
                    sortBy: [SortDescriptor(\.rating, order: .reverse)], fetchLimit: 1, includesPendingChanges: false))
            #expect(top.map(\.name) == ["C"])
            #expect(top.first === all[2])
            let current = try context.fetch(
                FetchRequest<Destination>(sortBy: [SortDescriptor(\.rating, order: .reverse)], fetchLimit: 1))
            #expect(current.map(\.name) == ["A"])
        }
    }
}

/// Refuses to be saved until `isOpen`.
final class Gate: ManagedObject {
    @Attribute var isOpen: Bool = false

    override func validateForSave() throws {
        try super.validateForSave()
        if !isOpen {
            throw ValidationError(
                failures: [ValidationError.Failure(objectID: nil, entityName: "", property: "isOpen", reason: "closed")]
            )
        }
    }
}

/// Inserts a closed gate from its own validation, once.
final class GateKeeper: ManagedObject {
    @Attribute var inserted: Bool = false

    override func validateForSave() throws {
        try super.validateForSave()
        guard !inserted, let context = managedObjectContext else { return }
        inserted = true
        context.insert(Gate.self)
    }
}

@Suite("Validation of objects validation brings in")
struct ValidationRoundTests {
    @Test("an object inserted by another's validateForSave is validated by the same save, and its failure fails it")
    func insertedDuringValidationIsValidated() throws {
        let manager = makeManager(model: ManagedObjectModel([Gate.self, GateKeeper.self]))
        let context = try makeContext(manager, "validation-rounds")
        try context.performAndWait {
            context.insert(GateKeeper.self)
            #expect(throws: ValidationError.self) { try context.save() }
            let gates = context.insertedObjects.compactMap { $0 as? Gate }
            #expect(gates.count == 1)
            gates.forEach { $0.isOpen = true }
            try context.save()
            #expect(!context.hasChanges)
        }
        let reader = try makeContext(manager, "validation-rounds-reader")
        let open = try reader.performAndWait { try reader.fetch(FetchRequest<Gate>()).map(\.isOpen) }
        #expect(open == [true])
    }
}
