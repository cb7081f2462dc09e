import Dispatch
import Foundation
import Testing

@testable import QueueData

/// Shelves holding books (a cascade), for controllers over objects with relationships.
final class GraphShelf: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelf", deleteRule: .cascade) var books: Set<GraphBook>
}

/// A book on a shelf: sectioned by genre, sorted by genre, pages or title.
final class GraphBook: ManagedObject {
    @Attribute var title: String = ""
    @Attribute var genre: String = ""
    @Attribute var pages: Int = 0
    @Attribute var note: String? = nil
    @Relationship(inverse: "books") var shelf: GraphShelf?
}

let graphBookModel = ManagedObjectModel([GraphShelf.self, GraphBook.self])

/// Records each batch's callbacks, objects and difference.
final class GraphRecordingDelegate: FetchedResultsControllerDelegate {
    typealias Object = GraphBook

    struct Batch {
        var calls: [String] = []
        var objectIDs: [ObjectID] = []
        var difference: FetchedResultsDifference?
    }

    var batches: [Batch] = []

    func controllerWillChangeContent(_ controller: FetchedResultsController<GraphBook>) {
        batches.append(Batch(calls: ["will"]))
    }

    func controller(
        _ controller: FetchedResultsController<GraphBook>,
        didChange section: FetchedResultsSection<GraphBook>,
        atSectionIndex sectionIndex: Int,
        for type: FetchedResultsChangeType
    ) {
        batches[batches.count - 1].calls.append("section")
    }

    func controller(
        _ controller: FetchedResultsController<GraphBook>,
        didChange object: GraphBook,
        at indexPath: IndexPath?,
        for type: FetchedResultsChangeType,
        newIndexPath: IndexPath?
    ) {
        batches[batches.count - 1].calls.append("object")
        batches[batches.count - 1].objectIDs.append(object.objectID)
    }

    func controllerDidChangeContent(_ controller: FetchedResultsController<GraphBook>) {
        batches[batches.count - 1].calls.append("did")
    }

    func controller(
        _ controller: FetchedResultsController<GraphBook>,
        didChangeContentWith difference: FetchedResultsDifference
    ) {
        batches[batches.count - 1].difference = difference
    }
}

/// Controller configurations over books.
enum GraphShape: String, CaseIterable, CustomTestStringConvertible {
    /// Sections by genre following the sort (genre, pages descending, title); shelved books.
    case sectionedBySort
    /// Sections by genre ordered by name; sorted by pages then title.
    case sectionedByName
    /// One section, sorted by title then pages, a batch size.
    case batched

    var testDescription: String { rawValue }

    func request() -> FetchRequest<GraphBook> {
        switch self {
        case .sectionedBySort:
            return FetchRequest(
                predicate: #Predicate { $0.pages > 0 && $0.shelf != nil },
                sortBy: [SortDescriptor(\.genre), SortDescriptor(\.pages, order: .reverse), SortDescriptor(\.title)])
        case .sectionedByName:
            return FetchRequest(
                predicate: #Predicate { $0.pages != 2 }, sortBy: [SortDescriptor(\.pages), SortDescriptor(\.title)])
        case .batched:
            var request = FetchRequest<GraphBook>(
                predicate: #Predicate { $0.shelf != nil || $0.pages > 2 },
                sortBy: [SortDescriptor(\.title), SortDescriptor(\.pages)])
            request.fetchBatchSize = 3
            return request
        }
    }

    func controller(_ context: ManagedObjectContext) -> FetchedResultsController<GraphBook> {
        self == .batched
            ? FetchedResultsController(fetchRequest: request(), managedObjectContext: context)
            : FetchedResultsController(
                fetchRequest: request(), managedObjectContext: context, sectionNameKeyPath: \.genre)
    }

    /// The reference: a fresh fetch, grouped as the controller documents.
    ///
    /// Ties are ordered as the controller documents: permanent IDs by primary key, then
    /// temporary IDs in the order they were made (a fetch lists an object an undo brought back,
    /// which keeps its permanent ID, with the unsaved inserts).
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
        case .batched:
            return FetchedResultsSnapshot(sections: [.init(name: "", objectIDs: objects.map(\.objectID))])
        case .sectionedBySort:
            var sections: [(name: String, ids: [ObjectID])] = []
            for object in objects {
                if sections.last?.name == object.genre {
                    sections[sections.count - 1].ids.append(object.objectID)
                } else {
                    sections.append((object.genre, [object.objectID]))
                }
            }
            return FetchedResultsSnapshot(sections: sections.map { .init(name: $0.name, objectIDs: $0.ids) })
        case .sectionedByName:
            var byName: [String: [ObjectID]] = [:]
            for object in objects {
                byName[object.genre, default: []].append(object.objectID)
            }
            return FetchedResultsSnapshot(
                sections: byName.keys.sorted().map { .init(name: $0, objectIDs: byName[$0]!) })
        }
    }
}

