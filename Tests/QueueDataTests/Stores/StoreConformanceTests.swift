import Foundation
import QueueDataTestSupport
import Testing

@testable import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// The conformance suite, over every built-in store and a custom one written in the tests.
@Suite("Store conformance")
struct StoreConformanceTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case inMemory, journal, jsonFile, custom
        /// A custom store with group commit (``AppendLogStore``).
        case customGroupCommit
        var testDescription: String { rawValue }
    }

    @Test("the store passes the conformance suite", arguments: Kind.allCases)
    func conforms(_ kind: Kind) throws {
        let directory = TemporaryDirectory("conformance-\(kind)")
        let suite: StoreConformanceSuite
        switch kind {
        case .inMemory:
            let store = InMemoryStore()
            suite = StoreConformanceSuite { store }
        case .journal:
            let disk = ConformanceDisk(directory.url)
            suite = StoreConformanceSuite(faults: disk.faults) {
                try JournalStore(directory: directory.url, name: "Conformance", seedStoreURL: nil, fileSystem: disk)
            }
        case .jsonFile:
            let disk = ConformanceDisk(directory.url)
            suite = StoreConformanceSuite(faults: disk.faults) {
                try JSONFileStore(directory: directory.url, name: "Conformance", seedStoreURL: nil, fileSystem: disk)
            }
        case .custom:
            let url = directory.file("custom.json")
            suite = StoreConformanceSuite(checksExclusiveAccess: false) { CodableFileStore(url: url) }
        case .customGroupCommit:
            let disk = ConformanceDisk(directory.url)
            let path = directory.file("custom.log").path
            suite = StoreConformanceSuite(checksExclusiveAccess: false, faults: disk.faults) {
                AppendLogStore(path: path, fileSystem: disk)
            }
        }
        let failures = try suite.run()
        #expect(failures.isEmpty)
        withExtendedLifetime(directory) {}
    }
}

/// The conformance suite's control over the built-in file stores' I/O: the real file system
/// through ``PowerLossFileSystem``'s model. A power loss leaves the directory as the harshest
/// state the model allows (every change no synchronization covered is undone) and makes the
/// stores already open unable to write; failing writes fail every write, sync, truncation and
/// change of names with `EIO`.
///
/// `@unchecked Sendable`: its state is behind a lock (tests may use locks; `Sources/` may not).
final class ConformanceDisk: FileSystem, @unchecked Sendable {
    private struct State {
        var fileSystem = PowerLossFileSystem()
        var isFailing = false
        /// Set by a power loss: what the directory becomes when power comes back.
        var survivor: PowerLossImage?
    }

    private let directory: URL
    private let state = Locked(State())

    init(_ directory: URL) {
        self.directory = directory
    }

    var faults: StoreConformanceSuite.Faults {
        StoreConformanceSuite.Faults(
            losePower: { self.losePower() }, restorePower: { self.restorePower() },
            failWrites: { failing in self.state.withLock { $0.isFailing = failing } })
    }

    private func losePower() {
        state.withLock { state in
            state.survivor = state.fileSystem.outcomes(of: directory).first?.image ?? PowerLossImage()
        }
    }

    private func restorePower() {
        state.withLock { state in
            guard let survivor = state.survivor else { return }
            let manager = FileManager.default
            for name in (try? manager.contentsOfDirectory(atPath: directory.path)) ?? [] {
                try? manager.removeItem(at: directory.appendingPathComponent(name))
            }
            try? survivor.write(into: directory)
            state = State()
        }
    }

    /// The file system for the next call; throws `EIO` for a change while writes fail or the
    /// power is off.
    private func current(changing call: String? = nil, _ path: String = "") throws -> PowerLossFileSystem {
        try state.withLock { state in
            if let call, state.isFailing || state.survivor != nil {
                throw SystemCallError(call: call, path: path, code: EIO)
            }
            return state.fileSystem
        }
    }

    func open(_ path: String, flags: Int32, mode: mode_t) throws -> Int32 {
        try current(changing: flags & O_CREAT != 0 ? "open" : nil, path).open(path, flags: flags, mode: mode)
    }

    func close(_ descriptor: Int32) {
        (try? current())?.close(descriptor)
    }

    func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        try current().read(descriptor, into: buffer, at: offset, path: path)
    }

    func write(_ descriptor: Int32, from buffer: UnsafeRawBufferPointer, at offset: Int64, path: String) throws
        -> Int
    {
        try current(changing: "pwrite", path).write(descriptor, from: buffer, at: offset, path: path)
    }

    func synchronize(_ descriptor: Int32, path: String) throws {
        try current(changing: "fsync", path).synchronize(descriptor, path: path)
    }

    func synchronizeData(_ descriptor: Int32, path: String) throws {
        try current(changing: "fdatasync", path).synchronizeData(descriptor, path: path)
    }

    func truncate(_ descriptor: Int32, to length: Int64, path: String) throws {
        try current(changing: "ftruncate", path).truncate(descriptor, to: length, path: path)
    }

    func size(_ descriptor: Int32, path: String) throws -> Int64 {
        try current().size(descriptor, path: path)
    }

    func rename(_ source: String, to destination: String) throws {
        try current(changing: "rename", source).rename(source, to: destination)
    }

    func remove(_ path: String) throws {
        try current(changing: "unlink", path).remove(path)
    }

    func link(_ source: String, to destination: String) throws {
        try current(changing: "link", source).link(source, to: destination)
    }

    func makeDirectory(_ path: String) throws {
        try current(changing: "mkdir", path).makeDirectory(path)
    }

    func contentsOfDirectory(_ path: String) throws -> [String] {
        try current().contentsOfDirectory(path)
    }

    func fileExists(_ path: String) -> Bool {
        (try? current())?.fileExists(path) ?? false
    }

    func lockExclusively(_ descriptor: Int32, path: String) throws -> Bool {
        try current().lockExclusively(descriptor, path: path)
    }
}
