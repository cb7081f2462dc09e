import Foundation
@_spi(StoreTool) import QueueData

/// The commands that write a store: `compact`, `convert` and `import`. Each takes the store's
/// lock (and refuses a store another process holds, naming it).
enum WriteCommands {
    static let compactHelp = """
        usage: qd compact STORE

        Rewrites a journal store as one snapshot, atomically (a new file, synchronized, renamed
        over the journal, directory synchronized): the log of every save shrinks to the live
        data. A JSON store is rewritten by every save already: nothing to do. Takes the store's
        lock: refused while another process has the store open (exit status 4).
        """

    static let convertHelp = """
        usage: qd convert STORE OUT

        Writes the store as another store file: OUT's extension picks the type (.journal or
        .json), its name and directory the place. The new store is written under a temporary
        name, read back and compared with the original, then given its name (never over an
        existing file). The original is left as it was: it is read, not opened, so not even a
        torn journal tail is set aside (the committed records before it are converted). The
        store identifier (and so every object ID) is kept. Takes the source's lock: refused
        while another process has it open.
        """

    static let importHelp = """
        usage: qd import STORE --entity ENTITY [--format jsonl|csv] [--delimiter C] [--unique ATTR[,ATTR...]]
                         [--on-conflict update|fail] [--batch-size N] FILE

        Inserts the records of a JSON Lines or CSV (with a header row) file as objects of ENTITY,
        in batches, without the app's model. Every record is checked before any is saved: a bad
        one stops the import with its line and field, and nothing is imported. Fields name
        attributes and relationships (object ID URIs of this store); objectID fields are ignored.
        The uniqueness constraints the store records (those of the app's model, see qd inspect)
        identify an object; --unique adds one naming the attributes given (their values must
        already be unique among the store's objects: exit status 5 otherwise), which the store
        then records until the app saves with its own model again. A record matching an
        existing object updates it (--on-conflict update, the default) or fails the import
        (--on-conflict fail). An update replaces every attribute of the object:
        attributes the file leaves out take their defaults, in updated objects too — include
        every field (an export of the entity has them all). A to-many relationship in a record
        is joined with the object's existing members (an import never removes one), and a
        to-one the record leaves empty keeps the existing one. In CSV an empty unquoted field is nil
        (refused for a required attribute other than a string); in a file with one column, an
        empty line is a record of one nil field. --format defaults to the file's extension
        (.jsonl, .ndjson, .csv, .tsv); --delimiter sets a CSV file's delimiter, whichever picked
        the format. Takes the store's lock: refused while another process has the store open.
        """

    static func compact(_ arguments: [String]) throws -> ExitStatus {
        let parsed = try Arguments(arguments, valued: [], flags: [])
        if parsed.wantsHelp {
            printOutput(compactHelp)
            return .success
        }
        guard parsed.positional.count == 1 else { throw ToolFailure(.usage, "compact takes one store file.") }
        let location = try StoreLocation(parsed.positional[0])
        let manager = try location.manager()
        defer { manager.close() }
        let before = fileSize(location.url)
        do {
            try manager.loadPersistentStore()
            try manager.compactPersistentStore()
        } catch {
            throw location.failure(error, doing: "compact")
        }
        manager.close()
        let after = fileSize(location.url)
        if location.kind == "json" {
            printOutput("\(location.url.path): a JSON store is rewritten whole by every save; nothing to compact.")
        } else {
            printOutput("\(location.url.path): compacted, \(before) → \(after) bytes.")
        }
        return .success
    }

    static func convert(_ arguments: [String]) throws -> ExitStatus {
        let parsed = try Arguments(arguments, valued: [], flags: [])
        if parsed.wantsHelp {
            printOutput(convertHelp)
            return .success
        }
        guard parsed.positional.count == 2 else { throw ToolFailure(.usage, "convert takes a store file and OUT.") }
        let source = try StoreLocation(parsed.positional[0])
        let target = try StoreLocation(parsed.positional[1])
        guard !source.isOwnFile(target.url.path) else {
            throw ToolFailure(.usage, "convert needs OUT to be another file.")
        }
        guard !target.exists else {
            throw ToolFailure(.failed, "\(target.url.path) exists: remove it, or convert to another name.")
        }
        guard source.exists else { throw ToolFailure(.unreadable, "\(source.url.path) does not exist.") }
        do {
            // Read, not opened: opening a journal as a store would set a torn tail aside.
            try StoreInspection.convert(source.url, to: target.type, directory: target.directory, name: target.name)
        } catch {
            throw source.failure(error, doing: "convert")
        }
        printOutput(
            "\(source.url.path) → \(target.url.path): \(target.kind) store written, read back and verified "
                + "(\(fileSize(target.url)) bytes).")
        return .success
    }

