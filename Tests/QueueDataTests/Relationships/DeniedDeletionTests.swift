import Foundation
import Testing

@testable import QueueData

// A deletion refused by a deny rule stays pending; moving the objects in the way (to another
// object, or to nothing) must keep the deleted object's side in step, so that the next save
// succeeds. One pair per relationship kind, each with `.deny` on the side that is deleted.

/// One-to-many: a publisher may not be deleted while it has books.
final class Publisher: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "publisher", deleteRule: .deny) var books: Set<Novel>
}

final class Novel: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "books") var publisher: Publisher?
}

/// Ordered one-to-many.
final class Series: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "series", deleteRule: .deny) var volumes: [Volume]
}

final class Volume: ManagedObject {
    @Attribute var number: Int = 0
    @Relationship(inverse: "volumes") var series: Series?
}

/// Many-to-many.
final class Shelf: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "shelves", deleteRule: .deny) var labels: Set<Label>
}

final class Label: ManagedObject {
    @Attribute var text: String = ""
    @Relationship(inverse: "labels") var shelves: Set<Shelf>
}

/// One-to-one.
final class Owner: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "owner", deleteRule: .deny) var licence: Licence?
}

final class Licence: ManagedObject {
    @Attribute var number: String = ""
    @Relationship(inverse: "licence") var owner: Owner?
}

let deniedDeletionModel = ManagedObjectModel([
    Publisher.self, Novel.self, Series.self, Volume.self, Shelf.self, Label.self, Owner.self, Licence.self,
])

@Suite("Denied deletions resolved by moving the objects in the way")
struct DeniedDeletionTests {
    enum Move: String, CaseIterable, CustomTestStringConvertible {
        /// The objects in the way move to another object.
        case toAnother
        /// The objects in the way are taken out of the relationship (set to nil, or removed).
        case toNothing
        var testDescription: String { rawValue }
    }

    private func manager(_ kind: String, _ directory: TemporaryDirectory) -> ContextManager {
        switch kind {
        case "json": return jsonManager(directory, model: deniedDeletionModel)
        case "journal": return journalManager(directory, model: deniedDeletionModel)
        default: return ContextManager(delegate: TestStoreDelegate(model: deniedDeletionModel))
        }
    }

