import Foundation
import Testing

@testable import QueueData

/// The stores version 1 of the migration model wrote, checked in: `Fixtures/Version1.json`
/// and `Fixtures/Version1.journal`. They were written by QueueData as it was before migration
/// existed (commit fac28c8: journal format 1.0, JSON format 1), with `writeVersion1Rows`.
enum MigrationFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures", isDirectory: true)

    /// The fixture for a store file extension.
    static func url(_ fileExtension: String) -> URL {
        directory.appendingPathComponent("Version1.\(fileExtension)")
    }

    /// Copies the fixture in as `<directory>/Store.<fileExtension>`; returns its bytes.
    @discardableResult
    static func install(_ fileExtension: String, in directory: TemporaryDirectory) throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: url(fileExtension)))
        try directory.write(bytes, to: "Store.\(fileExtension)")
        return bytes
    }
}

@Suite("Migration fixtures")
struct MigrationFixtureWriter {
    /// Rewrites the fixtures with the current version, when the fixtures' model changes on
    /// purpose: `QUEUEDATA_WRITE_FIXTURES=1 swift test --filter MigrationFixtureWriter`.
    @Test(
        "write the version 1 fixture stores",
        .enabled(if: ProcessInfo.processInfo.environment["QUEUEDATA_WRITE_FIXTURES"] != nil))
    func writeFixtures() throws {
        for fileExtension in ["json", "journal"] {
            let directory = TemporaryDirectory("fixture-\(fileExtension)")
            let manager =
                fileExtension == "json"
                ? jsonManager(directory, model: modelV1) : journalManager(directory, model: modelV1)
            try writeVersion1Rows(manager)
            manager.close()
            let bytes = try directory.bytes(of: "Store.\(fileExtension)")
            try FileManager.default.createDirectory(at: MigrationFixtures.directory, withIntermediateDirectories: true)
            try Data(bytes).write(to: MigrationFixtures.url(fileExtension))
        }
    }
}
