import Foundation

/// A new empty directory for one test, removed when the test's value goes away.
final class TemporaryDirectory: @unchecked Sendable {
    let url: URL
    var path: String { url.path }

    init(_ label: String = "test") {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("QueueDataTests-\(label)-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        owned = true
    }

    /// Whether the directory goes with this object (not for one another object owns).
    private let owned: Bool

    /// The directory at `path`, which another `TemporaryDirectory` owns and removes: an exit
    /// test's child process is given its parent's (a child that traps removes nothing).
    init(existingAt path: String) {
        url = URL(fileURLWithPath: path, isDirectory: true)
        owned = false
    }

    deinit {
        if owned {
            try? FileManager.default.removeItem(at: url)
        }
    }

    /// The URL of `name` in the directory.
    func file(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }

    /// The names in the directory, sorted.
    var contents: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    func bytes(of name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: file(name)))
    }

    func write(_ bytes: [UInt8], to name: String) throws {
        try Data(bytes).write(to: file(name))
    }
}
