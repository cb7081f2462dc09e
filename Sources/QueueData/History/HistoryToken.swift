import Foundation

/// A place in a store's persistent history: the transaction a context has caught up to.
///
/// Get one from ``ManagedObjectContext/currentHistoryToken()`` or from a
/// ``HistoryTransaction/token``; keep it (it is `Codable`), and ask for what changed since with
/// ``ManagedObjectContext/history(after:author:entityName:)``. Tokens stay valid across reopens,
/// saves and compaction; only ``ManagedObjectContext/purgeHistory(before:)-(HistoryToken)`` retires the ones
/// before the purge point (a later fetch with one throws ``HistoryError/Code/expiredToken``).
///
/// Tokens of one store are ordered by transaction number. (Tokens of different stores compare
/// by store identifier first; such an order means nothing, and no history call accepts a token
/// of another store.)
public struct HistoryToken: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The store the token belongs to (``ObjectID/storeIdentifier`` of its objects).
    public let storeIdentifier: UUID
    /// The number of the last transaction the token covers: transactions are numbered from 1 in
    /// the order they were committed; 0 is the start of the history.
    public let transactionNumber: Int64

    /// Creates a token; normally you get one from a context or a transaction instead.
    public init(storeIdentifier: UUID, transactionNumber: Int64) {
        self.storeIdentifier = storeIdentifier
        self.transactionNumber = transactionNumber
    }

    /// Orders by store identifier, then transaction number.
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool {
        if lhs.storeIdentifier != rhs.storeIdentifier {
            return lhs.storeIdentifier.uuidString < rhs.storeIdentifier.uuidString
        }
        return lhs.transactionNumber < rhs.transactionNumber
    }

    /// `<store UUID>#<transaction number>`.
    public var description: String { "\(storeIdentifier.uuidString)#\(transactionNumber)" }
}
