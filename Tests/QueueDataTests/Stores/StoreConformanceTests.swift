import Foundation
import QueueData
import QueueDataTestSupport
import Testing

/// The conformance suite, over every built-in store and a custom one written in the tests.
@Suite("Store conformance")
struct StoreConformanceTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case inMemory, journal, jsonFile, custom
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
            suite = StoreConformanceSuite { try JournalStore(directory: directory.url, name: "Conformance") }
        case .jsonFile:
            suite = StoreConformanceSuite { try JSONFileStore(directory: directory.url, name: "Conformance") }
        case .custom:
            let url = directory.file("custom.json")
            suite = StoreConformanceSuite(checksExclusiveAccess: false) { CodableFileStore(url: url) }
        }
        try suite.run()
        withExtendedLifetime(directory) {}
    }
}
