import Foundation
import Testing

@testable import QueueData

#if canImport(Glibc)
    import Glibc
#endif

extension FaultyFileSystem.Fault {
    var isShortWrite: Bool {
        if case .shortWrite = self { return true }
        return false
    }
}

@Suite("Migration crash safety")
struct MigrationCrashTests {
    /// A manager on `Store.<fileExtension>` in `directory` with `model`.
    private func manager(
        _ fileExtension: String,
        _ directory: TemporaryDirectory,
        model: ManagedObjectModel = modelV2,
        fileSystem: FaultyFileSystem? = nil
    ) -> ContextManager {
        fileExtension == "json"
            ? jsonManager(directory, fileSystem: fileSystem, model: model)
            : journalManager(directory, fileSystem: fileSystem, model: model)
    }

    @Test(
        "a failure or crash at any I/O operation of a migration leaves the original store or the migrated one, complete",
        arguments: ["json", "journal"], [FaultyFileSystem.Fault.error(EIO), .error(ENOSPC), .shortWrite])
    func failureAtEveryOperation(fileExtension: String, fault: FaultyFileSystem.Fault) throws {
        // Count the operations of an open that migrates.
        let counting = FaultyFileSystem()
        let probe = TemporaryDirectory("migrate-probe-\(fileExtension)")
        try MigrationFixtures.install(fileExtension, in: probe)
        let probeManager = manager(fileExtension, probe, fileSystem: counting)
        try probeManager.loadPersistentStore()
        let log = counting.log
        probeManager.close()
        #expect(log.contains("link") && log.contains("rename"), "\(log)")

        var sawOriginal = false
        var sawMigrated = false
        for step in 1...log.count {
            for crashes in [false, true] {
                let label = "step \(step) (\(log[step - 1]))\(crashes ? ", crashing" : "")"
                let directory = TemporaryDirectory("migrate-crash-\(fileExtension)")
                let original = try MigrationFixtures.install(fileExtension, in: directory)
                let faulty = FaultyFileSystem()
                faulty.reset(failAt: step, fault: fault, crashes: crashes)
                let failing = manager(fileExtension, directory, fileSystem: faulty)
                // A lone short write is completed by the next write, and where a hard link fails
                // the original is kept as a copy: those opens may succeed. Others must not.
                let mayRecover =
                    !crashes && (log[step - 1] == "link" || (log[step - 1] == "write" && fault.isShortWrite))
                let outcome = Result { try failing.loadPersistentStore() }
                failing.close()
                if case .success = outcome {
                    #expect(mayRecover, "\(label): the open reported success")
                } else if case .failure(let error) = outcome {
                    #expect(error is StoreError, "\(label): \(error)")
                }

                // On disk: the original byte for byte, or the complete migrated store.
                let contents = try #require(try MigrationTests.inspect(fileExtension, directory), "\(label)")
                if contents.metadata.versionHash == modelV1.versionHash {
                    sawOriginal = true
                    #expect(try directory.bytes(of: "Store.\(fileExtension)") == original, "\(label)")
                } else {
                    sawMigrated = true
                    #expect(contents.metadata.versionHash == modelV2.versionHash, "\(label)")
                    // The original is kept beside it, byte for byte, until the next open.
                    let backup = "Store.\(fileExtension).pre-migration-\(modelV1.versionHash.prefix(12))"
                    #expect(try directory.bytes(of: backup) == original, "\(label)")
                }
                // Either way it opens, with every row, in the current shape.
                let reopened = manager(fileExtension, directory)
                #expect(try allRows(reopened, modelV2) == expectedVersion2Rows, "\(label)")
                reopened.close()
                #expect(!directory.contents.contains { $0.contains(".tmp-") }, "\(label): a temporary file was left")
            }
        }
        #expect(sawOriginal && sawMigrated)
    }

    @Test(
        "after a migration, an app rolled back to the earlier model (migration off) is refused and the store left intact"
    )
    func migratedStoreRefusesOldModel() throws {
        // An app rolled back to version 1 after the migration: its model differs, the store
        // would have to migrate "back", which drops the new attributes; with migration off it
        // is refused and left intact.
        let directory = TemporaryDirectory("migrate-rollback")
        try MigrationFixtures.install("journal", in: directory)
        let current = manager("journal", directory)
        try current.loadPersistentStore()
        current.close()
        let migrated = try directory.bytes(of: "Store.journal")
        #expect {
            try journalManager(directory, model: modelV1, migrates: false).loadPersistentStore()
        } throws: { error in
            isStoreError(error, .incompatibleModel, mentioning: "entity 'Voyage' was removed")
        }
        #expect(try directory.bytes(of: "Store.journal") == migrated)
    }
}