    /// Saves, deletes `doomed`, expects the save refused by its deny rule on `property`, runs
    /// `move`, checks `isInStep`, then expects the save to succeed.
    private func expectResolved(
        in context: ManagedObjectContext,
        deleting doomed: ManagedObject,
        property: String,
        move: () -> Void,
        isInStep: () -> Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try context.save()
        context.delete(doomed)
        let refusal = try #require(throws: ValidationError.self, sourceLocation: sourceLocation) {
            try context.save()
        }
        #expect(refusal.failures.map(\.property) == [property], sourceLocation: sourceLocation)
        #expect(doomed.isDeleted, "the deletion stays pending", sourceLocation: sourceLocation)
        move()
        #expect(isInStep(), "both sides of the relationship are in step", sourceLocation: sourceLocation)
        #expect(doomed.isDeleted, sourceLocation: sourceLocation)
        try context.save()
        #expect(doomed.managedObjectContext == nil, sourceLocation: sourceLocation)
        #expect(!context.hasChanges, sourceLocation: sourceLocation)
    }

    @Test("one-to-many", arguments: Move.allCases, ["memory", "journal", "json"])
    func oneToMany(_ move: Move, _ kind: String) throws {
        let directory = TemporaryDirectory("denied-1n")
        let manager = manager(kind, directory)
        let context = try manager.createContext()
        try context.performAndWait {
            let doomed = context.insert(Publisher.self)
            let other = context.insert(Publisher.self)
            other.name = "other"
            let books = (0..<3).map { index in
                let book = context.insert(Novel.self)
                book.title = "book \(index)"
                book.publisher = doomed
                return book
            }
            try expectResolved(in: context, deleting: doomed, property: "books") {
                for book in books {
                    book.publisher = move == .toAnother ? other : nil
                }
            } isInStep: {
                doomed.books.isEmpty && other.books == (move == .toAnother ? Set(books) : [])
            }
        }
        let fresh = try manager.createContext()
        try fresh.performAndWait {
            #expect(try fresh.count(for: FetchRequest<Publisher>()) == 1)
            let books = try fresh.fetch(FetchRequest<Novel>())
            #expect(books.count == 3)
            #expect(books.allSatisfy { $0.publisher?.name == (move == .toAnother ? "other" : nil) })
        }
        manager.close()
    }

    @Test("ordered one-to-many", arguments: Move.allCases, ["memory", "journal", "json"])
    func ordered(_ move: Move, _ kind: String) throws {
        let directory = TemporaryDirectory("denied-ordered")
        let manager = manager(kind, directory)
        let context = try manager.createContext()
        try context.performAndWait {
            let doomed = context.insert(Series.self)
            let other = context.insert(Series.self)
            other.name = "other"
            let kept = context.insert(Volume.self)
            other.volumes = [kept]
            let volumes = (1...3).map { number in
                let volume = context.insert(Volume.self)
                volume.number = number
                return volume
            }
            doomed.volumes = volumes
            try expectResolved(in: context, deleting: doomed, property: "volumes") {
                switch move {
                case .toAnother:
                    other.volumes += volumes  // each volume leaves the deleted series
                case .toNothing:
                    for volume in volumes {
                        volume.series = nil
                    }
                }
            } isInStep: {
                doomed.volumes.isEmpty
                    && other.volumes == (move == .toAnother ? [kept] + volumes : [kept])
                    && volumes.allSatisfy { $0.series === (move == .toAnother ? other : nil) }
            }
        }
        let fresh = try manager.createContext()
        try fresh.performAndWait {
            let series = try fresh.fetch(FetchRequest<Series>())
            #expect(series.map(\.name) == ["other"])
            #expect(series.first?.volumes.map(\.number) == (move == .toAnother ? [0, 1, 2, 3] : [0]))
        }
        manager.close()
    }

    @Test("many-to-many", arguments: Move.allCases, ["memory", "journal", "json"])
    func manyToMany(_ move: Move, _ kind: String) throws {
        let directory = TemporaryDirectory("denied-nm")
        let manager = manager(kind, directory)
        let context = try manager.createContext()
        try context.performAndWait {
            let doomed = context.insert(Shelf.self)
            let other = context.insert(Shelf.self)
            other.name = "other"
            let labels = (0..<3).map { index in
                let label = context.insert(Label.self)
                label.text = "label \(index)"
                return label
            }
            doomed.labels = Set(labels)
            labels[0].shelves.insert(other)  // already on both shelves
            try expectResolved(in: context, deleting: doomed, property: "labels") {
                for label in labels {
                    switch move {
                    case .toAnother: label.shelves = [other]
                    case .toNothing: label.shelves.remove(doomed)
                    }
                }
            } isInStep: {
                doomed.labels.isEmpty
                    && other.labels == (move == .toAnother ? Set(labels) : [labels[0]])
                    && labels.allSatisfy { !$0.shelves.contains(doomed) }
            }
        }
        let fresh = try manager.createContext()
        try fresh.performAndWait {
            let shelves = try fresh.fetch(FetchRequest<Shelf>())
            #expect(shelves.map(\.name) == ["other"])
            #expect(shelves.first?.labels.count == (move == .toAnother ? 3 : 1))
            #expect(try fresh.fetch(FetchRequest<Label>()).allSatisfy { $0.shelves.allSatisfy { $0.name == "other" } })
        }
        manager.close()
    }

    @Test("one-to-one", arguments: Move.allCases, ["memory", "journal", "json"])
    func oneToOne(_ move: Move, _ kind: String) throws {
        let directory = TemporaryDirectory("denied-11")
        let manager = manager(kind, directory)
        let context = try manager.createContext()
        try context.performAndWait {
            let doomed = context.insert(Owner.self)
            let other = context.insert(Owner.self)
            other.name = "other"
            let licence = context.insert(Licence.self)
            licence.number = "L-1"
            doomed.licence = licence
            try expectResolved(in: context, deleting: doomed, property: "licence") {
                licence.owner = move == .toAnother ? other : nil
            } isInStep: {
                doomed.licence == nil && other.licence === (move == .toAnother ? licence : nil)
            }
        }
        let fresh = try manager.createContext()
        try fresh.performAndWait {
            let owners = try fresh.fetch(FetchRequest<Owner>())
            #expect(owners.map(\.name) == ["other"])
            #expect(owners.first?.licence?.number == (move == .toAnother ? "L-1" : nil))
        }
        manager.close()
    }

    @Test("rollback after moving restores both sides, deletion included")
    func rollbackRestores() throws {
        let manager = manager("memory", TemporaryDirectory("denied-rollback"))
        let context = try manager.createContext()
        try context.performAndWait {
            let doomed = context.insert(Publisher.self)
            let other = context.insert(Publisher.self)
            let book = context.insert(Novel.self)
            book.publisher = doomed
            try context.save()
            context.delete(doomed)
            book.publisher = other
            #expect(doomed.books.isEmpty)
            context.rollback()
            #expect(!doomed.isDeleted)
            #expect(doomed.books == [book] && book.publisher === doomed && other.books.isEmpty)
            #expect(!context.hasChanges)
        }
    }

    @Test("an object joining a deleted object's relationship is in the way of its deny rule")
    func joiningADeletedObject() throws {
        let manager = manager("memory", TemporaryDirectory("denied-join"))
        let context = try manager.createContext()
        try context.performAndWait {
            let doomed = context.insert(Publisher.self)
            try context.save()
            context.delete(doomed)
            let book = context.insert(Novel.self)
            book.publisher = doomed
            #expect(doomed.books == [book])
            let refusal = try #require(throws: ValidationError.self) { try context.save() }
            #expect(refusal.failures.map(\.property) == ["books"])
            book.publisher = nil
            try context.save()
            #expect(try context.count(for: FetchRequest<Publisher>()) == 0)
            #expect(try context.count(for: FetchRequest<Novel>()) == 1)
        }
    }
}
