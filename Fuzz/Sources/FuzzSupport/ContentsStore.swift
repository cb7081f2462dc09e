import Foundation
@_spi(Fuzzing) import QueueData

/// A store that holds decoded contents in memory: how the open target hands fuzzed contents
/// to a ``ContextManager`` through the public API, as any custom store would.
///
/// Every state the coordinator hands it (a migration's result, a save's resulting rows) is
/// written as a journal and read back: what QueueData accepts, it must be able to write and
/// read again.
public final class ContentsStore: PersistentStore {
    private let contents: StoreContents

    /// A store holding `contents`.
    public init(_ contents: StoreContents) {
        self.contents = contents
    }

    /// The contents, as given.
    public func open(for model: ManagedObjectModel) throws -> StoreContents {
        contents
    }

    /// Checks that the resulting state survives a journal round trip.
    public func commit(_ changes: ChangeSet, resultingState: StoreState) throws {
        Oracle.checkRoundTrip(of: resultingState)
    }

    /// Checks that the migrated state survives a journal round trip.
    public func replaceContents(with state: StoreState, keepingOriginalAs suffix: String) throws {
        Oracle.checkRoundTrip(of: state)
    }

    /// The contents, as given.
    public func inspect() throws -> StoreContents? {
        contents
    }

    /// Nothing to release.
    public func close() {}
}
