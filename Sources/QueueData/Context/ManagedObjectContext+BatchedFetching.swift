import Foundation

extension ManagedObjectContext {
    /// The values of `properties` (every attribute when `nil`) of the objects matching
    /// `request`, as dictionaries of `Sendable` values, without registering any object:
    /// Core Data's dictionary result type. With ``FetchRequest/includesPendingChanges`` `false`,
    /// the values are the committed ones, as the match and the sort are.
    ///
    /// ```swift
    /// let rows = try context.fetchValues(FetchRequest<Destination>(), properties: ["name", "rating"])
    /// // [["name": .string("Lisbon"), "rating": .integer(4)], ...]
    /// ```
    ///
    /// - Throws: An error of the predicate; ``StoreError`` if the store was closed.
    /// - Important: Call on the context's queue. Traps if an entity of the request has no
    ///   attribute of one of `properties`.
    public func fetchValues<Result>(
        _ request: FetchRequest<Result>,
        properties: [String]? = nil
    ) throws -> [[String: StoredValue]] {
        checkConfined()
        return try confinement.withMarkedBlock {
            if let worker = committedGraphContext(for: request) {
                // Matched on the committed graph (see `committedGraphMatches(_:)`): the private
                // context's values are the committed ones too.
                return try worker.confinement.withMarkedBlock {
                    try worker.fetchValues(request, properties: properties)
                }
            }
            let objects = try fetchUnregistered(request)
            var slots: [ObjectIdentifier: [(String, Int)]] = [:]
            return objects.map { object in
                let entity = object.entity
                let columns =
                    slots[ObjectIdentifier(entity)]
                    ?? (properties ?? entity.attributes.map(\.name)).map { name in
                        guard let index = entity.index(ofAttribute: name) else {
                            fatalError("QueueData: entity '\(entity.name)' has no attribute '\(name)' to fetch.")
                        }
                        return (name, index)
                    }
                slots[ObjectIdentifier(entity)] = columns
                var values: [String: StoredValue] = [:]
                values.reserveCapacity(columns.count)
                for (name, index) in columns {
                    values[name] = object._value(at: index)
                }
                return values
            }
        }
    }

    /// Calls `body` with every object matching `request`, in order, registering them one
    /// batch at a time, so that memory stays flat however many objects match.
    ///
    /// After each batch, the objects it registered that have no unsaved changes and that nothing
    /// references any more leave the context again; objects the context held before, objects
    /// `body` changed, and objects `body` kept a reference to stay registered (and are let go
    /// as any other, once nothing references them: see ``retainsRegisteredObjects``).
    ///
    /// ```swift
    /// try context.enumerate(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)])) { destination in
    ///     exporter.write(destination.name)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - request: The objects, in its order and paging.
    ///   - batchSize: How many objects are registered at a time (at least 1).
    ///   - body: Called with each object; throwing stops the enumeration.
    /// - Throws: What `body` or the predicate throws; ``StoreError`` if the store was closed.
    /// - Important: Call on the context's queue. With sort descriptors that use a string
    ///   comparator, every match is materialized to be sorted.
    public func enumerate<Result>(
        _ request: FetchRequest<Result>,
        batchSize: Int = 1_000,
        _ body: (Result) throws -> Void
    ) throws {
        checkConfined()
        let batchSize = Swift.max(batchSize, 1)
        try confinement.withMarkedBlock {
            if let ids = try committedGraphMatches(request) {
                // Matched on the committed graph (see `committedGraphMatches`); registered a
                // batch at a time, and let go as `visit` lets its batches go.
                var start = 0
                while start < ids.count {
                    let end = Swift.min(start + batchSize, ids.count)
                    try visit(Array(ids[start..<end]), body)
                    start = end
                }
                return
            }
            var batch: [Candidate] = []
            batch.reserveCapacity(Swift.min(batchSize, 4_096))
            let registrations = registrationCount
            func flush() throws {
                defer { batch.removeAll(keepingCapacity: true) }
                try visit(batch, since: registrations, body)
            }
            if !request.isSorted {
                // Streamed: only the current batch is held.
                try forEachPageCandidate(request) { candidate in
                    batch.append(candidate)
                    if batch.count == batchSize {
                        try flush()
                    }
                }
                try flush()
                return
            }
            let (candidates, page) = try sortedPage(request)
            for position in page {
                batch.append(candidates[position])
                if batch.count == batchSize {
                    try flush()
                }
            }
            try flush()
        }
    }

