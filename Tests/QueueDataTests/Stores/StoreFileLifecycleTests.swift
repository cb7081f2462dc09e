import Foundation
import QueueData
import Testing

@testable import QueueData

/// The lifecycle both file stores share (``StoreFileLifecycle``), checked through each of them.
@Suite("File-store lifecycle")
struct StoreFileLifecycleTests {
    /// A file store of each kind, and its lifecycle.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case journal, json

        var testDescription: String { rawValue }

        var fileName: String {
            switch self {
            case .journal: "Store.\(JournalStore.fileExtension)"
            case .json: "Store.\(JSONFileStore.fileExtension)"
            }
        }

        func makeStore(_ directory: URL, seed: URL? = nil) throws -> (any PersistentStore, StoreFileLifecycle) {
            switch self {
            case .journal:
                let store = try JournalStore(
                    directory: directory, name: "Store", seedStoreURL: seed, fileSystem: POSIXFileSystem())
                return (store, store.lifecycle)
            case .json:
                let store = try JSONFileStore(
                    directory: directory, name: "Store", seedStoreURL: seed, fileSystem: POSIXFileSystem())
                return (store, store.lifecycle)
            }
        }
    }

    /// A model other than `testModel`: a store written with it awaits migration.
    func otherModel() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Other", attributes: [AttributeDescription(name: "x", type: .integer16)])
        ])
    }

    @Test("a failed open releases the lock: the next open reports what is wrong, not .locked", arguments: Kind.allCases)
    func failedOpenReleasesTheLock(kind: Kind) throws {
        let directory = TemporaryDirectory("lifecycle-failed-open")
        try directory.write(Array("not a store".utf8), to: kind.fileName)
        for _ in 0..<2 {
            let (store, lifecycle) = try kind.makeStore(directory.url)
            #expect {
                _ = try store.open(for: testModel)
            } throws: { error in
                (error as? StoreError)?.code == .unsupportedFormat
            }
            #expect(!lifecycle.isOpen)
        }
        #expect(try directory.bytes(of: kind.fileName) == Array("not a store".utf8))
    }

    @Test(
        "after a failed write the store refuses commits and writes, reporting the first failure",
        arguments: Kind.allCases)
    func refusesAfterFailure(kind: Kind) throws {
        let directory = TemporaryDirectory("lifecycle-failure")
        let (store, lifecycle) = try kind.makeStore(directory.url)
        _ = try store.open(for: testModel)
        try lifecycle.checkAcceptsCommits()
        try lifecycle.checkAcceptsWrites()
        _ = lifecycle.fail(POSIXError(.EIO), "write the first time")
        let second = lifecycle.fail(POSIXError(.ENOSPC), "write the second time")
        #expect(second.message.contains("write the second time"))
        for check in [lifecycle.checkAcceptsCommits, lifecycle.checkAcceptsWrites] {
            #expect {
                try check()
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.code == .closed && error.message.contains("after a failed write")
                    && error.message.contains("write the first time")
            }
        }
        store.close()
        #expect {
            try lifecycle.checkAcceptsCommits()
        } throws: { error in
            (error as? StoreError)?.message.hasSuffix("is closed.") == true
        }
        // Reopening clears the failure.
        _ = try store.open(for: testModel)
        try lifecycle.checkAcceptsCommits()
        store.close()
    }

    @Test(
        "a seed of another model awaits migration without being copied in; closing forgets it",
        arguments: Kind.allCases)
    func seedAwaitingMigration(kind: Kind) throws {
        let seedDirectory = TemporaryDirectory("lifecycle-seed")
        let (seedStore, _) = try kind.makeStore(seedDirectory.url)
        _ = try seedStore.open(for: testModel)
        seedStore.close()
        let seed = seedDirectory.file(kind.fileName)

        let directory = TemporaryDirectory("lifecycle-seed-store")
        let (store, lifecycle) = try kind.makeStore(directory.url, seed: seed)
        let contents = try store.open(for: try otherModel())
        #expect(contents.metadata.versionHash == testModel.versionHash)
        #expect(lifecycle.seedAwaitingMigration && lifecycle.awaitsMigration)
        #expect(!directory.contents.contains(kind.fileName))
        #expect {
            try lifecycle.checkAcceptsCommits()
        } throws: { error in
            (error as? StoreError)?.message.hasSuffix("holds another model's rows; migrate it first.") == true
        }
        store.close()
        #expect(!lifecycle.seedAwaitingMigration && !lifecycle.awaitsMigration)
        #expect(!directory.contents.contains(kind.fileName))
    }
}
