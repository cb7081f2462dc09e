#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A system call that failed, with its `errno`.
struct SystemCallError: Error, CustomStringConvertible {
    /// The call's C name: `open`, `pwrite`, `fsync`, ...
    var call: String
    /// The file or directory it concerned.
    var path: String
    /// The `errno` it failed with.
    var code: Int32

    var description: String {
        "\(call)(\(path)) failed: \(String(cString: strerror(code))) (errno \(code))"
    }
}

/// Every file-system call the stores make goes through this layer (as in swift-system), so
/// that tests can wrap it and inject a short write, `ENOSPC` or `EIO` at the N-th operation.
///
/// Methods are named after what they do; each one's documentation names the C call.
protocol FileSystem: Sendable {
    /// `open(2)`; returns the descriptor.
    func open(_ path: String, flags: Int32, mode: mode_t) throws -> Int32
    /// `close(2)`; errors are ignored (the descriptor is gone either way).
    func close(_ descriptor: Int32)
    /// `pread(2)`: may read fewer bytes than asked (0 at the end of the file).
    func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    /// `pwrite(2)`: may write fewer bytes than asked.
    func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    /// `fsync(2)`: the file's data and metadata are durable.
    func synchronize(_ descriptor: Int32, path: String) throws
    /// `fdatasync(2)`: the file's data (and the size, if it changed) are durable.
    func synchronizeData(_ descriptor: Int32, path: String) throws
    /// `ftruncate(2)`.
    func truncate(_ descriptor: Int32, to length: Int64, path: String) throws
    /// `fstat(2)`'s size.
    func size(_ descriptor: Int32, path: String) throws -> Int64
    /// `rename(2)`: atomic for readers; durable once the directory is synchronized.
    func rename(_ source: String, to destination: String) throws
    /// `unlink(2)`.
    func remove(_ path: String) throws
    /// `link(2)`: a second name for the same file.
    func link(_ source: String, to destination: String) throws
    /// `mkdir(2)` with mode 0700; succeeds if the directory exists.
    func makeDirectory(_ path: String) throws
    /// `opendir(3)`/`readdir(3)`: the names in a directory.
    func contentsOfDirectory(_ path: String) throws -> [String]
    /// `access(2)` for existence.
    func fileExists(_ path: String) -> Bool
    /// `flock(2)` with `LOCK_EX | LOCK_NB`: `false` when another descriptor holds the lock.
    func lockExclusively(_ descriptor: Int32, path: String) throws -> Bool
}

/// The real file system.
struct POSIXFileSystem: FileSystem {
    func open(_ path: String, flags: Int32, mode: mode_t) throws -> Int32 {
        while true {
            let descriptor = path.withCString { systemOpen($0, flags | O_CLOEXEC, mode) }
            if descriptor >= 0 {
                return descriptor
            }
            if errno != EINTR {
                throw SystemCallError(call: "open", path: path, code: errno)
            }
        }
    }

    func close(_ descriptor: Int32) {
        _ = systemClose(descriptor)
    }

    func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        while true {
            let count = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 {
                return count
            }
            if errno != EINTR {
                throw SystemCallError(call: "pread", path: path, code: errno)
            }
        }
    }

    func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        while true {
            let count = pwrite(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 {
                return count
            }
            if errno != EINTR {
                throw SystemCallError(call: "pwrite", path: path, code: errno)
            }
        }
    }

    func synchronize(_ descriptor: Int32, path: String) throws {
        // A failed fsync is never retried: after a failure, Linux may mark the pages clean and
        // a retry would "succeed" without the data on disk.
        if fsync(descriptor) != 0 {
            throw SystemCallError(call: "fsync", path: path, code: errno)
        }
    }

    func synchronizeData(_ descriptor: Int32, path: String) throws {
        #if canImport(Darwin)
            if fcntl(descriptor, F_FULLFSYNC) != 0 {
                throw SystemCallError(call: "fcntl(F_FULLFSYNC)", path: path, code: errno)
            }
        #else
            if fdatasync(descriptor) != 0 {
                throw SystemCallError(call: "fdatasync", path: path, code: errno)
            }
        #endif
    }

    func truncate(_ descriptor: Int32, to length: Int64, path: String) throws {
        if ftruncate(descriptor, off_t(length)) != 0 {
            throw SystemCallError(call: "ftruncate", path: path, code: errno)
        }
    }

    func size(_ descriptor: Int32, path: String) throws -> Int64 {
        var information = stat()
        if fstat(descriptor, &information) != 0 {
            throw SystemCallError(call: "fstat", path: path, code: errno)
        }
        return Int64(information.st_size)
    }

    func rename(_ source: String, to destination: String) throws {
        let result = source.withCString { from in destination.withCString { to in systemRename(from, to) } }
        if result != 0 {
            throw SystemCallError(call: "rename", path: "\(source) → \(destination)", code: errno)
        }
    }

    func remove(_ path: String) throws {
        if unlink(path) != 0 {
            throw SystemCallError(call: "unlink", path: path, code: errno)
        }
    }

    func link(_ source: String, to destination: String) throws {
        let result = source.withCString { from in destination.withCString { to in systemLink(from, to) } }
        if result != 0 {
            throw SystemCallError(call: "link", path: "\(source) → \(destination)", code: errno)
        }
    }

    func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw SystemCallError(call: "mkdir", path: path, code: errno)
        }
    }

    func contentsOfDirectory(_ path: String) throws -> [String] {
        guard let directory = opendir(path) else {
            throw SystemCallError(call: "opendir", path: path, code: errno)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." {
                names.append(name)
            }
        }
        return names
    }

    func fileExists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    func lockExclusively(_ descriptor: Int32, path: String) throws -> Bool {
        while true {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
                return true
            }
            switch errno {
            case EINTR: continue
            case EWOULDBLOCK: return false
            default: throw SystemCallError(call: "flock", path: path, code: errno)
            }
        }
    }
}