/// Replays `difference` on its old snapshot the way a table view would, using only the IDs and
/// index paths of the changes (no peeking at the new snapshot except to follow an inserted
/// object's permanent ID), and returns the problems found.
func strictReplayProblems(_ difference: FetchedResultsDifference) -> [String] {
    var problems: [String] = []
    let old = difference.old
    let new = difference.new
    var sections = old.sections.map { (name: $0.name, ids: $0.objectIDs) }
    let changes = difference.objectChanges
    // Order: deletes (descending old paths), inserts (ascending new paths), moves, updates.
    let kinds = changes.map(\.type)
    let rank: [FetchedResultsChangeType: Int] = [.delete: 0, .insert: 1, .move: 2, .update: 3]
    if kinds.map({ rank[$0]! }) != kinds.map({ rank[$0]! }).sorted() {
        problems.append("changes out of order: \(kinds)")
    }
    func renamedOK(_ before: ObjectID, _ after: ObjectID?) -> Bool {
        guard let after else { return false }
        return after == before || (before.isTemporaryID && !after.isTemporaryID)
    }
    for change in changes {
        switch change.type {
        case .delete:
            guard let path = change.oldIndexPath, old.objectID(at: path) == change.objectID else {
                problems.append(
                    "delete of \(change.objectID) not at its old path \(String(describing: change.oldIndexPath))")
                continue
            }
        case .insert:
            guard let path = change.newIndexPath, new.objectID(at: path) == change.objectID else {
                problems.append("insert of \(change.objectID) not at its new path")
                continue
            }
        case .move, .update:
            guard let oldPath = change.oldIndexPath, old.objectID(at: oldPath) == change.objectID,
                let newPath = change.newIndexPath, renamedOK(change.objectID, new.objectID(at: newPath))
            else {
                problems.append(
                    "\(change.type) of \(change.objectID) with wrong paths \(String(describing: change.oldIndexPath)) \(String(describing: change.newIndexPath))"
                )
                continue
            }
        }
    }
    guard problems.isEmpty else { return problems }
    let leaving = changes.filter { $0.type == .delete || $0.type == .move }.map { $0.oldIndexPath! }
        .sorted { ($0[0], $0[1]) > ($1[0], $1[1]) }
    for path in leaving {
        sections[path[0]].ids.remove(at: path[1])
    }
    for change in difference.sectionChanges where change.type == .delete {
        guard sections.indices.contains(change.index), sections[change.index].name == change.name,
            sections[change.index].ids.isEmpty
        else {
            problems.append("section delete \(change.index) \(change.name) of a section not empty or not there")
            return problems
        }
        sections.remove(at: change.index)
    }
    for change in difference.sectionChanges where change.type == .insert {
        guard change.index <= sections.count else {
            problems.append("section insert past the end")
            return problems
        }
        sections.insert((change.name, []), at: change.index)
    }
    let arriving = changes.filter { $0.type == .insert || $0.type == .move }
        .sorted { ($0.newIndexPath![0], $0.newIndexPath![1]) < ($1.newIndexPath![0], $1.newIndexPath![1]) }
    for change in arriving {
        let path = change.newIndexPath!
        guard sections.indices.contains(path[0]), path[1] <= sections[path[0]].ids.count else {
            problems.append("\(change.type) to \(path) out of range")
            return problems
        }
        sections[path[0]].ids.insert(new.objectID(at: path)!, at: path[1])
    }
    for change in changes where change.type == .update {
        let path = change.newIndexPath!
        guard sections.indices.contains(path[0]), sections[path[0]].ids.indices.contains(path[1]) else {
            problems.append("update at \(path) out of range")
            return problems
        }
        sections[path[0]].ids[path[1]] = new.objectID(at: path)!
    }
    let replayed = FetchedResultsSnapshot(sections: sections.map { .init(name: $0.name, objectIDs: $0.ids) })
    if replayed != new {
        problems.append("replayed changes do not give the new snapshot")
    }
    // Every object that came or went is reported.
    let before = Set(old.objectIDs)
    let after = Set(new.objectIDs)
    let reported = Set(changes.map(\.objectID))
    for id in before.subtracting(after) where !reported.contains(id) {
        problems.append("\(id) left without a report")
    }
    return problems
}

