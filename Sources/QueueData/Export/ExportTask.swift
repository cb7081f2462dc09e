import Dispatch

/// A handle on an export (or an import) in flight: ``cancel()`` stops it.
///
/// A cancelled export leaves no file under the destination's name (and a file that was
/// there untouched); its completion gets `CancellationError`. Cancelling after the work
/// finished does nothing.
///
/// `@unchecked Sendable`: its one mutable property lives on a private serial queue, which
/// every access enters with `sync`.
public final class ExportTask: @unchecked Sendable {
    private let stateQueue = DispatchQueue(label: "QueueData.ExportTask")
    // Confined to `stateQueue`.
    private var cancelled = false

    /// Creates a handle that is not cancelled.
    public init() {}

    /// Asks the work to stop: it does, at its next batch of records.
    public func cancel() {
        stateQueue.sync { cancelled = true }
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool {
        stateQueue.sync { cancelled }
    }
}
