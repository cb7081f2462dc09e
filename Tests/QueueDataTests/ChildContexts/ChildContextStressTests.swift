import Dispatch
import Foundation
import QueueData
import Testing

@Suite("Child contexts: concurrency and a brute-force reference")
struct ChildContextStressTests {
    @Test("children on their own queues push into one parent that saves meanwhile; nothing is lost")
    func childrenPushConcurrently() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        let childCount = 4
        let iterations = 60
        let children = parent.performAndWait {
            (0..<childCount).map { index in
                parent.newChildContext(for: DispatchQueue(label: "child-\(index)"))
            }
        }
        let failures = AtomicCounter()
        let group = DispatchGroup()
        for (owner, child) in children.enumerated() {
            child.perform {
                do {
                    // Each child owns one counter, inserted here: after the parent saves it, the
                    // child still knows it by its temporary ID.
                    let counter = child.insert(Counter.self)
                    counter.owner = owner
                    for iteration in 0..<iterations {
                        counter.value += 1
                        let item = child.insert(Item.self)
                        item.owner = owner
                        item.sequence = iteration
                        try child.save()
                        let seen = try child.count(
                            for: FetchRequest<Item>(predicate: #Predicate { $0.owner == owner }))
                        if seen != iteration + 1 {
                            failures.increment()
                        }
                    }
                } catch {
                    failures.increment()
                }
            }
        }
        for child in children {
            group.enter()
            child.perform { group.leave() }
        }
        // The parent saves while the children push.
        var parentSaves = 0
        while group.wait(timeout: .now()) == .timedOut {
            try parent.performAndWait { try parent.save() }
            parentSaves += 1
        }
        try parent.performAndWait { try parent.save() }
        #expect(failures.value == 0)
        let reader = try makeContext(manager, "reader")
        let (items, counters) = try reader.performAndWait {
            (
                try reader.fetch(FetchRequest<Item>()).map { "\($0.owner):\($0.sequence)" },
                try reader.fetch(FetchRequest<Counter>()).map { "\($0.owner):\($0.value)" }
            )
        }
        #expect(Set(items).count == childCount * iterations && items.count == childCount * iterations)
        #expect(counters.sorted() == (0..<childCount).map { "\($0):\(iterations)" })
        #expect(parentSaves > 0)
    }

    static let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_CHILD_ROUNDS"].flatMap(Int.init) ?? 12
    static let seed = ProcessInfo.processInfo.environment["QUEUEDATA_CHILD_SEED"].flatMap(UInt64.init) ?? 5

    @Test(
        "random edits in a child, pushed round after round, give the graph the same edits make in the parent",
        arguments: [false, true], [false, true])
    func randomEditsMatchEditsInParent(_ reuseChild: Bool, _ parentEdits: Bool) throws {
        for run in 0..<2 {
            try Self.runRandom(
                seed: Self.seed &* 100 &+ UInt64(run) &+ (reuseChild ? 50 : 0) &+ (parentEdits ? 20 : 0),
                reuseChild: reuseChild, parentEdits: parentEdits)
        }
    }

    /// One manager edits through children of its context, another directly in its context,
    /// with the same random edits: after each push (and save of the reference) the child's
    /// view, a fresh child's view of the parent and, at the end, the stores must be equal.
    /// With `parentEdits`, each round starts with random edits in the parent that the child
    /// reads unsaved (the reference makes them in its one context), and the parent saves each
    /// round: then the stores are compared each round.
    static func runRandom(seed: UInt64, reuseChild: Bool, parentEdits: Bool = false) throws {
        let directory = TemporaryDirectory("child-random")
        let childManager = LifecycleStore.memory.manager(directory, model: undoModel)
        let referenceManager = LifecycleStore.memory.manager(directory, model: undoModel)
        let parent = try makeContext(childManager, "parent")
        let reference = try makeContext(referenceManager, "reference")
        var childRandom = SeededGenerator(seed: seed)
        var referenceRandom = SeededGenerator(seed: seed)
        var childCounter = 0
        var referenceCounter = 0
        var child = parent.performAndWait { parent.newChildContext() }
        var log: [String] = []
        func fetchAll(_ context: ManagedObjectContext) throws {
            for name in ["Album", "Sketch", "Layer", "Mark"] {
                _ = try context.fetch(FetchRequest<ManagedObject>(entityName: name))
            }
        }
        func view(_ context: ManagedObjectContext) -> [String: String] {
            UndoRandomTests.withoutTransients(UndoRandomTests.snapshot(context, projected: false))
        }
        /// `steps` random edits in `context`. With `parentEdits`, a deletion is saved at once on
        /// both sides: until a save applies its delete rules, one context still lists a deleted
        /// object in relationships (and discards an inserted one with its cascade at once), while
        /// a child no longer sees the parent's deleted objects and deletes the parent's inserted
        /// ones as saved ones. (In Core Data the rules apply at the end of each event.)
        func edit(
            _ context: ManagedObjectContext,
            _ steps: Int,
            _ random: inout SeededGenerator,
            _ counter: inout Int
        ) throws -> [String] {
            try context.performAndWait {
                try fetchAll(context)
                return try (0..<steps).map { _ in
                    let step = UndoRandomTests.randomStep(context, &random, &counter)
                    if parentEdits && step.hasPrefix("×") {
                        try context.save()
                    }
                    return step
                }
            }
        }
        for round in 0..<rounds {
            if !reuseChild || round % 4 == 0 {
                child = parent.performAndWait { parent.newChildContext() }
            }
            if parentEdits {
                let parentSteps = 1 + Int(childRandom.next() % 6)
                _ = referenceRandom.next()
                let parentLog = try edit(parent, parentSteps, &childRandom, &childCounter)
                let referenceLog = try edit(reference, parentSteps, &referenceRandom, &referenceCounter)
                log.append("round \(round) in the parent: \(parentLog.joined(separator: " "))")
                guard parentLog == referenceLog else {
                    Issue.record(
                        "the edits drifted apart: \(parentLog) ≠ \(referenceLog); \(log.joined(separator: "; "))")
                    return
                }
            }
            let steps = 1 + Int(childRandom.next() % 8)
            _ = referenceRandom.next()
            if parentEdits {
                // A child's objects keep the values it read: take the parent's edits.
                child.performAndWait {
                    for object in child.registeredObjects {
                        child.refresh(object, mergeChanges: false)
                    }
                }
            }
            let childLog = try edit(child, steps, &childRandom, &childCounter)
            let referenceLog = try edit(reference, steps, &referenceRandom, &referenceCounter)
            log.append("round \(round): \(childLog.joined(separator: " "))")
            guard childLog == referenceLog else {
                Issue.record("the edits drifted apart: \(childLog) ≠ \(referenceLog); \(log.joined(separator: "; "))")
                return
            }
            try child.performAndWait { try child.save() }
            try reference.performAndWait { try reference.save() }
            if parentEdits {
                try parent.performAndWait { try parent.save() }
                UndoRandomTests.expectEqual(
                    try UndoRandomTests.storedSignature(childManager),
                    try UndoRandomTests.storedSignature(referenceManager),
                    "stores, seed \(seed), \(log.joined(separator: "; "))")
                continue
            }
            let childView = try child.performAndWait {
                try fetchAll(child)
                return view(child)
            }
            let expected = try reference.performAndWait {
                try fetchAll(reference)
                return view(reference)
            }
            UndoRandomTests.expectEqual(childView, expected, "child, seed \(seed), \(log.joined(separator: "; "))")
            let fresh = parent.performAndWait { parent.newChildContext() }
            let freshView = try fresh.performAndWait {
                try fetchAll(fresh)
                return view(fresh)
            }
            UndoRandomTests.expectEqual(
                freshView, expected, "parent's view, seed \(seed), \(log.joined(separator: "; "))")
            if round % 3 == 2 {
                try parent.performAndWait { try parent.save() }
            }
        }
        try parent.performAndWait { try parent.save() }
        UndoRandomTests.expectEqual(
            try UndoRandomTests.storedSignature(childManager), try UndoRandomTests.storedSignature(referenceManager),
            "stores, seed \(seed), \(log.joined(separator: "; "))")
    }
}
