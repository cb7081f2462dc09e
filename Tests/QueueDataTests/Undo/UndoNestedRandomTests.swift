import Foundation
import Testing

@testable import QueueData

// A kiln denies its deletion while it holds pots; a pot nullifies its kiln.

final class Kiln: ManagedObject {
    @Attribute var uid: String = ""
    @Attribute var name: String = ""
    @Relationship(inverse: "kiln", deleteRule: .deny) var pots: Set<Pot>
}

final class Pot: ManagedObject {
    @Attribute var uid: String = ""
    @Attribute var glaze: Int = 0
    @Relationship(inverse: "pots") var kiln: Kiln?
}

/// The undo model with a deny rule: kilns and pots next to albums, sketches, layers and marks.
let undoDenyModel = ManagedObjectModel([Album.self, Sketch.self, Layer.self, Mark.self, Kiln.self, Pot.self])

/// Random edits, undos, redos, rollbacks, refreshes, pushes and saves in a context, its child and
/// (optionally) its grandchild, each with its own undo manager, against the brute-force reference
/// of `UndoChildRandomTests`: one list of projected snapshots per level. A push makes the level
/// above see the pushing level's snapshot, as one group; a change of any other kind at a level
/// starts new contexts below it, which read it. Deletions of kilns that still hold pots make
/// saves and pushes fail (a ``ValidationError``, nothing changes). With merges, other contexts
/// save new texts of committed marks (which no level changes once inserted), which the top
/// context merges: every level's undos, redos and pushes must keep the merged text, so marks'
/// texts are compared with the merged ones instead of the snapshots. `QUEUEDATA_UNDO_NESTED_ROUNDS`
/// and `QUEUEDATA_UNDO_NESTED_SEED` run more or other rounds; `QUEUEDATA_UNDO_NESTED_ROUND` one.
@Suite("Undo: random edits in nested contexts, with deny rules and merges")
struct UndoNestedRandomTests {
    static let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_NESTED_ROUNDS"].flatMap(Int.init) ?? 12
    static let seed = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_NESTED_SEED"].flatMap(UInt64.init) ?? 5
    static let onlyRound = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_NESTED_ROUND"].flatMap(Int.init)
    static let entities = ["Album", "Sketch", "Layer", "Mark", "Kiln", "Pot"]

    @Test(
        "a grandchild's, a child's and a parent's undos, redos, pushes and saves give back each one's snapshots",
        arguments: [LifecycleStore.memory, .journal])
    func grandchildRounds(_ store: LifecycleStore) throws {
        let rounds = scaledRounds(Self.rounds) / (store == .memory ? 1 : 2)
        for round in 0..<max(rounds, 1) where Self.onlyRound == nil || Self.onlyRound == round {
            try Self.runRound(store, round, levels: 3, merges: false)
        }
    }

    @Test(
        "a parent merging other contexts' saves under a child: undos and pushes keep what was merged",
        arguments: [LifecycleStore.memory, .journal])
    func mergeRounds(_ store: LifecycleStore) throws {
        let rounds = scaledRounds(Self.rounds) / (store == .memory ? 1 : 2)
        for round in 0..<max(rounds, 1) where Self.onlyRound == nil || Self.onlyRound == round {
            try Self.runRound(store, round, levels: 2, merges: true)
        }
    }

    // MARK: Steps

