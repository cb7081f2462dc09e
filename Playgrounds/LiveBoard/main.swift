// LiveBoard: a board of destinations that keeps itself up to date.
//
// A FetchedResultsController on the board's queue shows destinations grouped by continent,
// best rated first. Two other queues import, rate and delete destinations and save; the board
// merges every save, and the controller prints each change as it arrives, then the board.
// It ends by itself, checking that the board equals a fresh fetch.
// Run it with `swift run LiveBoard` (the default journal store, in $XDG_DATA_HOME/LiveBoard or
// ~/.local/share/LiveBoard, emptied at the start).

import Dispatch
import Foundation
import QueueData

final class Destination: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var continent: String = ""
    @Attribute var rating: Int = 0
}

final class BoardStore: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([Destination.self]) }
    var persistentStoreName: String { "LiveBoard" }
}

/// Prints the controller's changes as they arrive, then the board.
final class Board: FetchedResultsControllerDelegate {
    typealias Object = Destination
    var batches = 0

    func controllerWillChangeContent(_ controller: FetchedResultsController<Destination>) {
        batches += 1
        print("— change \(batches):")
    }

    func controller(
        _ controller: FetchedResultsController<Destination>,
        didChange section: FetchedResultsSection<Destination>,
        atSectionIndex sectionIndex: Int,
        for type: FetchedResultsChangeType
    ) {
        print("    section \(type == .insert ? "+" : "−") \(section.name) (\(sectionIndex))")
    }

    func controller(
        _ controller: FetchedResultsController<Destination>,
        didChange object: Destination,
        at indexPath: IndexPath?,
        for type: FetchedResultsChangeType,
        newIndexPath: IndexPath?
    ) {
        func at(_ path: IndexPath?) -> String { path.map { "[\($0[0]), \($0[1])]" } ?? "" }
        switch type {
        case .insert: print("    + \(object.name) at \(at(newIndexPath))")
        case .delete: print("    − \(object.name) from \(at(indexPath))")
        case .move: print("    ↕ \(object.name) (\(object.rating)★) \(at(indexPath)) → \(at(newIndexPath))")
        case .update: print("    ~ \(object.name) at \(at(newIndexPath))")
        }
    }

    func controllerDidChangeContent(_ controller: FetchedResultsController<Destination>) {
        for section in controller.sections ?? [] {
            let row = section.objects.map { "\($0.name) \(String(repeating: "★", count: $0.rating))" }
            print(
                "    \(section.name.padding(toLength: 9, withPad: " ", startingAt: 0))| \(row.joined(separator: " · "))"
            )
        }
    }
}

let manager = ContextManager.shared
manager.delegate = BoardStore()

let importer = try manager.createContext(for: DispatchQueue(label: "importer"))
let critic = try manager.createContext(for: DispatchQueue(label: "critic"))
let boardContext = try manager.createContext(for: DispatchQueue(label: "board"))

// Start over: the store keeps what the last run left.
try importer.performAndWait {
    try importer.fetch(FetchRequest<Destination>()).forEach(importer.delete)
    try importer.save()
}

let board = Board()
let controller = try boardContext.performAndWait {
    let controller = FetchedResultsController(
        fetchRequest: FetchRequest<Destination>(
            predicate: #Predicate { $0.rating > 0 },
            sortBy: [SortDescriptor(\.continent), SortDescriptor(\.rating, order: .reverse), SortDescriptor(\.name)]),
        managedObjectContext: boardContext,
        sectionNameKeyPath: \.continent)
    controller.delegate = board
    try controller.performFetch()
    return controller
}
print("The board shows destinations rated 1★ or more, by continent, best first; it starts empty.")

let arrivals: [(String, String, Int)] = [
    ("Lisbon", "Europe", 3), ("Kyoto", "Asia", 4), ("Quito", "America", 2), ("Nairobi", "Africa", 3),
    ("Reykjavik", "Europe", 5), ("Hanoi", "Asia", 0), ("Cusco", "America", 4), ("Marrakesh", "Africa", 2),
    ("Porto", "Europe", 1), ("Sapporo", "Asia", 2),
]

let work = DispatchGroup()
// The importer saves two destinations at a time…
DispatchQueue.global().async(group: work) {
    for batch in stride(from: 0, to: arrivals.count, by: 2) {
        try? importer.performAndWait {
            for (name, continent, rating) in arrivals[batch..<min(batch + 2, arrivals.count)] {
                let destination = importer.insert(Destination.self)
                destination.name = name
                destination.continent = continent
                destination.rating = rating
            }
            try importer.save()
        }
    }
}
work.wait()
// …then the critic rates (moving rows), discovers Hanoi (it appears) and drops Porto (it goes).
DispatchQueue.global().async(group: work) {
    let revisions = [("Lisbon", 5), ("Hanoi", 3), ("Kyoto", 2), ("Quito", 0)]
    for (name, rating) in revisions {
        try? critic.performAndWait {
            for destination in try critic.fetch(
                FetchRequest<Destination>(predicate: #Predicate { $0.name == name }))
            {
                destination.rating = rating
            }
            try critic.save()
        }
    }
    try? critic.performAndWait {
        try critic.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "Porto" }))
            .forEach(critic.delete)
        try critic.save()
    }
}
work.wait()

// Every save is merged into the board's context on its queue: this block runs after them.
let (agrees, shown) = try boardContext.performAndWait {
    let fresh = try boardContext.fetch(controller.fetchRequest).map(\.objectID)
    return (fresh == controller.snapshot.objectIDs, fresh.count)
}
print(
    "After \(board.batches) changes the board shows \(shown) destinations; a fresh fetch \(agrees ? "agrees" : "DISAGREES")."
)
manager.close()
if !agrees {
    exit(1)
}
