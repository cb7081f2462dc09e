// TravelJournal: an object graph — travellers, their trips, and the destinations they visit.
//
// Shows relationships and their inverses, delete rules (cascade, nullify, deny), validation
// that collects every failure, a unique attribute and an upsert, performChanges, an asynchronous fetch delivered on the
// context's queue, a second context merging relationship changes, and the fetch extras.
// Run it with `swift run TravelJournal`. It uses the default store — a journal in
// $XDG_DATA_HOME/TravelJournal or ~/.local/share/TravelJournal — so a second run finds what
// the first one left, deletes it, and tells the same story again.
//
// The story is an `async` function rather than top-level code: at the top level, Swift picks
// the synchronous overload of `performChanges` and `fetchObjectIDs` even after `await`.

import Dispatch
import Foundation
import QueueData

// MARK: The model

/// Deleting a traveller deletes their trips (cascade).
final class Traveller: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "traveller", deleteRule: .cascade) var trips: Set<Trip>
}

/// A trip belongs to one traveller and visits its stops in order; deleting it only takes it
/// off its destinations' lists (nullify, the default).
final class Trip: ManagedObject {
    @Attribute(validate: { title in
        guard !title.trimmingCharacters(in: .whitespaces).isEmpty else { throw BlankTitle() }
    })
    var title: String = ""
    @Attribute var year: Int = 0
    @Relationship(inverse: "trips", isOptional: false) var traveller: Traveller?
    @Relationship(inverse: "trips", minCount: 1) var stops: [Destination]
}

/// A destination cannot be deleted while a trip still visits it (deny); no two share a name.
final class Destination: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Attribute var country: String = ""
    @Relationship(inverse: "stops", deleteRule: .deny) var trips: Set<Trip>
}

struct BlankTitle: Error, CustomStringConvertible {
    var description: String { "needs a title" }
}

/// The app's store configuration: everything but the model and the name keeps QueueData's
/// defaults (a journal in the XDG data directory).
final class TravelJournalStore: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel {
        ManagedObjectModel([Traveller.self, Trip.self, Destination.self])
    }
    var persistentStoreName: String { "TravelJournal" }
}

extension Trip {
    /// `Lisbon → Sintra → Porto`.
    var route: String { stops.map(\.name).joined(separator: " → ") }
}

/// `1 trip`, `2 trips`.
func count(_ number: Int, _ noun: String) -> String {
    "\(number) \(noun)\(number == 1 ? "" : "s")"
}

/// Titles, sorted, for printing sets.
func titles(_ trips: Set<Trip>) -> String {
    trips.isEmpty ? "none" : trips.map(\.title).sorted().joined(separator: ", ")
}

// MARK: The story

