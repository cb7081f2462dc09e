import Foundation
import Testing

@testable import QueueData

/// Random edits, undos, redos and saves of a context with an undo manager (alone, or as the
/// parent of a child with one that pushes into it), interleaved with other contexts' saves that
/// move sketches between albums, reorder and replace layers, link and unlink marks, insert and
/// delete objects (cascades included) and change attributes, which the context merges.
///
/// Attributes are checked against a reference built from the documented rules alone: a merge
/// gives an object the new committed value of every attribute it has not changed locally
/// (its value is still the one committed before); an undo or redo sets an attribute back only
/// if it still holds the value the change gave it, and to the committed value now when a merge
/// replaced the committed value the change was made over. Where the rules leave a case open
/// (an object changed by a merge or an undo while deleted here), the reference takes what the
/// context shows and goes on. Everything else is checked by invariants: both sides of every
/// link agree, in the contexts and in the store; every save goes through; after each save a
/// fresh context fetches exactly what the saving context shows; undoing everything and saving
/// leaves a consistent store.
///
/// `QUEUEDATA_UNDO_MERGEREF_ROUNDS`, `QUEUEDATA_UNDO_MERGEREF_SEED` and
/// `QUEUEDATA_UNDO_MERGEREF_ROUND` (one round) run more, other or one round.
@Suite("Undo: random merges of relationships, insertions, deletions and attributes against the documented rules")
struct UndoMergeReferenceTests {
    static let environment = ProcessInfo.processInfo.environment
    static let rounds = environment["QUEUEDATA_UNDO_MERGEREF_ROUNDS"].flatMap(Int.init) ?? 10
    static let seed = environment["QUEUEDATA_UNDO_MERGEREF_SEED"].flatMap(UInt64.init) ?? 11
    static let onlyRound = environment["QUEUEDATA_UNDO_MERGEREF_ROUND"].flatMap(Int.init)

    @Test(
        "one context: merged values win, undos keep them, links agree, saves store what the context shows",
        arguments: [LifecycleStore.memory, .journal])
    func singleContext(_ store: LifecycleStore) throws {
        let rounds = scaledRounds(Self.rounds) / (store == .memory ? 1 : 2)
        for round in 0..<max(rounds, 1) where Self.onlyRound == nil || Self.onlyRound == round {
            try Self.runSingle(store, seed: Self.seed, round: round)
        }
    }

    @Test(
        "a parent merging under a child that pushes: links agree, saves store what the parent shows",
        arguments: [LifecycleStore.memory, .journal])
    func parentAndChild(_ store: LifecycleStore) throws {
        let rounds = scaledRounds(Self.rounds) / (store == .memory ? 1 : 2)
        for round in 0..<max(rounds, 1) where Self.onlyRound == nil || Self.onlyRound == round {
            try Self.runNested(store, seed: Self.seed, round: round)
        }
    }

    // MARK: The attribute reference

    /// Persistent attributes (uid aside) by uid, then by name, as text.
    typealias Values = [String: [String: String]]

    /// One attribute change of a recorded group.
    struct Change {
        let uid: String
        let attribute: String
        let old: String
        let new: String
        /// The merge clock when it was recorded.
        let stamp: Int
        /// The committed value under it (`nil`: the object had no committed row here).
        let base: String?
        /// Whether `base` is known (the object was inserted here, so its snapshot is not modelled).
        let baseKnown: Bool
    }

    struct Reference {
        var local: Values = [:]
        var committed: Values = [:]
        /// Objects whose values the rules leave open: taken from the context at the next check.
        var open: Set<String> = []
        var mergedAt: [String: [String: Int]] = [:]
        var clock = 0
        var undo: [[Change]] = []
        var redo: [[Change]] = []

        /// Applies `group` backward (an undo, or a redo of the changes an undo made), given the
        /// objects live before and after and those inserted (unsaved) before.
        mutating func apply(
            _ group: [Change], liveBefore: Set<String>, liveAfter: Set<String>, inserted: Set<String>
        ) -> [Change] {
            var done: [Change] = []
            for change in group.reversed() {
                let uid = change.uid
                guard liveBefore.contains(uid), liveAfter.contains(uid), !open.contains(uid),
                    let current = local[uid]?[change.attribute]
                else {
                    open.insert(uid)
                    continue
                }
                guard current == change.new else { continue }
                var target = change.old
                if let mergedAt = mergedAt[uid]?[change.attribute], mergedAt > change.stamp {
                    guard change.baseKnown, !inserted.contains(uid) else {
                        open.insert(uid)
                        continue
                    }
                    if let base = change.base, base == change.old, let now = committed[uid]?[change.attribute] {
                        target = now
                    }
                }
                guard target != current else { continue }
                local[uid]![change.attribute] = target
                let saved = !inserted.contains(uid) && committed[uid] != nil
                done.append(
                    Change(
                        uid: uid, attribute: change.attribute, old: current, new: target, stamp: clock,
                        base: saved ? committed[uid]?[change.attribute] : nil, baseKnown: !inserted.contains(uid)))
            }
            return done
        }

