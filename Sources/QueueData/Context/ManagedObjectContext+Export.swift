import Foundation

extension ManagedObjectContext {
    /// Writes the objects matching `request` to `url` through `formatter`, off the context's
    /// queue, then calls `completionHandler` **on the context's queue** with what was written
    /// (or the error): FRCoreDataOperation's export operation.
    ///
    /// ```swift
    /// let request = FetchRequest<Destination>(predicate: #Predicate { $0.rating > 3 }, sortBy: [SortDescriptor(\.name)])
    /// context.export(request, to: url, formatter: CSVExportFormatter(), completionHandler: { result in
    ///     // On the context's queue: refresh the UI.
    /// })
    /// ```
    ///
    /// Write the `completionHandler:` label: in `async` code a trailing closure would be taken
    /// as the `progress` of the `async` form,
    /// ``export(_:to:formatter:includesObjectID:progress:)``, which then needs `await`.
    ///
    /// The export sees the committed objects, like an asynchronous fetch (unsaved changes of
    /// this context are not written: save first), matched by the request's predicate, in its
    /// sort order, with its offset and limit, as of the moment it starts. Rows are read and
    /// written a batch at a time to a temporary file beside `url`, so memory stays flat however
    /// many objects there are; once complete the file is synchronized and renamed to `url`
    /// (replacing a file there), so a failure, a cancellation or a crash never leaves a
    /// half-written file under that name. Each record holds the object's ID (unless
    /// `includesObjectID` is `false`), every attribute and every relationship, as the related
    /// objects' IDs (a to-many as a list of all of them).
    ///
    /// - Parameters:
    ///   - request: Which objects, in which order; the entity's fields are exported.
    ///   - url: The file to write.
    ///   - formatter: ``CSVExportFormatter``, ``JSONExportFormatter``,
    ///     ``JSONLinesExportFormatter`` or your own.
    ///   - includesObjectID: Whether each record starts with the object's ID.
    ///   - progress: Called on the context's queue as records are written (at most about a
    ///     hundred times, and once at the end).
    ///   - completionHandler: Called on the context's queue, once, unless the manager is closed
    ///     first: with the ``ExportResult``, or the error (``StoreError`` for I/O, what the
    ///     formatter or the predicate threw, `CancellationError` after ``ExportTask/cancel()``).
    /// - Returns: A handle to cancel the export.
    /// - Important: Callable from any thread.
    @discardableResult
    public func export<Result>(
        _ request: FetchRequest<Result>,
        to url: URL,
        formatter: any ExportFormatter,
        includesObjectID: Bool = true,
        progress: (@Sendable (ExportProgress) -> Void)? = nil,
        completionHandler: @escaping @Sendable (Swift.Result<ExportResult, any Error>) -> Void
    ) -> ExportTask {
        checkUsable()
        let task = ExportTask()
        startExport(
            request, to: url, formatter: formatter, includesObjectID: includesObjectID, task: task,
            progress: progress
        ) { result in
            self.queue.async {
                guard self.confinement.isValid else { return }
                self.confinement.withContextBlock { completionHandler(result) }
            }
        }
        return task
    }

