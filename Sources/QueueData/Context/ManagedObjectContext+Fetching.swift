import Foundation

extension ManagedObjectContext {
    /// The objects matching `request`.
    ///
    /// Matching objects are registered in the context (the same instance for the same ID);
    /// rows that do not match are never turned into registered objects.
    ///
    /// The predicate is compiled to a closure when every part of it is one of the common
    /// shapes — comparisons, `==`/`!=`, `&&`/`||`/`!`, `?:`, `??`, optional chaining
    /// (`flatMap`), `+`/`-`/`*`, `contains`, `starts(with:)` — which matches several times faster
    /// than Foundation's `evaluate`; other predicates are evaluated by Foundation. Both read the
    /// same properties through the same getters (computed properties and relationships
    /// included), so the results are the same.
    ///
    /// - Throws: An error thrown while evaluating the predicate; ``StoreError`` if the store
    ///   was closed.
    /// - Complexity: O(*n*) predicate evaluations over the entity's rows, plus the sort.
    /// - Important: Call on the context's queue.
    public func fetch<Result>(_ request: FetchRequest<Result>) throws -> [Result] {
        checkConfined()
        return try confinement.withMarkedBlock {
            let objects = try matchingObjects(request)
            reserveRegistryCapacity(for: objects)
            for object in objects where object._state.contains(.detached) {
                register(object)
            }
            return objects
        }
    }

    /// The IDs of the objects matching `request`, without registering any object.
    ///
    /// Unavailable in `async` code, which runs off the context's queue: in an `async` function,
    /// `try await fetchObjectIDs(_:)` picks the `async` form, which matches on a private queue.
    /// Swift resolves top-level code (`main.swift`) as synchronous code, so there it would pick
    /// this form and trap off the queue if it were available; instead the compiler stops with a
    /// message. Inside a block on the context's queue (`perform`, `performAndWait`), this form
    /// is the one.
    ///
    /// - Important: Call on the context's queue.
    @available(
        *, noasync,
        message:
            "it must run on the context's queue. Call it inside 'performAndWait { … }' or 'perform { … }', or call 'try await fetchObjectIDs' from an async function"
    )
    public func fetchObjectIDs<Result>(_ request: FetchRequest<Result>) throws -> [ObjectID] {
        checkConfined()
        return try confinement.withMarkedBlock {
            try matchingObjects(request).map(\._objectID)
        }
    }

    /// The number of objects `request` would return, without registering any object.
    ///
    /// - Important: Call on the context's queue.
    public func count<Result>(for request: FetchRequest<Result>) throws -> Int {
        checkConfined()
        return try confinement.withMarkedBlock {
            if request.predicate == nil && request.attributeConstraint == nil && parent == nil {
                return try countWithoutPredicate(request)
            }
            var count = 0
            try forEachCandidate(request) { _ in
                count += 1
                return true
            }
            return applyPaging(count: count, request)
        }
    }

    /// Grows the identity map once for a large fetch instead of rehashing as it fills.
    private func reserveRegistryCapacity<Result: ManagedObject>(for objects: [Result]) {
        guard objects.count > 64, let first = objects.first, let entityIndex = first._objectID.key.entityIndex else {
            return
        }
        let needed = registry[entityIndex].count + objects.count
        if registry[entityIndex].capacity < needed {
            registry[entityIndex].reserveCapacity(needed)
        }
    }

    // MARK: Evaluation

    /// A match found by the scan: a registered object, or a committed row not yet registered.
    enum Candidate {
        case object(ManagedObject)
        case row(entityIndex: Int, row: CommittedRow)
    }

