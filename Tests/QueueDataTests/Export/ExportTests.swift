import Foundation
import Testing

@testable import QueueData

/// Strings that CSV and JSON writers get wrong: delimiters, quotes, line breaks, empty text,
/// control characters, backslashes and non-ASCII text.
private let awkwardPieces = [
    ",", "\"", "\n", "\r\n", "\r", ";", "\t", "é", "日本", "🙂", " ", "\\", "\u{1}", "a", "Lisbon", "''", "\"\"",
]

private func awkwardString<G: RandomNumberGenerator>(_ generator: inout G) -> String {
    let count = Int.random(in: 0...5, using: &generator)
    return (0..<count).map { _ in awkwardPieces.randomElement(using: &generator)! }.joined()
}

/// The seed of the random rounds: `QUEUEDATA_EXPORT_SEED`, or a new one (printed on failure).
let exportSeed =
    ProcessInfo.processInfo.environment["QUEUEDATA_EXPORT_SEED"].flatMap(UInt64.init)
    ?? UInt64.random(in: 0...UInt64.max)

@Suite("Export")
struct ExportTests {
    /// Every attribute type, random awkward values, three formats, read back by Python.
    @Test(arguments: ["csv", "json", "jsonl"])
    func everyAttributeTypeReadsBackInPython(format: String) async throws {
        let directory = TemporaryDirectory("export")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        var generator = SeededGenerator(seed: exportSeed)
        let expectedRecords: [[Any]] = try context.performAndWait {
            var objects: [AllTypes] = []
            for index in 0..<60 {
                let object = context.insert(AllTypes.self)
                object.bool = Bool.random(using: &generator)
                object.int = Int.random(in: Int.min...Int.max, using: &generator)
                object.int16 = Int16.random(in: Int16.min...Int16.max, using: &generator)
                object.int32 = Int32.random(in: Int32.min...Int32.max, using: &generator)
                object.int64 = index == 0 ? Int64.max : Int64.random(in: -1000...1000, using: &generator)
                object.double = [0.1, -0.0, 1e-5, 1e15, 1e300, 123.456, .nan, .infinity, -.infinity][index % 9]
                object.float = Float.random(in: -1000...1000, using: &generator)
                object.string = index == 1 ? "" : awkwardString(&generator)
                object.date = Date(
                    timeIntervalSince1970: Double(Int.random(in: -20_000_000...20_000_000_0, using: &generator)) / 8)
                object.data = Data(
                    (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    })
                object.uuid = UUID()
                object.url = URL(
                    string: "https://example.com/\(index)?q=a,b&r=\"x\"".addingPercentEncoding(
                        withAllowedCharacters: .urlQueryAllowed)!)!
                object.decimal = Decimal(
                    string:
                        "\(Int.random(in: -99999...99999, using: &generator)).\(Int.random(in: 0...99, using: &generator))"
                )!
                object.optionalString = index % 3 == 0 ? nil : awkwardString(&generator)
                object.optionalInt = index % 2 == 0 ? nil : index
                object.address = Address(street: awkwardString(&generator), zip: index % 2 == 0 ? nil : index)
                object.optionalAddress = index % 4 == 0 ? nil : Address(street: "Rua \(index)", zip: 1000 + index)
                object.status = index % 2 == 0 ? .planned : .booked
                objects.append(object)
            }
            try context.save()
            return try objects.map { object in
                func json<T: Encodable>(_ value: T) throws -> Any {
                    try JSONSerialization.jsonObject(with: JSONEncoder().encode(value), options: .fragmentsAllowed)
                }
                return [
                    object.objectID.uriRepresentation.absoluteString, object.bool, object.int, Int(object.int16),
                    Int(object.int32), object.int64, ExportChecker.double(object.double),
                    ExportChecker.double(Double(object.float)), object.string, ExportChecker.date(object.date),
                    object.data.base64EncodedString(), object.uuid.uuidString, object.url.absoluteString,
                    object.decimal.description, object.optionalString as Any? ?? NSNull(),
                    object.optionalInt as Any? ?? NSNull(), try json(object.address),
                    try object.optionalAddress.map { try json($0) } ?? NSNull(), try json(object.status),
                ]
            }
        }
        let url = directory.file("all.\(format)")
        let formatter: any ExportFormatter =
            switch format {
            case "csv": CSVExportFormatter()
            case "json": JSONExportFormatter()
            default: JSONLinesExportFormatter()
            }
        let result = try await context.export(FetchRequest<AllTypes>(), to: url, formatter: formatter)
        #expect(result.recordCount == 60)
        #expect(result.url == url.standardizedFileURL)
        #expect(result.byteCount == Int64(try directory.bytes(of: "all.\(format)").count))
        let fields = ExportField.fields(of: testModel.entitiesByName["AllTypes"]!)
        let problems = try ExportChecker.problems(
            format: format, export: url, fields: fields, records: expectedRecords, in: directory)
        #expect(problems.isEmpty, "seed \(exportSeed): \(problems)")
    }