/// A snapshot's sections with short IDs, for messages.
func short(_ snapshot: FetchedResultsSnapshot) -> String {
    snapshot.sections.map { "\($0.name): \($0.objectIDs.map { $0.uriRepresentation.lastPathComponent })" }
        .joined(separator: " | ")
}

@Suite("Fetched-results controller over an object graph, against a fresh fetch")
struct ControllerGraphReferenceTests {
    private static let genres = ["Crime", "Poetry", "Travel", ""]
    private static let titles = ["Atlas", "Bones", "Coda", "Dune", "Ember", "Fjord", "Gale"]

    private static func insertBook(
        _ context: ManagedObjectContext, shelves: [GraphShelf], _ random: inout SeededGenerator
    ) {
        let book = context.insert(GraphBook.self)
        book.title = titles.randomElement(using: &random)!
        book.genre = genres.randomElement(using: &random)!
        book.pages = Int.random(in: 0...4, using: &random)
        if Int.random(in: 0..<4, using: &random) > 0, let shelf = shelves.randomElement(using: &random),
            usable(shelf)
        {
            book.shelf = shelf
        }
    }

    /// Whether `object` can be linked to: not deleted, still in its context (an inserted object
    /// deleted again leaves it).
    private static func usable(_ object: ManagedObject) -> Bool {
        !object.isDeleted && object.managedObjectContext != nil
    }

