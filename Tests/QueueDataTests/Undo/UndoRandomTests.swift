import Foundation
import Testing

@testable import QueueData

/// Random edits, undos, redos (and saves) against a brute-force reference: a snapshot of the
/// object graph after every recorded group. An undo must give back the snapshot before the
/// group, a redo the one after it, whatever came in between; undoing every group and saving
/// stores the starting state under the same IDs.
///
/// Without saves the snapshots are of everything the context holds (inserted and deleted
/// objects marked as such, transient attributes included). With saves they are of what a save
/// would leave, computed here independently of the library (pending deletions, what their
/// cascades reach, and references to those removed), so that a snapshot taken before a save
/// stays comparable after it; each save is checked against a fresh context's fetch.
/// `QUEUEDATA_UNDO_ROUNDS` and `QUEUEDATA_UNDO_SEED` run more or other rounds.
@Suite("Undo: random edit sequences")
struct UndoRandomTests {
    static let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_ROUNDS"].flatMap(Int.init) ?? 16
    static let seed = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_SEED"].flatMap(UInt64.init) ?? 7
    /// `QUEUEDATA_UNDO_ROUND`: run only this round (to study a failure).
    static let onlyRound = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_ROUND"].flatMap(Int.init)

    @Test(
        "every undo and redo gives back the graph's snapshot at that point; undoing all and saving stores the start",
        arguments: LifecycleStore.allCases, [false, true])
    func randomRounds(_ store: LifecycleStore, _ savesBetween: Bool) throws {
        try Self.runRounds(store, savesBetween: savesBetween)
    }

