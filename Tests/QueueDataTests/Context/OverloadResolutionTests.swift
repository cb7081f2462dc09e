import Foundation
import Testing

/// Which `perform` and `fetchObjectIDs` the compiler picks where users write them: type-checks
/// small programs against the QueueData module this test run was built with.
///
/// Swift resolves top-level code (`main.swift`) as synchronous code, even after `await`: with
/// both forms available, `let a = await context.perform { context.hasChanges }` picked the
/// fire-and-forget `perform` and made `a` a `()`. The synchronous forms are unavailable from
/// `async` code now, so that line stops the build with a message saying what to write.
@Suite("Overload resolution in top-level code and async functions")
struct OverloadResolutionTests {
    /// The build's module directory and the C shims' module map, found next to the test bundle.
    private static func moduleFlags() throws -> [String] {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        // The bundle is `<build>/QueueDataPackageTests.xctest` (possibly a directory on Linux).
        for _ in 0..<4 where !FileManager.default.fileExists(atPath: directory.appendingPathComponent("Modules").path) {
            directory.deleteLastPathComponent()
        }
        let modules = directory.appendingPathComponent("Modules")
        let moduleMap = directory.appendingPathComponent("CQueueDataShims.build/module.modulemap")
        try #require(
            FileManager.default.fileExists(atPath: modules.appendingPathComponent("QueueData.swiftmodule").path))
        try #require(FileManager.default.fileExists(atPath: moduleMap.path))
        return ["-I", modules.path, "-Xcc", "-fmodule-map-file=\(moduleMap.path)"]
    }

    /// Type-checks `source` as a `main.swift` in the Swift 6 language mode; returns the exit
    /// status and the diagnostics.
    private static func typeCheck(_ source: String) throws -> (status: Int32, output: String) {
        let directory = TemporaryDirectory("overloads")
        let file = directory.file("main.swift")
        try Data(source.utf8).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swiftc", "-swift-version", "6", "-typecheck"] + (try moduleFlags()) + [file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    private static let preamble = """
        import QueueData
        let manager = ContextManager(delegate: nil)
        let context = try manager.createContext()

        """

    @Test("top-level code: a waiting perform without a type stops the build, saying what to write")
    func topLevelPerformIsRefused() throws {
        let (status, output) = try Self.typeCheck(
            Self.preamble + """
                let changed = await context.perform { context.hasChanges }
                print(changed)
                """)
        #expect(status != 0)
        #expect(output.contains("'perform' is unavailable from asynchronous contexts"))
        #expect(output.contains("annotate the result"))
    }

    @Test("top-level code: the synchronous fetchObjectIDs stops the build instead of trapping off the queue")
    func topLevelFetchObjectIDsIsRefused() throws {
        let (status, output) = try Self.typeCheck(
            Self.preamble + """
                let ids = try await context.fetchObjectIDs(FetchRequest<ManagedObject>())
                print(ids)
                """)
        #expect(status != 0)
        #expect(output.contains("'fetchObjectIDs' is unavailable from asynchronous contexts"))
    }

    @Test(
        "what compiles: an annotated result at top level, async functions, enqueue, performAndWait, blocks on the queue"
    )
    func intendedFormsCompile() throws {
        let (status, output) = try Self.typeCheck(
            Self.preamble + """
                let changed: Bool = await context.perform { context.hasChanges }
                let count: Int = changed ? 1 : 0
                context.enqueue { _ = context.hasChanges }
                let waited = context.performAndWait { context.hasChanges }
                let ids = try context.performAndWait { try context.fetchObjectIDs(FetchRequest<ManagedObject>()) }
                func inFunction(_ context: ManagedObjectContext) async throws -> Bool {
                    let changed = await context.perform { context.hasChanges }
                    await context.perform { _ = context.insertedObjects }
                    context.enqueue { _ = context.hasChanges }
                    _ = try await context.fetchObjectIDs(FetchRequest<ManagedObject>())
                    return changed
                }
                func fromSynchronousCode(_ context: ManagedObjectContext) {
                    context.perform { _ = context.hasChanges }
                }
                print(count, waited, ids)
                """)
        #expect(status == 0, "\(output)")
    }
}
