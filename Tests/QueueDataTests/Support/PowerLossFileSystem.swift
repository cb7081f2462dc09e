import Dispatch
import Foundation

@testable import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// The real file system, with a model of what a power loss would leave of it
/// (``PowerLossModel``): bytes written to a file after the start of its last successful
/// `fsync`/`fdatasync` are lost, and a create, rename, link or unlink no later `fsync` of its
/// directory covers may be undone. A test can ask, at any moment, for every state a power loss
/// would leave a directory in, or record them after every operation of a save and cut power at
/// each. Syncs can be held until the test releases them, and chosen ones made to fail.
///
/// Safe to call from any thread (group commit syncs on one queue while writes go on on another);
/// the state is behind a lock (tests may use locks; `Sources/` may not).
final class PowerLossFileSystem: FileSystem, Sendable {
    /// A moment a power cut was simulated at.
    struct Cut: Sendable {
        /// How many operations had run since the recording started (0: none).
        var operation: Int
        /// The last of them (`open Store.json`, `rename Store.json.tmp-… → Store.json`, …).
        var description: String
        /// Every state a power loss then would have left the directory in.
        var outcomes: [PowerLossOutcome]
    }

    private enum Descriptor {
        case file(PowerLossModel.FileID, path: String)
        case directory(String)
    }

    private struct State {
        var model: PowerLossModel
        var descriptors: [Int32: Descriptor] = [:]
        /// Per path: the syncs that succeeded, in order: the durable size, and the value of
        /// `marker` when the sync started.
        var checkpoints: [String: [(size: Int64, marker: Int)]] = [:]
        var syncs = 0
        var writes = 0
        /// Syncs (1-based, counted from the start) to hold until `release()`.
        var held: Set<Int> = []
        /// Syncs (1-based) that fail with `EIO`.
        var failing: Set<Int> = []
        /// The directory whose outcomes are recorded after every operation, and the cuts so far.
        var recording: (directory: String, cuts: [Cut])?
    }

    private let base = POSIXFileSystem()
    private let state: Locked<State>
    /// Read at the start of each sync into its checkpoint (e.g. how many saves had returned).
    private let marker: @Sendable () -> Int
    /// Signalled when a held sync starts waiting, and waited on by it.
    private let heldSyncStarted = DispatchSemaphore(value: 0)
    private let heldSyncRelease = DispatchSemaphore(value: 0)
    /// Signalled after every write.
    private let wrote = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - durableSizes: How much of each file is durable to begin with (what another file system
    ///     left); a file not listed is durable as it is when this file system first meets it.
    ///   - marker: Read at the start of each sync into its checkpoint.
    init(durableSizes: [String: Int64] = [:], marker: @escaping @Sendable () -> Int = { 0 }) {
        self.marker = marker
        state = Locked(State(model: PowerLossModel(initialDurableSizes: durableSizes)))
    }

    // MARK: Power loss

    /// Every state a power loss now would leave `directory` in.
    func outcomes(of directory: URL) -> [PowerLossOutcome] {
        let path = directory.standardizedFileURL.path
        return state.withLock { state in
            state.model.meet(directory: path)
            return state.model.outcomes(of: path)
        }
    }

    /// From now on, records after every operation every state a power loss then would leave
    /// `directory` in (a cut), starting with one for now.
    func startRecordingCuts(of directory: URL) {
        let path = directory.standardizedFileURL.path
        state.withLock { state in
            state.model.meet(directory: path)
            let now = Cut(operation: 0, description: "start", outcomes: state.model.outcomes(of: path))
            state.recording = (path, [now])
        }
    }

    /// Stops recording; returns the cuts recorded.
    func stopRecordingCuts() -> [Cut] {
        state.withLock { state in
            defer { state.recording = nil }
            return state.recording?.cuts ?? []
        }
    }

    /// Counts an operation of a recording, and records the cut after it: new outcomes if it may
    /// have changed them, the last ones otherwise.
    private static func recordCut(_ state: inout State, _ description: String, changes: Bool = true) {
        guard let recording = state.recording else { return }
        let cuts = recording.cuts
        let outcomes =
            changes || cuts.isEmpty ? state.model.outcomes(of: recording.directory) : cuts[cuts.count - 1].outcomes
        state.recording!.cuts.append(Cut(operation: cuts.count, description: description, outcomes: outcomes))
    }

    /// The size of the file now at `path` a power loss now would leave (if it kept the name).
    func durableSize(of path: String) -> Int64 {
        state.withLock { state in
            guard case .file(let id) = state.model.entry(at: path) else { return 0 }
            return state.model.durableSize(of: id)
        }
    }

    // MARK: Holding syncs

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

    // MARK: FileSystem

    func open(_ path: String, flags: Int32, mode: mode_t) throws -> Int32 {
        try state.withLock { state in
            if flags & O_DIRECTORY != 0 {
                // Only to synchronize it: its parent need not be known.
                state.model.meet(directory: path)
                let descriptor = try base.open(path, flags: flags, mode: mode)
                state.descriptors[descriptor] = .directory(path)
                Self.recordCut(&state, "open \(lastComponent(path))/", changes: false)
                return descriptor
            }
            state.model.meet(path: path)
            let existing = state.model.entry(at: path)
            let descriptor = try base.open(path, flags: flags, mode: mode)
            switch existing {
            case .directory:
                state.descriptors[descriptor] = .directory(path)
                Self.recordCut(&state, "open \(lastComponent(path))/", changes: false)
            case .file(let id):
                if flags & O_TRUNC != 0 {
                    state.model.truncated(id, to: 0)
                }
                state.descriptors[descriptor] = .file(id, path: path)
                Self.recordCut(&state, "open \(lastComponent(path))", changes: flags & O_TRUNC != 0)
            case nil:
                // It did not exist: the open created it.
                let id = state.model.created(file: path)
                state.descriptors[descriptor] = .file(id, path: path)
                Self.recordCut(&state, "create \(lastComponent(path))")
            }
            return descriptor
        }
    }

    func close(_ descriptor: Int32) {
        // Forgotten before the number can be reused by another open.
        state.withLock { _ = $0.descriptors.removeValue(forKey: descriptor) }
        base.close(descriptor)
    }

    func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        let count = try base.read(descriptor, into: buffer, at: offset, path: path)
        state.withLock { Self.recordCut(&$0, "read \(lastComponent(path))", changes: false) }
        return count
    }

