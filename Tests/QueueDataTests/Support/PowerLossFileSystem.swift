import Dispatch
import Foundation

@testable import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// The real file system, remembering how much of each appended file the syncs made durable, so
/// that a test can cut a file where a power loss would: every byte written after the start of
/// the last successful `fdatasync`/`fsync` of that file is lost. Syncs can be held until the
/// test releases them, and chosen ones made to fail.
///
/// Safe to call from any thread (group commit syncs on one queue while writes go on on another);
/// the state is behind a lock (tests may use locks; `Sources/` may not).
final class PowerLossFileSystem: FileSystem, Sendable {
    private struct State {
        /// Per path: the size a successful sync made durable.
        var durableSizes: [String: Int64] = [:]
        /// Per path: the syncs that succeeded, in order: the durable size, and the value of
        /// `marker` when the sync started.
        var checkpoints: [String: [(size: Int64, marker: Int)]] = [:]
        var syncs = 0
        var writes = 0
        /// Syncs (1-based, counted from the start) to hold until `release()`.
        var held: Set<Int> = []
        /// Syncs (1-based) that fail with `EIO`.
        var failing: Set<Int> = []
    }

    private let base = POSIXFileSystem()
    private let state = Locked(State())
    /// Read at the start of each sync into its checkpoint (e.g. how many saves had returned).
    private let marker: @Sendable () -> Int
    /// Signalled when a held sync starts waiting, and waited on by it.
    private let heldSyncStarted = DispatchSemaphore(value: 0)
    private let heldSyncRelease = DispatchSemaphore(value: 0)
    /// Signalled after every write.
    private let wrote = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - durableSizes: How much of each file is durable to begin with (what another file system
    ///     left); a file not listed is durable as it is when first opened.
    ///   - marker: Read at the start of each sync into its checkpoint.
    init(durableSizes: [String: Int64] = [:], marker: @escaping @Sendable () -> Int = { 0 }) {
        self.marker = marker
        state.withLock { $0.durableSizes = durableSizes }
    }

    /// Holds sync number `number` (1-based) until ``releaseHeldSync()``; it fails with `EIO`
    /// after the release if `failing`.
    func hold(sync number: Int, failing: Bool = false) {
        state.withLock {
            $0.held.insert(number)
            if failing {
                $0.failing.insert(number)
            }
        }
    }

    /// Waits until a held sync has started (it then waits for ``releaseHeldSync()``); `false`
    /// if none did within 30 seconds.
    func waitForHeldSync() -> Bool {
        heldSyncStarted.wait(timeout: .now() + 30) == .success
    }

    func releaseHeldSync() {
        heldSyncRelease.signal()
    }

    /// The number of writes so far.
    var writeCount: Int { state.withLock { $0.writes } }

    /// Waits until there have been `count` writes in all; `false` if there were not within 30
    /// seconds.
    func waitForWrites(reaching count: Int) -> Bool {
        while writeCount < count {
            guard wrote.wait(timeout: .now() + 30) == .success else { return false }
        }
        return true
    }

    var syncCount: Int { state.withLock { $0.syncs } }

    /// The successful syncs of `path`, in order.
    func checkpoints(of path: String) -> [(size: Int64, marker: Int)] {
        state.withLock { $0.checkpoints[path] ?? [] }
    }

    /// The size of `path` a power loss now would leave.
    func durableSize(of path: String) -> Int64 {
        state.withLock { $0.durableSizes[path] } ?? 0
    }

    /// The bytes of `path` a power loss now would leave.
    func durableBytes(of path: String) throws -> [UInt8] {
        let size = durableSize(of: path)
        return Array(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))).prefix(Int(size)))
    }

    func open(_ path: String, flags: Int32, mode: mode_t) throws -> Int32 {
        let descriptor = try base.open(path, flags: flags, mode: mode)
        // A file that existed before it was opened here is durable as it is.
        let size = try base.size(descriptor, path: path)
        state.withLock {
            if $0.durableSizes[path] == nil {
                $0.durableSizes[path] = size
            }
        }
        return descriptor
    }

    func close(_ descriptor: Int32) {
        base.close(descriptor)
    }

    func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        try base.read(descriptor, into: buffer, at: offset, path: path)
    }

    func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        let written = try base.write(descriptor, from: buffer, at: offset, path: path)
        state.withLock { $0.writes += 1 }
        wrote.signal()
        return written
    }

    func synchronize(_ descriptor: Int32, path: String) throws {
        try sync(descriptor, path: path) { try base.synchronize(descriptor, path: path) }
    }

    func synchronizeData(_ descriptor: Int32, path: String) throws {
        try sync(descriptor, path: path) { try base.synchronizeData(descriptor, path: path) }
    }

    /// Takes the size and the marker, waits if held, then syncs (or fails) and records the size
    /// as durable.
    private func sync(_ descriptor: Int32, path: String, _ body: () throws -> Void) throws {
        let size = try base.size(descriptor, path: path)
        let marker = self.marker()
        let (isHeld, fails) = state.withLock { state in
            state.syncs += 1
            return (state.held.contains(state.syncs), state.failing.contains(state.syncs))
        }
        if isHeld {
            heldSyncStarted.signal()
            heldSyncRelease.wait()
        }
        if fails {
            throw SystemCallError(call: "fdatasync", path: path, code: EIO)
        }
        try body()
        state.withLock {
            $0.durableSizes[path] = max($0.durableSizes[path] ?? 0, size)
            $0.checkpoints[path, default: []].append((size, marker))
        }
    }

    func truncate(_ descriptor: Int32, to length: Int64, path: String) throws {
        try base.truncate(descriptor, to: length, path: path)
        state.withLock { $0.durableSizes[path] = min($0.durableSizes[path] ?? length, length) }
    }

    func size(_ descriptor: Int32, path: String) throws -> Int64 {
        try base.size(descriptor, path: path)
    }

    func rename(_ source: String, to destination: String) throws {
        try base.rename(source, to: destination)
        state.withLock { $0.durableSizes[destination] = $0.durableSizes[source] }
    }

    func remove(_ path: String) throws {
        try base.remove(path)
    }

    func link(_ source: String, to destination: String) throws {
        try base.link(source, to: destination)
    }

    func makeDirectory(_ path: String) throws {
        try base.makeDirectory(path)
    }

    func contentsOfDirectory(_ path: String) throws -> [String] {
        try base.contentsOfDirectory(path)
    }

    func fileExists(_ path: String) -> Bool {
        base.fileExists(path)
    }

    func lockExclusively(_ descriptor: Int32, path: String) throws -> Bool {
        try base.lockExclusively(descriptor, path: path)
    }
}