    /// Writes the objects matching `request` to `url` through `formatter`, off the context's
    /// queue: the `async` form of ``export(_:to:formatter:includesObjectID:progress:completionHandler:)``.
    ///
    /// ```swift
    /// let result = try await context.export(FetchRequest<Destination>(), to: url, formatter: JSONLinesExportFormatter())
    /// print("\(result.recordCount) destinations, \(result.byteCount) bytes")
    /// ```
    ///
    /// Cancelling the calling task cancels the export: it throws `CancellationError`, and
    /// leaves no file under `url`.
    ///
    /// - Throws: ``StoreError`` for I/O (a missing directory, a full disk) or a closed store;
    ///   what the formatter or the predicate threw; `CancellationError`.
    public func export<Result>(
        _ request: FetchRequest<Result>,
        to url: URL,
        formatter: any ExportFormatter,
        includesObjectID: Bool = true,
        progress: (@Sendable (ExportProgress) -> Void)? = nil
    ) async throws -> ExportResult {
        checkUsable()
        let task = ExportTask()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                startExport(
                    request, to: url, formatter: formatter, includesObjectID: includesObjectID, task: task,
                    progress: progress
                ) { continuation.resume(with: $0) }
            }
        } onCancel: {
            task.cancel()
        }
    }

    /// Runs the export on a private queue, through a private context that shares the
    /// coordinator and merges nothing, and calls `done` there.
    private func startExport<Result>(
        _ request: FetchRequest<Result>,
        to url: URL,
        formatter: any ExportFormatter,
        includesObjectID: Bool,
        task: ExportTask,
        progress: (@Sendable (ExportProgress) -> Void)?,
        done: @escaping @Sendable (Swift.Result<ExportResult, any Error>) -> Void
    ) {
        var committed = request
        committed.includesPendingChanges = false
        let exported = committed
        let entity = exportedEntity(for: request)
        let fields = ExportField.fields(of: entity, includesObjectID: includesObjectID)
        let coordinator = self.coordinator
        let storeIdentifier = coordinator.storeIdentifier
        let workerName = "\(name) (export)"
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
        let workerQueue = DispatchQueue(label: "QueueData.Export")
        workerQueue.async {
            let worker = ManagedObjectContext(
                queue: workerQueue, name: workerName, coordinator: coordinator, observesSaves: false, onDeinit: {})
            worker.awakesFetchedObjects = false
            done(
                Swift.Result {
                    try worker.performAndWait {
                        try worker.writeExport(
                            exported, to: url, formatter: formatter, fields: fields, storeIdentifier: storeIdentifier,
                            task: task, progress: reportProgress)
                    }
                })
        }
    }

    /// The entity whose fields an export of `request` writes: the one it names, or `Result`'s.
    private func exportedEntity<Result>(for request: FetchRequest<Result>) -> EntityDescription {
        if let entityName = request.entityName, let entity = model.entitiesByName[entityName] {
            return entity
        }
        if let own = model.entities.first(where: { $0.managedObjectClass == Result.self }) {
            return own
        }
        return model.entities[fetchedEntityIndexes(for: request)[0]]
    }

    /// Writes the export, on the worker context's queue.
    private func writeExport<Result>(
        _ request: FetchRequest<Result>,
        to url: URL,
        formatter: any ExportFormatter,
        fields: [ExportField],
        storeIdentifier: UUID,
        task: ExportTask,
        progress: (@Sendable (ExportProgress) -> Void)?
    ) throws -> ExportResult {
        let total = try count(for: request)
        let writer = try ExportWriter(destination: url, fields: fields, formatter: formatter)
        var builders: [ObjectIdentifier: ExportRecordBuilder] = [:]
        var reportedPercent = -1
        let checkInterval = 1024
        try enumerate(request, batchSize: 1_000) { object in
            if writer.recordCount % checkInterval == 0 {
                if task.isCancelled {
                    throw CancellationError()
                }
                let percent = total > 0 ? writer.recordCount * 100 / total : 100
                if let progress, percent != reportedPercent {
                    reportedPercent = percent
                    progress(ExportProgress(completedCount: writer.recordCount, totalCount: total))
                }
            }
            let entity = object.entity
            let builder: ExportRecordBuilder
            if let existing = builders[ObjectIdentifier(entity)] {
                builder = existing
            } else {
                builder = ExportRecordBuilder(entity: entity, fields: fields, storeIdentifier: storeIdentifier)
                builders[ObjectIdentifier(entity)] = builder
            }
            try writer.write(
                builder.record(
                    primaryKey: object._objectID.rawValue, row: object._row, layout: entity.rowLayout))
        }
        if task.isCancelled {
            writer.cancel()
            throw CancellationError()
        }
        let result = try writer.finish()
        progress?(ExportProgress(completedCount: result.recordCount, totalCount: Swift.max(total, result.recordCount)))
        return result
    }
}
