import Foundation

@testable import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// The real file system, with one operation made to fail: the N-th call fails with `errno`
/// (or writes half of its bytes), once or — simulating a crash — together with every call
/// after it.
///
/// `@unchecked Sendable`: tests configure it before handing it to a store, and stores call it
/// from one queue at a time.
final class FaultyFileSystem: FileSystem, @unchecked Sendable {
    enum Fault {
        /// The call fails with this `errno`.
        case error(Int32)
        /// A write writes half of its bytes (and reports so).
        case shortWrite
    }

    private let base = POSIXFileSystem()
    /// Operations counted since the last `reset`.
    private(set) var count = 0
    /// The names of the operations counted.
    private(set) var log: [String] = []
    var failAt: Int?
    var fault: Fault = .error(EIO)
    /// Whether every call after the failing one fails too (the process "died").
    var crashes = false
    private var crashed = false

    func reset(failAt: Int? = nil, fault: Fault = .error(EIO), crashes: Bool = false) {
        count = 0
        log = []
        self.failAt = failAt
        self.fault = fault
        self.crashes = crashes
        crashed = false
    }

    /// Counts an operation; throws if it is the one to fail. Returns whether a write should be
    /// short.
    private func tick(_ name: String, _ path: String) throws -> Bool {
        if crashed {
            throw SystemCallError(call: name, path: path, code: EIO)
        }
        count += 1
        log.append(name)
        guard count == failAt else { return false }
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
