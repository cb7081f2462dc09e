import CMalloc
import CSQLite
import Dispatch
import Foundation
import QueueData

#if canImport(Glibc)
    import Glibc
#endif

/// Exports of every record to CSV and JSON Lines, against a hand-written loop over the raw
/// SQLite C API writing the same rows (as `sqlite3 -csv` does: raw values, buffered writes,
/// then the same fsync and rename as the export), and `sqlite3 -csv` itself when installed;
/// with the memory the export adds at its peak.
func exportMeasurements(sizes: [Int], repetitions: Int) throws -> [Measurement] {
    var results: [Measurement] = []
    for size in sizes {
        let values = makeRecords(size)
        let directory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("qd-bench-export-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let manager = try loadedManager(values)
        defer { manager.close() }
        let context = try manager.createContext()
        let databasePath = directory.appendingPathComponent("records.sqlite").path
        let sqlite = SQLiteBaseline(path: databasePath)
        sqlite.insert(values)

        for format in ["CSV", "JSON Lines"] {
            let output = directory.appendingPathComponent(format == "CSV" ? "export.csv" : "export.jsonl")
            let formatter: any ExportFormatter = format == "CSV" ? CSVExportFormatter() : JSONLinesExportFormatter()
            var written: ExportResult?
            let exportTime = try medianSeconds(repetitions: repetitions) {
                written = try export(context, to: output, formatter: formatter)
            }
            let baselineOutput = directory.appendingPathComponent("baseline")
            let loopTime = medianSeconds(repetitions: repetitions) {
                sqlite.export(to: baselineOutput.path, csv: format == "CSV")
            }
            let baselineBytes =
                (try? FileManager.default.attributesOfItem(atPath: baselineOutput.path)[.size] as? Int) ?? 0
            var others: [Baseline] = []
            if format == "CSV", FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") {
                let cliTime = try medianSeconds(repetitions: repetitions) {
                    try sqliteCommandLine(databasePath, to: baselineOutput.path)
                }
                others.append(Baseline(name: "sqlite3 -csv, to a file", value: cliTime))
            }
            // The memory the export adds at its peak, over what the process held before: the
            // live heap sampled at every progress report (about a hundred per export), and the
            // peak resident size.
            malloc_trim(0)
            let heapBefore = liveHeap()
            let before = residentBytes().current
            resetPeakResident()
            nonisolated(unsafe) var heapPeak = heapBefore
            _ = try export(context, to: output, formatter: formatter) { _ in heapPeak = max(heapPeak, liveHeap()) }
            let peak = residentBytes().peak
            let rows = written?.recordCount ?? 0
            let heapAdded = Double(max(0, heapPeak - heapBefore))
            results.append(
                Measurement(
                    workload: "export \(size) records to \(format) (in-memory store, sorted by key)",
                    subject: exportTime, baseline: loopTime,
                    baselineName: "raw SQLite loop, buffered writes + fsync + rename", unit: "ms", goal: nil,
                    note:
                        "\(rows) records, \(written?.byteCount ?? 0) bytes (with object ID URIs and ISO 8601 dates; the "
                        + "baseline's raw values: \(baselineBytes) bytes); added by the export at its peak: live heap "
                        + String(
                            format: "%.1f MB (%.0f B per record)", heapAdded / 1e6, heapAdded / Double(max(rows, 1)))
                        + String(format: ", resident %.1f MB", Double(max(0, peak - before)) / 1e6),
                    otherBaselines: others))
        }
    }
    return results
}

/// Exports every record through the completion-handler API and waits for it.
private func export(
    _ context: ManagedObjectContext,
    to url: URL,
    formatter: any ExportFormatter,
    progress: (@Sendable (ExportProgress) -> Void)? = nil
) throws -> ExportResult {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var outcome: Result<ExportResult, any Error>?
    context.export(FetchRequest<Record>(), to: url, formatter: formatter, progress: progress) { result in
        outcome = result
        done.signal()
    }
    done.wait()
    return try outcome!.get()
}

/// `sqlite3 -csv -header DB "SELECT …" > file`.
private func sqliteCommandLine(_ database: String, to path: String) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    process.arguments = ["-csv", "-header", database, "SELECT id, name, age, score, created FROM record ORDER BY id"]
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    process.standardOutput = handle
    try process.run()
    process.waitUntilExit()
}

/// The process's resident memory now and at its peak (`VmRSS`, `VmHWM`), in bytes.
func residentBytes() -> (current: Int, peak: Int) {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
    func field(_ name: String) -> Int {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }
    return (field("VmRSS:"), field("VmHWM:"))
}

/// Bytes of live heap allocations (glibc's `mallinfo2`).
func liveHeap() -> Int {
    let info = mallinfo2()
    return Int(info.uordblks + info.hblkhd)
}

/// Resets the peak resident memory (`VmHWM`) to the current one.
func resetPeakResident() {
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
}

extension SQLiteBaseline {
    /// The hand-written export: every row in key order, as CSV (RFC 4180 quoting of the name)
    /// or JSON Lines (the name escaped), written 64 KiB at a time to a temporary file that is
    /// synchronized and renamed over `path`, then the directory synchronized.
    func export(to path: String, csv: Bool) {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(
            database, "SELECT id, name, age, score, created FROM record ORDER BY id", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 17)
        func flush() {
            buffer.withUnsafeBytes { _ = write(descriptor, $0.baseAddress, $0.count) }
            buffer.removeAll(keepingCapacity: true)
        }
        if csv {
            buffer.append(contentsOf: "id,name,age,score,created\r\n".utf8)
        }
        while sqlite3_step(statement) == SQLITE_ROW {
            let id = sqlite3_column_int64(statement, 0)
            let name = UnsafeBufferPointer(
                start: sqlite3_column_text(statement, 1), count: Int(sqlite3_column_bytes(statement, 1)))
            let age = sqlite3_column_int64(statement, 2)
            let score = sqlite3_column_double(statement, 3)
            let created = sqlite3_column_double(statement, 4)
            if csv {
                buffer.append(contentsOf: String(id).utf8)
                buffer.append(UInt8(ascii: ","))
                if name.contains(where: {
                    $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D
                }) {
                    buffer.append(UInt8(ascii: "\""))
                    for byte in name {
                        if byte == UInt8(ascii: "\"") { buffer.append(byte) }
                        buffer.append(byte)
                    }
                    buffer.append(UInt8(ascii: "\""))
                } else {
                    buffer.append(contentsOf: name)
                }
                buffer.append(UInt8(ascii: ","))
                buffer.append(contentsOf: String(age).utf8)
                buffer.append(UInt8(ascii: ","))
                buffer.append(contentsOf: String(score).utf8)
                buffer.append(UInt8(ascii: ","))
                buffer.append(contentsOf: String(created).utf8)
                buffer.append(contentsOf: [0x0D, 0x0A])
            } else {
                buffer.append(contentsOf: "{\"id\":\(id),\"name\":\"".utf8)
                for byte in name {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { buffer.append(UInt8(ascii: "\\")) }
                    buffer.append(byte)
                }
                buffer.append(contentsOf: "\",\"age\":\(age),\"score\":\(score),\"created\":\(created)}\n".utf8)
            }
            if buffer.count >= 1 << 16 {
                flush()
            }
        }
        flush()
        fsync(descriptor)
        close(descriptor)
        rename(temporary, path)
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY)
        fsync(directory)
        close(directory)
    }
}