        /// Another context's save committed `after` over `before`: the objects live here (not
        /// inserted) take the new committed value of every attribute they have not changed.
        mutating func merge(
            _ after: Values, live: Set<String>, inserted: Set<String>, pendingDeletion: Set<String>
        ) {
            clock += 1
            for (uid, before) in committed {
                guard let now = after[uid] else { continue }
                for (attribute, old) in before where now[attribute] != old {
                    mergedAt[uid, default: [:]][attribute] = clock
                    if pendingDeletion.contains(uid) || !live.contains(uid) {
                        open.insert(uid)
                    } else if live.contains(uid), !inserted.contains(uid), local[uid]?[attribute] == old {
                        local[uid]![attribute] = now[attribute]
                    }
                }
            }
            committed = after
        }

        /// Differences between the context's live objects and the reference; objects not known
        /// yet (fetched, brought back) or left open are taken as they are.
        mutating func check(_ actual: Values) -> [String] {
            var problems: [String] = []
            for (uid, values) in actual {
                if let expected = local[uid], !open.contains(uid) {
                    for (attribute, value) in values where expected[attribute] != value {
                        problems.append("\(uid).\(attribute) = \(value), expected \(expected[attribute] ?? "-")")
                    }
                }
                local[uid] = values
                open.remove(uid)
            }
            return problems
        }
    }

    // MARK: Reading

    /// The persistent attributes of the context's live objects (on its queue).
    static func liveValues(_ context: ManagedObjectContext) -> Values {
        var result: Values = [:]
        for object in context.registeredObjects where !object.isDeleted {
            result[UndoRandomTests.uid(object)] = values(of: object)
        }
        return result
    }

    static func values(of object: ManagedObject) -> [String: String] {
        var values: [String: String] = [:]
        for attribute in object.entity.attributes where attribute.name != "uid" {
            values[attribute.name] = "\(object.value(forKey: attribute.name))"
        }
        return values
    }

    /// What a fresh context fetches, as ``Values``.
    static func storedValues(_ manager: ContextManager) throws -> Values {
        let reader = try makeContext(manager, "reader")
        return try reader.performAndWait {
            try UndoMergeRandomTests.registerEverything(reader)
            var result: Values = [:]
            for object in reader.registeredObjects {
                result[UndoRandomTests.uid(object)] = values(of: object)
            }
            return result
        }
    }

    /// Links of live objects whose other side does not point back (on the context's queue).
    static func linkProblems(_ context: ManagedObjectContext) -> [String] {
        var problems: [String] = []
        for object in context.registeredObjects where !object.isDeleted {
            for relationship in object.entity.relationships {
                for target in object.relatedObjects(forKey: relationship.name) where !target.isDeleted {
                    if !target.relatedObjects(forKey: relationship.inverseName).contains(where: { $0 === object }) {
                        problems.append(
                            "\(UndoRandomTests.uid(object)).\(relationship.name) has \(UndoRandomTests.uid(target)), "
                                + "whose \(relationship.inverseName) does not point back")
                    }
                }
            }
        }
        return problems
    }

    /// After a save of `context` (to the store): a fresh context fetches exactly what it shows,
    /// and every stored link has its inverse.
    static func expectStoredAsShown(_ manager: ContextManager, _ context: ManagedObjectContext, _ comment: String)
        throws
    {
        let shown = try context.performAndWait {
            try UndoMergeRandomTests.registerEverything(context)
            return UndoRandomTests.withoutTransients(UndoRandomTests.snapshot(context, projected: true))
        }
        UndoRandomTests.expectEqual(try UndoRandomTests.storedSignature(manager), shown, "stored ≠ shown, \(comment)")
        try UndoMergeRandomTests.expectInStep(manager, comment)
    }

