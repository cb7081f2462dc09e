import Dispatch
import Foundation
import Testing

@testable import QueueData

/// Records each batch a controller of sketches reports: the callbacks with what they carried
/// (the object's ID when it was called), and the batch's difference.
final class SketchRecordingDelegate: FetchedResultsControllerDelegate {
    typealias Object = Sketch

    struct ObjectCall {
        var type: FetchedResultsChangeType
        var indexPath: IndexPath?
        var newIndexPath: IndexPath?
        var objectID: ObjectID
    }

    struct Batch {
        var calls: [String] = []
        var sectionCalls: [(type: FetchedResultsChangeType, index: Int, name: String)] = []
        var objectCalls: [ObjectCall] = []
        var difference: FetchedResultsDifference?
    }

    var batches: [Batch] = []

    func controllerWillChangeContent(_ controller: FetchedResultsController<Sketch>) {
        batches.append(Batch(calls: ["will"]))
    }

    func controller(
        _ controller: FetchedResultsController<Sketch>,
        didChange section: FetchedResultsSection<Sketch>,
        atSectionIndex sectionIndex: Int,
        for type: FetchedResultsChangeType
    ) {
        batches[batches.count - 1].calls.append("section")
        batches[batches.count - 1].sectionCalls.append((type, sectionIndex, section.name))
    }

    func controller(
        _ controller: FetchedResultsController<Sketch>,
        didChange object: Sketch,
        at indexPath: IndexPath?,
        for type: FetchedResultsChangeType,
        newIndexPath: IndexPath?
    ) {
        batches[batches.count - 1].calls.append("object")
        batches[batches.count - 1].objectCalls.append(
            ObjectCall(type: type, indexPath: indexPath, newIndexPath: newIndexPath, objectID: object.objectID))
    }

    func controllerDidChangeContent(_ controller: FetchedResultsController<Sketch>) {
        batches[batches.count - 1].calls.append("did")
    }

    func controller(
        _ controller: FetchedResultsController<Sketch>,
        didChangeContentWith difference: FetchedResultsDifference
    ) {
        batches[batches.count - 1].difference = difference
    }
}

/// Controllers of sketches (the undo model's) for the undo reference test.
enum SketchControllerShape: String, CaseIterable, CustomTestStringConvertible {
    /// Sections by title following the sort (title, strokes descending); strokes above 1.
    case sectionedBySort
    /// Sections by title ordered by name; sorted by strokes, then finished; in an album.
    case sectionedByName
    /// One section, sorted by finished then title with a comparator (objects compared), a
    /// batch size.
    case comparedBatched
    /// One section, sorted by finished then strokes (keys), a batch size.
    case keyedBatched

    var testDescription: String { rawValue }

    func request() -> FetchRequest<Sketch> {
        switch self {
        case .sectionedBySort:
            return FetchRequest(
                predicate: #Predicate { $0.strokes > 1 },
                sortBy: [SortDescriptor(\.title), SortDescriptor(\.strokes, order: .reverse)])
        case .sectionedByName:
            return FetchRequest(
                predicate: #Predicate { $0.album != nil },
                sortBy: [SortDescriptor(\.strokes), SortDescriptor(\.finished)])
        case .comparedBatched:
            var request = FetchRequest<Sketch>(
                predicate: #Predicate { $0.strokes < 30 },
                sortBy: [SortDescriptor(\.finished), SortDescriptor(\.title, comparator: .lexical)])
            request.fetchBatchSize = 3
            return request
        case .keyedBatched:
            var request = FetchRequest<Sketch>(
                sortBy: [SortDescriptor(\.finished, order: .reverse), SortDescriptor(\.strokes)])
            request.fetchBatchSize = 4
            return request
        }
    }

    var isSectioned: Bool { self == .sectionedBySort || self == .sectionedByName }

    func controller(_ context: ManagedObjectContext) -> FetchedResultsController<Sketch> {
        isSectioned
            ? FetchedResultsController(
                fetchRequest: request(), managedObjectContext: context, sectionNameKeyPath: \.title)
            : FetchedResultsController(fetchRequest: request(), managedObjectContext: context)
    }

