import Foundation

@testable import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// The real file system, with one operation made to fail: the N-th call fails with `errno`
/// (or writes half of its bytes), once or — simulating a crash — together with every call
/// after it; or the first call of one kind on a path containing a text (``failNamed``); or
/// that call held until the test releases it (``hold(_:pathContaining:)``).
///
/// `@unchecked Sendable`: its state is guarded by `lock` (a store calls it from its queues and
/// from its compaction queue at once).
final class FaultyFileSystem: FileSystem, @unchecked Sendable {
    private let lock = NSLock()
    /// The kind of call (`open`, `rename`, …) and path (text in it, or the whole path) whose
    /// first call fails.
    private var failNamed: (name: String, path: String, exact: Bool)?
    /// The kind of call and path text whose first call waits for `release`.
    private var held: (name: String, path: String, reached: DispatchSemaphore, release: DispatchSemaphore)?

    /// Makes the next call named `name` on a path containing `path` fail with `EIO`, once.
    func fail(_ name: String, pathContaining path: String) {
        lock.withLock { failNamed = (name, path, false) }
    }

    /// Makes the next call named `name` on exactly `path` fail with `EIO`, once.
    func fail(_ name: String, path: String) {
        lock.withLock { failNamed = (name, path, true) }
    }

    /// Makes the next call named `name` on a path containing `path` wait until
    /// ``releaseHeld()``; returns a semaphore signalled when it starts waiting.
    @discardableResult
    func hold(_ name: String, pathContaining path: String) -> DispatchSemaphore {
        let reached = DispatchSemaphore(value: 0)
        lock.withLock { held = (name, path, reached, DispatchSemaphore(value: 0)) }
        return reached
    }

    /// Lets the held call go on.
    func releaseHeld() {
        let release = lock.withLock { held?.release }
        release?.signal()
    }

    enum Fault {
        /// The call fails with this `errno`.
        case error(Int32)
        /// A write writes half of its bytes (and reports so).
        case shortWrite
    }

    private let base = POSIXFileSystem()
    private var counted = 0
    /// Operations counted since the last `reset`.
    var count: Int { lock.withLock { counted } }
    private var logged: [String] = []
    /// The names of the operations counted.
    var log: [String] { lock.withLock { logged } }
    var failAt: Int?
    var fault: Fault = .error(EIO)
    /// Whether every call after the failing one fails too (the process "died").
    var crashes = false
    private var crashed = false

    func reset(failAt: Int? = nil, fault: Fault = .error(EIO), crashes: Bool = false) {
        lock.withLock {
            counted = 0
            logged = []
            self.failAt = failAt
            self.fault = fault
            self.crashes = crashes
            crashed = false
        }
    }

    /// Counts an operation; throws if it is the one to fail. Returns whether a write should be
    /// short.
    private func tick(_ name: String, _ path: String) throws -> Bool {
        let hold = lock.withLock { () -> (DispatchSemaphore, DispatchSemaphore)? in
            guard let held, held.name == name, path.contains(held.path) else { return nil }
            self.held = (held.name, "\u{0}never", held.reached, held.release)
            return (held.reached, held.release)
        }
        if let (reached, release) = hold {
            reached.signal()
            release.wait()
        }
        return try lock.withLock { try tickLocked(name, path) }
    }

    private func tickLocked(_ name: String, _ path: String) throws -> Bool {
        if let named = failNamed, named.name == name, named.exact ? path == named.path : path.contains(named.path) {
            failNamed = nil
            throw SystemCallError(call: name, path: path, code: EIO)
        }
        if crashed {
            throw SystemCallError(call: name, path: path, code: EIO)
        }
        counted += 1
        logged.append(name)
        guard counted == failAt else { return false }
        if crashes {
            crashed = true
        }
        switch fault {
        case .error(let code): throw SystemCallError(call: name, path: path, code: code)
        case .shortWrite:
            if name == "write" { return true }
            throw SystemCallError(call: name, path: path, code: EIO)
        }
    }

    func open(_ path: String, flags: Int32, mode: mode_t) throws -> Int32 {
        _ = try tick("open", path)
        return try base.open(path, flags: flags, mode: mode)
    }

    func close(_ descriptor: Int32) {
        base.close(descriptor)
    }

    func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        _ = try tick("read", path)
        return try base.read(descriptor, into: buffer, at: offset, path: path)
    }

    func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        if try tick("write", path), buffer.count > 1 {
            return try base.write(
                descriptor, from: UnsafeRawBufferPointer(rebasing: buffer[..<(buffer.count / 2)]), at: offset,
                path: path)
        }
        return try base.write(descriptor, from: buffer, at: offset, path: path)
    }

    func synchronize(_ descriptor: Int32, path: String) throws {
        _ = try tick("fsync", path)
        try base.synchronize(descriptor, path: path)
    }

    func synchronizeData(_ descriptor: Int32, path: String) throws {
        _ = try tick("fdatasync", path)
        try base.synchronizeData(descriptor, path: path)
    }

    func truncate(_ descriptor: Int32, to length: Int64, path: String) throws {
        _ = try tick("ftruncate", path)
        try base.truncate(descriptor, to: length, path: path)
    }

    func size(_ descriptor: Int32, path: String) throws -> Int64 {
        _ = try tick("fstat", path)
        return try base.size(descriptor, path: path)
    }

    func rename(_ source: String, to destination: String) throws {
        _ = try tick("rename", destination)
        try base.rename(source, to: destination)
    }

    func remove(_ path: String) throws {
        _ = try tick("unlink", path)
        try base.remove(path)
    }

    func link(_ source: String, to destination: String) throws {
        _ = try tick("link", destination)
        try base.link(source, to: destination)
    }

    func makeDirectory(_ path: String) throws {
        _ = try tick("mkdir", path)
        try base.makeDirectory(path)
    }

    func contentsOfDirectory(_ path: String) throws -> [String] {
        _ = try tick("readdir", path)
        return try base.contentsOfDirectory(path)
    }

    func fileExists(_ path: String) -> Bool {
        base.fileExists(path)
    }

    func lockExclusively(_ descriptor: Int32, path: String) throws -> Bool {
        _ = try tick("flock", path)
        return try base.lockExclusively(descriptor, path: path)
    }
}
