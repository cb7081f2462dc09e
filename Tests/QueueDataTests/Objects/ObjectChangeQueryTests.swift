import Foundation
import Testing

@testable import QueueData

/// A rack of totes, in order.
final class Rack: ManagedObject {
    @Attribute var label: String = ""
    @Attribute(.transient) var highlighted: Bool = false
    @Relationship(inverse: "rack") var totes: [Tote]
}

/// A tote on at most one rack.
final class Tote: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "totes") var rack: Rack?
}

private let rackModel = ManagedObjectModel([Rack.self, Tote.self])

@Suite("objectIDs(forRelationshipNamed:) and hasPersistentChangedValues")
struct ObjectChangeQueryTests {
    @Test("objectIDs(forRelationshipNamed:) lists the related objects' IDs in order, without loading them")
    func relationshipIDsWithoutLoading() throws {
        let manager = makeManager(model: rackModel)
        defer { manager.close() }
        let writer = try makeContext(manager, "ids-writer")
        let (rackID, toteIDs, looseID) = try writer.performAndWait {
            let rack = writer.insert(Rack.self)
            rack.label = "r"
            let totes = (0..<3).map { index in
                let tote = writer.insert(Tote.self)
                tote.label = "t\(index)"
                return tote
            }
            rack.totes = [totes[2], totes[0], totes[1]]
            let loose = writer.insert(Tote.self)
            loose.label = "loose"
            try writer.save()
            return (rack.objectID, rack.totes.map(\.objectID), loose.objectID)
        }
        let reader = try makeRetainingContext(manager, "ids-reader")
        try reader.performAndWait {
            let rack = try reader.existingObject(with: rackID, as: Rack.self)
            #expect(rack.objectIDs(forRelationshipNamed: "totes") == toteIDs)
            // Nothing but the rack was loaded.
            #expect(reader.registeredObjects.map(\.objectID) == [rackID])
            let loose = try reader.existingObject(with: looseID, as: Tote.self)
            #expect(loose.objectIDs(forRelationshipNamed: "rack").isEmpty)
            let first = try reader.existingObject(with: toteIDs[0], as: Tote.self)
            #expect(first.objectIDs(forRelationshipNamed: "rack") == [rackID])

            // Unsaved changes count: a new tote's temporary ID, then its permanent one.
            let added = reader.insert(Tote.self)
            added.label = "added"
            rack.totes.append(added)
            loose.rack = rack
            let pending = rack.objectIDs(forRelationshipNamed: "totes")
            #expect(pending == toteIDs + [added.objectID, looseID])
            #expect(pending[3].isTemporaryID)
            #expect(added.objectIDs(forRelationshipNamed: "rack") == [rackID])
            try reader.save()
            let saved = rack.objectIDs(forRelationshipNamed: "totes")
            #expect(saved == toteIDs + [added.objectID, looseID])
            #expect(!saved[3].isTemporaryID)
        }
        // The other context reads the saved order.
        let order = try writer.performAndWait {
            try writer.existingObject(with: rackID, as: Rack.self).objectIDs(forRelationshipNamed: "totes")
        }
        #expect(order.count == 5 && Array(order.prefix(3)) == toteIDs && order.last == looseID)
    }

    @Test("hasPersistentChangedValues: what a save would write, transient changes and values set back aside")
    func persistentChanges() throws {
        let manager = makeManager(model: rackModel)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "persistent-changes")
        try context.performAndWait {
            let rack = context.insert(Rack.self)
            #expect(rack.hasPersistentChangedValues)
            rack.label = "a"
            try context.save()
            #expect(!rack.hasPersistentChangedValues && !rack.hasChanges)

            rack.highlighted = true
            #expect(rack.hasChanges && rack.isUpdated)
            #expect(!rack.hasPersistentChangedValues)

            rack.label = "b"
            #expect(rack.hasPersistentChangedValues)
            rack.label = "a"
            #expect(!rack.hasPersistentChangedValues)

            let tote = context.insert(Tote.self)
            try context.save()
            #expect(!rack.hasPersistentChangedValues && !tote.hasPersistentChangedValues)
            tote.rack = rack
            #expect(rack.hasPersistentChangedValues && tote.hasPersistentChangedValues)
            try context.save()

            context.delete(tote)
            #expect(tote.hasPersistentChangedValues)
            // The deletion nullifies the rack's side at the save.
            try context.save()
            #expect(!tote.hasPersistentChangedValues && !rack.hasPersistentChangedValues)
        }
    }
}
