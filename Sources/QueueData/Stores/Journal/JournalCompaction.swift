import Dispatch
import Foundation

/// An automatic compaction of a journal whose snapshot is being written off the saving path.
///
/// The journal starts one when an append finds the log has outgrown the live data: the rows as
/// of that record (an immutable ``StoreState``) are encoded and written to a temporary file,
/// synchronized, on the compaction's own queue, while saves go on appending to the old journal.
/// A later append (on the coordinator's queue) that finds the snapshot written finishes it: the
/// records appended meanwhile (``tail``) are written after the snapshot, re-framed for the new
/// file, the file is synchronized and renamed over the journal, and the directory synchronized.
/// Until the rename the old journal is the store, complete; after it, the new one is.
///
/// `@unchecked Sendable`: `outcome` is written once, on the compaction queue, before `done` is
/// left, and read only after `done` was waited for (the group orders the two); `tail` and the
/// counters are touched only on the coordinator's queue, by the journal's appends; the other
/// properties are immutable.
final class JournalCompaction: @unchecked Sendable {
    /// What the background write produced.
    struct Written {
        let temporary: String
        let header: JournalFormat.Header
        let fileSize: Int
        let payloadSize: Int
    }

    /// The snapshot record's sequence number; the tail's records follow it in the new file.
    let sequence: UInt64
    /// The rows the snapshot holds.
    let state: StoreState
    /// Left when the snapshot is written (or failed).
    let done = DispatchGroup()
    private(set) var outcome: Result<Written, any Error>?
    /// The payloads of the records appended since `state`, in order.
    var tail: [[UInt8]] = []
    var tailInsertedRows = 0
    var tailInsertBytes = 0

    init(sequence: UInt64, state: StoreState) {
        self.sequence = sequence
        self.state = state
    }

    /// Writes the snapshot of `state` for the store `storeIdentifier` beside `path`, on `queue`,
    /// inside `writes` too.
    func start(
        on queue: DispatchQueue,
        storeIdentifier: UUID,
        path: String,
        fileSystem: any FileSystem,
        writes: DispatchGroup
    ) {
        done.enter()
        writes.enter()
        queue.async { [self] in
            defer {
                done.leave()
                writes.leave()
            }
            var metadata = state.metadata
            metadata.storeIdentifier = storeIdentifier
            let state = self.state
            let (header, bytes, payloadSize) = JournalStore.snapshotFile(
                metadata: metadata, state: state, sequence: sequence)
            outcome = Result {
                let temporary = try bytes.withUnsafeBytes { try fileSystem.writeTemporaryFile(beside: path, $0) }
                return Written(temporary: temporary, header: header, fileSize: bytes.count, payloadSize: payloadSize)
            }
        }
    }

    /// Whether the background write has ended.
    var isWritten: Bool {
        done.wait(timeout: .now()) == .success
    }

    /// Waits for the background write to end, and removes what it wrote: the compaction is
    /// abandoned (the store closes, or is replaced or compacted another way).
    func abandon(_ fileSystem: any FileSystem) {
        done.wait()
        if case .success(let written) = outcome {
            try? fileSystem.remove(written.temporary)
        }
    }
}
