import Foundation
import Testing

@testable import QueueData

/// Random edits, undos, redos, rollbacks, refreshes and pushes in a child context with an undo
/// manager, over a parent with one that undoes, redoes, edits, rolls back and saves, against a
/// brute-force reference: the projected snapshot (what a save would leave) after every group,
/// one list for the child and one for the parent.
///
/// A child's push makes the parent's view its own snapshot and is one group of the parent; a
/// parent save stores its snapshot. A change in the parent (an edit, undo, redo or rollback)
/// starts a new child, which reads it. Each save of the parent is checked against a fresh
/// context's fetch, each push against a fresh child's. `QUEUEDATA_UNDO_CHILD_ROUNDS` and
/// `QUEUEDATA_UNDO_CHILD_SEED` run more or other rounds.
@Suite("Undo: random edits in a child context over a parent that undoes and saves")
struct UndoChildRandomTests {
    static let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_CHILD_ROUNDS"].flatMap(Int.init) ?? 40
    static let seed = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_CHILD_SEED"].flatMap(UInt64.init) ?? 11
    /// `QUEUEDATA_UNDO_CHILD_ROUND`: run only this round (to study a failure).
    static let onlyRound = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_CHILD_ROUND"].flatMap(Int.init)

    @Test(
        "a child's and its parent's undos, redos, rollbacks and saves give back each one's snapshots; the store follows",
        arguments: [LifecycleStore.memory, .journal])
    func randomRounds(_ store: LifecycleStore) throws {
        let rounds = scaledRounds(Self.rounds) / (store == .memory ? 1 : 2)
        for round in 0..<max(rounds, 1) where Self.onlyRound == nil || Self.onlyRound == round {
            try Self.runRound(store, round)
        }
    }

    static func fetchAll(_ context: ManagedObjectContext) throws -> [ManagedObject] {
        try ["Album", "Sketch", "Layer", "Mark"].flatMap { name in
            try context.fetch(FetchRequest<ManagedObject>(entityName: name))
        }
    }

    /// What a save of `context` would leave, after reading every object it can see.
    static func view(_ context: ManagedObjectContext) throws -> [String: String] {
        try context.performAndWait {
            _ = try fetchAll(context)
            return UndoRandomTests.withoutTransients(UndoRandomTests.snapshot(context, projected: true))
        }
    }