func tellTheStory() async throws {
    let manager = ContextManager.shared
    manager.delegate = TravelJournalStore()

    // One context per serial queue: the planner writes, the viewer reads.
    let planner = try manager.createContext(for: DispatchQueue(label: "planner"))
    let viewer = try manager.createContext(for: DispatchQueue(label: "viewer"))

    // Start over. Deleting the travellers cascades to their trips, so the destinations deleted
    // in the same save have no trip left to deny it.
    let leftOver: String? = try await planner.performChanges {
        let counts = [
            count(try planner.count(for: FetchRequest<Traveller>()), "traveller"),
            count(try planner.count(for: FetchRequest<Trip>()), "trip"),
            count(try planner.count(for: FetchRequest<Destination>()), "destination"),
        ]
        try planner.fetch(FetchRequest<Traveller>()).forEach(planner.delete)
        try planner.fetch(FetchRequest<Destination>()).forEach(planner.delete)
        return planner.hasChanges ? "\(counts[0]), \(counts[1]) and \(counts[2])" : nil
    }
    if let leftOver {
        print("The journal held \(leftOver) from an earlier run: deleted in one save.")
    }

    print("Planning on queue '\(planner.queue.label)'…")
    // perform and save() rather than performChanges: object IDs read inside performChanges are
    // still temporary (it saves after the block); read after save(), they are permanent.
    let (iberiaID, japanID, kyotoID, benID, reykjavikID) = try await planner.perform {
        var places: [String: Destination] = [:]
        for (name, country) in [
            ("Lisbon", "Portugal"), ("Porto", "Portugal"), ("Kyoto", "Japan"), ("Osaka", "Japan"),
            ("Kanazawa", "Japan"), ("Reykjavik", "Iceland"), ("Vík", "Iceland"),
        ] {
            let destination = planner.insert(Destination.self)
            destination.name = name
            destination.country = country
            places[name] = destination
        }
        let ada = planner.insert(Traveller.self)
        ada.name = "Ada"
        let ben = planner.insert(Traveller.self)
        ben.name = "Ben"

        // Set one side of a relationship: the inverse follows at once.
        let iberia = planner.insert(Trip.self)
        iberia.title = "Iberian spring"
        iberia.year = 2024
        iberia.traveller = ada
        print("  iberia.traveller = ada          → Ada's trips: \(titles(ada.trips))")
        iberia.stops = [places["Lisbon"]!, places["Porto"]!]
        print("  iberia.stops = [Lisbon, Porto]  → Lisbon's trips: \(titles(places["Lisbon"]!.trips))")

        let japan = planner.insert(Trip.self)
        japan.title = "Japan by rail"
        japan.year = 2025
        japan.stops = [places["Kyoto"]!, places["Osaka"]!, places["Kanazawa"]!]
        ada.trips.insert(japan)
        print("  ada.trips.insert(japan)         → Japan by rail's traveller: \(japan.traveller?.name ?? "none")")

        let ring = planner.insert(Trip.self)
        ring.title = "Ring Road"
        ring.year = 2025
        ring.traveller = ben
        ring.stops = [places["Reykjavik"]!, places["Vík"]!]
        try planner.save()
        print("  Saved 2 travellers, 3 trips and 7 destinations.")
        return (iberia.objectID, japan.objectID, places["Kyoto"]!.objectID, ben.objectID, places["Reykjavik"]!.objectID)
    }

    // The save's merge was queued on the viewer's queue before save() returned: this runs after it.
    try await viewer.perform {
        let iberia = try viewer.existingObject(with: iberiaID, as: Trip.self)
        print("Viewer on queue '\(viewer.queue.label)' holds \(iberia.title): \(iberia.route).")
    }

    print("Planner adds Sintra between Lisbon and Porto (performChanges: changes, then one save)…")
    try await planner.performChanges {
        let iberia = try planner.existingObject(with: iberiaID, as: Trip.self)
        let sintra = planner.insert(Destination.self)
        sintra.name = "Sintra"
        sintra.country = "Portugal"
        iberia.stops.insert(sintra, at: 1)
    }
    try await viewer.perform {
        let iberia = try viewer.existingObject(with: iberiaID, as: Trip.self)
        print("Viewer's \(iberia.title), merged without refetching: \(iberia.route).")
        print("Viewer's Sintra, loaded through the relationship: its trips are \(titles(iberia.stops[1].trips)).")
    }

    print("A guidebook import lists Porto again (Destination.name is unique)…")
    do {
        try await planner.performChanges {
            planner.insert(Destination.self).name = "Porto"
        }
    } catch let error as MergeConflictError {
        for conflict in error.constraintConflicts {
            print("  The .error policy refuses it: \(conflict.entityName).\(conflict.attributeNames[0]) is taken.")
        }
    }
    try await planner.performChanges {
        planner.mergePolicy = .mergeByPropertyObjectTrump
        let porto = planner.insert(Destination.self)
        porto.name = "Porto"
        porto.country = "Portugal (Norte)"
    }
    await planner.perform { planner.mergePolicy = .error }
    try await viewer.perform {
        let portos = try viewer.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "Porto" }))
        print(
            "  With .mergeByPropertyObjectTrump it upserts: \(count(portos.count, "Porto")), in "
                + "\(portos[0].country), still on \(titles(portos[0].trips)).")
    }

    print("A careless draft: a trip with a blank title, no traveller and no stops…")
    do {
        try await planner.performChanges {
            planner.insert(Trip.self).title = "  "
        }
    } catch let error as ValidationError {
        print("  Refused, with every failure at once:")
        for failure in error.failures {
            print("    \(failure.entityName).\(failure.property ?? ""): \(failure.reason)")
        }
        let hasChanges = await planner.perform { planner.hasChanges }
        print("  performChanges rolled the draft back (the planner has changes: \(hasChanges)).")
    }

    print("Deleting Kyoto while a trip still visits it…")
    do {
        try await planner.performChanges {
            planner.delete(try planner.existingObject(with: kyotoID, as: Destination.self))
        }
    } catch let error as ValidationError {
        // The failure names the protected object and its relationship, which names the blockers.
        try await planner.perform {
            for failure in error.failures {
                let kyoto = try planner.existingObject(with: failure.objectID!, as: Destination.self)
                print(
                    "  Refused by the deny rule: \(failure.entityName).\(failure.property ?? "") of \(kyoto.name) "
                        + "still holds \(titles(kyoto.trips)).")
            }
        }
    }
    try await planner.performChanges {
        let kyoto = try planner.existingObject(with: kyotoID, as: Destination.self)
        let japan = try planner.existingObject(with: japanID, as: Trip.self)
        japan.stops.removeAll { $0 === kyoto }
        planner.delete(kyoto)
    }
    print("  Kyoto leaves Japan by rail first; then its deletion saves.")

    // An asynchronous fetch: matched on a private queue, delivered on the viewer's queue.
    let trips = try await viewer.fetch(
        FetchRequest<Trip>(sortBy: [SortDescriptor(\.year), SortDescriptor(\.title)])
    ) { trips in
        dispatchPrecondition(condition: .onQueue(viewer.queue))
        return trips.map { "  \($0.year) \($0.title) (\($0.traveller?.name ?? "nobody")): \($0.route)" }
    }
    print("Every trip, fetched asynchronously and delivered on the viewer's queue:")
    trips.forEach { print($0) }

    print("Ben closes his account…")
    try await planner.performChanges {
        planner.delete(try planner.existingObject(with: benID, as: Traveller.self))
    }
    try await viewer.perform {
        let reykjavik = try viewer.existingObject(with: reykjavikID, as: Destination.self)
        let travellers = count(try viewer.count(for: FetchRequest<Traveller>()), "traveller")
        let trips = count(try viewer.count(for: FetchRequest<Trip>()), "trip")
        print("  Viewer: \(travellers) and \(trips) left; Ring Road went with Ben (cascade).")
        print("  Reykjavik stays; its trips: \(titles(reykjavik.trips)) (nullify).")
    }

    print("Fetch extras on the viewer:")
    let japanese = try await viewer.fetchObjectIDs(
        FetchRequest<Destination>(predicate: #Predicate { $0.country == "Japan" }))
    print("  fetchObjectIDs, matched off the viewer's queue: \(count(japanese.count, "destination")) in Japan")
    try await viewer.perform {
        let byName = [SortDescriptor(\Destination.name)]
        print("  count(for:): \(count(try viewer.count(for: FetchRequest<Destination>()), "destination"))")
        let values = try viewer.fetchValues(
            FetchRequest<Destination>(predicate: #Predicate { $0.country == "Portugal" }, sortBy: byName),
            properties: ["name", "country"])
        let pairs = values.map { row in
            guard case .string(let name)? = row["name"], case .string(let country)? = row["country"] else { return "?" }
            return "\(name) (\(country))"
        }
        print("  fetchValues, dictionaries and no objects: \(pairs.joined(separator: ", "))")
        var names: [String] = []
        try viewer.enumerate(FetchRequest<Destination>(sortBy: byName), batchSize: 3) { destination in
            names.append(destination.name)
        }
        print("  enumerate, 3 objects registered at a time: \(names.joined(separator: ", "))")
    }

    manager.close()
    print("Done. The journal is in \(TravelJournalStore().storeDirectory.path); run again to start over.")
}

try await tellTheStory()
