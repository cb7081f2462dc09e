import Foundation

extension ManagedObjectContext {
    /// Imports the records of a JSON Lines or CSV file (with a header row) as objects of the
    /// entity named `entityName`, off the context's queue, in batches: the way back from an
    /// export.
    ///
    /// ```swift
    /// let result = try await context.importRecords(from: url, entityName: "Destination")
    /// print("\(result.insertedCount) new, \(result.updatedCount) updated")
    /// ```
    ///
    /// Each record's fields name attributes and relationships of the entity (an `objectID`
    /// field is ignored: objects are matched by uniqueness constraints, not by ID); a field
    /// left out takes the attribute's default. Values are read in the forms exports write
    /// (dates in ISO 8601, binary data in Base64, in CSV an empty unquoted field is `nil`,
    /// refused for a required attribute as JSON's `null` is — except a string's, which is the
    /// empty string); relationships hold object ID URIs of objects of this store (a to-many: a
    /// JSON array, or URIs separated by spaces in CSV).
    ///
    /// The whole file is read and checked first: a record that cannot be read or does not fit
    /// throws ``ImportError`` naming its line and field, and nothing is imported. Then the
    /// records are inserted `batchSize` at a time by a private context, each batch saved
    /// under `mergePolicy`: with a trump policy (the default), a record whose unique
    /// attributes (``Attribute`` `.unique`, ``ManagedObject/uniquenessConstraints``) match an
    /// existing object updates that object (an upsert) instead of inserting another; with
    /// ``MergePolicy/error``, such a record fails the batch's save with
    /// ``MergeConflictError``. Every context of the manager merges each batch's save; a store
    /// that keeps a persistent history records each batch as a transaction with this context's
    /// ``transactionAuthor``. Memory stays flat however large the file is.
    ///
    /// - Important: An upsert replaces every attribute of the object, not only the fields the
    ///   file has: each attribute the record leaves out is reset to its default (the inserted
    ///   object's values trump the stored ones). To update some attributes and keep the others,
    ///   include every field in the file, or fetch the objects and set the fields.
    ///   Relationships follow `mergePolicy` as any constraint conflict does: under the default
    ///   ``MergePolicy/mergeByPropertyObjectTrump`` a to-many in the record is joined with the
    ///   existing members (an import never removes a member; ``MergePolicy/overwrite`` replaces
    ///   them), and a to-one the record leaves out or empty keeps the existing object's.
    ///
    /// - Parameters:
    ///   - url: The file.
    ///   - format: ``ImportFormat/jsonLines`` or ``ImportFormat/csv``; `nil` picks it from the
    ///     file's extension (`jsonl`, `csv`).
    ///   - entityName: The entity whose objects the records become.
    ///   - batchSize: Records per save (at least 1).
    ///   - mergePolicy: The merge policy of the saves: ``MergePolicy/mergeByPropertyObjectTrump``
    ///     upserts.
    ///   - progress: Called on the context's queue as batches are saved.
    /// - Throws: ``ImportError`` for the file's contents (nothing imported); ``StoreError`` when
    ///   the file cannot be read or a save fails; a save's ``ValidationError`` or
    ///   ``MergeConflictError``; `CancellationError` when the calling task is cancelled. After
    ///   a failed save or a cancellation, the batches saved before it stay saved.
    /// - Important: Callable from any thread. Traps if the model has no entity `entityName`, or
    ///   if the context is a child context (``parent`` is not `nil`).
    public func importRecords(
        from url: URL,
        format: ImportFormat? = nil,
        entityName: String,
        batchSize: Int = 1_000,
        mergePolicy: MergePolicy = .mergeByPropertyObjectTrump,
        progress: (@Sendable (ExportProgress) -> Void)? = nil
    ) async throws -> ImportResult {
        checkUsable()
        if parent != nil {
            // An import saves batch after batch to the store: from a scratchpad it would bypass
            // the parent, durably.
            fatalError(
                "QueueData: importRecords(from:…) was called on child context '\(name)'. An import saves to the "
                    + "store; call it on a context of the ContextManager (the child's parent, or its ancestor).")
        }
        guard let entity = model.entitiesByName[entityName] else {
            fatalError(
                "QueueData: the model has no entity named '\(entityName)' to import into; "
                    + "the entities are \(model.entities.map(\.name)).")
        }
        guard let format = format ?? ImportFormat(fileExtension: url.pathExtension) else {
            throw ImportError(
                .malformedRecord,
                "The format of \(url.lastPathComponent) is not known from its extension: pass format: .jsonLines or .csv.",
                url: url)
        }
        let task = ExportTask()
        let coordinator = self.coordinator
        let workerName = "\(name) (import)"
        // The import's saves are recorded in the persistent history with this context's author.
        let author = confinement.isCurrent ? transactionAuthorValue : queue.sync { transactionAuthorValue }
        let contextQueue = queue
        let confinement = self.confinement
        var report: (@Sendable (ExportProgress) -> Void)?
        if let progress {
            report = { @Sendable (value: ExportProgress) -> Void in
                contextQueue.async {
                    guard confinement.isValid else { return }
                    confinement.withContextBlock { progress(value) }
                }
            }
        }
        let reportProgress = report
        let size = Swift.max(batchSize, 1)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let workerQueue = DispatchQueue(label: "QueueData.Import")
                workerQueue.async {
                    let worker = ManagedObjectContext(
                        queue: workerQueue, name: workerName, coordinator: coordinator, observesSaves: false,
                        onDeinit: {})
                    worker.mergePolicy = mergePolicy
                    worker.transactionAuthorValue = author
                    continuation.resume(
                        with: Swift.Result {
                            try worker.performAndWait {
                                let importer = RecordImporter(
                                    context: worker, entity: entity, url: url, format: format, task: task,
                                    progress: reportProgress)
                                return try importer.run(batchSize: size)
                            }
                        })
                }
            }
        } onCancel: {
            task.cancel()
        }
    }
}