    static func runRound(_ store: LifecycleStore, _ round: Int) throws {
        var random = SeededGenerator(
            seed: seed &* 1_000 &+ UInt64(round) &* 13 &+ UInt64(LifecycleStore.allCases.firstIndex(of: store)!))
        let directory = TemporaryDirectory("undo-child-random-\(store)")
        let manager = undoModelManager(store, directory)
        defer { manager.close() }
        let parent = try makeRetainingContext(manager, "undo-child-parent")
        var counter = 0
        try parent.performAndWait {
            for _ in 0..<8 {
                UndoRandomTests.randomStep(parent, &random, &counter)
            }
            try parent.save()
            parent.undoManager = UndoManager()
        }
        var log: [String] = []
        func expectEqual(
            _ actual: [String: String],
            _ expected: [String: String],
            _ what: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            UndoRandomTests.expectEqual(
                actual, expected, "\(what), \(store) round \(round), after \(log.joined(separator: " "))",
                sourceLocation: sourceLocation)
        }
        var parentStates = [try view(parent)]
        var parentPosition = 0
        var child = parent.performAndWait { parent.newChildContext() }
        var childStates: [[String: String]] = []
        var childPosition = 0
        var pushedState: [String: String] = [:]
        func newChild() throws {
            child = parent.performAndWait { parent.newChildContext() }
            child.performAndWait {
                child.retainsRegisteredObjects = true
                child.undoManager = UndoManager()
            }
            childStates = [try view(child)]
            childPosition = 0
            pushedState = childStates[0]
            expectEqual(childStates[0], parentStates[parentPosition], "a new child's view of its parent")
        }
        try newChild()
        func undoCount(_ context: ManagedObjectContext) -> Int {
            context.performAndWait { context.undoManager!.undoStack.count }
        }
        func parentRecorded(_ before: Int) throws {
            if undoCount(parent) > before {
                #expect(undoCount(parent) == before + 1, "one group per block in the parent")
                parentStates.removeSubrange((parentPosition + 1)...)
                parentStates.append(try view(parent))
                parentPosition += 1
            } else {
                expectEqual(try view(parent), parentStates[parentPosition], "the parent, after recording nothing")
            }
        }
        do {
            for _ in 0..<Int.random(in: 30...60, using: &random) {
                switch random.next() % 24 {
                case 0..<7:
                    let before = undoCount(child)
                    let steps = try child.performAndWait {
                        _ = try fetchAll(child)
                        return (0..<Int.random(in: 1...3, using: &random)).map { _ in
                            UndoRandomTests.randomStep(child, &random, &counter)
                        }
                    }
                    log.append("child(\(steps.joined(separator: ",")))")
                    if undoCount(child) > before {
                        #expect(undoCount(child) == before + 1, "one group per block in the child")
                        childStates.removeSubrange((childPosition + 1)...)
                        childStates.append(try view(child))
                        childPosition += 1
                    } else {
                        expectEqual(try view(child), childStates[childPosition], "the child, after recording nothing")
                    }
                case 7..<10:
                    log.append("child.undo")
                    child.performAndWait { _ = child.undo() }
                    childPosition = max(childPosition - 1, 0)
                    expectEqual(try view(child), childStates[childPosition], "the child, after an undo")
                case 10..<12:
                    log.append("child.redo")
                    child.performAndWait { _ = child.redo() }
                    childPosition = min(childPosition + 1, childStates.count - 1)
                    expectEqual(try view(child), childStates[childPosition], "the child, after a redo")
                case 12..<15:
                    log.append("child.save")
                    let before = undoCount(parent)
                    try child.performAndWait { try child.save() }
                    pushedState = try view(child)
                    expectEqual(pushedState, childStates[childPosition], "the child, after its save")
                    let fresh = parent.performAndWait { parent.newChildContext() }
                    expectEqual(try view(fresh), pushedState, "a fresh child's view of the parent, after a push")
                    try parentRecorded(before)
                    expectEqual(parentStates[parentPosition], pushedState, "the parent, after a push")
                case 15:
                    log.append("child.rollback")
                    child.performAndWait { child.rollback() }
                    #expect(child.performAndWait { !child.undoManager!.canUndo && !child.undoManager!.canRedo })
                    childStates = [try view(child)]
                    childPosition = 0
                    expectEqual(childStates[0], pushedState, "the child, after a rollback")
                case 16:
                    let merge = random.next() % 2 == 0
                    let refreshed = child.performAndWait {
                        child.registeredObjects.filter { merge || !$0.hasChanges }.sorted {
                            UndoRandomTests.uid($0) < UndoRandomTests.uid($1)
                        }
                        .filter { _ in random.next() % 2 == 0 }
                        .map { object in
                            child.refresh(object, mergeChanges: merge)
                            return UndoRandomTests.uid(object)
                        }
                    }
                    log.append("child.refresh(\(merge), \(refreshed))")
                    expectEqual(try view(child), childStates[childPosition], "the child, after a refresh")
                case 17:
                    log.append("parent.save")
                    try parent.performAndWait { try parent.save() }
                    expectEqual(try view(parent), parentStates[parentPosition], "the parent, after its save")
                    expectEqual(
                        try UndoRandomTests.storedSignature(manager), parentStates[parentPosition],
                        "stored, after the parent's save")
                case 18, 19:
                    log.append("parent.undo")
                    parent.performAndWait { _ = parent.undo() }
                    parentPosition = max(parentPosition - 1, 0)
                    expectEqual(try view(parent), parentStates[parentPosition], "the parent, after an undo")
                    try newChild()
                case 20:
                    log.append("parent.redo")
                    parent.performAndWait { _ = parent.redo() }
                    parentPosition = min(parentPosition + 1, parentStates.count - 1)
                    expectEqual(try view(parent), parentStates[parentPosition], "the parent, after a redo")
                    try newChild()
                case 21:
                    let before = undoCount(parent)
                    let steps = try parent.performAndWait {
                        _ = try fetchAll(parent)
                        return (0..<Int.random(in: 1...2, using: &random)).map { _ in
                            UndoRandomTests.randomStep(parent, &random, &counter)
                        }
                    }
                    log.append("parent(\(steps.joined(separator: ",")))")
                    try parentRecorded(before)
                    try newChild()
                case 22:
                    log.append("parent.rollback")
                    parent.performAndWait { parent.rollback() }
                    parentStates = [try view(parent)]
                    parentPosition = 0
                    expectEqual(
                        parentStates[0], try UndoRandomTests.storedSignature(manager), "the parent, after a rollback")
                    try newChild()
                default:
                    let merge = random.next() % 2 == 0
                    let refreshed = parent.performAndWait {
                        parent.registeredObjects.filter { merge || !$0.hasChanges }.sorted {
                            UndoRandomTests.uid($0) < UndoRandomTests.uid($1)
                        }
                        .filter { _ in random.next() % 3 == 0 }
                        .map { object in
                            parent.refresh(object, mergeChanges: merge)
                            return UndoRandomTests.uid(object)
                        }
                    }
                    log.append("parent.refresh(\(merge), \(refreshed))")
                    expectEqual(try view(parent), parentStates[parentPosition], "the parent, after a refresh")
                }
            }
            // Push everything, save, and undo all the parent's groups: the store holds the start.
            try child.performAndWait { try child.save() }
            try parent.performAndWait { try parent.save() }
            log.append("end")
            expectEqual(try UndoRandomTests.storedSignature(manager), try view(child), "stored at the end")
        } catch {
            Issue.record("\(store) round \(round), after \(log.joined(separator: " ")): \(error)")
        }
    }
}
