import Dispatch

extension ManagedObjectContext {
    /// Fetches without blocking the context's queue: the predicate, sort and paging run on a
    /// private queue over the committed rows; then the matching objects are registered in the
    /// context (a few thousand per block on its queue, so that other work runs in between) and
    /// `completion` runs **on the context's queue** with them (or with the error).
    ///
    /// ```swift
    /// context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.rating > 3 })) { result in
    ///     // On the context's queue.
    ///     let destinations = (try? result.get()) ?? []
    /// }
    /// ```
    ///
    /// Callable from any thread. The match sees committed rows only, like a fetch with
    /// ``FetchRequest/includesPendingChanges`` `false` (and the committed values of the objects
    /// its predicate or sort descriptors reach through relationships too); the objects delivered are the context's
    /// own instances (with their unsaved changes), minus any it has deleted meanwhile. The
    /// request is not modified. `completion` always runs exactly once, unless the context's
    /// manager is closed first with ``ContextManager/close()`` (``ContextManager/closeGracefully()``
    /// waits for it).
    public func fetch<Result>(
        _ request: FetchRequest<Result>,
        completion: sending @escaping (Swift.Result<[Result], any Error>) -> Void
    ) {
        checkUsable()
        let delivery = UncheckedSendableBox(completion)
        let inFlight = AsynchronousFetchToken(asynchronousFetches)
        matchCommittedObjectIDs(request) { [weak self] matched in
            guard let self else { return }
            switch matched {
            case .failure:
                self.queue.async {
                    withExtendedLifetime(inFlight) {}
                    guard self.confinement.isValid else { return }
                    self.confinement.withContextBlock {
                        delivery.value(matched.map { _ in [] })
                    }
                }
            case .success(let ids):
                let held = SliceObjects()
                self.registerInSlices(ids, from: 0, holding: held) { registered in
                    withExtendedLifetime(inFlight) {}
                    held.objects = []
                    delivery.value(
                        registered.flatMap { Swift.Result { try self.registeredObjects(ids, as: Result.self) } })
                }
            }
        }
    }

    /// How many objects an asynchronous fetch registers per block on the context's queue, so
    /// that other blocks (a merge, the app's own work) run in between.
    static let asynchronousRegistrationSlice = 2048

    /// Registers the objects of `ids` from `start` on, one slice per block on the context's
    /// queue (kept in `held`, so that the end of each block does not let them go), then runs
    /// `done` on the queue, in a marked block, with the outcome.
    private func registerInSlices(
        _ ids: [ObjectID],
        from start: Int,
        holding held: SliceObjects,
        _ done: @escaping @Sendable (Swift.Result<Void, any Error>) -> Void
    ) {
        queue.async {
            guard self.confinement.isValid else { return }
            self.confinement.withContextBlock {
                let end = min(start + Self.asynchronousRegistrationSlice, ids.count)
                do {
                    held.objects += try self.registeredObjects(Array(ids[start..<end]), as: ManagedObject.self)
                } catch {
                    done(.failure(error))
                    return
                }
                if end < ids.count {
                    self.registerInSlices(ids, from: end, holding: held, done)
                } else {
                    done(.success(()))
                }
            }
        }
    }

    /// Fetches without blocking the context's queue, then runs `body` on the context's queue
    /// with the matching objects, and returns its result: the `async` form of
    /// ``fetch(_:completion:)``.
    ///
    /// ```swift
    /// let names = try await context.fetch(FetchRequest<Destination>()) { destinations in
    ///     destinations.map(\.name)
    /// }
    /// ```
    ///
    /// - Throws: What the fetch or `body` throws; ``StoreError`` `.closed` when the manager is
    ///   closed while the fetch is in flight (`body` does not run then).
    public func fetch<Result, Value: Sendable>(
        _ request: FetchRequest<Result>,
        then body: sending @escaping ([Result]) throws -> Value
    ) async throws -> Value {
        let inFlight = AsynchronousFetchToken(asynchronousFetches)
        defer { withExtendedLifetime(inFlight) {} }
        let ids = try await fetchObjectIDs(request)
        let work = UncheckedSendableBox(body)
        // Registered a slice per block, so that the context's queue is never held for long
        // (and held meanwhile, so that the end of each block does not let them go).
        let held = SliceObjects()
        var start = 0
        while ids.count - start > Self.asynchronousRegistrationSlice {
            let slice = Array(ids[start..<(start + Self.asynchronousRegistrationSlice)])
            try await performIfOpen { () throws -> Void in
                held.objects += try self.registeredObjects(slice, as: ManagedObject.self)
            }
            start += Self.asynchronousRegistrationSlice
        }
        return try await performIfOpen { () throws -> Value in
            let objects = try self.registeredObjects(ids, as: Result.self)
            held.objects = []
            return try work.value(objects)
        }
    }