    /// `nil` is an empty field, an empty string a quoted empty field: Python's `csv` reads both as
    /// '', so the bytes say it.
    @Test func csvTellsNilFromEmptyString() async throws {
        let directory = TemporaryDirectory("export-nil")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        try context.performAndWait {
            let empty = context.insert(AllTypes.self)
            empty.optionalString = ""
            _ = context.insert(AllTypes.self)  // optionalString nil
            try context.save()
        }
        let url = directory.file("nil.csv")
        _ = try await context.export(
            FetchRequest<AllTypes>(), to: url, formatter: CSVExportFormatter(delimiter: ";", lineEnding: "\n"),
            includesObjectID: false)
        let lines = String(decoding: try directory.bytes(of: "nil.csv"), as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 3)
        let column = lines[0].split(separator: ";").firstIndex(of: "optionalString")!
        #expect(lines[1].split(separator: ";", omittingEmptySubsequences: false)[column] == "\"\"")
        #expect(lines[2].split(separator: ";", omittingEmptySubsequences: false)[column] == "")
    }

    /// A Float attribute is written in Float's shortest form (`0.1`, not the Double
    /// `0.10000000149011612` it is held as), and reads back as the same Float.
    @Test(arguments: ["csv", "jsonl"])
    func floatsAreWrittenAsFloats(format: String) async throws {
        let directory = TemporaryDirectory("export-float")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        let floats: [Float] = [0.1, .greatestFiniteMagnitude, .leastNonzeroMagnitude, -2.5, 16_777_215, 1.1e-5]
        try context.performAndWait {
            for float in floats {
                context.insert(AllTypes.self).float = float
            }
            try context.save()
        }
        let url = directory.file("floats.\(format)")
        _ = try await context.export(
            FetchRequest<AllTypes>(), to: url,
            formatter: format == "csv" ? CSVExportFormatter() as any ExportFormatter : JSONLinesExportFormatter())
        let text = String(decoding: try directory.bytes(of: url.lastPathComponent), as: UTF8.self)
        for float in floats {
            #expect(text.contains(float.description), "\(float.description) in \(text)")
        }
        #expect(!text.contains("0.10000000149011612"))
        let target = journalManager(directory, name: "Target")
        defer { target.close() }
        let importer = try target.createContext()
        _ = try await importer.importRecords(from: url, entityName: "AllTypes")
        let imported = try importer.performAndWait { try importer.fetch(FetchRequest<AllTypes>()).map(\.float) }
        #expect(imported.map(\.bitPattern) == floats.map(\.bitPattern))
    }