    /// One random edit: of kilns and pots one time in three, else `UndoRandomTests.randomStep`.
    static func randomStep(_ context: ManagedObjectContext, _ random: inout SeededGenerator, _ counter: inout Int)
        -> String
    {
        guard random.next() % 3 == 0 else { return UndoRandomTests.randomStep(context, &random, &counter) }
        func live<Object: ManagedObject>(_ type: Object.Type) -> [Object] {
            context.registeredObjects.compactMap { $0 as? Object }.filter { !$0.isDeleted }
                .sorted { UndoRandomTests.uid($0) < UndoRandomTests.uid($1) }
        }
        let kilns = live(Kiln.self)
        let pots = live(Pot.self)
        switch random.next() % 8 {
        case 0:
            counter += 1
            let kiln = context.insert(Kiln.self)
            kiln.uid = "k\(counter)"
            kiln.name = "kiln \(random.next() % 100)"
            return "+\(kiln.uid)"
        case 1:
            counter += 1
            let pot = context.insert(Pot.self)
            pot.uid = "p\(counter)"
            pot.glaze = Int(random.next() % 10)
            pot.kiln = kilns.randomElement(using: &random)
            return "+\(pot.uid)(kiln \(pot.kiln?.uid ?? "-"))"
        case 2:
            guard let pot = pots.randomElement(using: &random) else { return "-" }
            pot.kiln = random.next() % 3 == 0 ? nil : kilns.randomElement(using: &random)
            return "\(pot.uid).kiln=\(pot.kiln?.uid ?? "-")"
        case 3:
            guard let pot = pots.randomElement(using: &random) else { return "-" }
            pot.glaze += 1
            return "\(pot.uid).glaze"
        case 4:
            guard let kiln = kilns.randomElement(using: &random) else { return "-" }
            kiln.name = "renamed \(random.next() % 100)"
            return "\(kiln.uid).name"
        case 5:
            // A link to a kiln pending deletion: the deny rule keeps it, for the save to refuse.
            let deleted = context.registeredObjects.compactMap { $0 as? Kiln }.filter(\.isDeleted)
                .sorted { $0.uid < $1.uid }
            guard let kiln = deleted.randomElement(using: &random), let pot = pots.randomElement(using: &random)
            else { return "-" }
            pot.kiln = kiln
            return "\(pot.uid).kiln=\(kiln.uid)(deleted)"
        default:
            let all: [ManagedObject] = kilns + pots
            guard let victim = all.randomElement(using: &random) else { return "-" }
            context.delete(victim)
            return "×\(UndoRandomTests.uid(victim))"
        }
    }

    /// Moves every pot out of the kilns pending deletion in `context` (on its queue).
    ///
    /// - Returns: How many it moved.
    @discardableResult
    static func clearDenied(_ context: ManagedObjectContext) -> Int {
        var moved = 0
        for kiln in context.registeredObjects.compactMap({ $0 as? Kiln }) where kiln.isDeleted {
            for pot in kiln.pots where !pot.isDeleted {
                pot.kiln = nil
                moved += 1
            }
        }
        return moved
    }

    /// Whether a save of `context` must be refused (a kiln pending deletion holds a pot that is
    /// not) and whether it may be (one holds any pot).
    static func denial(_ context: ManagedObjectContext) -> (must: Bool, may: Bool) {
        let kilns = context.registeredObjects.compactMap { $0 as? Kiln }.filter(\.isDeleted)
        return (kilns.contains { $0.pots.contains { !$0.isDeleted } }, kilns.contains { !$0.pots.isEmpty })
    }

    // MARK: States

    static func fetchAll(_ context: ManagedObjectContext) throws -> [ManagedObject] {
        try entities.flatMap { try context.fetch(FetchRequest<ManagedObject>(entityName: $0)) }
    }

    /// What a save of `context` would leave, after reading every object it can see.
    static func view(_ context: ManagedObjectContext) throws -> [String: String] {
        try context.performAndWait {
            _ = try fetchAll(context)
            return UndoRandomTests.withoutTransients(UndoRandomTests.snapshot(context, projected: true))
        }
    }

    /// What a fresh context of `manager` fetches.
    static func stored(_ manager: ContextManager) throws -> [String: String] {
        let reader = try makeContext(manager, "reader")
        return try reader.performAndWait {
            var result: [String: String] = [:]
            for object in try fetchAll(reader) {
                result[UndoRandomTests.uid(object)] = object.entity.name + UndoRandomTests.describe(object)
            }
            return result
        }
    }

