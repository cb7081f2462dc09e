// swift-tools-version:6.1
import PackageDescription

// libFuzzer targets for QueueData's decoders, in a package of their own so that the library
// stays free of dependencies and of fuzzing flags. Build and run them with `Fuzz/run`, which
// builds with `--sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address`: the
// executables have no `main` of their own (libFuzzer's is linked in), so a plain `swift build`
// here fails to link.
//
// Every `fuzz-*` target defines `LLVMFuzzerTestOneInput` and nothing else; `fuzz-seeds` writes
// the seed corpora from stores the library writes (see its source).
let package = Package(
    name: "QueueDataFuzz",
    dependencies: [
        .package(name: "QueueData", path: "..")
    ],
    targets: [
        .target(
            name: "FuzzSupport",
            dependencies: [.product(name: "QueueData", package: "QueueData")]
        ),
        .executableTarget(name: "fuzz-journal", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "fuzz-journal-payload", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "fuzz-json", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "fuzz-open", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "fuzz-seeds", dependencies: ["FuzzSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
