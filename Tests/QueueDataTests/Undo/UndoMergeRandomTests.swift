import Foundation
import Testing

@testable import QueueData

/// Random edits, undos, redos and saves of a context with an undo manager, interleaved with
/// another context's edits and saves that it merges: what the other context did is never
/// undone, so there is no snapshot to compare; instead every save must go through (both
/// contexts settle conflicts by property), what is stored must keep both sides of every
/// relationship in step, and undoing everything must leave something that saves.
/// `QUEUEDATA_UNDO_MERGE_ROUNDS` and `QUEUEDATA_UNDO_SEED` run more or other rounds.
@Suite("Undo: random edits against another context's saves")
struct UndoMergeRandomTests {
    static let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_MERGE_ROUNDS"].flatMap(Int.init) ?? 12

    @Test("saves always go through and keep relationships in step", arguments: LifecycleStore.allCases)
    func randomRounds(_ store: LifecycleStore) throws {
        try Self.run(store, seed: UndoRandomTests.seed, rounds: 0..<Self.rounds)
    }

    /// Rounds that found bugs at 100 rounds per seed (a merged deletion leaving an unsaved link
    /// dangling; a cascade propagated again apart from its parent; a link put back on one side
    /// only after a merge moved the other, or taken away on one side only), replayed on every run.
    @Test(
        "rounds that found bugs",
        arguments: LifecycleStore.allCases,
        [(7, 5), (7, 31), (7, 57), (7, 60), (7, 91), (2, 56), (9, 18), (12, 69), (80, 75)])
    func foundRounds(_ store: LifecycleStore, _ found: (seed: UInt64, round: Int)) throws {
        try Self.run(store, seed: found.seed, rounds: found.round...found.round)
    }

    static func run(_ store: LifecycleStore, seed: UInt64, rounds: some Sequence<Int>) throws {
        for round in rounds where UndoRandomTests.onlyRound == nil || UndoRandomTests.onlyRound == round {
            var random = SeededGenerator(seed: seed &* 7_919 &+ UInt64(round))
            let directory = TemporaryDirectory("undo-merge-random-\(store)")
            let manager = undoModelManager(store, directory)
            let mine = try makeContext(manager, "undo")
            let other = try makeContext(manager, "other")
            var counter = 0
            var log: [String] = []
            try mine.performAndWait {
                for _ in 0..<8 {
                    UndoRandomTests.randomStep(mine, &random, &counter)
                }
                try mine.save()
                mine.mergePolicy = .mergeByPropertyObjectTrump
                mine.undoManager = UndoManager()
            }
            other.performAndWait { other.mergePolicy = .mergeByPropertyObjectTrump }
            do {
                for _ in 0..<Int.random(in: 20...40, using: &random) {
                    switch random.next() % 10 {
                    case 0..<4:
                        let steps = mine.performAndWait {
                            (0..<Int.random(in: 1...3, using: &random)).map { _ in
                                UndoRandomTests.randomStep(mine, &random, &counter)
                            }
                        }
                        log.append("mine(\(steps.joined(separator: ",")))")
                    case 4, 5:
                        let undone = mine.performAndWait { mine.undo().didApply }
                        log.append(undone ? "undo" : "undo(none)")
                    case 6:
                        let redone = mine.performAndWait { mine.redo().didApply }
                        log.append(redone ? "redo" : "redo(none)")
                    case 7:
                        log.append("mine.save")
                        try mine.performAndWait { try mine.save() }
                        try Self.expectInStep(manager, "round \(round), after \(log.joined(separator: " "))")
                    default:
                        let steps = try other.performAndWait {
                            try Self.registerEverything(other)
                            return (0..<Int.random(in: 1...2, using: &random)).map { _ in
                                UndoRandomTests.randomStep(other, &random, &counter)
                            }
                        }
                        log.append("other(\(steps.joined(separator: ",")))+save")
                        try other.performAndWait { try other.save() }
                        flush(mine)
                        try Self.expectInStep(manager, "round \(round), after \(log.joined(separator: " "))")
                    }
                }
                log.append("undo all+save")
                try mine.performAndWait {
                    while mine.undoManager!.canUndo {
                        mine.undo()
                    }
                    try mine.save()
                }
                try Self.expectInStep(
                    manager, "round \(round), after undoing everything: \(log.joined(separator: " "))")
            } catch {
                let failures = (error as? ValidationError)?.failures.map { "\($0)" } ?? []
                Issue.record("round \(round), after \(log.joined(separator: " ")): \(error) \(failures)")
            }
            manager.close()
        }
    }

    @Test(
        "an undo does not put an object back into a to-many relationship after a merge moved it elsewhere",
        arguments: LifecycleStore.allCases)
    func undoKeepsMergedMove(_ store: LifecycleStore) throws {
        // A layer taken out of its sketch and saved, then moved into another sketch by another
        // context: undoing the first change leaves it there, and the first sketch does not get
        // it back on its side only.
        let directory = TemporaryDirectory("undo-merged-move-\(store)")
        let manager = undoModelManager(store, directory)
        let mine = try makeContext(manager, "mine")
        let other = try makeContext(manager, "other")
        let (_, sketchID) = try UndoTests.seed(mine)
        let (layerID, otherSketchID) = try mine.performAndWait {
            let sketch = mine.insert(Sketch.self)
            sketch.uid = "s2"
            try mine.save()
            mine.undoManager = UndoManager()
            return ((mine.object(with: sketchID) as! Sketch).layers[0].objectID, sketch.objectID)
        }
        try mine.performAndWait {
            (mine.object(with: layerID) as! Layer).sketch = nil
            try mine.save()
        }
        try other.performAndWait {
            (other.object(with: layerID) as! Layer).sketch = other.object(with: otherSketchID) as? Sketch
            try other.save()
        }
        flush(mine)
        try mine.performAndWait {
            #expect(mine.undo().didApply)
            let layer = mine.object(with: layerID) as! Layer
            #expect(layer.sketch?.objectID == otherSketchID, "the merge wins")
            #expect((mine.object(with: sketchID) as! Sketch).layers.map(\.uid) == ["l1"])
            try mine.save()
        }
        let stored = try UndoRandomTests.storedSignature(manager)
        #expect(stored["s1"]?.contains("layers=[l1]") == true && stored["s2"]?.contains("layers=[l0]") == true)
        #expect(stored["l0"]?.contains("sketch=[s2]") == true)
        manager.close()
    }

    /// Fetches every object, so that random steps can pick any of them.
    static func registerEverything(_ context: ManagedObjectContext) throws {
        for entity in ["Album", "Sketch", "Layer", "Mark"] {
            _ = try context.fetch(FetchRequest<ManagedObject>(entityName: entity))
        }
    }

    /// Expects every stored relationship to be mirrored by its inverse, as a fresh context
    /// reads them.
    static func expectInStep(_ manager: ContextManager, _ comment: String) throws {
        let reader = try makeContext(manager, "reader")
        let problems = try reader.performAndWait {
            try registerEverything(reader)
            var problems: [String] = []
            for object in reader.registeredObjects {
                for relationship in object.entity.relationships {
                    let inverse = relationship.inverseName
                    for target in object.relatedObjects(forKey: relationship.name)
                    where !target.relatedObjects(forKey: inverse).contains(where: { $0 === object }) {
                        problems.append(
                            "\(UndoRandomTests.uid(object)).\(relationship.name) has \(UndoRandomTests.uid(target)), "
                                + "whose \(inverse) does not point back")
                    }
                }
            }
            return problems
        }
        #expect(problems.isEmpty, "\(comment): \(problems.joined(separator: "; "))")
    }
}