    static func runRounds(_ store: LifecycleStore, savesBetween: Bool) throws {
        let rounds = Self.rounds / (store == .memory ? 1 : 2)
        for round in 0..<max(rounds, 1) where onlyRound == nil || onlyRound == round {
            var random = SeededGenerator(
                seed: Self.seed &* 1_000 &+ UInt64(round) &* 7 &+ (savesBetween ? 3 : 0)
                    &+ UInt64(LifecycleStore.allCases.firstIndex(of: store)!))
            let directory = TemporaryDirectory("undo-random-\(store)")
            let manager = undoModelManager(store, directory)
            let context = try makeRetainingContext(manager, "undo-random")
            var counter = 0
            try context.performAndWait {
                for _ in 0..<8 {
                    Self.randomStep(context, &random, &counter)
                }
                try context.save()
                context.undoManager = UndoManager()
            }
            let snapshot = { context.performAndWait { Self.snapshot(context, projected: savesBetween) } }
            let stored = try Self.storedSignature(manager)
            #expect(
                stored == Self.withoutTransients(context.performAndWait { Self.snapshot(context, projected: true) }))
            // The reference: the snapshot after each group recorded, and where undo stands.
            var states = [snapshot()]
            var position = 0
            var log: [String] = []
            func compare(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
                Self.expectEqual(
                    snapshot(), states[position], "round \(round), after \(log.joined(separator: " "))",
                    sourceLocation: sourceLocation)
            }
            func recorded(_ before: Int) {
                let count = context.performAndWait { context.undoManager!.undoStack.count }
                if count > before {
                    #expect(count == before + 1, "one group per block")
                    states.removeSubrange((position + 1)...)
                    states.append(snapshot())
                    position += 1
                } else {
                    compare("an edit recording nothing")
                }
            }
            do {
                for _ in 0..<Int.random(in: 20...40, using: &random) {
                    let before = context.performAndWait { context.undoManager!.undoStack.count }
                    switch random.next() % 20 {
                    case 0..<9:
                        let steps = try context.performAndWait {
                            var steps: [String] = []
                            for _ in 0..<Int.random(in: 1...3, using: &random) {
                                steps.append(Self.randomStep(context, &random, &counter))
                            }
                            if savesBetween, random.next() % 3 == 0 {
                                try context.save()
                                steps.append("saved")
                            }
                            return steps
                        }
                        log.append("edit(\(steps.joined(separator: ",")))")
                        recorded(before)
                    case 9:
                        // One group spanning two blocks.
                        let first = context.performAndWait {
                            context.undoManager!.beginUndoGrouping()
                            return Self.randomStep(context, &random, &counter)
                        }
                        let second = context.performAndWait {
                            defer { context.undoManager!.endUndoGrouping() }
                            return Self.randomStep(context, &random, &counter)
                        }
                        log.append("group(\(first),\(second))")
                        recorded(before)
                    case 10..<15:
                        log.append("undo")
                        let saved = try context.performAndWait {
                            #expect(context.undoManager!.canUndo == (position > 0))
                            let outcome = context.undo()
                            #expect(outcome.didApply == (position > 0) && outcome.deletedObjectIDs.isEmpty)
                            if savesBetween, random.next() % 2 == 0 {
                                try context.save()
                                return true
                            }
                            return false
                        }
                        if saved {
                            log.append("saved")
                        }
                        position = max(position - 1, 0)
                        compare("undo")
                    case 15..<18:
                        log.append("redo")
                        let saved = try context.performAndWait {
                            #expect(context.undoManager!.canRedo == (position < states.count - 1))
                            let outcome = context.redo()
                            #expect(
                                outcome.didApply == (position < states.count - 1) && outcome.deletedObjectIDs.isEmpty)
                            if savesBetween, random.next() % 2 == 0 {
                                try context.save()
                                return true
                            }
                            return false
                        }
                        if saved {
                            log.append("saved")
                        }
                        position = min(position + 1, states.count - 1)
                        compare("redo")
                    default:
                        guard savesBetween else { continue }
                        // A save of its own: not undoable, and what its delete rules change is
                        // undone with the deletion (the projected snapshots already left it out).
                        log.append("save")
                        try context.performAndWait { try context.save() }
                        compare("save")
                        Self.expectEqual(
                            try Self.storedSignature(manager), Self.withoutTransients(states[position]),
                            "stored, round \(round), after \(log.joined(separator: " "))")
                    }
                }
                // Undo everything: the start, with nothing left to save (or, after saves, a change
                // that stores the start again).
                try context.performAndWait {
                    while context.undoManager!.canUndo {
                        context.undo()
                    }
                    if !savesBetween {
                        // An object changed and changed back in one event (no group records it)
                        // stays updated, as in Core Data; it has no changed values.
                        let changed = context.updatedObjects.filter { !$0.changedValues().isEmpty }.map(uid)
                        #expect(
                            context.insertedObjects.isEmpty && context.deletedObjects.isEmpty && changed.isEmpty,
                            "nothing left to save (round \(round)): \(changed)")
                    }
                    try context.save()
                }
                position = 0
                compare("undoing everything")
                Self.expectEqual(
                    try Self.storedSignature(manager), stored, "stored after undoing everything (round \(round))")
            } catch {
                Issue.record("round \(round), after \(log.joined(separator: " ")): \(error)")
            }
            manager.close()
        }
    }

    // MARK: Edits

    /// One random edit: an insert, a deletion, an attribute or a relationship change.
    ///
    /// - Returns: What it did, for failure messages.
    @discardableResult
    static func randomStep(
        _ context: ManagedObjectContext,
        _ random: inout SeededGenerator,
        _ counter: inout Int
    ) -> String {
        func live<Object: ManagedObject>(_ type: Object.Type) -> [Object] {
            context.registeredObjects.compactMap { $0 as? Object }.filter { !$0.isDeleted }
                .sorted { Self.uid($0) < Self.uid($1) }
        }
        func newUID(_ prefix: String) -> String {
            counter += 1
            return "\(prefix)\(counter)"
        }
        let albums = live(Album.self)
        let sketches = live(Sketch.self)
        let layers = live(Layer.self)
        let labels = live(Mark.self)
        switch Int.random(in: 0..<15, using: &random) {
        case 0:
            let album = context.insert(Album.self)
            album.uid = newUID("a")
            album.name = "album \(random.next() % 100)"
            return "+\(album.uid)"
        case 1:
            let sketch = context.insert(Sketch.self)
            sketch.uid = newUID("s")
            sketch.title = "sketch \(random.next() % 100)"
            sketch.strokes = Int(random.next() % 50)
            sketch.album = albums.randomElement(using: &random)
            return "+\(sketch.uid)(album \(sketch.album.map(uid) ?? "-"))"
        case 2:
            let layer = context.insert(Layer.self)
            layer.uid = newUID("l")
            layer.depth = Int(random.next() % 10)
            layer.sketch = sketches.randomElement(using: &random)
            return "+\(layer.uid)(sketch \(layer.sketch.map(uid) ?? "-"))"
        case 3:
            let label = context.insert(Mark.self)
            label.uid = newUID("t")
            label.text = "label \(random.next() % 100)"
            return "+\(label.uid)"
        case 4:
            guard let sketch = sketches.randomElement(using: &random) else { return "-" }
            sketch.title = "retitled \(random.next() % 100)"
            sketch.strokes += Int(random.next() % 5)
            sketch.finished = random.next() % 2 == 0 ? nil : Date(timeIntervalSince1970: Double(random.next() % 1_000))
            return "\(sketch.uid).values"
        case 5:
            guard let sketch = sketches.randomElement(using: &random) else { return "-" }
            sketch.isSelected.toggle()
            return "\(sketch.uid).isSelected"
        case 6:
            guard let sketch = sketches.randomElement(using: &random) else { return "-" }
            sketch.album = random.next() % 4 == 0 ? nil : albums.randomElement(using: &random)
            return "\(sketch.uid).album=\(sketch.album.map(uid) ?? "-")"
        case 7:
            guard let sketch = sketches.randomElement(using: &random) else { return "-" }
            var order = sketch.layers
            switch random.next() % 3 {
            case 0: order.shuffle(using: &random)
            case 1: if !order.isEmpty { order.remove(at: Int(random.next() % UInt64(order.count))) }
            default: if let layer = layers.randomElement(using: &random) { order.append(layer) }
            }
            sketch.layers = order
            return "\(sketch.uid).layers=\(order.map(uid))"
        case 8:
            guard let sketch = sketches.randomElement(using: &random), let label = labels.randomElement(using: &random)
            else { return "-" }
            if sketch.labels.contains(label) {
                sketch.labels.remove(label)
            } else {
                sketch.labels.insert(label)
            }
            return "\(sketch.uid).labels±\(label.uid)"
        case 9:
            guard let layer = layers.randomElement(using: &random) else { return "-" }
            layer.sketch = random.next() % 4 == 0 ? nil : sketches.randomElement(using: &random)
            return "\(layer.uid).sketch=\(layer.sketch.map(uid) ?? "-")"
        case 10, 11:
            let all: [ManagedObject] = albums + sketches + layers + labels
            guard let victim = all.randomElement(using: &random) else { return "-" }
            context.delete(victim)
            return "×\(uid(victim))"
        case 14:
            // A link to an object pending deletion: its rules undo it at the end of the block (a
            // layer put into a deleted sketch goes with it, a label lets go of it).
            let deleted = context.registeredObjects.filter(\.isDeleted).sorted { Self.uid($0) < Self.uid($1) }
            if let sketch = deleted.compactMap({ $0 as? Sketch }).randomElement(using: &random),
                random.next() % 2 == 0
            {
                if let layer = layers.randomElement(using: &random), random.next() % 2 == 0 {
                    layer.sketch = sketch
                    return "\(layer.uid).sketch=\(sketch.uid)(deleted)"
                }
                guard let label = labels.randomElement(using: &random) else { return "-" }
                label.sketches.insert(sketch)
                return "\(label.uid).sketches+\(sketch.uid)(deleted)"
            }
            guard let album = deleted.compactMap({ $0 as? Album }).randomElement(using: &random),
                let sketch = sketches.randomElement(using: &random)
            else { return "-" }
            sketch.album = album
            return "\(sketch.uid).album=\(album.uid)(deleted)"
        case 12:
            guard let album = albums.randomElement(using: &random) else { return "-" }
            album.name = "renamed \(random.next() % 100)"
            return "\(album.uid).name"
        default:
            guard let label = labels.randomElement(using: &random) else { return "-" }
            label.sketches = Set(sketches.filter { _ in random.next() % 3 == 0 })
            return "\(label.uid).sketches=\(label.sketches.map(uid).sorted())"
        }
    }

    // MARK: States

    /// The uid of `object`.
    static func uid(_ object: ManagedObject) -> String {
        guard case .string(let uid) = object.value(forKey: "uid") else { return "?" }
        return uid
    }

    /// Every registered object by uid: its entity, every attribute (transient ones too) and its
    /// relationships as uids. Not `projected`: inserted and deleted objects are marked. Projected:
    /// what a save would leave, worked out here (the model's cascades are album → sketches and
    /// sketch → layers; every other rule nullifies): pending deletions and the objects their
    /// cascades reach are left out, and so are references to them.
    static func snapshot(_ context: ManagedObjectContext, projected: Bool) -> [String: String] {
        var doomed = Set<ObjectIdentifier>()
        if projected {
            var queue = context.registeredObjects.filter(\.isDeleted)
            while let object = queue.popFirst() {
                guard doomed.insert(ObjectIdentifier(object)).inserted else { continue }
                if let album = object as? Album {
                    queue.formUnion(album.sketches.map { $0 as ManagedObject })
                } else if let sketch = object as? Sketch {
                    queue.formUnion(sketch.layers.map { $0 as ManagedObject })
                }
            }
        }
        var result: [String: String] = [:]
        for object in context.registeredObjects where !doomed.contains(ObjectIdentifier(object)) {
            var line = object.entity.name
            if !projected {
                line += object.isInserted ? " inserted" : ""
                line += object.isDeleted ? " deleted" : ""
            }
            line += describe(object) { !doomed.contains(ObjectIdentifier($0)) }
            for attribute in object.entity.transientAttributes {
                line += " \(attribute.name)=\(object.value(forKey: attribute.name))"
            }
            result[uid(object)] = line
        }
        return result
    }

    /// The persistent attributes and relationships of `object` (to the objects `keeping` keeps).
    static func describe(_ object: ManagedObject, keeping: (ManagedObject) -> Bool = { _ in true }) -> String {
        var line = ""
        for attribute in object.entity.attributes {
            line += " \(attribute.name)=\(object.value(forKey: attribute.name))"
        }
        for relationship in object.entity.relationships {
            var uids = object.relatedObjects(forKey: relationship.name).filter(keeping).map(uid)
            if !relationship.isOrdered {
                uids.sort()
            }
            line += " \(relationship.name)=[\(uids.joined(separator: ","))]"
        }
        return line
    }

    /// What a fresh context of `manager` fetches: each object by uid, its entity, attributes and
    /// relationships.
    static func storedSignature(_ manager: ContextManager) throws -> [String: String] {
        let reader = try makeContext(manager, "reader")
        return try reader.performAndWait {
            var result: [String: String] = [:]
            for object in try reader.fetch(FetchRequest<ManagedObject>(entityName: "Album"))
                + reader.fetch(FetchRequest<ManagedObject>(entityName: "Sketch"))
                + reader.fetch(FetchRequest<ManagedObject>(entityName: "Layer"))
                + reader.fetch(FetchRequest<ManagedObject>(entityName: "Mark"))
            {
                result[uid(object)] = object.entity.name + describe(object)
            }
            return result
        }
    }

    /// A projected snapshot without its transient attributes, as a fresh context sees it.
    static func withoutTransients(_ snapshot: [String: String]) -> [String: String] {
        snapshot.mapValues { line in
            line.split(separator: " ").filter { !$0.hasPrefix("isSelected=") }.joined(separator: " ")
        }
    }

    static func expectEqual(
        _ actual: [String: String],
        _ expected: [String: String],
        _ comment: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let keys = Set(actual.keys).union(expected.keys).sorted()
        let differences = keys.filter { actual[$0] != expected[$0] }.map {
            "\($0): \(actual[$0] ?? "(absent)") ≠ expected \(expected[$0] ?? "(absent)")"
        }
        #expect(
            differences.isEmpty, "\(comment): \(differences.joined(separator: "; "))", sourceLocation: sourceLocation)
    }
}