    static func importRecords(_ arguments: [String]) async throws -> ExitStatus {
        let parsed = try Arguments(
            arguments,
            valued: ["--entity", "--format", "--delimiter", "--unique", "--on-conflict", "--batch-size"], flags: [])
        if parsed.wantsHelp {
            printOutput(importHelp)
            return .success
        }
        guard parsed.positional.count == 2 else { throw ToolFailure(.usage, "import takes a store file and FILE.") }
        guard let entityName = parsed.options["--entity"] else { throw ToolFailure(.usage, "import needs --entity.") }
        let location = try StoreLocation(parsed.positional[0])
        let file = URL(fileURLWithPath: parsed.positional[1])
        var resolved: ImportFormat?
        switch parsed.options["--format"] {
        case nil: resolved = ImportFormat(fileExtension: file.pathExtension)
        case "jsonl": resolved = .jsonLines
        case "csv": resolved = .csv
        default: throw ToolFailure(.usage, "--format must be jsonl or csv.")
        }
        guard var format = resolved else {
            throw ToolFailure(.usage, "the format of \(file.lastPathComponent) is unknown: pass --format jsonl or csv.")
        }
        // Whether the format came from --format or from the file's extension, a CSV file takes it.
        if let delimiter = parsed.options["--delimiter"] {
            guard format != .jsonLines else {
                throw ToolFailure(
                    .usage,
                    "--delimiter applies to CSV files only, and \(file.lastPathComponent) is read as JSON Lines.")
            }
            guard delimiter.count == 1, let character = delimiter.first, character.isASCII,
                !"\"\r\n".contains(character)
            else {
                throw ToolFailure(.usage, "--delimiter must be one ASCII character other than a quote or a line break.")
            }
            format = .csv(delimiter: character)
        }
        let policy: MergePolicy
        var updates = true
        switch parsed.options["--on-conflict"] ?? "update" {
        case "update": policy = .mergeByPropertyObjectTrump
        case "fail":
            policy = .error
            updates = false
        default: throw ToolFailure(.usage, "--on-conflict must be update or fail.")
        }
        var batchSize = 1_000
        if let text = parsed.options["--batch-size"] {
            guard let value = Int(text), value > 0 else { throw ToolFailure(.usage, "--batch-size needs a number.") }
            batchSize = value
        }
        var constraints: [String: [[String]]] = [:]
        var uniqueNames: [String] = []
        if let unique = parsed.options["--unique"] {
            uniqueNames = unique.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard !uniqueNames.contains(where: \.isEmpty) else {
                throw ToolFailure(
                    .usage,
                    "--unique needs attribute names separated by commas (such as --unique code or "
                        + "--unique name,country), not \(String(reflecting: unique)).")
            }
            constraints[entityName] = [uniqueNames]
        }
        guard FileManager.default.fileExists(atPath: file.path) else {
            throw ToolFailure(.unreadable, "\(file.path) does not exist.")
        }
        // Read before the store is opened: a file that cannot be read (a directory, no permission)
        // is the input's failure (exit status 3), not the import's.
        do {
            let handle = try FileHandle(forReadingFrom: file)
            defer { try? handle.close() }
            _ = try handle.read(upToCount: 1)
        } catch {
            throw ToolFailure(.unreadable, "cannot read \(file.path): \(error.localizedDescription)")
        }
        let manager: ContextManager
        do {
            manager = try location.manager(uniquenessConstraints: constraints)
        } catch let error as ModelError {
            throw ToolFailure(.usage, "--unique: \(error)")
        }
        defer { manager.close() }
        let context: ManagedObjectContext
        do {
            try manager.loadPersistentStore()
            context = try manager.createContext()
            // The store's persistent history, if it keeps one, tells the import's saves apart.
            context.performAndWait { context.transactionAuthor = "qd import" }
        } catch let error as StoreError where error.code == .incompatibleModel && !uniqueNames.isEmpty {
            // The only model difference qd makes: the existing objects contradict --unique.
            let shared = error.message.components(separatedBy: ", which the model declares unique").first ?? ""
            throw ToolFailure(
                .failed,
                "--unique \(uniqueNames.joined(separator: ",")) does not identify one object of \(entityName) in "
                    + "\(location.url.path): existing objects already share these values (\(shared)). Nothing was "
                    + "imported: name attributes whose values are unique in the store, or remove the duplicates first.")
        } catch {
            throw location.failure(error, doing: "import into")
        }
        guard manager.managedObjectModel?.entitiesByName[entityName] != nil else {
            throw ToolFailure(.usage, "the store has no entity '\(entityName)'.")
        }
        let progress = ProgressBar("import")
        do {
            let result = try await context.importRecords(
                from: file, format: format, entityName: entityName, batchSize: batchSize, mergePolicy: policy,
                progress: { progress.update($0.completedCount, of: $0.totalCount) })
            progress.finish()
            printOutput(
                "\(file.path) → \(location.url.path): \(result.recordCount) records, \(result.insertedCount) inserted, "
                    + "\(result.updatedCount) updated.")
        } catch let error as ImportError {
            progress.finish()
            throw ToolFailure(.failed, "\(error) Nothing was imported.")
        } catch let error as MergeConflictError {
            progress.finish()
            if updates {
                throw ToolFailure(
                    .failed,
                    "a record's unique values match an object that an update cannot take them into (an object "
                        + "of another entity of the hierarchy, or two different objects): \(error). The batches "
                        + "before it were saved.")
            }
            throw ToolFailure(
                .failed,
                "a record duplicates an existing object (\(error)); the batches before it were saved. "
                    + "Use --on-conflict update to update existing objects instead.")
        } catch {
            progress.finish()
            throw ToolFailure(.failed, "import failed: \(error)")
        }
        return .success
    }

    private static func fileSize(_ url: URL) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
    }
}