    /// The IDs of the committed objects matching `request`, found on a private queue: the
    /// context's queue is not used at all.
    ///
    /// - Throws: An error of the predicate; ``StoreError`` if the store was closed.
    public func fetchObjectIDs<Result>(_ request: FetchRequest<Result>) async throws -> [ObjectID] {
        checkUsable()
        return try await withCheckedThrowingContinuation { continuation in
            matchCommittedObjectIDs(request) { continuation.resume(with: $0) }
        }
    }

    /// Matches `request` against the committed rows on a private queue, through a private
    /// context that shares the coordinator and merges nothing.
    private func matchCommittedObjectIDs<Result>(
        _ request: FetchRequest<Result>,
        _ completion: @escaping @Sendable (Swift.Result<[ObjectID], any Error>) -> Void
    ) {
        var copy = request
        copy.includesPendingChanges = false
        let committed = copy
        let coordinator = self.coordinator
        // A child's worker reads through the same parent, as the child does.
        let parent = self.parent
        let workerName = "\(name) (asynchronous fetch)"
        let workerQueue = DispatchQueue(label: "QueueData.AsyncFetch")
        workerQueue.async {
            let worker = ManagedObjectContext(
                queue: workerQueue, name: workerName, coordinator: coordinator, observesSaves: false, parent: parent,
                sharesParentValidity: false, onDeinit: {})
            worker.awakesFetchedObjects = false
            completion(Swift.Result { try worker.performAndWait { try worker.fetchObjectIDs(committed) } })
        }
    }

    /// The context's objects for `ids`, in order, registering those it does not hold yet with
    /// one trip to the coordinator; IDs whose rows are gone, and objects deleted in this
    /// context (unless `keepingDeleted`: a fetch of committed objects returns them), are left out.
    func registeredObjects<Result: ManagedObject>(
        _ ids: [ObjectID], as type: Result.Type, keepingDeleted: Bool = false
    ) throws -> [Result] {
        var missing: [Int: [Int64]] = [:]
        for id in ids {
            guard let entityIndex = entityIndex(of: id) else { continue }
            if registry[entityIndex][id.rawValue] == nil {
                missing[entityIndex, default: []].append(id.rawValue)
            }
        }
        if !missing.isEmpty {
            let rows: [(Int, [CommittedRow?])]
            if parent != nil {
                rows = try missing.map { entityIndex, keys in
                    (entityIndex, try baseRows(entityIndex: entityIndex, primaryKeys: keys))
                }
            } else {
                rows = try coordinator.sync {
                    try missing.map { entityIndex, keys in
                        (entityIndex, try coordinator.committedRows(entityIndex: entityIndex, primaryKeys: keys))
                    }
                }
            }
            var registered: [ManagedObject] = []
            for (entityIndex, entityRows) in rows {
                for case let row? in entityRows where registry[entityIndex][row.primaryKey] == nil {
                    registered.append(register(makeObject(entityIndex: entityIndex, row: row)))
                }
            }
            awakeFetched(registered)
        }
        return ids.compactMap { id in
            guard let entityIndex = entityIndex(of: id),
                let object = registry[entityIndex][adoptedPermanentKeys[id.rawValue] ?? id.rawValue],
                keepingDeleted || !object._state.contains(.deleted)
            else { return nil }
            return object as? Result
        }
    }
}

/// The objects an asynchronous fetch registered in its earlier slices, held until the last
/// slice's block delivers them.
///
/// `@unchecked Sendable`: it crosses to the context's queue between blocks, and is read and
/// written only there, one block at a time.
final class SliceObjects: @unchecked Sendable {
    var objects: [ManagedObject] = []
}

/// Marks an asynchronous fetch in flight in its context's ``ManagedObjectContext/asynchronousFetches``
/// group, from its start until the token goes: held by the fetch's closures, it goes when the
/// fetch delivered its result, or was dropped (its context released or its manager closed).
final class AsynchronousFetchToken: Sendable {
    private let group: DispatchGroup

    init(_ group: DispatchGroup) {
        self.group = group
        group.enter()
    }

    deinit {
        group.leave()
    }
}