    /// Another context's random edits (one to three), saved: a fresh context each time, so that
    /// it sees the store as it is.
    static func otherSave(
        _ manager: ContextManager, _ random: inout SeededGenerator, _ counter: inout Int
    ) throws -> String {
        let other = try makeContext(manager, "other")
        return try other.performAndWait {
            try UndoMergeRandomTests.registerEverything(other)
            let steps = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                UndoRandomTests.randomStep(other, &random, &counter)
            }
            try other.save()
            return "other(\(steps.joined(separator: ",")))"
        }
    }

    // MARK: One context

    static func runSingle(_ store: LifecycleStore, seed: UInt64, round: Int) throws {
        var random = SeededGenerator(seed: seed &* 6_151 &+ UInt64(round))
        let directory = TemporaryDirectory("undo-merge-reference-\(store)")
        let manager = undoModelManager(store, directory)
        defer { manager.close() }
        let mine = try makeRetainingContext(manager, "mine")
        var counter = 0
        var log: [String] = []
        var reference = Reference()
        try mine.performAndWait {
            for _ in 0..<10 {
                UndoRandomTests.randomStep(mine, &random, &counter)
            }
            try mine.save()
            mine.mergePolicy = .mergeByPropertyObjectTrump
            mine.undoManager = UndoManager()
        }
        reference.committed = try storedValues(manager)
        /// The live, inserted and pending-deletion uids of `mine` (on its queue).
        func states() -> (live: Set<String>, inserted: Set<String>, deleted: Set<String>) {
            var live = Set<String>()
            var inserted = Set<String>()
            var deleted = Set<String>()
            for object in mine.registeredObjects {
                let uid = UndoRandomTests.uid(object)
                if object.isDeleted {
                    deleted.insert(uid)
                } else {
                    live.insert(uid)
                    if object.isInserted {
                        inserted.insert(uid)
                    }
                }
            }
            return (live, inserted, deleted)
        }
        func check(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let (actual, links) = mine.performAndWait { (liveValues(mine), linkProblems(mine)) }
            let problems = reference.check(actual) + links
            #expect(
                problems.isEmpty,
                "round \(round), \(what), after \(log.joined(separator: " ")): \(problems.joined(separator: "; "))",
                sourceLocation: sourceLocation)
        }
        do {
            for _ in 0..<Int.random(in: 25...45, using: &random) {
                check("before the next step")
                switch random.next() % 12 {
                case 0..<4:
                    let (steps, changes, recorded, after) = mine.performAndWait {
                        let before = liveValues(mine)
                        let inserted = states().inserted
                        let count = mine.undoManager!.undoStack.count
                        let steps = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                            UndoRandomTests.randomStep(mine, &random, &counter)
                        }
                        mine.processPendingChanges()
                        let after = liveValues(mine)
                        var changes: [Change] = []
                        for (uid, old) in before {
                            guard let new = after[uid] else { continue }
                            for (attribute, value) in old.sorted(by: { $0.key < $1.key }) where new[attribute] != value
                            {
                                let saved = !inserted.contains(uid) && reference.committed[uid] != nil
                                changes.append(
                                    Change(
                                        uid: uid, attribute: attribute, old: value, new: new[attribute]!,
                                        stamp: reference.clock,
                                        base: saved ? reference.committed[uid]?[attribute] : nil,
                                        baseKnown: !inserted.contains(uid)))
                            }
                        }
                        return (steps, changes, count, after)
                    }
                    log.append("mine(\(steps.joined(separator: ",")))")
                    let count = mine.performAndWait { mine.undoManager!.undoStack.count }
                    if count > recorded {
                        reference.undo.append(changes)
                        reference.redo.removeAll()
                    } else {
                        #expect(changes.isEmpty, "round \(round): attribute changes without a group")
                    }
                    for (uid, values) in after {
                        reference.local[uid] = values
                        reference.open.remove(uid)
                    }
                case 4, 5, 6:
                    let direction = random.next() % 3 == 0 ? "redo" : "undo"
                    let (applied, before, after, inserted) = mine.performAndWait {
                        let (before, inserted, _) = states()
                        let applied = (direction == "undo" ? mine.undo() : mine.redo()).didApply
                        return (applied, before, states().live, inserted)
                    }
                    log.append(applied ? direction : "\(direction)(none)")
                    if direction == "undo" {
                        #expect(applied == !reference.undo.isEmpty, "round \(round): undo applied \(applied)")
                        if let group = reference.undo.popLast() {
                            let done = reference.apply(group, liveBefore: before, liveAfter: after, inserted: inserted)
                            reference.redo.append(done)
                        }
                    } else {
                        #expect(applied == !reference.redo.isEmpty, "round \(round): redo applied \(applied)")
                        if let group = reference.redo.popLast() {
                            let done = reference.apply(group, liveBefore: before, liveAfter: after, inserted: inserted)
                            reference.undo.append(done)
                        }
                    }
                case 7, 8:
                    log.append("mine.save")
                    try mine.performAndWait { try mine.save() }
                    reference.committed = try storedValues(manager)
                    try expectStoredAsShown(manager, mine, "round \(round), after \(log.joined(separator: " "))")
                default:
                    let (live, inserted, deleted) = mine.performAndWait { states() }
                    log.append(try otherSave(manager, &random, &counter))
                    flush(mine)
                    reference.merge(try storedValues(manager), live: live, inserted: inserted, pendingDeletion: deleted)
                }
            }
            check("at the end")
            log.append("undo all+save")
            try mine.performAndWait {
                while mine.undoManager!.canUndo {
                    mine.undo()
                }
                try mine.save()
            }
            try expectStoredAsShown(manager, mine, "round \(round), after \(log.joined(separator: " "))")
        } catch {
            let failures = (error as? ValidationError)?.failures.map { "\($0)" } ?? []
            Issue.record("round \(round), after \(log.joined(separator: " ")): \(error) \(failures)")
        }
    }

    // MARK: A parent and its child

    static func runNested(_ store: LifecycleStore, seed: UInt64, round: Int) throws {
        var random = SeededGenerator(seed: seed &* 7_393 &+ UInt64(round))
        let directory = TemporaryDirectory("undo-merge-reference-nested-\(store)")
        let manager = undoModelManager(store, directory)
        defer { manager.close() }
        let parent = try makeRetainingContext(manager, "parent")
        var counter = 0
        var log: [String] = []
        try parent.performAndWait {
            for _ in 0..<10 {
                UndoRandomTests.randomStep(parent, &random, &counter)
            }
            try parent.save()
            parent.mergePolicy = .mergeByPropertyObjectTrump
            parent.undoManager = UndoManager()
        }
        func newChild() -> ManagedObjectContext {
            let child = UndoNestedRegressionTests.child(of: parent)
            child.performAndWait { child.mergePolicy = .mergeByPropertyObjectTrump }
            return child
        }
        var child = newChild()
        func check(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
            // The child's objects keep what they were when it read them, while the parent changes
            // under it (documented): its links are checked only when it has just read everything.
            let problems = parent.performAndWait { linkProblems(parent).map { "parent: \($0)" } }
            #expect(
                problems.isEmpty,
                "round \(round), \(what), after \(log.joined(separator: " ")): \(problems.joined(separator: "; "))",
                sourceLocation: sourceLocation)
        }
        do {
            for _ in 0..<Int.random(in: 25...45, using: &random) {
                check("before the next step")
                switch random.next() % 16 {
                case 0..<3:
                    let steps = try child.performAndWait {
                        try UndoMergeRandomTests.registerEverything(child)
                        return (0..<Int.random(in: 1...3, using: &random)).map { _ in
                            UndoRandomTests.randomStep(child, &random, &counter)
                        }
                    }
                    log.append("child(\(steps.joined(separator: ",")))")
                case 3:
                    let undone = child.performAndWait { child.undo().didApply }
                    log.append(undone ? "child.undo" : "child.undo(none)")
                case 4:
                    let redone = child.performAndWait { child.redo().didApply }
                    log.append(redone ? "child.redo" : "child.redo(none)")
                case 5, 6:
                    log.append("child.push")
                    try child.performAndWait { try child.save() }
                case 7:
                    log.append("new child")
                    child = newChild()
                    let problems = try child.performAndWait {
                        try UndoMergeRandomTests.registerEverything(child)
                        return linkProblems(child)
                    }
                    #expect(problems.isEmpty, "round \(round), a new child: \(problems.joined(separator: "; "))")
                case 8:
                    let steps = parent.performAndWait {
                        (0..<Int.random(in: 1...2, using: &random)).map { _ in
                            UndoRandomTests.randomStep(parent, &random, &counter)
                        }
                    }
                    log.append("parent(\(steps.joined(separator: ",")))")
                case 9, 10:
                    let direction = random.next() % 3 == 0 ? "redo" : "undo"
                    let applied = parent.performAndWait {
                        (direction == "undo" ? parent.undo() : parent.redo()).didApply
                    }
                    log.append("parent.\(direction)\(applied ? "" : "(none)")")
                case 11, 12:
                    log.append("parent.save")
                    do {
                        try parent.performAndWait { try parent.save() }
                    } catch let error as ValidationError
                        where error.failures.allSatisfy({ "\($0)".contains("deleted by another save") })
                    {
                        // A child that read an object before the parent merged another context's
                        // deletion of it pushed a link to it: the save refuses it, with the typed
                        // error. Start again from what is stored.
                        log.append("(refused: a link to a deleted object)")
                        parent.performAndWait { parent.rollback() }
                        child = newChild()
                        continue
                    }
                    try expectStoredAsShown(manager, parent, "round \(round), after \(log.joined(separator: " "))")
                default:
                    log.append(try otherSave(manager, &random, &counter))
                    flush(parent)
                }
            }
            check("at the end")
            log.append("child.undo all+push, parent.undo all+save")
            try child.performAndWait {
                while child.undoManager!.canUndo {
                    child.undo()
                }
                try child.save()
            }
            try parent.performAndWait {
                while parent.undoManager!.canUndo {
                    parent.undo()
                }
                try parent.save()
            }
            try expectStoredAsShown(manager, parent, "round \(round), after \(log.joined(separator: " "))")
        } catch {
            let failures = (error as? ValidationError)?.failures.map { "\($0)" } ?? []
            Issue.record("round \(round), after \(log.joined(separator: " ")): \(error) \(failures)")
        }
    }
}