    /// The reference: a fresh fetch of `context`, ordered and grouped as the controller
    /// documents (ties by permanent primary key, then temporary IDs in the order they were made).
    func expected(_ context: ManagedObjectContext) throws -> FetchedResultsSnapshot {
        let descriptors = request().sortDescriptors
        let objects = try context.fetch(request()).sorted { a, b in
            for descriptor in descriptors {
                let result = descriptor.compare(a, b)
                if result != .orderedSame { return result == .orderedAscending }
            }
            let left = (a.objectID.isTemporaryID ? 1 : 0, a.objectID.rawValue)
            let right = (b.objectID.isTemporaryID ? 1 : 0, b.objectID.rawValue)
            return left < right
        }
        switch self {
        case .comparedBatched, .keyedBatched:
            return FetchedResultsSnapshot(sections: [.init(name: "", objectIDs: objects.map(\.objectID))])
        case .sectionedBySort:
            var sections: [(name: String, ids: [ObjectID])] = []
            for object in objects {
                if sections.last?.name == object.title {
                    sections[sections.count - 1].ids.append(object.objectID)
                } else {
                    sections.append((object.title, [object.objectID]))
                }
            }
            return FetchedResultsSnapshot(sections: sections.map { .init(name: $0.name, objectIDs: $0.ids) })
        case .sectionedByName:
            var byName: [String: [ObjectID]] = [:]
            for object in objects {
                byName[object.title, default: []].append(object.objectID)
            }
            return FetchedResultsSnapshot(
                sections: byName.keys.sorted().map { .init(name: $0, objectIDs: byName[$0]!) })
        }
    }
}

/// A controller of sketches on a context with an undo manager, whose children push into it and
/// whose other contexts' saves it merges, against a brute-force reference: after every step
/// (edits, inserts, deletes, undo, redo, rollback, refreshes with and without merging,
/// `refreshAllObjects()`, child pushes, saves, merges, now and then a reset) the controller's
/// snapshot, `fetchedObjects`, `sections` and lookups equal a fresh fetch with the same
/// request, and the callbacks each batch reported, replayed on the list before it in the
/// documented order (deletes and move sources at old index paths, section deletes, section
/// inserts, inserts and move destinations at new index paths ascending, updates), give the list
/// after it. The controller's `snapshots` stream ends each step on the controller's snapshot.
///
/// `QUEUEDATA_UNDO_FRC_ROUNDS` (steps per shape) and `QUEUEDATA_UNDO_FRC_SEED` run more or other
/// steps; `QUEUEDATA_UNDO_FRC_SEEDS` runs that many seeds from it.
@Suite("Fetched-results controller against a fresh fetch through undo, redo, rollback, refreshes and pushes")
struct ControllerUndoReferenceTests {
    static let rounds = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_FRC_ROUNDS"].flatMap(Int.init) ?? 300
    static let seed = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_FRC_SEED"].flatMap(UInt64.init) ?? 3
    static let seeds = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_FRC_SEEDS"].flatMap(Int.init) ?? 1

    /// `QUEUEDATA_UNDO_FRC_TRACE`: print every step (to find the one that traps).
    static let trace = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_FRC_TRACE"] != nil

    /// `QUEUEDATA_UNDO_FRC_SHAPE`: run only the shape of this name.
    static let onlyShape = ProcessInfo.processInfo.environment["QUEUEDATA_UNDO_FRC_SHAPE"]

    static let titles = ["Atlas", "Bones", "Coda", "atlas", ""]

    /// One edit centred on sketches, or (half the time) any of the undo model's edits.
    static func step(_ context: ManagedObjectContext, _ random: inout SeededGenerator, _ counter: inout Int) -> String {
        if random.next() % 2 == 0 {
            return UndoRandomTests.randomStep(context, &random, &counter)
        }
        let sketches = context.registeredObjects.compactMap { $0 as? Sketch }
            .filter { !$0.isDeleted && $0.managedObjectContext != nil }
            .sorted { UndoRandomTests.uid($0) < UndoRandomTests.uid($1) }
        let albums = context.registeredObjects.compactMap { $0 as? Album }
            .filter { !$0.isDeleted && $0.managedObjectContext != nil }
            .sorted { UndoRandomTests.uid($0) < UndoRandomTests.uid($1) }
        guard let sketch = sketches.randomElement(using: &random), random.next() % 4 != 0 else {
            let sketch = context.insert(Sketch.self)
            counter += 1
            sketch.uid = "s\(counter)"
            sketch.title = titles.randomElement(using: &random)!
            sketch.strokes = Int(random.next() % 5)
            sketch.album = albums.randomElement(using: &random)
            return "+\(sketch.uid)(\(sketch.title),\(sketch.strokes))"
        }
        switch random.next() % 5 {
        case 0:
            sketch.title = titles.randomElement(using: &random)!
            return "\(sketch.uid).title=\(sketch.title)"
        case 1:
            sketch.strokes = Int(random.next() % 5)
            return "\(sketch.uid).strokes=\(sketch.strokes)"
        case 2:
            sketch.finished = random.next() % 2 == 0 ? nil : Date(timeIntervalSince1970: Double(random.next() % 3))
            return "\(sketch.uid).finished"
        case 3:
            sketch.isSelected.toggle()
            return "\(sketch.uid).isSelected"
        default:
            sketch.album = random.next() % 3 == 0 ? nil : albums.randomElement(using: &random)
            return "\(sketch.uid).album=\(sketch.album.map(UndoRandomTests.uid) ?? "-")"
        }
    }

