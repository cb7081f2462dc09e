// ModelEvolution: a model that changes between two runs, and the store that follows it.
//
// Run it twice with `swift run ModelEvolution`:
// - The first run finds no store: version 1 of the app writes a few books to the default
//   store (a journal in $XDG_DATA_HOME/ModelEvolution or ~/.local/share/ModelEvolution).
// - The second run is version 2 of the app: `author` is renamed `writer`, `pages` widens from
//   Int16 to Int, `rating` becomes a Double, `subtitle` is dropped, `genre` is new, and so is
//   the `Shelf` entity; a custom step fills in the genres. It prints the dry run's plan, then
//   migrates with progress — no old model kept around, the store knows its own schema.
// - Later runs find the store up to date.
// `swift run ModelEvolution --reset` removes the store, to start over.

import Foundation
import QueueData

// MARK: Version 1

final class BookV1: ManagedObject {
    override class var entityName: String { "Book" }
    @Attribute var title: String = ""
    @Attribute var subtitle: String? = nil
    @Attribute var author: String = ""
    @Attribute var pages: Int16 = 0
    @Attribute var rating: Int16? = nil
}

struct LibraryV1: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([BookV1.self]) }
    var persistentStoreName: String { "ModelEvolution" }
}

// MARK: Version 2

final class Book: ManagedObject {
    @Attribute var title: String = ""
    @Attribute(originalName: "author") var writer: String = ""
    @Attribute var pages: Int = 0
    @Attribute var rating: Double? = nil
    @Attribute var genre: String = "unknown"
}

final class Shelf: ManagedObject {
    @Attribute var label: String = ""
}

struct LibraryV2: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([Book.self, Shelf.self]) }
    var persistentStoreName: String { "ModelEvolution" }

    /// What inference cannot know: genres, from the old titles and subtitles.
    var migrationSteps: [MigrationStep] {
        [
            MigrationStep("2.0: genres") { rows in
                rows.updateRows(of: "Book") { book, original in
                    let subtitle = original?["subtitle"]
                    if case .string(let text)? = subtitle, text.localizedCaseInsensitiveContains("novel") {
                        book.setValue(.string("fiction"), for: "genre")
                    } else {
                        book.setValue(.string("non-fiction"), for: "genre")
                    }
                }
                rows.insertRow(into: "Shelf", ["label": .string("Unsorted")])
            }
        ]
    }

    func migrationDidProgress(_ progress: MigrationProgress) {
        print("  migrating… \(progress)")
    }
}

// MARK: The run

let manager = ContextManager.shared

if CommandLine.arguments.contains("--reset") {
    let directory = LibraryV2().storeDirectory
    let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    for file in files where file.hasPrefix("ModelEvolution.") {
        try FileManager.default.removeItem(at: directory.appendingPathComponent(file))
    }
    print("Removed the store in \(directory.path).")
    exit(0)
}

manager.delegate = LibraryV2()
let plan = try manager.migrationPlan()

if plan.storedVersionHash == nil {
    print("First run: no store yet. Version 1 of the app writes three books.")
    manager.delegate = LibraryV1()
    let context = try manager.createContext()
    try context.performAndWait {
        let books: [(String, String?, String, Int16, Int16?)] = [
            ("Middlemarch", "A Study of Provincial Life, a novel", "George Eliot", 880, 5),
            ("The Structure of Scientific Revolutions", nil, "Thomas Kuhn", 264, 4),
            ("Invisible Cities", "a novel", "Italo Calvino", 165, nil),
        ]
        for (title, subtitle, author, pages, rating) in books {
            let book = context.insert(BookV1.self)
            book.title = title
            book.subtitle = subtitle
            book.author = author
            book.pages = pages
            book.rating = rating
        }
        try context.save()
    }
    print("Saved. Run `swift run ModelEvolution` again: version 2 of the app will migrate the store.")
    exit(0)
}

print(plan)
if plan.isMigrationNeeded {
    guard plan.canMigrate else {
        print("The store cannot be migrated; it was left as it was.")
        exit(1)
    }
    print("Migrating:")
}
let context = try manager.createContext()
try context.performAndWait {
    let books = try context.fetch(FetchRequest<Book>(sortBy: [SortDescriptor(\.title)]))
    for book in books {
        let rating = book.rating.map { String(format: "%.1f", $0) } ?? "unrated"
        print("  \(book.title) by \(book.writer): \(book.pages) pages, \(rating), \(book.genre)")
    }
    let shelves = try context.fetch(FetchRequest<Shelf>()).map(\.label)
    print("  Shelves: \(shelves.joined(separator: ", "))")
}
if plan.isMigrationNeeded {
    print("Run it again: the store is up to date now. `swift run ModelEvolution --reset` starts over.")
}