/// The work of one import, on its private context's queue.
private final class RecordImporter {
    /// Where a field's value goes.
    enum Target {
        case ignored
        case attribute(AttributeDescription)
        case relationship(RelationshipDescription)
    }

    /// One field's value, read and checked.
    enum Assignment {
        case attribute(String, StoredValue)
        case relationship(String, [ObjectID])
    }

    let context: ManagedObjectContext
    let entity: EntityDescription
    let url: URL
    let format: ImportFormat
    let task: ExportTask
    let progress: (@Sendable (ExportProgress) -> Void)?
    var targets: [String: Target] = [:]

    init(
        context: ManagedObjectContext,
        entity: EntityDescription,
        url: URL,
        format: ImportFormat,
        task: ExportTask,
        progress: (@Sendable (ExportProgress) -> Void)?
    ) {
        self.context = context
        self.entity = entity
        self.url = url
        self.format = format
        self.task = task
        self.progress = progress
    }

    func run(batchSize: Int) throws -> ImportResult {
        // First pass: every record is read and checked; nothing is inserted.
        var total = 0
        try forEachRecord { _, _ in
            total += 1
            if total % 4096 == 0 {
                context.reset()
                if task.isCancelled { throw CancellationError() }
            }
        }
        context.reset()
        progress?(ExportProgress(completedCount: 0, totalCount: total))
        // Second pass: inserted a batch at a time.
        let entityIndex = context.model.entityIndexes[entity.name]!
        var inserted = 0
        var done = 0
        var batch: [ManagedObject] = []
        func save() throws {
            guard !batch.isEmpty else { return }
            let coordinator = context.coordinator
            let firstNewKey = try coordinator.sync { () throws -> Int64 in
                guard coordinator.store != nil else { throw StoreError(.closed, "The store was closed.") }
                return coordinator.tables[entityIndex].nextPrimaryKey
            }
            try context.save()
            // An upserted record took the ID of the object it updated, which is older.
            inserted += Set(batch.compactMap { $0.objectID.primaryKey }.filter { $0 >= firstNewKey }).count
            done += batch.count
            batch.removeAll(keepingCapacity: true)
            context.reset()
            progress?(ExportProgress(completedCount: done, totalCount: total))
            if task.isCancelled { throw CancellationError() }
        }
        try forEachRecord { _, assignments in
            let object = context.insert(entityName: entity.name)
            for assignment in assignments {
                switch assignment {
                case .attribute(let name, let value):
                    object.setValue(value, forKey: name)
                case .relationship(let name, let ids):
                    let related = try ids.map { try context.existingObject(with: $0) }
                    object.setRelatedObjects(related, forKey: name)
                }
            }
            batch.append(object)
            if batch.count == batchSize {
                try save()
            }
        }
        try save()
        return ImportResult(recordCount: done, insertedCount: inserted, updatedCount: done - inserted)
    }