    /// Relationships export as every related object's ID: to-one, to-many (all of them, in
    /// key order) and ordered to-many (in order).
    @Test(arguments: ["csv", "json", "jsonl"])
    func relationshipsExportEveryRelatedID(format: String) async throws {
        let directory = TemporaryDirectory("export-graph")
        let manager = graphManager("journal", directory)
        defer { manager.close() }
        let context = try manager.createContext()
        let records: [[Any]] = try context.performAndWait {
            let ada = context.insert(Explorer.self)
            ada.name = "Ada, \"the\" explorer"
            var expeditions: [Expedition] = []
            let tags = (0..<4).map { index -> Tag in
                let tag = context.insert(Tag.self)
                tag.label = "tag \(index)"
                return tag
            }
            for index in 0..<5 {
                let expedition = context.insert(Expedition.self)
                expedition.title = "Expedition \(index)\nline two"
                expedition.leader = index == 4 ? nil : ada
                expedition.waypoints = (0..<(index % 3 + 1)).reversed().map { step in
                    let waypoint = context.insert(Waypoint.self)
                    waypoint.name = "step \(step)"
                    return waypoint
                }
                expedition.tags = Set(tags.prefix(index))
                expeditions.append(expedition)
            }
            try context.save()
            func uri(_ object: ManagedObject) -> String { object.objectID.uriRepresentation.absoluteString }
            return expeditions.map { expedition in
                [
                    uri(expedition), expedition.title, expedition.leader.map(uri) as Any? ?? NSNull(),
                    expedition.waypoints.map(uri),
                    expedition.tags.sorted { $0.objectID.primaryKey! < $1.objectID.primaryKey! }.map(uri),
                ]
            }
        }
        let url = directory.file("expeditions.\(format)")
        let formatter: any ExportFormatter =
            switch format {
            case "csv": CSVExportFormatter()
            case "json": JSONExportFormatter()
            default: JSONLinesExportFormatter()
            }
        _ = try await context.export(
            FetchRequest<Expedition>(sortBy: [SortDescriptor(\.title)]), to: url, formatter: formatter)
        let fields = ExportField.fields(of: graphModel.entitiesByName["Expedition"]!)
        #expect(fields.map(\.name) == ["objectID", "title", "leader", "waypoints", "tags"])
        let problems = try ExportChecker.problems(
            format: format, export: url, fields: fields, records: records, in: directory)
        #expect(problems.isEmpty, "\(problems)")
    }

