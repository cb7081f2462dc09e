import Foundation
import Testing

@testable import QueueData

/// Objects made from committed rows share them (no copy) until their first change; a change
/// never reaches the shared row, another context's object or the store before a save.
@Suite("Shared rows")
struct SharedRowTests {
    private func ownsRow(_ object: ManagedObject) -> Bool {
        object._stateBits & ObjectState._ownsRow != 0
    }

    @Test("a fetched object shares its committed row with the other contexts' objects until it changes")
    func fetchedObjectsShareUntilChanged() throws {
        let (manager, ids) = try seededDestinations(3, "shared-row")
        let first = try makeRetainingContext(manager, "shared-row-first")
        let second = try makeRetainingContext(manager, "shared-row-second")
        let a = try first.performAndWait { try first.existingObject(with: ids[1], as: Destination.self) }
        let b = try second.performAndWait { try second.existingObject(with: ids[1], as: Destination.self) }
        first.performAndWait {
            #expect(!ownsRow(a))
            #expect(a.name == "d1")
        }
        second.performAndWait { #expect(!ownsRow(b)) }
        #expect(a._row == b._row)

        first.performAndWait {
            a.rating = 41  // A trivial value: the first change still goes through the slow path.
            a.rating = 42  // Now the inline path, on the object's own row.
            a.name = "changed"
            #expect(ownsRow(a))
            #expect(a._row != b._row)
            #expect(a.rating == 42 && a.name == "changed")
            #expect(a.committedValues(forKeys: ["name", "rating"]) == ["name": .string("d1"), "rating": .integer(1)])
        }
        second.performAndWait {
            #expect(b.name == "d1" && b.rating == 1)
            #expect(!ownsRow(b))
        }
        let third = try makeContext(manager, "shared-row-third")
        try third.performAndWait {
            let fresh = try third.existingObject(with: ids[1], as: Destination.self)
            #expect(fresh.name == "d1" && fresh.rating == 1)
        }

        // Rolled back: the committed row again, shared.
        first.performAndWait {
            first.rollback()
            #expect(a.name == "d1" && a.rating == 1)
            #expect(!ownsRow(a))
            #expect(a._row == b._row)
        }

        // Saved: the object takes (and shares) the row its save committed; the other context
        // merges it.
        try first.performAndWait {
            a.name = "saved"
            try first.save()
            #expect(a.name == "saved")
            #expect(!ownsRow(a))
            #expect(!a.hasChanges)
        }
        second.performAndWait {
            #expect(b.name == "saved" && b.rating == 1)
            #expect(!ownsRow(b))
            #expect(a._row == b._row)
        }
        try third.performAndWait {
            let fresh = try third.existingObject(with: ids[1], as: Destination.self)
            #expect(fresh.name == "saved")
        }
    }

    @Test("an object with transient attributes owns its row; its transients reset and change as before")
    func transientAttributesKeepTheirOwnRow() throws {
        let manager = makeManager(model: pinModel)
        let context = try makeRetainingContext(manager, "shared-row-transient")
        let id = try context.performAndWait {
            let pin = context.insert(Pin.self)
            pin.name = "home"
            pin.draft = "unsaved"
            try context.save()
            #expect(ownsRow(pin))
            #expect(pin.draft == "unsaved")
            return pin.objectID
        }
        let other = try makeContext(manager, "shared-row-transient-other")
        try other.performAndWait {
            let pin = try other.existingObject(with: id, as: Pin.self)
            #expect(ownsRow(pin))
            #expect(pin.name == "home" && pin.draft == "(none)")
            pin.draft = "note"
            pin.rating = 3
            other.rollback()
            #expect(pin.rating == 0 && pin.draft == "(none)")
        }
    }

    @Test("random changes, rollbacks and saves in two contexts: reads match a reference, the store holds saved values")
    func randomChangesAgainstAReference() throws {
        let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_SHARED_ROW_ROUNDS"].flatMap(Int.init) ?? 300
        var generator = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        var random = SeededGenerator(seed: seed)
        let rowCount = 40
        let (manager, ids) = try seededDestinations(rowCount, "shared-row-random")
        let contexts = [
            try makeContext(manager, "shared-row-random-0"), try makeContext(manager, "shared-row-random-1"),
        ]
        // Each context holds every object; context c changes only rows with index % 2 == c, so
        // that saves never conflict.
        let held: [[Destination]] = try contexts.map { context in
            try context.performAndWait {
                try ids.map { try context.existingObject(with: $0, as: Destination.self) }
            }
        }
        struct Values: Equatable {
            var name: String
            var rating: Int
            var visited: Date?
        }
        var committed = (0..<rowCount).map { Values(name: "d\($0)", rating: $0, visited: nil) }
        var pending: [[Int: Values]] = [[:], [:]]

        func check(_ round: Int) {
            for (index, context) in contexts.enumerated() {
                context.performAndWait {
                    for row in 0..<rowCount {
                        let object = held[index][row]
                        let expected = pending[index][row] ?? committed[row]
                        let actual = Values(name: object.name, rating: object.rating, visited: object.visited)
                        #expect(
                            actual == expected,
                            "seed \(seed), round \(round): context \(index), row \(row): \(actual) != \(expected)")
                        if pending[index][row] == nil {
                            #expect(!object.hasChanges, "seed \(seed), round \(round): row \(row) changed")
                        }
                        // The setters' one-bit test agrees with the state it is derived from.
                        let bits = object._stateBits
                        #expect(
                            object._canChangeWithoutRegistering
                                == (bits & ObjectState._freelyWritableMask != 0
                                    && bits & (ObjectState._blockedMask | ObjectState._ownsRow) == ObjectState._ownsRow),
                            "seed \(seed), round \(round): row \(row), state bits \(bits)")
                    }
                }
            }
        }