    /// Reads every record of the file and calls `body` with its line and its checked values.
    private func forEachRecord(_ body: (Int, [Assignment]) throws -> Void) throws {
        var reader = try ImportRecordReader(url: url, format: format)
        defer { reader.close() }
        var header: [String]?
        while let record = try reader.next() {
            switch record {
            case .object(let line, let bytes):
                try body(line, try assignments(ofJSONLine: bytes, line: line))
            case .fields(let line, let fields):
                guard let names = header else {
                    header = fields.map(\.text)
                    for name in header! {
                        _ = try target(name, line: line)
                    }
                    if Set(header!).count != header!.count {
                        throw ImportError(.malformedRecord, "The header row names a field twice.", url: url, line: line)
                    }
                    continue
                }
                guard fields.count == names.count else {
                    throw ImportError(
                        .malformedRecord,
                        "The row has \(fields.count) fields, but the header names \(names.count).", url: url,
                        line: line)
                }
                var assignments: [Assignment] = []
                assignments.reserveCapacity(fields.count)
                for (name, field) in zip(names, fields) {
                    switch try target(name, line: line) {
                    case .ignored: continue
                    case .attribute(let attribute):
                        assignments.append(
                            .attribute(
                                name,
                                try checked(
                                    ImportValues.value(
                                        fromText: field.text, quoted: field.quoted, attribute: attribute),
                                    name, line)))
                    case .relationship(let relationship):
                        let uris = field.text.split(separator: " ").map(String.init)
                        guard relationship.isToMany || uris.count <= 1 else {
                            throw ImportError(
                                .invalidValue, "A to-one relationship holds \(uris.count) object IDs.", url: url,
                                line: line, field: name)
                        }
                        assignments.append(.relationship(name, try resolve(uris, relationship, name, line)))
                    }
                }
                try body(line, assignments)
            }
        }
        if case .csv = format.kind, header == nil {
            throw ImportError(
                .missingHeader, "The CSV file is empty: it needs a header row naming the fields.", url: url, line: 1)
        }
    }

    /// The assignments of one JSON Lines record.
    private func assignments(ofJSONLine bytes: [UInt8], line: Int) throws -> [Assignment] {
        var assignments: [Assignment] = []
        try bytes.withUnsafeBytes { raw in
            var scanner = JSONScanner(raw)
            do {
                guard try scanner.peek() == UInt8(ascii: "{") else {
                    throw ImportError(
                        .malformedRecord, "The line is not a JSON object; each line must hold one object.", url: url,
                        line: line)
                }
                try scanner.forEachMember { scanner, key in
                    let target = try self.target(key, line: line)
                    scanner.skipWhitespace()
                    let range = try scanner.skipValue()
                    let value = UnsafeRawBufferPointer(rebasing: raw[range])
                    switch target {
                    case .ignored:
                        break
                    case .attribute(let attribute):
                        assignments.append(
                            .attribute(
                                key, try checked(ImportValues.value(fromJSON: value, attribute: attribute), key, line)))
                    case .relationship(let relationship):
                        assignments.append(
                            .relationship(
                                key, try resolve(uris(inJSON: value, relationship, key, line), relationship, key, line))
                        )
                    }
                }
                scanner.skipWhitespace()
                guard scanner.isAtEnd else {
                    throw scanner.failure("text follows the object")
                }
            } catch let failure as JSONScanner.Failure {
                throw ImportError(
                    .malformedRecord,
                    "The line is not valid JSON at column \(failure.offset + 1): \(failure.message). Each line must "
                        + "hold one JSON object.", url: url, line: line)
            }
        }
        return assignments
    }