// The C functions whose names the protocol's methods shadow inside `POSIXFileSystem`.
private func systemOpen(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}

private func systemClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}

private func systemRename(_ source: UnsafePointer<CChar>, _ destination: UnsafePointer<CChar>) -> Int32 {
    rename(source, destination)
}

private func systemLink(_ source: UnsafePointer<CChar>, _ destination: UnsafePointer<CChar>) -> Int32 {
    link(source, destination)
}

extension FileSystem {
    /// Writes all of `bytes` at `offset`, continuing after short writes. A write that makes
    /// no progress fails with `ENOSPC`.
    func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws {
        var written = 0
        while written < bytes.count {
            let count = try write(
                descriptor, from: UnsafeRawBufferPointer(rebasing: bytes[written...]), at: offset + Int64(written),
                path: path)
            if count <= 0 {
                throw SystemCallError(call: "pwrite", path: path, code: ENOSPC)
            }
            written += count
        }
    }

    /// The whole content of the file at `path`.
    func readFile(_ path: String) throws -> [UInt8] {
        let descriptor = try open(path, flags: O_RDONLY, mode: 0)
        defer { close(descriptor) }
        let size = try self.size(descriptor, path: path)
        var bytes = [UInt8](repeating: 0, count: Int(size))
        var total = 0
        try bytes.withUnsafeMutableBytes { buffer in
            while total < buffer.count {
                let count = try read(
                    descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]), at: Int64(total),
                    path: path)
                if count == 0 {
                    break
                }
                total += count
            }
        }
        if total < bytes.count {
            bytes.removeSubrange(total...)
        }
        return bytes
    }

    /// Makes the directory's entries (files created, renamed or removed in it) durable.
    func synchronizeDirectory(_ path: String) throws {
        let descriptor = try open(path, flags: O_RDONLY | O_DIRECTORY, mode: 0)
        defer { close(descriptor) }
        try synchronize(descriptor, path: path)
    }

    /// Creates `path` and its missing parents (mode 0700), durably: a new directory's entry is
    /// synchronized in its parent, as for any file created, or a power loss could take the
    /// directory away with every store file synchronized inside it.
    func makeDirectories(_ path: String) throws {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            let parent = current.isEmpty ? "/" : current
            current += "/" + component
            if !fileExists(current) {
                try makeDirectory(current)
                try synchronizeDirectory(parent)
            }
        }
    }

    /// Replaces the file at `path` with `bytes`, durably and atomically: a new file in the same
    /// directory (created exclusively, mode 0600) is written and synchronized, renamed over
    /// `path`, and the directory is synchronized. Readers see the old file or the new one,
    /// never a mix; after a crash, the temporary file is left behind and the old file intact.
    func replaceAtomically(_ path: String, directory: String, with bytes: UnsafeRawBufferPointer) throws {
        let temporary = try writeTemporaryFile(beside: path, bytes)
        try moveIntoPlace(temporary, over: path, directory: directory)
    }

    /// The last step of an atomic replacement: renames the synchronized `temporary` file over
    /// `path` and synchronizes the directory. The temporary file is removed if the rename fails.
    func moveIntoPlace(_ temporary: String, over path: String, directory: String) throws {
        do {
            try rename(temporary, to: path)
        } catch {
            try? remove(temporary)
            throw error
        }
        try synchronizeDirectory(directory)
    }

    /// Creates a new, empty temporary file beside `path` (`<path>.tmp-<random>`, created
    /// exclusively, with `mode` less the process's umask) for a caller that writes it in
    /// pieces, synchronizes it and moves it into place (``moveIntoPlace(_:over:directory:)``) —
    /// or removes it.
    ///
    /// - Parameter mode: 0600 (the default) for a store's own files, private to their owner;
    ///   0666 for a file that is the user's, such as an export, which then gets the permissions
    ///   any file a tool writes gets (`0666 & ~umask`).
    /// - Returns: The temporary file's path and its open descriptor (write-only).
    func createTemporaryFile(beside path: String, mode: mode_t = 0o600) throws -> (path: String, descriptor: Int32) {
        let temporary = "\(path)\(temporarySuffix)\(UInt64.random(in: 0...UInt64.max).hexadecimalString)"
        return (temporary, try open(temporary, flags: O_WRONLY | O_CREAT | O_EXCL, mode: mode))
    }

    /// Writes `bytes` to a new temporary file beside `path` (`<path>.tmp-<random>`, created
    /// exclusively, mode 0600) and synchronizes it: the first step of every atomic
    /// replacement. The file is removed again if any step fails.
    ///
    /// - Returns: The temporary file's path.
    func writeTemporaryFile(beside path: String, _ bytes: UnsafeRawBufferPointer) throws -> String {
        let (temporary, descriptor) = try createTemporaryFile(beside: path)
        do {
            try writeAll(descriptor, bytes, at: 0, path: temporary)
            try synchronize(descriptor, path: temporary)
        } catch {
            close(descriptor)
            try? remove(temporary)
            throw error
        }
        close(descriptor)
        return temporary
    }
}

/// The infix of temporary files: `<file>.tmp-<random>`.
let temporarySuffix = ".tmp-"

extension UInt64 {
    var hexadecimalString: String {
        let digits = String(self, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
