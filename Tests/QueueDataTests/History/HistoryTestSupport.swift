import Foundation
import QueueData

/// The stores that keep history, each a fresh manager tracking it.
enum HistoryStore: String, CaseIterable, CustomStringConvertible, Sendable {
    case journal, inMemory

    var description: String { rawValue }

    /// A manager on a new store of this kind in `directory` (journal) or in memory.
    func manager(_ directory: TemporaryDirectory, tracksHistory: Bool = true) -> ContextManager {
        opener(directory, tracksHistory: tracksHistory)()
    }

    /// Makes managers tracking history that all open the same store of this kind: the journal in
    /// `directory`, or one in-memory store.
    func opener(_ directory: TemporaryDirectory, tracksHistory: Bool = true) -> () -> ContextManager {
        switch self {
        case .journal:
            return { journalManager(directory, tracksHistory: tracksHistory) }
        case .inMemory:
            let store = InMemoryStore()
            return {
                ContextManager(
                    delegate: TestStoreDelegate(storeType: .custom { _ in store }, tracksHistory: tracksHistory))
            }
        }
    }
}

extension HistoryChange {
    /// `I Destination 3`, `U Destination 3 name,rating`, `D Destination 3`.
    var summary: String {
        let id = "\(objectID.entityName) \(objectID.primaryKey ?? 0)"
        switch kind {
        case .insert: return "I \(id)"
        case .update: return "U \(id) \(updatedProperties.sorted().joined(separator: ","))"
        case .delete: return "D \(id)"
        }
    }
}

extension HistoryTransaction {
    /// The author and the changes, sorted: what a test compares.
    var summary: String {
        "\(author ?? "-"): " + changes.map(\.summary).sorted().joined(separator: "; ")
    }
}

/// Every transaction of `context`'s store after `token`, summarized.
func historySummaries(_ context: ManagedObjectContext, after token: HistoryToken? = nil) throws -> [String] {
    try context.performAndWait { try context.history(after: token).map(\.summary) }
}
