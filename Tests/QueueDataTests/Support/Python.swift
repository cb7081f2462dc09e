import Foundation

/// What a subprocess printed, and how it ended.
struct ProcessOutput {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs `executable` with `arguments` and waits for it, collecting what it prints.
func runProcess(
    _ executable: String,
    _ arguments: [String],
    environment: [String: String]? = nil,
    standardInput: String? = nil
) throws -> ProcessOutput {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    let input = Pipe()
    process.standardInput = input
    try process.run()
    if let standardInput {
        input.fileHandleForWriting.write(Data(standardInput.utf8))
    }
    try? input.fileHandleForWriting.close()
    // Read both pipes to the end before waiting, so that a full pipe never blocks the child.
    let group = DispatchGroup()
    nonisolated(unsafe) var errorData = Data()
    group.enter()
    DispatchQueue.global().async {
        errorData = readToEnd(error.fileHandleForReading)
        group.leave()
    }
    let outputData = readToEnd(output.fileHandleForReading)
    group.wait()
    process.waitUntilExit()
    return ProcessOutput(
        status: process.terminationStatus, standardOutput: String(decoding: outputData, as: UTF8.self),
        standardError: String(decoding: errorData, as: UTF8.self))
}

/// Everything `handle` reads until the end of the file. Foundation's `readDataToEndOfFile()`
/// traps (a `try!` inside) when a signal interrupts the read (`EINTR`), which a test process
/// running many children sees: retry instead.
private func readToEnd(_ handle: FileHandle) -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            data.append(contentsOf: buffer[..<count])
        } else if count == 0 || errno != EINTR {
            return data
        }
    }
}

/// Runs a Python 3 script with `arguments`: the independent parser of the tests.
func runPython(_ script: String, _ arguments: [String]) throws -> ProcessOutput {
    try runProcess("/usr/bin/env", ["python3", "-c", script] + arguments)
}