    /// One random batch of changes on `context`.
    static func mutate(_ context: ManagedObjectContext, _ random: inout SeededGenerator) throws {
        let books = try context.fetch(FetchRequest<GraphBook>()).filter { !$0.isDeleted }
        var shelves = try context.fetch(FetchRequest<GraphShelf>()).filter { !$0.isDeleted }
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let book = books.randomElement(using: &random)
            switch Int.random(in: 0..<14, using: &random) {
            case 0, 1:
                insertBook(context, shelves: shelves, &random)
            case 2:
                let shelf = context.insert(GraphShelf.self)
                shelf.name = "s\(Int.random(in: 0...99, using: &random))"
                shelves.append(shelf)
            case 3:
                if let book, !book.isDeleted { context.delete(book) }
            case 4:
                if let shelf = shelves.randomElement(using: &random), !shelf.isDeleted { context.delete(shelf) }
            case 5, 6:
                if let book, !book.isDeleted {
                    let shelf = shelves.randomElement(using: &random)
                    book.shelf = Bool.random(using: &random) ? nil : (shelf.map(usable) == true ? shelf : nil)
                }
            case 7:
                if let book, !book.isDeleted, let shelf = shelves.randomElement(using: &random), usable(shelf) {
                    shelf.books = shelf.books.union([book])
                }
            case 8:
                if let book, !book.isDeleted { book.title = titles.randomElement(using: &random)! }
            case 9:
                if let book, !book.isDeleted { book.genre = genres.randomElement(using: &random)! }
            case 10, 11:
                if let book, !book.isDeleted { book.pages = Int.random(in: 0...4, using: &random) }
            default:
                if let book, !book.isDeleted { book.note = Bool.random(using: &random) ? nil : "n" }
            }
        }
    }

    @Test(
        "random graph changes here, in other contexts, a child, undo, rollback, refresh, reset: each batch replays",
        arguments: GraphShape.allCases)
    func randomRounds(_ shape: GraphShape) throws {
        let rounds = scaledRounds(
            ProcessInfo.processInfo.environment["QUEUEDATA_GRAPH_FRC_ROUNDS"].flatMap(Int.init) ?? 200)
        let seed = ProcessInfo.processInfo.environment["QUEUEDATA_GRAPH_FRC_SEED"].flatMap(UInt64.init) ?? 11
        let manager = ContextManager(delegate: TestStoreDelegate(model: graphBookModel))
        let context = try makeContext(manager, "graph-controller")
        let other = try makeContext(manager, "graph-other")
        var random = SeededGenerator(seed: seed &+ UInt64(GraphShape.allCases.firstIndex(of: shape)!))
        try context.performAndWait {
            context.undoManager = UndoManager()
            var shelves: [GraphShelf] = []
            for index in 0..<4 {
                let shelf = context.insert(GraphShelf.self)
                shelf.name = "s\(index)"
                shelves.append(shelf)
            }
            for _ in 0..<20 {
                Self.insertBook(context, shelves: shelves, &random)
            }
            try context.save()
        }
        let delegate = GraphRecordingDelegate()
        let controller = context.performAndWait { shape.controller(context) }
        try context.performAndWait {
            controller.delegate = delegate
            try controller.performFetch()
            #expect(controller.snapshot == (try shape.expected(context)))
        }
        var last = context.performAndWait { controller.snapshot }
        var reported = 0
        var failures = 0
        for round in 0..<rounds where failures < 3 {
            var step = SeededGenerator(seed: random.next())
            let action = Int.random(in: 0..<20, using: &step)
            var label = ""
            switch action {
            case 0...6:
                label = "own"
                try context.performAndWait { try Self.mutate(context, &step) }
            case 7, 8:
                label = "own save"
                try context.performAndWait {
                    try Self.mutate(context, &step)
                    try context.save()
                }
            case 9...11:
                label = "other save"
                try other.performAndWait {
                    try Self.mutate(other, &step)
                    try other.save()
                }
            case 12, 13:
                label = "child push"
                let child = context.performAndWait { context.newChildContext() }
                try child.performAndWait {
                    try Self.mutate(child, &step)
                    do { try child.save() } catch is MergeConflictError {}
                }
            case 14, 15:
                label = "undo"
                context.performAndWait { _ = context.undo() }
            case 16:
                label = "redo"
                context.performAndWait { _ = context.redo() }
            case 17:
                label = "rollback"
                context.performAndWait { context.rollback() }
            case 18:
                label = "refresh"
                try context.performAndWait {
                    let books = try context.fetch(FetchRequest<GraphBook>())
                    if let book = books.randomElement(using: &step), !book.isInserted {
                        context.refresh(book, mergeChanges: Bool.random(using: &step))
                    }
                }
            default:
                label = round % 5 == 0 ? "reset" : "save"
                try context.performAndWait {
                    if round % 5 == 0 { context.reset() } else { try context.save() }
                }
            }
            // A block of its own (not `performAndWait`, whose end reports pending changes): it
            // runs after the merges queued meanwhile, and sees what they left.
            try context.queue.sync {
                let expected = try shape.expected(context)
                let actual = controller.snapshot
                var ok = actual == expected
                if !ok {
                    var details: [String] = []
                    for id in expected.objectIDs {
                        let book = context.object(with: id) as! GraphBook
                        details.append(
                            "\(id.uriRepresentation.lastPathComponent)=\(book.title)/\(book.pages)/\(book.isInserted)")
                    }
                    let message = "controller \(short(actual)) != fetch \(short(expected)) \(details)"
                    Issue.record("round \(round) (\(label), seed \(seed)): \(message)")
                }
                for batch in delegate.batches {
                    let calls = batch.calls
                    let shape =
                        calls.first == "will" && calls.last == "did"
                        && calls.dropFirst().dropLast().drop(while: { $0 == "section" }).allSatisfy { $0 == "object" }
                    if !shape {
                        ok = false
                        Issue.record("round \(round) (\(label)): callbacks \(calls)")
                    }
                    guard let difference = batch.difference else { continue }
                    if difference.old != last {
                        ok = false
                        Issue.record("round \(round) (\(label)): a batch does not start where the last ended")
                    }
                    let problems = strictReplayProblems(difference)
                    if !problems.isEmpty {
                        ok = false
                        Issue.record("round \(round) (\(label)): \(problems) in \(difference)")
                    }
                    for (change, objectID) in zip(difference.objectChanges, batch.objectIDs)
                    where change.objectID != objectID && !change.objectID.isTemporaryID {
                        ok = false
                        Issue.record(
                            "round \(round) (\(label)): \(change.type) of \(change.objectID) with object \(objectID)")
                    }
                    reported += difference.objectChanges.count
                    last = difference.new
                }
                if last != actual {
                    ok = false
                    Issue.record("round \(round) (\(label)): the batches do not add up to the controller's content")
                }
                delegate.batches.removeAll()
                last = actual
                if !ok { failures += 1 }
            }
        }
        #expect(reported > rounds / 2)
        print("graph FRC \(shape): \(rounds) rounds, \(reported) object changes reported")
        manager.close()
    }
}