    /// The objects `request` returns, sorted and paged; objects made for committed rows are
    /// unregistered (`detached`) until the caller registers them.
    private func matchingObjects<Result>(_ request: FetchRequest<Result>) throws -> [Result] {
        let sorted = !request.sortDescriptors.isEmpty
        // Without sorting, the scan can stop once the page is full.
        let needed: Int
        if sorted || request.fetchLimit <= 0 {
            needed = .max
        } else {
            let (sum, overflow) = Swift.max(request.fetchOffset, 0).addingReportingOverflow(request.fetchLimit)
            needed = overflow ? .max : sum
        }
        var candidates: [Candidate] = []
        try forEachCandidate(request) { candidate in
            candidates.append(candidate)
            return candidates.count < needed
        }
        if !sorted {
            let page = pageRange(count: candidates.count, request)
            return candidates[page].map { unsafeDowncast(object(for: $0), to: Result.self) }
        }
        if let order = rowOrder(of: candidates, request) {
            // Sorted on row values: only the page becomes objects.
            return order[pageRange(count: order.count, request)].map {
                unsafeDowncast(object(for: candidates[$0]), to: Result.self)
            }
        }
        var objects = candidates.map { unsafeDowncast(object(for: $0), to: Result.self) }
        if request.includesPendingChanges {
            objects.sortByExtractedKeys(using: request.sortDescriptors)
        } else {
            // Matched on committed values, so sorted on them too: objects with unsaved changes
            // are represented by unregistered copies holding their committed row.
            var proxies = objects
            for (index, object) in objects.enumerated()
            where object._state.contains(.updated) && !object._state.contains(.detached) {
                if let snapshot = object._snapshot {
                    let proxy = makeObject(
                        entityIndex: object._objectID.key.entityIndex!,
                        row: CommittedRow(
                            primaryKey: object._objectID.rawValue, version: object._snapshotVersion, values: snapshot))
                    proxies[index] = unsafeDowncast(proxy, to: Result.self)
                }
            }
            let original = Dictionary(
                uniqueKeysWithValues: zip(proxies.map(ObjectIdentifier.init), objects))
            proxies.sortByExtractedKeys(using: request.sortDescriptors)
            objects = proxies.map { original[ObjectIdentifier($0)]! }
        }
        return Array(objects[pageRange(count: objects.count, request)])
    }

    /// The order of `candidates` by `request`'s sort descriptors, read from row values: what
    /// `sortByExtractedKeys` returns for their objects. `nil` when a descriptor's key path is not
    /// a persistent attribute of a type `SortKey` takes, or a value is one it does not take
    /// (`nil`): then sort objects.
    private func rowOrder<Result>(of candidates: [Candidate], _ request: FetchRequest<Result>) -> [Int]? {
        // `sortByExtractedKeys` reads no key path for fewer than two objects; neither does this.
        guard readsRows, candidates.count > 1 else { return nil }
        var keyPaths: [AnyKeyPath] = []
        var readers: [(StoredValue) -> SortKey?] = []
        for descriptor in request.sortDescriptors {
            guard descriptor.stringComparator == nil, let keyPath = descriptor.keyPath,
                let reader = SortKey.reader(for: type(of: keyPath).valueType)
            else { return nil }
            keyPaths.append(keyPath)
            readers.append(reader)
        }
        // The slots, per entity: resolved on the entity's first candidate (its key paths are read
        // on every object when sorting objects).
        var slotsByEntity: [Int: [Int]] = [:]
        func slots(for candidate: Candidate, of entityIndex: Int) -> [Int]? {
            if let known = slotsByEntity[entityIndex] {
                return known
            }
            var slots: [Int] = []
            for keyPath in keyPaths {
                if let known = resolvedSlot(of: keyPath, entityIndex: entityIndex) {
                    guard let known else { return nil }
                    slots.append(known)
                } else {
                    guard let probed = attributeSlot(of: keyPath, on: object(for: candidate)) else { return nil }
                    slots.append(probed)
                }
            }
            slotsByEntity[entityIndex] = slots
            return slots
        }
        let columns = keyPaths.count
        var keys: [SortKey] = []
        keys.reserveCapacity(candidates.count * columns)
        var lastEntity = -1
        var currentSlots: [Int] = []
        func appendKeys(_ values: UnsafePointer<StoredValue>) -> Bool {
            for column in 0..<columns {
                guard let key = readers[column](values[currentSlots[column]]) else { return false }
                keys.append(key)
            }
            return true
        }
        for candidate in candidates {
            let entityIndex: Int
            switch candidate {
            case .object(let object): entityIndex = object._objectID.key.entityIndex!
            case .row(let index, _): entityIndex = index
            }
            if entityIndex != lastEntity {
                guard let found = slots(for: candidate, of: entityIndex) else { return nil }
                currentSlots = found
                lastEntity = entityIndex
            }
            let appended: Bool
            switch candidate {
            case .object(let object):
                if !request.includesPendingChanges, object._state.contains(.updated),
                    !object._state.contains(.detached), let snapshot = object._snapshot
                {
                    // Matched on committed values, so sorted on them too.
                    appended = snapshot.withUnsafeBufferPointer { appendKeys($0.baseAddress!) }
                } else {
                    appended = appendKeys(object._values)
                }
            case .row(_, let row):
                appended = row.values.withUnsafeBufferPointer { appendKeys($0.baseAddress!) }
            }
            guard appended else { return nil }
        }
        return SortKey.order(
            keys: keys, columns: columns, reversed: request.sortDescriptors.map { $0.order == .reverse })
    }

    func object(for candidate: Candidate) -> ManagedObject {
        switch candidate {
        case .object(let object): return object
        case .row(let entityIndex, let row): return makeObject(entityIndex: entityIndex, row: row)
        }
    }