    /// Registers the candidates' objects, calls `body` with each, then lets go of the objects
    /// this batch registered that are unchanged and that nothing else references (`body` may
    /// keep some: they stay usable, and registered).
    private func visit<Result: ManagedObject>(
        _ batch: [Candidate], since registrations: Int, _ body: (Result) throws -> Void
    ) throws {
        var registeredHere: [ManagedObject] = []
        var objects: [ManagedObject] = []
        defer {
            // By key: the lists' own references must go before the registry can tell whether it
            // holds the only one.
            let keys = registeredHere.map { (entityIndex: $0._objectID.key.entityIndex!, key: $0._objectID.rawValue) }
            registeredHere.removeAll()
            objects.removeAll()
            for (entityIndex, key) in keys {
                _ = registry[entityIndex].releaseIfUnreferenced(key: key, where: Self.hasNoPendingChanges)
            }
        }
        // The whole batch is registered before any object's `awakeFromFetch()` runs.
        objects.reserveCapacity(batch.count)
        for candidate in batch {
            var object = self.object(for: candidate)
            if object._state.contains(.detached) {
                // The scan began before the earlier batches' hooks and bodies ran.
                let made = object
                object = registerScanned(made, since: registrations)
                guard object === made else {
                    objects.append(object)
                    continue
                }
                registeredHere.append(object)
                // Its row is from the enumeration's snapshot, which a save since `body` started
                // may have made old: not known to be current.
                currentRowsToken[object._objectID.key.entityIndex!] = nil
            }
            objects.append(object)
        }
        awakeFetched(registeredHere)
        for object in objects {
            try body(unsafeDowncast(object, to: Result.self))
        }
    }

    /// ``visit(_:since:_:)`` for the objects of `ids` (a batch of matches), looked up by ID.
    private func visit<Result: ManagedObject>(_ ids: [ObjectID], _ body: (Result) throws -> Void) throws {
        var registeredHere: [(entityIndex: Int, key: Int64)] = []
        for id in ids {
            if let entityIndex = entityIndex(of: id), registry[entityIndex][id.rawValue] == nil {
                registeredHere.append((entityIndex, id.rawValue))
            }
        }
        defer {
            for (entityIndex, key) in registeredHere {
                _ = registry[entityIndex].releaseIfUnreferenced(key: key, where: Self.hasNoPendingChanges)
            }
        }
        // In a function of its own, so that the batch's references are gone when it returns.
        func callBody() throws {
            for object in try registeredObjects(ids, as: Result.self, keepingDeleted: true) {
                try body(object)
            }
        }
        try callBody()
    }

    /// The objects matching `request` as the fetch would return them, without registering
    /// the ones made for committed rows; without pending changes, an unregistered object holding
    /// the committed row in place of each registered one (the values are the store's, as the
    /// match and the sort were).
    private func fetchUnregistered<Result>(_ request: FetchRequest<Result>) throws -> [Result] {
        func valueObject(_ candidate: Candidate) -> Result {
            if case .committed(let object, let row) = candidate {
                return unsafeDowncast(
                    makeObject(entityIndex: object._objectID.key.entityIndex!, reference: row), to: Result.self)
            }
            return unsafeDowncast(object(for: candidate), to: Result.self)
        }
        guard request.isSorted else {
            var objects: [Result] = []
            try forEachPageCandidate(request) { candidate in
                objects.append(valueObject(candidate))
            }
            return objects
        }
        let (candidates, page) = try sortedPage(request)
        return page.map { valueObject(candidates[$0]) }
    }
}
