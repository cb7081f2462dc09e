// swift-tools-version:6.1
import Foundation
import PackageDescription

// The library is this repository's root package. A path dependency's identity is its
// directory's name, which depends on where the repository was cloned: compute it.
let rootDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let rootIdentity = rootDirectory.lastPathComponent.lowercased()

let package = Package(
    name: "QueueDataBenchmarks",
    dependencies: [
        .package(path: ".."),
        // The closest peer, measured in the same run: only this package depends on it.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        // The raw SQLite C API, the baseline every figure is compared with.
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // glibc's malloc.h, for the memory workload.
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        .executableTarget(
            name: "qd-bench",
            dependencies: [
                .product(name: "QueueData", package: rootIdentity),
                "CSQLite",
                "CMalloc",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // One workload per run, for instruction counts under callgrind (no GRDB, no SQLite).
        .executableTarget(
            name: "qd-profile",
            dependencies: [.product(name: "QueueData", package: rootIdentity)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