@Suite("Fetched-results controller: deletions a merge cascades")
struct ControllerMergedCascadeTests {
    @Test("a merged deletion that cascades to an unsaved link here removes the linked object from the controller")
    func mergedDeletionCascades() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: graphBookModel))
        let context = try makeContext(manager, "cascade-controller")
        let other = try makeContext(manager, "cascade-other")
        let shelfID = try context.performAndWait {
            let shelf = context.insert(GraphShelf.self)
            shelf.name = "doomed"
            let book = context.insert(GraphBook.self)
            book.title = "Atlas"
            book.pages = 1
            try context.save()
            return shelf.objectID
        }
        let delegate = GraphRecordingDelegate()
        let controller = try context.performAndWait {
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<GraphBook>(sortBy: [SortDescriptor(\.title)]), managedObjectContext: context)
            controller.delegate = delegate
            try controller.performFetch()
            // An unsaved link to the shelf: the book is on it only here.
            let book = controller.object(at: IndexPath(indexes: [0, 0]))
            book.shelf = try context.existingObject(with: shelfID, as: GraphShelf.self)
            return controller
        }
        try other.performAndWait {
            other.delete(try other.existingObject(with: shelfID, as: GraphShelf.self))
            try other.save()
        }
        // The merge ran in a block of its own (no `perform`, whose end would report the
        // context's pending changes): right after it, the controller already agrees with a fetch.
        let afterMerge = try context.queue.sync {
            (try context.fetch(FetchRequest<GraphBook>()).count, controller.snapshot.objectIDs.count)
        }
        #expect(afterMerge.0 == 0, "the cascade deleted the book here")
        #expect(afterMerge.1 == 0, "the controller shows what a fetch gives, right after the merge")
        manager.close()
    }
}

@Suite("Fetched-results controller: predicates through a relationship")
struct ControllerRelationshipPredicateTests {
    @Test("a book is re-evaluated when it changes itself, with its shelf's merged name")
    func reevaluatedWithMergedShelf() throws {
        let manager = ContextManager(delegate: TestStoreDelegate(model: graphBookModel))
        let context = try makeContext(manager, "rel-controller")
        let other = try makeContext(manager, "rel-other")
        let bookID = try context.performAndWait {
            let shelf = context.insert(GraphShelf.self)
            shelf.name = "A"
            let book = context.insert(GraphBook.self)
            book.title = "Atlas"
            book.shelf = shelf
            try context.save()
            return book.objectID
        }
        let controller = try context.performAndWait {
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<GraphBook>(
                    predicate: #Predicate { $0.shelf?.name == "A" }, sortBy: [SortDescriptor(\.title)]),
                managedObjectContext: context)
            try controller.performFetch()
            #expect(controller.snapshot.objectIDs == [bookID])
            return controller
        }
        // Another context renames the shelf and changes the book in one save.
        try other.performAndWait {
            let book = try other.existingObject(with: bookID, as: GraphBook.self)
            book.shelf!.name = "B"
            book.pages = 9
            try other.save()
        }
        let afterMerge = try context.queue.sync {
            (try context.fetch(controller.fetchRequest).map(\.objectID), controller.snapshot.objectIDs)
        }
        #expect(afterMerge.0 == [])
        #expect(afterMerge.1 == afterMerge.0)
        // A child renames it back and touches the book: pushed, the book matches again.
        let child = context.performAndWait { context.newChildContext() }
        try child.performAndWait {
            let book = try child.existingObject(with: bookID, as: GraphBook.self)
            book.shelf!.name = "A"
            book.pages = 3
            try child.save()
        }
        let afterPush = try context.queue.sync {
            (try context.fetch(controller.fetchRequest).map(\.objectID), controller.snapshot.objectIDs)
        }
        #expect(afterPush.0 == [bookID])
        #expect(afterPush.1 == [bookID])
        manager.close()
    }
}
