import Foundation

/// `qd`: inspect, verify, compact, convert, export and import QueueData store files, without
/// the app's model (stores record their own schema).
let overview = """
    usage: qd COMMAND STORE [options]      (qd COMMAND --help for each command)

    QueueData's store tool: works on a store file (<name>.journal or <name>.json) without the
    app's model, since stores record their own schema.

    Reading (no lock taken, nothing written; safe while an app has the store open):
      inspect STORE [--json]        format, identifier, model hash, schema, row counts, sizes,
                                    journal records and torn tail, migration steps
      verify STORE [--json]         every checksum, sequence, value and reference, with offsets
      export STORE --entity E ...   rows as CSV, JSON or JSON Lines

    Writing (takes the store's lock; refused while another process holds it):
      compact STORE                 rewrite a journal as one snapshot
      convert STORE OUT             write the store as OUT (.journal or .json), verified
      import STORE --entity E FILE  insert (or update) records from JSON Lines or CSV

    Exit status: 0 done (verify: sound), 1 verify found problems, 2 usage error,
    3 store or file unreadable, 4 store held by another process, 5 the work failed.
    """

let arguments = Array(CommandLine.arguments.dropFirst())
let status: ExitStatus
do {
    switch arguments.first {
    case "inspect": status = try InspectCommand.run(Array(arguments.dropFirst()), verify: false)
    case "verify": status = try InspectCommand.run(Array(arguments.dropFirst()), verify: true)
    case "export": status = try ExportCommand.run(Array(arguments.dropFirst()))
    case "compact": status = try WriteCommands.compact(Array(arguments.dropFirst()))
    case "convert": status = try WriteCommands.convert(Array(arguments.dropFirst()))
    case "import": status = try await WriteCommands.importRecords(Array(arguments.dropFirst()))
    case "--help", "-h", "help":
        printOutput(overview)
        status = .success
    case nil:
        printError(overview)
        status = .usage
    case let command?:
        throw ToolFailure(.usage, "unknown command '\(command)'.")
    }
} catch let failure as ToolFailure {
    printError("qd: \(failure.message)")
    if failure.status == .usage {
        printError("Run qd --help (or qd COMMAND --help) for the usage.")
    }
    status = failure.status
} catch {
    printError("qd: \(error)")
    status = .failed
}
exit(status.rawValue)
