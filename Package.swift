// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "QueueData",
    products: [
        .library(name: "QueueData", targets: ["QueueData"]),
        // The store conformance suite, for the tests of your own PersistentStore.
        .library(name: "QueueDataTestSupport", targets: ["QueueDataTestSupport"]),
        // The store tool: inspect, verify, compact, convert, export and import store files.
        .executable(name: "qd", targets: ["qd"]),
    ],
    targets: [
        // Thread-local storage for the confinement fast path: Swift has no thread-local
        // variables, and a C `_Thread_local` read is a single instruction.
        .target(name: "CQueueDataShims"),
        .target(
            name: "QueueData",
            dependencies: ["CQueueDataShims"]
        ),
        .target(
            name: "QueueDataTestSupport",
            dependencies: ["QueueData"]
        ),
        .executableTarget(
            name: "qd",
            dependencies: ["QueueData"]
        ),
        .executableTarget(
            name: "TravelImport",
            dependencies: ["QueueData"],
            path: "Playgrounds/TravelImport"
        ),
        .executableTarget(
            name: "ModelEvolution",
            dependencies: ["QueueData"],
            path: "Playgrounds/ModelEvolution"
        ),
        .executableTarget(
            name: "TravelJournal",
            dependencies: ["QueueData"],
            path: "Playgrounds/TravelJournal"
        ),
        .executableTarget(
            name: "LiveBoard",
            dependencies: ["QueueData"],
            path: "Playgrounds/LiveBoard"
        ),
        .testTarget(
            name: "QueueDataTests",
            // qd: built with the tests, which run it as a subprocess.
            dependencies: ["QueueData", "QueueDataTestSupport", "qd"],
            // Stores written by earlier model versions, read through `#filePath`.
            exclude: ["Migration/Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