    /// Calls `body` with each match in insertion order until it returns `false`.
    ///
    /// With an ``FetchRequest/attributeConstraint`` on an indexed attribute, an entity is not
    /// scanned: the rows the index names, and the registered objects whose unsaved value
    /// satisfies the constraint, are matched in key order — the same matches, in the same order,
    /// as a scan.
    func forEachCandidate<Result>(
        _ request: FetchRequest<Result>,
        _ body: (Candidate) throws -> Bool
    ) throws {
        let entityIndexes = self.fetchedEntityIndexes(for: request)
        let snapshots: [TableSnapshot]
        // A child's rows are its parent's: committed rows, overlaid with the parent's changes.
        var overlays: [[Int64: CommittedRow]]?
        if parent != nil {
            (snapshots, overlays) = try baseView(of: entityIndexes)
        } else {
            snapshots = try coordinator.sync { try coordinator.snapshots(of: entityIndexes) }
        }
        let objectMatcher = request.predicate.map(matcher(for:))
        let constraint = request.attributeConstraint
        // How each entity's rows are matched: in place on row values once the predicate's key
        // paths are resolved (see `EntityMatcher`).
        var matchers: [Int: EntityMatcher<Result>] = [:]
        func entityMatcher(_ entityIndex: Int) -> EntityMatcher<Result>? {
            guard let source = request.predicate, let objectMatcher else { return nil }
            if let known = matchers[entityIndex] {
                return known
            }
            let made = EntityMatcher(source, objectMatcher: objectMatcher, entityIndex: entityIndex, context: self)
            matchers[entityIndex] = made
            return made
        }
        for (position, (entityIndex, snapshot)) in zip(entityIndexes, snapshots).enumerated() {
            let registered = registry[entityIndex]
            let slot = constraint?.slot(in: model.entities[entityIndex])
            let matcher = entityMatcher(entityIndex)
            /// Whether `object`, as it is now, matches.
            func matches(_ object: ManagedObject) throws -> Bool {
                if let constraint, let slot, !constraint.isSatisfied(by: object._values + slot) {
                    return false
                }
                return try matcher?.matches(object) ?? true
            }
            // Unregistered rows are matched in place, or through one reusable object until the
            // predicate reads rows: rows that do not match never allocate anything.
            var scratch: ManagedObject?
            func matchesCommitted(_ row: CommittedRow) throws -> Bool {
                if let constraint, let slot {
                    let satisfied = row.values.withUnsafeBufferPointer {
                        constraint.isSatisfied(by: $0.baseAddress! + slot)
                    }
                    guard satisfied else { return false }
                }
                guard let matcher else { return true }
                if let rowPredicate = matcher.rowPredicate {
                    return try row.values.withUnsafeBufferPointer { try rowPredicate.matches($0.baseAddress!) }
                }
                let probe: ManagedObject
                if let scratch {
                    scratch._load(row.values)
                    scratch._objectID = ObjectID(key: scratch._objectID.key, rawValue: row.primaryKey)
                    probe = scratch
                } else {
                    probe = makeObject(entityIndex: entityIndex, row: row)
                    scratch = probe
                }
                return try matcher.matches(probe)
            }
            var keepGoing = true
            func visit(_ row: CommittedRow) throws {
                guard keepGoing else { return }
                rowsExamined &+= 1
                if let object = registered[row.primaryKey] {
                    if request.includesPendingChanges {
                        guard !object._state.contains(.deleted) else { return }
                        if try matches(object) {
                            keepGoing = try body(.object(object))
                        }
                    } else if try matchesCommitted(row) {
                        keepGoing = try body(.object(object))
                    }
                } else if try matchesCommitted(row) {
                    keepGoing = try body(.row(entityIndex: entityIndex, row: row))
                }
            }
            if let overlay = overlays?[position] {
                // The parent's changed rows replace the committed ones; its inserted objects
                // (temporary, negative keys) follow, in the order they were inserted.
                try snapshot.forEachLiveRow { row in
                    if let changed = overlay[row.primaryKey] {
                        if !changed.isDeleted {
                            try visit(changed)
                        }
                    } else {
                        try visit(row)
                    }
                }
                for key in overlay.keys.filter({ $0 < 0 }).sorted() where keepGoing {
                    if let row = overlay[key], !row.isDeleted {
                        try visit(row)
                    }
                }
            } else if usesIndexes, let constraint, let slot, let index = snapshot.index(of: slot) {
                var keys = Set<Int64>()
                for value in constraint.values {
                    keys.formUnion(index.lookUp(value))
                }
                if request.includesPendingChanges {
                    // Unsaved values (and merges not yet taken) are in the objects, not the index.
                    for (key, object) in registered where constraint.isSatisfied(by: object._values + slot) {
                        keys.insert(key)
                    }
                }
                for key in keys.sorted() {
                    guard keepGoing else { break }
                    if let row = snapshot.row(for: key) {
                        try visit(row)
                    }
                }
            } else {
                try snapshot.forEachLiveRow(visit)
            }
            guard keepGoing else { return }
        }
        guard request.includesPendingChanges else { return }
        let entitySet = Set(entityIndexes)
        for object in pendingInserts where Self.isPendingInsert(object) {
            guard let entityIndex = object._objectID.key.entityIndex, entitySet.contains(entityIndex) else { continue }
            if let constraint,
                !constraint.isSatisfied(by: object._values + constraint.slot(in: model.entities[entityIndex]))
            {
                continue
            }
            let matched = try entityMatcher(entityIndex)?.matches(object) ?? true
            if matched {
                guard try body(.object(object)) else { return }
            }
        }
    }

