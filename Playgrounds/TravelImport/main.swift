// TravelImport: the seed's travel import, on QueueData.
//
// Imports 25 destinations on a background queue's context, saves, and shows the save
// merged into a second context; then an update and a delete merged the same way.
// Run it with `swift run TravelImport`. It uses the default store — a journal in
// $XDG_DATA_HOME/TravelImport or ~/.local/share/TravelImport — so a second run finds what
// the first one left, and replaces it.

import Dispatch
import Foundation
import QueueData

final class Destination: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var country: String = ""
    @Attribute var rating: Int = 0
    @Attribute var visited: Date? = nil
}

/// The app's store configuration: the model and the store's name; everything else
/// (store type, directory) keeps QueueData's defaults.
final class TravelStore: ContextManagerDelegate {
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([Destination.self]) }
    var persistentStoreName: String { "TravelImport" }
}

let seed: [(name: String, country: String)] = [
    ("Buenos Aires", "Argentina"), ("Sydney", "Australia"), ("Vienna", "Austria"),
    ("Rio de Janeiro", "Brazil"), ("Vancouver", "Canada"), ("Santiago", "Chile"),
    ("Beijing", "China"), ("Prague", "Czech Republic"), ("Copenhagen", "Denmark"),
    ("Cairo", "Egypt"), ("Paris", "France"), ("Berlin", "Germany"), ("Athens", "Greece"),
    ("Reykjavik", "Iceland"), ("Mumbai", "India"), ("Dublin", "Ireland"), ("Rome", "Italy"),
    ("Kyoto", "Japan"), ("Nairobi", "Kenya"), ("Mexico City", "Mexico"), ("Marrakesh", "Morocco"),
    ("Amsterdam", "Netherlands"), ("Auckland", "New Zealand"), ("Lisbon", "Portugal"),
    ("Cape Town", "South Africa"),
]

let manager = ContextManager.shared
manager.delegate = TravelStore()

// One context per serial queue: the importer writes, the viewer reads.
let importer = try manager.createContext(for: DispatchQueue(label: "import"))
let viewer = try manager.createContext(for: DispatchQueue(label: "viewer"))

// The viewer hears about every merge of another context's save.
let observer = NotificationCenter.default.addObserver(
    forName: ManagedObjectContext.objectsDidChangeNotification, object: viewer, queue: nil
) { notification in
    guard let changes = ObjectsDidChange(notification) else { return }
    print(
        "  viewer merged a save: \(changes.insertedObjectIDs.count) inserted, "
            + "\(changes.updatedObjectIDs.count) updated, \(changes.deletedObjectIDs.count) deleted")
}

let leftOver = try await importer.perform {
    let previous = try importer.fetch(FetchRequest<Destination>())
    previous.forEach(importer.delete)
    try importer.save()
    return previous.count
}
if leftOver > 0 {
    print("The store already held \(leftOver) destinations from an earlier run: deleted them.")
}

print("Importing \(seed.count) destinations on queue '\(importer.queue.label)'…")
try await importer.perform {
    for (name, country) in seed {
        let destination = importer.insert(Destination.self)
        destination.name = name
        destination.country = country
    }
    try importer.save()
}

// The save's merge was queued on the viewer's queue before save() returned, so this block
// runs after it.
let kyotoID = try await viewer.perform {
    let all = try viewer.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)]))
    print("Viewer sees \(all.count) destinations, from \(all.first!.name) to \(all.last!.name).")
    let kyoto = try viewer.fetch(
        FetchRequest<Destination>(predicate: #Predicate { $0.name == "Kyoto" }))[0]
    print("Viewer holds Kyoto: rating \(kyoto.rating), visited \(kyoto.visited == nil ? "never" : "yes").")
    return kyoto.objectID
}

print("Importer rates and visits Kyoto, and deletes Cairo…")
try await importer.perform {
    let kyoto = try importer.existingObject(with: kyotoID, as: Destination.self)
    kyoto.rating = 5
    kyoto.visited = Date()
    let cairo = try importer.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "Cairo" }))
    cairo.forEach(importer.delete)
    try importer.save()
}

try await viewer.perform {
    let kyoto = try viewer.existingObject(with: kyotoID, as: Destination.self)
    print(
        "Viewer's Kyoto, without refetching: rating \(kyoto.rating), visited \(kyoto.visited == nil ? "never" : "yes")."
    )
    let remaining = try viewer.count(for: FetchRequest<Destination>())
    let best = try viewer.fetch(
        FetchRequest<Destination>(predicate: #Predicate { $0.rating >= 4 }, sortBy: [SortDescriptor(\.name)]))
    print("Viewer now counts \(remaining) destinations; rated 4 or more: \(best.map(\.name)).")
}

NotificationCenter.default.removeObserver(observer)
manager.close()
print("Done. The store is at \(TravelStore().storeDirectory.path).")
