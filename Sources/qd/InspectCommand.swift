import Foundation
@_spi(StoreTool) import QueueData

/// `qd inspect STORE [--json]` and `qd verify STORE [--json]`.
enum InspectCommand {
    static let inspectHelp = """
        usage: qd inspect STORE [--json]

        Shows what a store file holds, without the app's model (stores record their own schema):
        format and version, store identifier, model version hash, the schema (entities with their
        superentities, attributes with types and defaults, relationships with inverses and delete
        rules, uniqueness constraints), row counts, file
        sizes and the lock's holder, for a journal its records, snapshot and any torn tail, and the
        applied migration steps. Reads without taking the lock and never writes: safe while an app
        has the store open.

          --json    print one JSON object instead of text
        """

    static let verifyHelp = """
        usage: qd verify STORE [--json]

        Checks a store file: for a journal every record's length, type, checksum and sequence
        number (past any damage, so that every problem is reported), then for either store every
        row's values against its attribute types, every relationship reference (it must resolve,
        and the inverse must point back), the primary-key counters, and the uniqueness constraints
        the store records (across an entity and its subentities). Prints each problem with
        its byte offset (and line, for a JSON store). A torn tail is reported as a warning: the
        next open sets it aside. Reads without the lock, never writes.

        Exit status: 0 sound, 1 problems found, 3 unreadable.

          --json    print one JSON object instead of text
        """

    static func run(_ arguments: [String], verify: Bool) throws -> ExitStatus {
        let parsed = try Arguments(arguments, valued: [], flags: ["--json"])
        if parsed.wantsHelp {
            printOutput(verify ? verifyHelp : inspectHelp)
            return .success
        }
        guard parsed.positional.count == 1 else {
            throw ToolFailure(.usage, "\(verify ? "verify" : "inspect") takes one store file.")
        }
        let location = try StoreLocation(parsed.positional[0])
        guard location.exists else {
            throw ToolFailure(.unreadable, "\(location.url.path) does not exist.")
        }
        let inspection: StoreInspection
        do {
            inspection = try StoreInspection.inspect(location.url)
        } catch let error as StoreError {
            throw ToolFailure(.unreadable, "cannot read \(location.url.path): \(error.message)")
        }
        let report = verify ? verification(inspection) : description(inspection, location)
        if parsed.flags.contains("--json") {
            let data = try JSONSerialization.data(withJSONObject: report, options: [.prettyPrinted, .sortedKeys])
            printOutput(String(decoding: data, as: UTF8.self))
        } else if verify {
            printVerification(inspection)
        } else {
            printDescription(report)
        }
        if verify {
            return inspection.isSound ? .success : .unsound
        }
        return inspection.contents == nil ? .unreadable : .success
    }

    // MARK: inspect