    /// Registers everything `context` can see (a context edits what it holds).
    static func fetchAll(_ context: ManagedObjectContext) throws {
        _ = try UndoChildRandomTests.fetchAll(context)
    }

    /// Replays a batch's callbacks on `old`, as a table view would, and returns the result or
    /// the problems found.
    static func replay(
        _ batch: SketchRecordingDelegate.Batch, on old: FetchedResultsSnapshot
    ) -> (FetchedResultsSnapshot?, [String]) {
        var problems: [String] = []
        var sections = old.sections.map { (name: $0.name, ids: $0.objectIDs) }
        func sameObject(_ before: ObjectID?, _ reported: ObjectID) -> Bool {
            guard let before else { return false }
            return before == reported || (before.isTemporaryID && !reported.isTemporaryID)
        }
        let rank: [FetchedResultsChangeType: Int] = [.delete: 0, .insert: 1, .move: 2, .update: 3]
        let ranks = batch.objectCalls.map { rank[$0.type]! }
        if ranks != ranks.sorted() {
            problems.append("object callbacks out of order: \(batch.objectCalls.map(\.type))")
        }
        for call in batch.objectCalls {
            switch call.type {
            case .delete:
                if call.indexPath == nil || call.newIndexPath != nil
                    || !sameObject(old.objectID(at: call.indexPath!), call.objectID)
                {
                    problems.append("delete of \(call.objectID) at \(String(describing: call.indexPath))")
                }
            case .insert:
                if call.newIndexPath == nil || call.indexPath != nil {
                    problems.append("insert of \(call.objectID) with paths \(call)")
                }
            case .move, .update:
                if call.indexPath == nil || call.newIndexPath == nil
                    || !sameObject(old.objectID(at: call.indexPath!), call.objectID)
                {
                    problems.append("\(call.type) of \(call.objectID) from \(String(describing: call.indexPath))")
                }
            }
        }
        guard problems.isEmpty else { return (nil, problems) }
        let leaving = batch.objectCalls.filter { $0.type == .delete || $0.type == .move }.map { $0.indexPath! }
            .sorted { ($0[0], $0[1]) > ($1[0], $1[1]) }
        for path in leaving {
            sections[path[0]].ids.remove(at: path[1])
        }
        let sectionDeletes = batch.sectionCalls.filter { $0.type == .delete }
        let sectionInserts = batch.sectionCalls.filter { $0.type == .insert }
        if sectionDeletes.map(\.index) != sectionDeletes.map(\.index).sorted(by: >) {
            problems.append("section deletes not in descending order")
        }
        if sectionInserts.map(\.index) != sectionInserts.map(\.index).sorted() {
            problems.append("section inserts not in ascending order")
        }
        for change in sectionDeletes.sorted(by: { $0.index > $1.index }) {
            guard sections.indices.contains(change.index), sections[change.index].name == change.name,
                sections[change.index].ids.isEmpty
            else {
                return (nil, problems + ["section delete \(change.index) \(change.name) not empty or not there"])
            }
            sections.remove(at: change.index)
        }
        for change in sectionInserts.sorted(by: { $0.index < $1.index }) {
            guard change.index <= sections.count else {
                return (nil, problems + ["section insert \(change.index) past the end"])
            }
            sections.insert((change.name, []), at: change.index)
        }
        let arriving = batch.objectCalls.filter { $0.type == .insert || $0.type == .move }
            .sorted { ($0.newIndexPath![0], $0.newIndexPath![1]) < ($1.newIndexPath![0], $1.newIndexPath![1]) }
        for call in arriving {
            let path = call.newIndexPath!
            guard sections.indices.contains(path[0]), path[1] <= sections[path[0]].ids.count else {
                return (nil, problems + ["\(call.type) to \(path) out of range"])
            }
            sections[path[0]].ids.insert(call.objectID, at: path[1])
        }
        for call in batch.objectCalls where call.type == .update {
            let path = call.newIndexPath!
            guard sections.indices.contains(path[0]), sections[path[0]].ids.indices.contains(path[1]),
                sameObject(sections[path[0]].ids[path[1]], call.objectID)
            else {
                return (nil, problems + ["update of \(call.objectID) at \(path): not that object"])
            }
            sections[path[0]].ids[path[1]] = call.objectID
        }
        return (FetchedResultsSnapshot(sections: sections.map { .init(name: $0.name, objectIDs: $0.ids) }), problems)
    }