    func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        let written = try base.write(descriptor, from: buffer, at: offset, path: path)
        state.withLock { state in
            state.writes += 1
            if case .file(let id, _) = state.descriptors[descriptor] {
                state.model.wrote(id, UnsafeRawBufferPointer(rebasing: buffer[..<written]), at: offset)
            }
            Self.recordCut(&state, "write \(written) bytes to \(lastComponent(path))")
        }
        wrote.signal()
        return written
    }

    func synchronize(_ descriptor: Int32, path: String) throws {
        try sync(descriptor, path: path, "fsync") { try base.synchronize(descriptor, path: path) }
    }

    func synchronizeData(_ descriptor: Int32, path: String) throws {
        try sync(descriptor, path: path, "fdatasync") { try base.synchronizeData(descriptor, path: path) }
    }

    /// Takes what the sync covers (the file's size, or the directory's changes) and the marker,
    /// waits if held, then syncs (or fails) and makes what it covered durable.
    private func sync(_ descriptor: Int32, path: String, _ call: String, _ body: () throws -> Void) throws {
        let size = try base.size(descriptor, path: path)
        let marker = self.marker()
        let (opened, covered, isHeld, fails) = state.withLock { state in
            state.syncs += 1
            let opened = state.descriptors[descriptor]
            var covered: [Int] = []
            if case .directory(let directory) = opened {
                covered = state.model.pendingChanges(of: directory)
            }
            return (opened, covered, state.held.contains(state.syncs), state.failing.contains(state.syncs))
        }
        if isHeld {
            heldSyncStarted.signal()
            heldSyncRelease.wait()
        }
        if fails {
            throw SystemCallError(call: call, path: path, code: EIO)
        }
        try body()
        state.withLock { state in
            switch opened {
            case .directory(let directory):
                state.model.synchronizedDirectory(covering: covered)
                Self.recordCut(&state, "\(call) \(lastComponent(directory))/")
            case .file(let id, let openedPath):
                state.model.synchronized(id, size: size)
                state.checkpoints[openedPath, default: []].append((size, marker))
                Self.recordCut(&state, "\(call) \(lastComponent(path))")
            case nil:
                Self.recordCut(&state, "\(call) \(lastComponent(path))", changes: false)
            }
        }
    }

    func truncate(_ descriptor: Int32, to length: Int64, path: String) throws {
        try base.truncate(descriptor, to: length, path: path)
        state.withLock { state in
            if case .file(let id, _) = state.descriptors[descriptor] {
                state.model.truncated(id, to: length)
            }
            Self.recordCut(&state, "ftruncate \(lastComponent(path)) to \(length)")
        }
    }

    func size(_ descriptor: Int32, path: String) throws -> Int64 {
        let size = try base.size(descriptor, path: path)
        state.withLock { Self.recordCut(&$0, "fstat \(lastComponent(path))", changes: false) }
        return size
    }

    func rename(_ source: String, to destination: String) throws {
        try state.withLock { state in
            state.model.meet(path: source)
            state.model.meet(path: destination)
            // The model changes first (it may need the bytes of the file the rename replaces),
            // and is kept only if the rename succeeds.
            var model = state.model
            model.renamed(source, to: destination, replacedBytes: { (try? base.readFile(destination)) ?? [] })
            try base.rename(source, to: destination)
            state.model = model
            Self.recordCut(&state, "rename \(lastComponent(source)) → \(lastComponent(destination))")
        }
    }

    func remove(_ path: String) throws {
        try state.withLock { state in
            state.model.meet(path: path)
            var model = state.model
            model.removed(path, bytes: { (try? base.readFile(path)) ?? [] })
            try base.remove(path)
            state.model = model
            Self.recordCut(&state, "unlink \(lastComponent(path))")
        }
    }

    func link(_ source: String, to destination: String) throws {
        try state.withLock { state in
            state.model.meet(path: source)
            state.model.meet(path: destination)
            try base.link(source, to: destination)
            state.model.linked(source, to: destination)
            Self.recordCut(&state, "link \(lastComponent(source)) → \(lastComponent(destination))")
        }
    }

    func makeDirectory(_ path: String) throws {
        try state.withLock { state in
            state.model.meet(path: path)
            let exists = state.model.entry(at: path) != nil
            try base.makeDirectory(path)
            if !exists {
                state.model.created(directory: path)
            }
            Self.recordCut(&state, "mkdir \(lastComponent(path))", changes: !exists)
        }
    }

    func contentsOfDirectory(_ path: String) throws -> [String] {
        let names = try base.contentsOfDirectory(path)
        state.withLock { Self.recordCut(&$0, "readdir \(lastComponent(path))/", changes: false) }
        return names
    }

    func fileExists(_ path: String) -> Bool {
        base.fileExists(path)
    }

    func lockExclusively(_ descriptor: Int32, path: String) throws -> Bool {
        let locked = try base.lockExclusively(descriptor, path: path)
        state.withLock { Self.recordCut(&$0, "flock \(lastComponent(path))", changes: false) }
        return locked
    }
}
