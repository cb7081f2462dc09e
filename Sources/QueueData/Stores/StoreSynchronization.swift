import Foundation

/// What makes everything a two-phase store appended so far durable: an `fdatasync` of a
/// journal, say. ``PersistentStore/pendingSynchronization()`` takes one on the coordinator's
/// queue; the coordinator runs it on the store's ``PersistentStore/synchronizationQueue``,
/// while other saves go on appending.
///
/// A value, so that it can cross from the coordinator's queue to the synchronization queue.
public struct StoreSynchronization: Sendable {
    private let body: @Sendable () throws -> Void

    /// A synchronization that runs `body`.
    ///
    /// - Parameter body: Makes durable everything appended before the synchronization was
    ///   taken; throws if it could not (the store must then refuse later commits, see
    ///   ``PersistentStore/synchronizationFailed(_:)``).
    public init(_ body: @escaping @Sendable () throws -> Void) {
        self.body = body
    }

    /// A synchronization with nothing to do: what a store whose commits are durable when they
    /// return hands out.
    public static let none = StoreSynchronization {}

    /// Runs the synchronization.
    ///
    /// - Throws: The error of the write or sync that failed.
    public func run() throws {
        try body()
    }
}