    /// The object ID URIs of a relationship's JSON value: a string or `null` (to-one), an array
    /// of strings (to-many).
    private func uris(
        inJSON value: UnsafeRawBufferPointer,
        _ relationship: RelationshipDescription,
        _ field: String,
        _ line: Int
    ) throws -> [String] {
        var scanner = JSONScanner(value)
        do {
            if relationship.isToMany {
                var uris: [String] = []
                try scanner.forEachElement { scanner in uris.append(try scanner.string()) }
                return uris
            }
            if try scanner.consumeNull() {
                return []
            }
            return [try scanner.string()]
        } catch {
            throw ImportError(
                .invalidValue,
                "The relationship needs "
                    + (relationship.isToMany ? "an array of object ID URIs." : "an object ID URI or null."),
                url: url, line: line, field: field)
        }
    }

    private func target(_ name: String, line: Int) throws -> Target {
        if let known = targets[name] {
            return known
        }
        let target: Target
        if name == ExportField.objectIDName && entity.index(ofAttribute: name) == nil {
            target = .ignored
        } else if let index = entity.index(ofAttribute: name) {
            target = .attribute(entity.attributes[index])
        } else if let relationship = entity.relationship(named: name) {
            target = .relationship(relationship)
        } else {
            throw ImportError(
                .unknownField,
                "'\(entity.name)' has no attribute or relationship '\(name)'; its fields are "
                    + "\((entity.attributes.map(\.name) + entity.relationships.map(\.name)).joined(separator: ", ")).",
                url: url, line: line, field: name)
        }
        targets[name] = target
        return target
    }

    private func checked(_ result: Result<StoredValue, ImportValues.Refusal>, _ field: String, _ line: Int) throws
        -> StoredValue
    {
        switch result {
        case .success(let value):
            if let check = entity.attributeDecodingChecks[entity.index(ofAttribute: field)!] {
                do {
                    try check(value)
                } catch {
                    throw ImportError(
                        .invalidValue, "The value does not decode as the attribute's type: \(error).", url: url,
                        line: line, field: field)
                }
            }
            return value
        case .failure(let refusal):
            throw ImportError(.invalidValue, "The value \(refusal.reason).", url: url, line: line, field: field)
        }
    }

    /// The IDs of `uris`, each an existing object of the relationship's destination in this store.
    private func resolve(
        _ uris: [String],
        _ relationship: RelationshipDescription,
        _ field: String,
        _ line: Int
    ) throws -> [ObjectID] {
        try uris.map { uri in
            guard let url = URL(string: uri), let id = ObjectID(uriRepresentation: url) else {
                throw ImportError(
                    .invalidValue, "'\(uri)' is not an object ID URI (x-queuedata://…).", url: self.url, line: line,
                    field: field)
            }
            guard id.storeIdentifier == context.coordinator.storeIdentifier,
                context.model.entityIndexes(named: relationship.destinationEntityName, includingSubentities: true)
                    .contains(where: { context.model.entities[$0].name == id.entityName }),
                context.object(with: id) != nil
            else {
                throw ImportError(
                    .invalidValue,
                    "No \(relationship.destinationEntityName) object \(uri) exists in this store: a relationship can "
                        + "only name objects of the store it is imported into. Leave the field out, or import the "
                        + "related objects first.", url: self.url, line: line, field: field)
            }
            return id
        }
    }
}