    private static func description(_ inspection: StoreInspection, _ location: StoreLocation) -> [String: Any] {
        var report: [String: Any] = [
            "path": inspection.url.path,
            "format": inspection.format.rawValue,
            "formatVersion": inspection.formatVersion ?? NSNull(),
            "fileSize": inspection.fileSize,
            "lockFile": location.lockURL.path,
            "lockHolder": location.lockHolder ?? NSNull(),
            "problems": inspection.problems.map(problemReport),
        ]
        if inspection.format == .journal {
            // Only the records before the first damage are read: count those, and say what is not.
            let damage = inspection.damageOffset
            let read = inspection.records.filter { record in damage.map { record.offset < $0 } ?? true }
            let snapshot = read.first { $0.type == "snapshot" }
            report["records"] = read.count
            report["changeRecords"] = read.filter { $0.type == "changes" }.count
            report["snapshot"] =
                snapshot.map { ["offset": $0.offset, "payloadLength": $0.payloadLength, "sequence": $0.sequence] }
                ?? NSNull()
            report["tornTail"] =
                inspection.tornTail.map { ["offset": $0.offset, "length": $0.length] as [String: Any] } ?? NSNull()
            if let damage {
                let problem = inspection.problems.first { !$0.isWarning && $0.offset == damage }
                report["damage"] =
                    [
                        "offset": damage, "message": problem?.message ?? "damaged",
                        "unreadRecords": inspection.records.count - read.count,
                    ] as [String: Any]
            } else {
                report["damage"] = NSNull()
            }
        }
        let asides = ((try? FileManager.default.contentsOfDirectory(atPath: location.directory.path)) ?? [])
            .filter { $0.hasPrefix("\(location.url.lastPathComponent).") }.sorted()
        report["filesAside"] = asides.map { name -> [String: Any] in
            let path = location.directory.appendingPathComponent(name).path
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            return ["name": name, "size": size]
        }
        guard let contents = inspection.contents else { return report }
        report["storeIdentifier"] = contents.metadata.storeIdentifier.uuidString
        report["versionHash"] = contents.metadata.versionHash
        report["appliedMigrationSteps"] = contents.metadata.appliedMigrationSteps
        report["history"] =
            contents.history.map { history -> [String: Any] in
                [
                    "transactions": history.transactions.count,
                    "firstTransaction": history.transactions.first?.number ?? NSNull(),
                    "lastTransactionNumber": history.lastTransactionNumber,
                    "purgedThrough": history.purgedThrough,
                    "authors": Set(history.transactions.compactMap(\.author)).sorted(),
                ]
            } ?? NSNull()
        report["entities"] = contents.schema.map { entity -> [String: Any] in
            [
                "name": entity.name,
                "rows": contents.rows[entity.name]?.count ?? 0,
                "nextPrimaryKey": contents.metadata.nextPrimaryKeys[entity.name] ?? 1,
                "originalName": entity.originalName ?? NSNull(),
                "attributes": entity.attributes.map { attribute -> [String: Any] in
                    [
                        "name": attribute.name, "type": attribute.type.rawValue, "optional": attribute.isOptional,
                        "default": attribute.defaultValue.description,
                        "valueType": attribute.valueTypeName ?? NSNull(),
                    ]
                },
                "relationships": entity.relationships.map { relationship -> [String: Any] in
                    [
                        "name": relationship.name, "destination": relationship.destinationEntityName,
                        "inverse": relationship.inverseName, "toMany": relationship.isToMany,
                        "ordered": relationship.isOrdered, "optional": relationship.isOptional,
                        "deleteRule": relationship.deleteRule.rawValue, "minCount": relationship.minCount,
                        "maxCount": relationship.maxCount ?? NSNull(),
                    ]
                },
                "superentity": entity.superentityName ?? NSNull(),
                "uniquenessConstraints": entity.uniquenessConstraints,
            ]
        }
        return report
    }