    @Test(
        "random edits, undo, redo, rollback, refreshes, pushes, saves and merges: the controller is a fresh fetch, each batch replays",
        arguments: SketchControllerShape.allCases)
    func randomRounds(_ shape: SketchControllerShape) async throws {
        let rounds = scaledRounds(Self.rounds)
        guard Self.onlyShape == nil || Self.onlyShape == shape.rawValue else { return }
        for offset in 0..<max(Self.seeds, 1) {
            let seed = Self.seed &+ UInt64(offset)
            try await Self.run(shape, seed: seed, rounds: rounds)
        }
    }

    static func run(_ shape: SketchControllerShape, seed: UInt64, rounds: Int) async throws {
        let directory = TemporaryDirectory("undo-frc-\(shape)")
        let manager = undoModelManager(.memory, directory)
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "undo-frc")
        let other = try makeRetainingContext(manager, "undo-frc-other")
        var random = SeededGenerator(
            seed: seed &* 1_000 &+ UInt64(SketchControllerShape.allCases.firstIndex(of: shape)!))
        var counter = 0
        try context.performAndWait {
            context.mergePolicy = .mergeByPropertyObjectTrump
            for _ in 0..<16 {
                _ = Self.step(context, &random, &counter)
            }
            try context.save()
            context.undoManager = UndoManager()
        }
        other.performAndWait { other.mergePolicy = .mergeByPropertyObjectTrump }
        let delegate = SketchRecordingDelegate()
        let controller = try context.performAndWait {
            let controller = shape.controller(context)
            controller.delegate = delegate
            try controller.performFetch()
            return controller
        }
        let snapshots = context.performAndWait { controller.snapshots }
        let iterator = snapshots.makeAsyncIterator()
        var last = context.performAndWait { controller.snapshot }
        #expect(await iterator.next() == last, "the stream starts with the current snapshot")
        #expect(last == (try context.performAndWait { try shape.expected(context) }))
        var log: [String] = []
        var failures = 0
        var reported = 0
        for round in 0..<rounds where failures < 3 {
            let label: String
            switch random.next() % 24 {
            case 0..<6:
                label = try context.performAndWait {
                    try Self.fetchAll(context)
                    let steps = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                        Self.step(context, &random, &counter)
                    }
                    return "edit(\(steps.joined(separator: ",")))"
                }
            case 6..<9:
                label = "undo"
                context.performAndWait { _ = context.undo() }
            case 9, 10:
                label = "redo"
                context.performAndWait { _ = context.redo() }
            case 11:
                label = "rollback"
                context.performAndWait { context.rollback() }
            case 12, 13:
                let merge = random.next() % 2 == 0
                let refreshed = context.performAndWait {
                    context.registeredObjects.sorted { UndoRandomTests.uid($0) < UndoRandomTests.uid($1) }
                        .filter { _ in random.next() % 3 == 0 }
                        .map { object in
                            context.refresh(object, mergeChanges: merge)
                            return UndoRandomTests.uid(object)
                        }
                }
                label = "refresh(\(merge), \(refreshed))"
            case 14:
                label = "refreshAllObjects"
                context.performAndWait { context.refreshAllObjects() }
            case 15, 16:
                let child = context.performAndWait { context.newChildContext() }
                label = try child.performAndWait {
                    child.mergePolicy = .mergeByPropertyObjectTrump
                    try Self.fetchAll(child)
                    let steps = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                        Self.step(child, &random, &counter)
                    }
                    do {
                        try child.save()
                        return "push(\(steps.joined(separator: ",")))"
                    } catch {
                        return "push failed(\(steps.joined(separator: ",")): \(error))"
                    }
                }
            case 17, 18:
                label = "save"
                do {
                    try context.performAndWait { try context.save() }
                } catch {
                    Issue.record("seed \(seed) round \(round): save failed after \(log.suffix(8)): \(error)")
                    failures += 1
                }
            case 19...21:
                label = try other.performAndWait {
                    try Self.fetchAll(other)
                    let steps = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                        Self.step(other, &random, &counter)
                    }
                    do {
                        try other.save()
                        return "other(\(steps.joined(separator: ",")))"
                    } catch {
                        other.rollback()
                        return "other failed(\(steps.joined(separator: ",")): \(error))"
                    }
                }
            case 22:
                label = "edit+save"
                try context.performAndWait {
                    try Self.fetchAll(context)
                    _ = Self.step(context, &random, &counter)
                    try context.save()
                }
            default:
                label = round % 4 == 0 ? "reset" : "undo+save"
                try context.performAndWait {
                    if round % 4 == 0 {
                        context.reset()
                    } else {
                        _ = context.undo()
                        try context.save()
                    }
                }
            }
            log.append(label)
            if Self.trace {
                print("undo FRC \(shape) seed \(seed) round \(round): \(label)")
            }
            // A block of its own (no `perform`, whose end reports pending changes): it runs
            // after the merges queued meanwhile.
            let (actual, problems, batchCount) = try context.queue.sync {
                () -> (FetchedResultsSnapshot, [String], Int) in
                var problems: [String] = []
                let expected = try shape.expected(context)
                let actual = controller.snapshot
                if actual != expected {
                    problems.append("controller \(short(actual)) ≠ fetch \(short(expected))")
                }
                // The public accessors agree with the snapshot.
                let sections = controller.sections ?? []
                if sections.map(\.name) != actual.sections.map(\.name)
                    || sections.map(\.numberOfObjects) != actual.sections.map(\.objectIDs.count)
                    || sections.map({ $0.objects.map(\.objectID) }) != actual.sections.map(\.objectIDs)
                {
                    problems.append("sections do not match the snapshot")
                }
                if controller.fetchedObjects?.map(\.objectID) != actual.objectIDs {
                    problems.append("fetchedObjects do not match the snapshot")
                }
                var titles: [String] = []
                for name in actual.sections.map(\.name) {
                    if let title = name.first.map({ String($0).uppercased() }), !titles.contains(title) {
                        titles.append(title)
                    }
                }
                if controller.sectionIndexTitles != titles {
                    problems.append("section index titles \(controller.sectionIndexTitles) ≠ \(titles)")
                }
                for (sectionIndex, section) in actual.sections.enumerated() {
                    for (row, id) in section.objectIDs.enumerated() {
                        let path = IndexPath(indexes: [sectionIndex, row])
                        let object = controller.object(at: path)
                        if object.objectID != id || controller.indexPath(forObject: object) != path {
                            problems.append("lookups of \(id) at \(path)")
                        }
                    }
                }
                // Each batch replays on the list before it.
                var replayed = last
                for batch in delegate.batches {
                    let calls = batch.calls
                    if !(calls.first == "will" && calls.last == "did"
                        && calls.dropFirst().dropLast().drop(while: { $0 == "section" }).allSatisfy { $0 == "object" })
                    {
                        problems.append("callbacks \(calls)")
                    }
                    guard let difference = batch.difference else {
                        problems.append("a batch without a difference")
                        continue
                    }
                    if difference.old != replayed {
                        problems.append("a batch does not start where the last ended")
                    }
                    let strict = strictReplayProblems(difference)
                    if !strict.isEmpty {
                        problems.append("difference: \(strict)")
                    }
                    if difference.applied(to: difference.old) != difference.new {
                        problems.append("applied(to:) does not give the new snapshot")
                    }
                    if batch.objectCalls.map(\.type) != difference.objectChanges.map(\.type)
                        || batch.objectCalls.map(\.indexPath) != difference.objectChanges.map(\.oldIndexPath)
                        || batch.objectCalls.map(\.newIndexPath) != difference.objectChanges.map(\.newIndexPath)
                    {
                        problems.append("callbacks and difference disagree")
                    }
                    let (result, callProblems) = Self.replay(batch, on: replayed)
                    problems += callProblems.map { "callbacks: \($0)" }
                    if let result, result != difference.new {
                        problems.append("callbacks replayed give \(short(result)), not \(short(difference.new))")
                    }
                    replayed = difference.new
                }
                if replayed != actual {
                    problems.append("the batches do not add up to the controller's content")
                }
                let count = delegate.batches.count
                delegate.batches.removeAll()
                return (actual, problems, count)
            }
            reported += batchCount
            if batchCount > 0 {
                let streamed = await iterator.next()
                if streamed != actual {
                    Issue.record("seed \(seed) round \(round) (\(label)): the stream gave another snapshot")
                }
            }
            last = actual
            if !problems.isEmpty {
                failures += 1
                Issue.record(
                    "\(shape) seed \(seed) round \(round) (\(label)): \(problems.joined(separator: "; "))\nafter: \(log.suffix(12).joined(separator: " | "))"
                )
            }
        }
        #expect(reported > rounds / 16, "batches reported: \(reported)")
        print("undo FRC \(shape) seed \(seed): \(rounds) rounds, \(reported) batches")
    }
}
