import Foundation

/// What `qd` exits with: the contract scripts rely on (`qd --help` lists them).
enum ExitStatus: Int32 {
    /// Done; for `verify`, the store is sound.
    case success = 0
    /// `verify` found problems.
    case unsound = 1
    /// The command line is wrong.
    case usage = 2
    /// The store (or an input file) cannot be read: missing, not a store, damaged.
    case unreadable = 3
    /// Another process holds the store: writing commands refuse it.
    case locked = 4
    /// The work failed: an import's records, a conversion, an I/O error.
    case failed = 5
}

/// A failure that ends `qd` with a message and a status.
struct ToolFailure: Error {
    var status: ExitStatus
    var message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }
}

/// Writes to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Writes to standard output.
func printOutput(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// The command line after the command's name: positional arguments, options with values,
/// and flags.
struct Arguments {
    var positional: [String] = []
    var options: [String: String] = [:]
    var flags: Set<String> = []

    /// Parses `arguments`; `valued` lists the options that take a value (`--entity E`, or
    /// `--entity=E`), `flags` the others.
    init(_ arguments: [String], valued: Set<String>, flags known: Set<String>) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                positional += arguments[index...]
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                positional.append(argument)
                continue
            }
            var name = argument
            var value: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            }
            if valued.contains(name) {
                if value == nil {
                    guard index < arguments.count else {
                        throw ToolFailure(.usage, "\(name) needs a value.")
                    }
                    value = arguments[index]
                    index += 1
                }
                options[name] = value
            } else if known.contains(name) || name == "--help" || name == "-h" {
                flags.insert(name)
            } else {
                throw ToolFailure(.usage, "unknown option \(name).")
            }
        }
    }

    var wantsHelp: Bool { flags.contains("--help") || flags.contains("-h") }
}