    private static func printDescription(_ report: [String: Any]) {
        func line(_ label: String, _ value: Any) {
            printOutput(label.padding(toLength: 18, withPad: " ", startingAt: 0) + "\(value)")
        }
        line("Store", report["path"]!)
        line("Format", "\(report["format"]!) \(report["formatVersion"] as? String ?? "?")")
        if let identifier = report["storeIdentifier"] {
            line("Identifier", identifier)
            line("Model hash", report["versionHash"]!)
        }
        line("File size", "\(report["fileSize"]!) bytes")
        if let records = report["records"] as? Int {
            let saves = report["changeRecords"] as? Int ?? 0
            let start =
                (report["snapshot"] as? [String: Any]).map {
                    "a snapshot of \($0["payloadLength"]!) bytes at offset \($0["offset"]!)"
                } ?? "no valid snapshot"
            line("Records", "\(records) read: \(start), then \(saves) save\(saves == 1 ? "" : "s")")
            if let damage = report["damage"] as? [String: Any] {
                let unread = damage["unreadRecords"] as? Int ?? 0
                line(
                    "Damage",
                    "at offset \(damage["offset"]!): \(damage["message"]!). Nothing from there on is read (\(unread) "
                        + "valid record\(unread == 1 ? "" : "s") after it); run qd verify for every problem.")
            }
            if let torn = report["tornTail"] as? [String: Any] {
                line("Torn tail", "\(torn["length"]!) bytes at offset \(torn["offset"]!) (set aside at the next open)")
            } else {
                line("Torn tail", "none")
            }
        }
        line("Lock", "\(report["lockFile"]!): " + ((report["lockHolder"] as? String).map { "held by \($0)" } ?? "free"))
        if let aside = report["filesAside"] as? [[String: Any]], !aside.isEmpty {
            line("Files aside", aside.map { "\($0["name"]!) (\($0["size"]!) bytes)" }.joined(separator: ", "))
        }
        if let steps = report["appliedMigrationSteps"] as? [String] {
            line("Migration steps", steps.isEmpty ? "none applied" : steps.joined(separator: ", "))
        }
        if let history = report["history"] as? [String: Any] {
            let count = history["transactions"] as? Int ?? 0
            let kept =
                count == 0
                ? "no transactions kept"
                : "\(count) transaction\(count == 1 ? "" : "s") kept (\(history["firstTransaction"]!) to "
                    + "\(history["lastTransactionNumber"]!))"
            let authors = history["authors"] as? [String] ?? []
            line(
                "History",
                kept + ", purged through \(history["purgedThrough"]!)"
                    + (authors.isEmpty ? "" : "; authors: \(authors.joined(separator: ", "))"))
        } else if report["storeIdentifier"] != nil {
            line("History", "not tracked")
        }
        if let entities = report["entities"] as? [[String: Any]] {
            printOutput("Entities")
            for entity in entities {
                let subentity = (entity["superentity"] as? String).map { " (subentity of \($0))" } ?? ""
                printOutput(
                    "  \(entity["name"]!)\(subentity): \(entity["rows"]!) rows, next key \(entity["nextPrimaryKey"]!)")
                for attribute in entity["attributes"] as! [[String: Any]] {
                    let optional = attribute["optional"] as! Bool ? "?" : ""
                    let valueType = (attribute["valueType"] as? String).map { " (\($0))" } ?? ""
                    printOutput(
                        "    \(attribute["name"]!): \(attribute["type"]!)\(optional)\(valueType) = \(attribute["default"]!)"
                    )
                }
                for relationship in entity["relationships"] as! [[String: Any]] {
                    let toMany = relationship["toMany"] as! Bool
                    let kind = toMany ? ((relationship["ordered"] as! Bool) ? "ordered to-many" : "to-many") : "to-one"
                    printOutput(
                        "    \(relationship["name"]!) → \(relationship["destination"]!) (\(kind)), inverse "
                            + "\(relationship["inverse"]!), delete rule \(relationship["deleteRule"]!)")
                }
                for constraint in entity["uniquenessConstraints"] as! [[String]] {
                    printOutput("    unique (\(constraint.joined(separator: ", ")))")
                }
            }
        }
        if let problems = report["problems"] as? [[String: Any]], !problems.isEmpty {
            printOutput("Problems (run qd verify for details): \(problems.count)")
        }
    }

    // MARK: verify

    private static func problemReport(_ problem: StoreInspection.Problem) -> [String: Any] {
        [
            "offset": problem.offset ?? NSNull(), "line": problem.line ?? NSNull(), "message": problem.message,
            "severity": problem.isWarning ? "warning" : "error",
        ]
    }

    private static func verification(_ inspection: StoreInspection) -> [String: Any] {
        [
            "path": inspection.url.path,
            "sound": inspection.isSound,
            "records": inspection.records.count,
            "rows": inspection.contents.map { $0.rows.values.reduce(0) { $0 + $1.count } } ?? NSNull(),
            "problems": inspection.problems.map(problemReport),
        ]
    }

    private static func printVerification(_ inspection: StoreInspection) {
        for problem in inspection.problems {
            var place = problem.offset.map { "offset \($0)" } ?? "(no offset)"
            if let line = problem.line {
                place += ", line \(line)"
            }
            printOutput("\(problem.isWarning ? "warning" : "error"): \(place): \(problem.message)")
        }
        let rows = inspection.contents.map { $0.rows.values.reduce(0) { $0 + $1.count } } ?? 0
        let scope =
            inspection.format == .journal ? "\(inspection.records.count) records, \(rows) rows" : "\(rows) rows"
        let errors = inspection.problems.filter { !$0.isWarning }.count
        if errors == 0 {
            printOutput("\(inspection.url.path): sound (\(scope) checked)")
        } else {
            printOutput("\(inspection.url.path): \(errors) problem\(errors == 1 ? "" : "s") (\(scope) checked)")
        }
    }
}