        for round in 0..<rounds {
            let index = Int.random(in: 0..<2, using: &random)
            let context = contexts[index]
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                let row = Int.random(in: 0..<(rowCount / 2), using: &random) * 2 + index
                var values = pending[index][row] ?? committed[row]
                let object = held[index][row]
                context.performAndWait {
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0:
                        values.name = "n\(round)"
                        object.name = values.name
                    case 1:
                        values.rating = Int.random(in: -5...5, using: &random)
                        object.rating = values.rating
                        values.rating += 1
                        object.rating += 1
                    case 2:
                        values.visited = Date(timeIntervalSinceReferenceDate: Double(round))
                        object.visited = values.visited
                    default:
                        values.visited = nil
                        object.visited = nil
                    }
                }
                pending[index][row] = values
            case 6:
                context.performAndWait { context.rollback() }
                pending[index] = [:]
            default:
                try context.performAndWait { try context.save() }
                for (row, values) in pending[index] {
                    committed[row] = values
                }
                pending[index] = [:]
            }
            check(round)
            if round % 50 == 49 {
                let reader = try makeContext(manager, "shared-row-random-reader")
                let stored = try reader.performAndWait {
                    try reader.fetch(FetchRequest<Destination>()).map { object in
                        let values = Values(name: object.name, rating: object.rating, visited: object.visited)
                        return (ids.firstIndex(of: object.objectID)!, values)
                    }
                }
                #expect(stored.count == rowCount)
                for (row, values) in stored {
                    #expect(values == committed[row], "seed \(seed), round \(round): stored row \(row)")
                }
            }
        }
    }

    @Test(
        "objects held while their rows are saved one at a time, here and in another context, keep one copy of each block",
        arguments: [false, true])
    func savedOneAtATimeKeepOneBlockCopy(inserting: Bool) throws {
        let count = 1_000
        let (manager, _) = try seededDestinations(inserting ? 0 : count, "rebase-\(inserting)")
        let saver = try makeContext(manager, "rebase-saver-\(inserting)")
        let watcher = try makeContext(manager, "rebase-watcher-\(inserting)")
        var generator = SeededGenerator(seed: inserting ? 7 : 8)
        // The saver's objects and the values it saved, by name.
        var saved: [Destination] = []
        var expected: [String: Int] = [:]
        if inserting {
            // One insert per save: each save appends to the block the previous ones filled.
            try saver.performAndWait {
                for number in 0..<300 {
                    let destination = saver.insert(Destination.self)
                    destination.name = "d\(number)"
                    destination.rating = number
                    try saver.save()
                    saved.append(destination)
                    expected[destination.name] = number
                }
            }
        } else {
            saved = try saver.performAndWait { try saver.fetch(FetchRequest<Destination>()) }
            for destination in saved { saver.performAndWait { expected[destination.name] = destination.rating } }
        }
        let watched = try watcher.performAndWait { try watcher.fetch(FetchRequest<Destination>()) }
        // Distinct objects, each changed and saved on its own; the watcher merges every save.
        let order = saved.indices.shuffled(using: &generator)
        for (round, index) in order.prefix(300).enumerated() {
            try saver.performAndWait {
                saved[index].rating = 10_000 + round
                expected[saved[index].name] = 10_000 + round
                try saver.save()
            }
            watcher.performAndWait {}  // The merge of that save has run.
        }
        func distinctBlocks(_ objects: [Destination], in context: ManagedObjectContext) -> Int {
            context.performAndWait { Set(objects.compactMap { $0._committed.map(ObjectIdentifier.init) }).count }
        }
        let blocks = (saved.count + EntityTable.chunkCapacity - 1) / EntityTable.chunkCapacity
        #expect(distinctBlocks(saved, in: saver) <= blocks, "the saver's objects hold one copy of each block")
        #expect(distinctBlocks(watched, in: watcher) <= blocks, "the watcher's objects hold one copy of each block")
        // And every object still reads its committed values, shared with the table's rows.
        saver.performAndWait {
            for destination in saved {
                #expect(destination.rating == expected[destination.name])
                #expect(destination._row == UnsafeRawPointer(destination._committedFields!))
            }
        }
        watcher.performAndWait {
            for destination in watched {
                #expect(destination.rating == expected[destination.name])
                #expect(!destination.hasChanges)
            }
        }
        let fresh = try makeContext(manager, "rebase-fresh-\(inserting)")
        try fresh.performAndWait {
            let all = try fresh.fetch(FetchRequest<Destination>())
            #expect(all.count == saved.count)
            #expect(all.allSatisfy { expected[$0.name] == $0.rating })
        }
    }
}
