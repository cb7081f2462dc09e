import Foundation

/// One committed save, as the store's persistent history recorded it: when, by whom, and which
/// objects it inserted, updated (and which of their properties) and deleted.
///
/// Values, `Sendable`: fetch them on any context's queue and hand them anywhere. Apply them to
/// a context with ``ManagedObjectContext/mergeChanges(from:)``.
public struct HistoryTransaction: Sendable, Hashable, Identifiable {
    /// The transaction's place in the history: pass it to
    /// ``ManagedObjectContext/history(after:author:entityName:)`` to get the transactions after
    /// it.
    public let token: HistoryToken
    /// When the save was committed (the coordinator's clock).
    public let timestamp: Date
    /// The saving context's ``ManagedObjectContext/transactionAuthor`` (`nil` if it had none).
    public let author: String?
    /// The saving context's ``ManagedObjectContext/name``.
    public let contextName: String?
    /// What the save changed, one entry per object: the inserts, updates and deletes of each
    /// entity in turn.
    public let changes: [HistoryChange]

    /// Creates a transaction.
    public init(
        token: HistoryToken,
        timestamp: Date,
        author: String?,
        contextName: String?,
        changes: [HistoryChange]
    ) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.contextName = contextName
        self.changes = changes
    }

    /// The transaction's number: 1 for the first save recorded, then one more per save.
    public var transactionNumber: Int64 { token.transactionNumber }

    /// The transaction number, unique within its store.
    public var id: Int64 { token.transactionNumber }
}