    /// How a fetch matches objects against `predicate`: compiled to a closure when every node of
    /// it can be (see ``CompiledPredicate``), otherwise with Foundation's `evaluate`.
    func matcher<Result>(for predicate: Predicate<Result>) -> (Result) throws -> Bool {
        if compilesPredicates, let compiled = CompiledPredicate(predicate) {
            return compiled.matches
        }
        return predicate.evaluate
    }

    private func countWithoutPredicate<Result>(_ request: FetchRequest<Result>) throws -> Int {
        let entityIndexes = self.fetchedEntityIndexes(for: request)
        let snapshots = try coordinator.sync { try coordinator.snapshots(of: entityIndexes) }
        var count = snapshots.reduce(0) { $0 + $1.liveCount }
        if request.includesPendingChanges {
            let entitySet = Set(entityIndexes)
            for object in pendingInserts where Self.isPendingInsert(object) {
                if entitySet.contains(object._objectID.key.entityIndex!) {
                    count += 1
                }
            }
            // Pending deletes only count if their row is still committed (a merge may not
            // have arrived yet for a row another context deleted).
            for object in pendingDeletes where Self.isPendingDelete(object) {
                let index = object._objectID.key.entityIndex!
                if entitySet.contains(index),
                    let position = entityIndexes.firstIndex(of: index),
                    snapshots[position].contains(primaryKey: object._objectID.rawValue)
                {
                    count -= 1
                }
            }
        }
        return applyPaging(count: count, request)
    }

    /// The indexes of the entities `request` fetches, in the order a fetch visits them.
    func fetchedEntityIndexes<Result>(for request: FetchRequest<Result>) -> [Int] {
        let indexes: [Int]
        if let entityName = request.entityName {
            indexes = model.entityIndexes(named: entityName, includingSubentities: request.includesSubentities)
            guard !indexes.isEmpty else {
                fatalError("QueueData: the model has no entity named '\(entityName)'.")
            }
            for index in indexes
            where !model.entities[index].isKind(of: Result.self) && Result.self != ManagedObject.self {
                fatalError(
                    "QueueData: a FetchRequest<\(Result.self)> cannot fetch '\(entityName)', whose objects are "
                        + "\(model.entities[index].managedObjectClass); use FetchRequest<ManagedObject>.")
            }
        } else {
            indexes = model.entityIndexes(for: Result.self, includingSubentities: request.includesSubentities)
            guard !indexes.isEmpty else {
                fatalError(
                    "QueueData: \(Result.self) is not an entity of this context's model (nor a superclass "
                        + "of one); add it to your ContextManagerDelegate's managedObjectModel.")
            }
        }
        return indexes
    }

    func pageRange<Result>(count: Int, _ request: FetchRequest<Result>) -> Range<Int> {
        let start = Swift.min(Swift.max(request.fetchOffset, 0), count)
        let end = request.fetchLimit > 0 ? start + Swift.min(request.fetchLimit, count - start) : count
        return start..<end
    }

    private func applyPaging<Result>(count: Int, _ request: FetchRequest<Result>) -> Int {
        pageRange(count: count, request).count
    }
}

extension TableSnapshot {
    /// Whether a live row with `primaryKey` exists.
    func contains(primaryKey: Int64) -> Bool {
        row(for: primaryKey) != nil
    }
}

extension ManagedObject {
    /// Replaces the row of a scratch object used to evaluate predicates on committed rows.
    final func _load(_ values: [StoredValue]) {
        values.withUnsafeBufferPointer { buffer in
            _values.update(from: buffer.baseAddress!, count: buffer.count)
        }
    }
}