    /// The predicate, the sort (FR's export ignored it), the offset and the limit decide what is
    /// written and in which order: the same objects as a fetch, over random rounds.
    @Test func honoursPredicateSortAndPaging() async throws {
        let directory = TemporaryDirectory("export-order")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        var generator = SeededGenerator(seed: exportSeed &+ 1)
        try context.performAndWait {
            for _ in 0..<300 {
                let destination = context.insert(Destination.self)
                destination.name = String(UUID().uuidString.prefix(Int.random(in: 1...3, using: &generator)))
                destination.rating = Int.random(in: 0...9, using: &generator)
                destination.country = ["PT", "JP", "EC"].randomElement(using: &generator)!
            }
            try context.save()
        }
        for round in 0..<8 {
            let threshold = Int.random(in: 0...9, using: &generator)
            var request = FetchRequest<Destination>(
                predicate: #Predicate { $0.rating >= threshold },
                sortBy: round % 2 == 0
                    ? [SortDescriptor(\.country), SortDescriptor(\.name, order: .reverse)]
                    : [SortDescriptor(\.rating, order: .reverse), SortDescriptor(\.name)])
            request.fetchOffset = Int.random(in: 0...20, using: &generator)
            request.fetchLimit = round % 3 == 0 ? 0 : Int.random(in: 1...100, using: &generator)
            let fetchRequest = request
            let expected = try context.performAndWait {
                try context.fetch(fetchRequest).map(\.objectID.uriRepresentation.absoluteString)
            }
            let url = directory.file("round\(round).jsonl")
            let result = try await context.export(request, to: url, formatter: JSONLinesExportFormatter())
            let lines = String(decoding: try directory.bytes(of: "round\(round).jsonl"), as: UTF8.self)
                .split(separator: "\n")
            let ids = try lines.map { line in
                (try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any])["objectID"] as! String
            }
            #expect(ids == expected, "round \(round), seed \(exportSeed)")
            #expect(result.recordCount == expected.count)
        }
    }

    /// The completion runs on the context's queue, with the result; progress reports climb to
    /// the total, on the context's queue too.
    @Test func completionAndProgressOnTheContextsQueue() throws {
        let directory = TemporaryDirectory("export-queue")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        try seedDestinations(context, (0..<3000).map { "d\($0)" })
        let reports = Recorder<ExportProgress>()
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome: Result<ExportResult, any Error>?
        nonisolated(unsafe) var onQueue = false
        let queue = context.queue
        context.export(
            FetchRequest<Destination>(), to: directory.file("d.csv"), formatter: CSVExportFormatter(),
            progress: { progress in
                dispatchPrecondition(condition: .onQueue(queue))
                reports.record(progress)
            },
            completionHandler: { result in
                onQueue = DispatchQueue.getSpecific(key: contextQueueKey) == "context"
                outcome = result
                done.signal()
            })
        queue.setSpecific(key: contextQueueKey, value: "context")
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(onQueue)
        let result = try #require(try outcome?.get())
        #expect(result.recordCount == 3000)
        flush(context)
        let values = reports.values
        #expect(values.last == ExportProgress(completedCount: 3000, totalCount: 3000))
        #expect(values.map(\.completedCount) == values.map(\.completedCount).sorted())
        #expect(values.count >= 3)
    }

    /// The completion-handler form, called from `async` code with its `completionHandler:`
    /// label as the documentation writes it, is that form (not the `async` one, which would need
    /// `await`): this compiles, and the handler gets the result.
    @Test func completionHandlerFormIsCallableFromAsyncCode() async throws {
        let directory = TemporaryDirectory("export-completion-async")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        try seedDestinations(context, ["a", "b"])
        let (results, continuation) = AsyncStream.makeStream(of: Result<ExportResult, any Error>.self)
        let task: ExportTask = context.export(
            FetchRequest<Destination>(), to: directory.file("d.csv"), formatter: CSVExportFormatter(),
            completionHandler: { result in
                continuation.yield(result)
                continuation.finish()
            })
        #expect(!task.isCancelled)
        var iterator = results.makeAsyncIterator()
        let result = try #require(await iterator.next())
        #expect(try result.get().recordCount == 2)
    }

    /// A cancelled export stops, throws `CancellationError`, and leaves nothing: no file under
    /// the destination's name (an existing one untouched) and no temporary file.
    @Test func cancelledExportLeavesNoFile() throws {
        let directory = TemporaryDirectory("export-cancel")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        try seedDestinations(context, (0..<5000).map { "d\($0)" })
        try directory.write(Array("previous export\n".utf8), to: "out.csv")
        let gate = GateFormatter(stopAt: 10)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome: Result<ExportResult, any Error>?
        let task = context.export(FetchRequest<Destination>(), to: directory.file("out.csv"), formatter: gate) {
            outcome = $0
            done.signal()
        }
        #expect(gate.reached.wait(timeout: .now() + 60) == .success)
        task.cancel()
        #expect(task.isCancelled)
        gate.proceed.signal()
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(throws: CancellationError.self) { try outcome!.get() }
        #expect(directory.contents.filter { $0.hasPrefix("out.csv") } == ["out.csv"])
        #expect(try directory.bytes(of: "out.csv") == Array("previous export\n".utf8))
    }

    /// Cancelling the awaiting task cancels the export.
    @Test func taskCancellationCancelsTheExport() async throws {
        let directory = TemporaryDirectory("export-task")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        try seedDestinations(context, (0..<5000).map { "d\($0)" })
        let gate = GateFormatter(stopAt: 10)
        let url = directory.file("out.jsonl")
        let export = Task {
            try await context.export(FetchRequest<Destination>(), to: url, formatter: gate)
        }
        // Waited for off the cooperative pool, which the export's task needs; generously, since
        // under ThreadSanitizer other suites' blocking tests can hold the pool's few threads for
        // minutes before the task is scheduled.
        let reached = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: gate.reached.wait(timeout: .now() + 900)) }
        }
        #expect(reached == .success)
        export.cancel()
        gate.proceed.signal()
        await #expect(throws: CancellationError.self) { try await export.value }
        #expect(directory.contents.filter { $0.hasPrefix("out.jsonl") }.isEmpty)
    }

    /// A formatter that throws, and a destination whose directory is missing: typed errors, no
    /// file, no temporary file.
    @Test func failuresLeaveNoFile() async throws {
        let directory = TemporaryDirectory("export-fail")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        try seedDestinations(context, (0..<100).map { "d\($0)" })
        await #expect(throws: FormatterFailure.self) {
            try await context.export(
                FetchRequest<Destination>(), to: directory.file("out.csv"), formatter: FailingFormatter(failAt: 50))
        }
        #expect(directory.contents.filter { $0.hasPrefix("out.csv") }.isEmpty)
        let missing = directory.file("missing/out.csv")
        let error = await #expect(throws: StoreError.self) {
            try await context.export(FetchRequest<Destination>(), to: missing, formatter: CSVExportFormatter())
        }
        #expect(error?.code == .io)
        #expect(error?.url == missing.standardizedFileURL)
    }

    /// A failed open, write (disk full, or short), sync or rename — each operation before the
    /// rename in turn — leaves the destination as it was and no temporary file.
    @Test func failedWritesLeaveTheDestinationUntouched() throws {
        let fields = [ExportField(name: "n", kind: .attribute(.integer64, isOptional: false))]
        let id = ObjectID(key: EntityKey(entityName: "E", storeIdentifier: UUID(), entityIndex: nil), rawValue: 1)
        func export(to destination: URL, _ fileSystem: FaultyFileSystem) throws {
            let writer = try ExportWriter(
                destination: destination, fields: fields, formatter: JSONExportFormatter(), fileSystem: fileSystem)
            for index in 0..<20_000 {
                try writer.write(ExportRecord(objectID: id, values: [.value(.integer(Int64(index)))]))
            }
            _ = try writer.finish()
        }
        let dryRun = TemporaryDirectory("export-io")
        let counting = FaultyFileSystem()
        try export(to: dryRun.file("out.json"), counting)
        let operations = counting.log.prefix { $0 != "rename" } + ["rename"]
        #expect(operations.filter { $0 == "write" }.count >= 3)
        let complete = try dryRun.bytes(of: "out.json")
        for (index, operation) in operations.enumerated() {
            let directory = TemporaryDirectory("export-io")
            try directory.write(Array("old".utf8), to: "out.json")
            let fileSystem = FaultyFileSystem()
            fileSystem.reset(failAt: index + 1, fault: .error(ENOSPC))
            #expect(throws: StoreError.self, "\(operation) #\(index + 1)") {
                try export(to: directory.file("out.json"), fileSystem)
            }
            #expect(try directory.bytes(of: "out.json") == Array("old".utf8))
            #expect(directory.contents == ["out.json"])
            if operation == "write" {
                // A short write is continued, not an error: the file is complete.
                fileSystem.reset(failAt: index + 1, fault: .shortWrite)
                try export(to: directory.file("out.json"), fileSystem)
                #expect(try directory.bytes(of: "out.json") == complete)
            }
        }
    }

    /// An export is created 0666 less the umask, as any file a tool writes (not 0600 like the
    /// store's own files).
    @Test func exportsGetTheUsualPermissions() async throws {
        let directory = TemporaryDirectory("export-mode")
        let manager = journalManager(directory)
        defer { manager.close() }
        let context = try manager.createContext()
        try seedDestinations(context, ["a"])
        let url = directory.file("d.jsonl")
        _ = try await context.export(FetchRequest<Destination>(), to: url, formatter: JSONLinesExportFormatter())
        let mask = umask(0o022)
        umask(mask)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
        #expect(mode == 0o666 & ~Int(mask), "\(String(mode, radix: 8))")
        let store = try #require(
            try FileManager.default.attributesOfItem(atPath: directory.file("Store.journal").path)[.posixPermissions]
                as? Int)
        #expect(store == 0o600, "\(String(store, radix: 8))")
    }
}

private let contextQueueKey = DispatchSpecificKey<String>()

struct FormatterFailure: Error {}

/// Throws at the `failAt`-th record.
private struct FailingFormatter: ExportFormatter {
    let failAt: Int
    func record(_ record: ExportRecord, fields: [ExportField], into output: inout ExportOutput) throws {
        if record.objectID.primaryKey == Int64(failAt) {
            throw FormatterFailure()
        }
        output.append("x\n")
    }
}

/// Stops at the `stopAt`-th record until the test lets it go on, so that a cancellation lands
/// mid-export.
private final class GateFormatter: ExportFormatter, @unchecked Sendable {
    let stopAt: Int64
    let reached = DispatchSemaphore(value: 0)
    let proceed = DispatchSemaphore(value: 0)
    init(stopAt: Int64) { self.stopAt = stopAt }
    func record(_ record: ExportRecord, fields: [ExportField], into output: inout ExportOutput) throws {
        if record.objectID.primaryKey == stopAt {
            reached.signal()
            proceed.wait()
        }
        output.append("\(record.objectID)\n")
    }
}