    /// The texts of `context`'s live marks by uid.
    static func markTexts(_ context: ManagedObjectContext) -> [String: String] {
        context.performAndWait {
            Dictionary(
                uniqueKeysWithValues: context.registeredObjects.compactMap { $0 as? Mark }.filter { !$0.isDeleted }
                    .map { ($0.uid, $0.text) })
        }
    }

    /// `snapshot` with the texts of the marks `masked` names left out.
    static func masking(_ snapshot: [String: String], _ masked: Set<String>) -> [String: String] {
        guard !masked.isEmpty else { return snapshot }
        var result = snapshot
        for uid in masked {
            guard let line = result[uid], line.hasPrefix("Mark"), let start = line.range(of: " text="),
                let end = line.range(of: " sketches=[", range: start.upperBound..<line.endIndex)
            else { continue }
            result[uid] = line.replacingCharacters(in: start.upperBound..<end.lowerBound, with: "(merged)")
        }
        return result
    }

    // MARK: Rounds

    static func runRound(_ store: LifecycleStore, _ round: Int, levels: Int, merges: Bool) throws {
        var random = SeededGenerator(
            seed: seed &* 1_000 &+ UInt64(round) &* 17 &+ UInt64(LifecycleStore.allCases.firstIndex(of: store)!)
                &+ (merges ? 5 : 0))
        let directory = TemporaryDirectory("undo-nested-random-\(store)")
        let manager = store.manager(directory, model: undoDenyModel)
        defer { manager.close() }
        let top = try makeRetainingContext(manager, "undo-nested-top")
        var counter = 0
        try top.performAndWait {
            for _ in 0..<10 {
                _ = randomStep(top, &random, &counter)
            }
            clearDenied(top)
            try top.save()
            top.mergePolicy = .mergeByPropertyObjectTrump
            top.undoManager = UndoManager()
        }
        var log: [String] = []
        // Marks whose text another context saved, and the text it saved.
        var merged: [String: String] = [:]
        func expectEqual(
            _ actual: [String: String],
            _ expected: [String: String],
            _ what: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let masked = Set(merged.keys)
            UndoRandomTests.expectEqual(
                masking(actual, masked), masking(expected, masked),
                "\(what), \(store) round \(round), after \(log.joined(separator: " "))",
                sourceLocation: sourceLocation)
        }
        func expectMergedTexts(_ context: ManagedObjectContext, _ what: String) {
            let texts = markTexts(context)
            let wrong = merged.filter { texts[$0.key] != nil && texts[$0.key] != $0.value }
                .map { "\($0.key): \(texts[$0.key]!) ≠ merged \($0.value)" }.sorted()
            #expect(
                wrong.isEmpty,
                "\(what), \(store) round \(round), after \(log.joined(separator: " ")): \(wrong.joined(separator: "; "))"
            )
        }
        var contexts = [top]
        var states = [[try view(top)]]
        var positions = [0]
        // What each level read from, or last pushed into, the level above.
        var pushed = [states[0][0]]
        func renew(from level: Int) throws {
            contexts.removeSubrange(level...)
            states.removeSubrange(level...)
            positions.removeSubrange(level...)
            pushed.removeSubrange(level...)
            for index in level..<levels {
                let parent = contexts[index - 1]
                let child = parent.performAndWait { parent.newChildContext() }
                child.performAndWait {
                    child.retainsRegisteredObjects = true
                    child.mergePolicy = .mergeByPropertyObjectTrump
                    child.undoManager = UndoManager()
                }
                contexts.append(child)
                let state = try view(child)
                states.append([state])
                positions.append(0)
                pushed.append(state)
                expectEqual(
                    state, states[index - 1][positions[index - 1]], "a new context's view of level \(index - 1)")
                if merges {
                    expectMergedTexts(child, "a new context at level \(index)")
                }
            }
        }
        try renew(from: 1)
        func undoCount(_ level: Int) -> Int {
            contexts[level].performAndWait { contexts[level].undoManager!.undoStack.count }
        }
        func recorded(_ level: Int, _ before: Int) throws {
            if undoCount(level) > before {
                #expect(undoCount(level) == before + 1, "one group per block at level \(level)")
                states[level].removeSubrange((positions[level] + 1)...)
                states[level].append(try view(contexts[level]))
                positions[level] += 1
            } else {
                expectEqual(try view(contexts[level]), states[level][positions[level]], "level \(level), unchanged")
            }
        }
        /// Saves level `level` (into the store or its parent): `false` if a deny rule refused.
        func save(_ level: Int) throws -> Bool {
            let context = contexts[level]
            let parentBefore = level > 0 ? undoCount(level - 1) : 0
            let (outcome, denial) = context.performAndWait { () -> (Result<Void, any Error>, (must: Bool, may: Bool)) in
                let denial = Self.denial(context)
                return (Result { try context.save() }, denial)
            }
            switch outcome {
            case .failure(let error as ValidationError):
                log.append("L\(level).save(denied)")
                #expect(denial.may, "a refused save with no kiln in the way: \(error), after \(log)")
                expectEqual(try view(context), states[level][positions[level]], "level \(level), after a refused save")
                if level > 0 {
                    #expect(undoCount(level - 1) == parentBefore, "a refused push records nothing")
                    expectEqual(
                        try view(contexts[level - 1]), states[level - 1][positions[level - 1]],
                        "level \(level - 1), after a refused push")
                } else {
                    expectEqual(try stored(manager), pushed[0], "stored, after a refused save")
                }
                return false
            case .failure(let error):
                throw error
            case .success:
                log.append("L\(level).save")
                #expect(!denial.must, "a save that a deny rule should have refused, after \(log)")
                let after = try view(context)
                expectEqual(after, states[level][positions[level]], "level \(level), after its save")
                if level == 0 {
                    pushed[0] = after
                    expectEqual(try stored(manager), after, "stored, after the top's save")
                } else {
                    pushed[level] = after
                    let parent = contexts[level - 1]
                    let fresh = parent.performAndWait { parent.newChildContext() }
                    expectEqual(try view(fresh), after, "a fresh child's view of level \(level - 1), after a push")
                    try recorded(level - 1, parentBefore)
                    expectEqual(states[level - 1][positions[level - 1]], after, "level \(level - 1), after a push")
                }
                return true
            }
        }
        do {
            for _ in 0..<Int.random(in: 30...60, using: &random) {
                // The deepest level most often.
                let level = [0, 1, 1, 2, 2, 2, 2][Int(random.next() % 7)] % levels
                let context = contexts[level]
                switch random.next() % (merges ? 22 : 20) {
                case 0..<8:
                    let before = undoCount(level)
                    let steps = try context.performAndWait {
                        _ = try fetchAll(context)
                        return (0..<Int.random(in: 1...3, using: &random)).map { _ in
                            randomStep(context, &random, &counter)
                        }
                    }
                    log.append("L\(level)(\(steps.joined(separator: ",")))")
                    try recorded(level, before)
                    try renew(from: level + 1)
                case 8..<11:
                    log.append("L\(level).undo")
                    let redoable = context.performAndWait {
                        let before = context.undoManager!.redoStack.count
                        _ = context.undo()
                        return context.undoManager!.redoStack.count > before
                    }
                    if positions[level] > 0 {
                        // An undo that found nothing left to change (its changes were to an object
                        // this context's save deleted since, whose rule left the references out)
                        // leaves no group to redo: a redo then redoes the next one.
                        if !redoable {
                            states[level].remove(at: positions[level])
                        }
                        positions[level] -= 1
                    }
                    expectEqual(try view(context), states[level][positions[level]], "level \(level), after an undo")
                    try renew(from: level + 1)
                case 11, 12:
                    log.append("L\(level).redo")
                    let undoable = context.performAndWait {
                        let before = context.undoManager!.undoStack.count
                        _ = context.redo()
                        return context.undoManager!.undoStack.count > before
                    }
                    if positions[level] < states[level].count - 1 {
                        // The same for a redo that found nothing to change.
                        if undoable {
                            positions[level] += 1
                        } else {
                            states[level].remove(at: positions[level] + 1)
                        }
                    }
                    expectEqual(try view(context), states[level][positions[level]], "level \(level), after a redo")
                    try renew(from: level + 1)
                case 13..<16:
                    _ = try save(level)
                case 16:
                    log.append("L\(level).rollback")
                    context.performAndWait { context.rollback() }
                    states[level] = [try view(context)]
                    positions[level] = 0
                    expectEqual(states[level][0], pushed[level], "level \(level), after a rollback")
                    try renew(from: level + 1)
                case 17:
                    log.append("L\(level).moveOutOfDeniedKilns")
                    let before = undoCount(level)
                    try context.performAndWait {
                        _ = try fetchAll(context)
                        clearDenied(context)
                    }
                    try recorded(level, before)
                    try renew(from: level + 1)
                case 18, 19:
                    let merge = random.next() % 2 == 0
                    let refreshed = context.performAndWait {
                        context.registeredObjects.filter { merge || !$0.hasChanges }.sorted {
                            UndoRandomTests.uid($0) < UndoRandomTests.uid($1)
                        }
                        .filter { _ in random.next() % 3 == 0 }
                        .map { object in
                            context.refresh(object, mergeChanges: merge)
                            return UndoRandomTests.uid(object)
                        }
                    }
                    log.append("L\(level).refresh(\(merge), \(refreshed))")
                    expectEqual(try view(context), states[level][positions[level]], "level \(level), after a refresh")
                default:
                    // Another context saves new texts of committed marks; the top merges them.
                    let other = try makeContext(manager, "other")
                    let changed = try other.performAndWait {
                        let marks = try other.fetch(FetchRequest<Mark>()).sorted { $0.uid < $1.uid }
                            .filter { _ in random.next() % 3 == 0 }
                        for mark in marks {
                            counter += 1
                            mark.text = "other \(counter)"
                        }
                        try other.save()
                        return marks.map { ($0.uid, $0.text) }
                    }
                    flush(top)
                    for (uid, text) in changed {
                        merged[uid] = text
                    }
                    log.append("other(\(changed.map { "\($0.0)=\($0.1)" }.joined(separator: ",")))")
                    expectEqual(try view(top), states[0][positions[0]], "the top, after a merge")
                }
                if merges {
                    expectMergedTexts(top, "the top")
                }
            }
            // Move pots out of denied kilns and push everything up, then save: the store holds
            // the top's view (and the deepest level's, when no level had anything to move).
            var moved = 0
            for level in stride(from: levels - 1, through: 0, by: -1) {
                let context = contexts[level]
                moved += try context.performAndWait {
                    _ = try fetchAll(context)
                    return clearDenied(context)
                }
                log.append("end L\(level)")
                let deepest = try view(contexts[levels - 1])
                let saved = try save(level)
                #expect(saved, "a save with every kiln out of the way")
                if moved == 0 {
                    expectEqual(try view(context), deepest, "level \(level), at the end")
                }
            }
            expectEqual(try stored(manager), try view(top), "stored at the end")
            if merges {
                let reader = try makeContext(manager, "reader")
                let texts = try reader.performAndWait {
                    Dictionary(uniqueKeysWithValues: try reader.fetch(FetchRequest<Mark>()).map { ($0.uid, $0.text) })
                }
                let wrong = merged.filter { texts[$0.key] != nil && texts[$0.key] != $0.value }
                #expect(wrong.isEmpty, "stored texts at the end, \(store) round \(round): \(wrong)")
            }
        } catch {
            let failures = (error as? ValidationError)?.failures.map { "\($0)" } ?? []
            Issue.record("\(store) round \(round), after \(log.joined(separator: " ")): \(error) \(failures)")
        }
    }
}
