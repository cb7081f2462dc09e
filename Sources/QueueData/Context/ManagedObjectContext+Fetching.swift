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
    ///   was closed. (A limited page read in an index's order evaluates the predicate only on
    ///   the rows it reaches: see ``AttributeSort``.)
    /// A sorted fetch with a ``FetchRequest/fetchLimit`` makes objects only for the page it
    /// returns (unless a sort descriptor has a string comparator): the sort keys of rows not
    /// registered yet are read on one reusable object.
    ///
    /// - Complexity: O(*n*) predicate evaluations over the entity's rows, plus the sort.
    /// - Important: Call on the context's queue.
    public func fetch<Result>(_ request: FetchRequest<Result>) throws -> [Result] {
        checkConfined()
        return try confinement.withMarkedBlock {
            if let ids = try committedGraphMatches(request) {
                return try registeredObjects(ids, as: Result.self, keepingDeleted: true)
            }
            let registrations = registrationCount
            var objects = try matchingObjects(request)
            reserveRegistryCapacity(for: objects)
            registerAndAwake(&objects, since: registrations)
            return Self.array(objects, of: Result.self)
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
            if let ids = try committedGraphMatches(request) {
                return ids
            }
            guard !request.isSorted else {
                return try matchingObjects(request).map(\._objectID)
            }
            // Unsorted: the IDs of the matches, without making objects of committed rows.
            var ids: [ObjectID] = []
            try forEachPageCandidate(request) { candidate in
                switch candidate {
                case .object(let object), .committed(let object, _): ids.append(object._objectID)
                case .row(let entityIndex, let row):
                    ids.append(ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: row.primaryKey))
                }
            }
            return ids
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
            if let ids = try committedGraphMatches(request) {
                return ids.count
            }
            var count = 0
            try forEachCandidate(request) { _ in
                count += 1
                return true
            }
            return applyPaging(count: count, request)
        }
    }

    /// The IDs of a request's page matched and ordered on the committed graph, when the
    /// request leaves pending changes out and its predicate or sort descriptors may read other
    /// objects through relationships: a private context that holds no change of its own (on
    /// this context's queue, inline, reading through the same parent) runs it, as the asynchronous
    /// fetches do, so that every object reached is read committed, as Core Data's store reads
    /// them. `nil` when the request needs no such context (it includes pending changes, has
    /// neither predicate nor sort descriptors, fetches entities without relationships, or this
    /// context has no unsaved change).
    func committedGraphMatches<Result>(_ request: FetchRequest<Result>) throws -> [ObjectID]? {
        guard let worker = committedGraphContext(for: request) else { return nil }
        return try worker.confinement.withMarkedBlock { try worker.fetchObjectIDs(request) }
    }

    /// The private context `committedGraphMatches(_:)` runs `request` in, or `nil` when the
    /// request needs none. It shares this context's queue, and runs inline in a block marked
    /// as its own (`confinement.withMarkedBlock`): no hop to another queue, which could wait on
    /// this one (a child reading through a parent on the same queue).
    func committedGraphContext<Result>(for request: FetchRequest<Result>) -> ManagedObjectContext? {
        // A context without changes reads its objects as committed already (and the private
        // context has none: it never asks for another).
        guard !request.includesPendingChanges, request.predicate != nil || !request.sortDescriptors.isEmpty,
            hasChanges,
            fetchedEntityIndexes(for: request).contains(where: { !model.entities[$0].relationships.isEmpty })
        else { return nil }
        let worker = ManagedObjectContext(
            queue: queue, name: "\(name) (committed fetch)", coordinator: coordinator, observesSaves: false,
            parent: parent, onDeinit: {})
        worker.awakesFetchedObjects = false
        return worker
    }

    /// `objects`, all of class `Result`, as an array of `Result`: the one step of a fetch
    /// that depends on the type fetched (the rest builds arrays of `ManagedObject`, without
    /// generic code per object).
    static func array<Result: ManagedObject>(_ objects: [ManagedObject], of _: Result.Type) -> [Result] {
        if Result.self == ManagedObject.self {
            return unsafeBitCast(objects, to: [Result].self)
        }
        guard !objects.isEmpty else {
            // (With no capacity, the initializer below writes a count of 0 into the empty-array
            // singleton every empty array shares: harmless, but a data race to ThreadSanitizer.)
            return []
        }
        return [Result](unsafeUninitializedCapacity: objects.count) { buffer, initialized in
            objects.withUnsafeBufferPointer { source in
                for index in source.indices {
                    (buffer.baseAddress! + index).initialize(to: unsafeDowncast(source[index], to: Result.self))
                }
            }
            initialized = objects.count
        }
    }

    /// Grows the identity map's list of pages once for a large fetch instead of as it fills.
    private func reserveRegistryCapacity(for objects: [ManagedObject]) {
        guard objects.count > 64, let last = objects.last, let entityIndex = last._objectID.key.entityIndex else {
            return
        }
        registry[entityIndex].reserveCapacity(forKeysUpTo: last._objectID.rawValue, adding: objects.count)
    }

    // MARK: Evaluation

    /// A match found by the scan: a registered object, or a committed row not yet registered.
    enum Candidate {
        case object(ManagedObject)
        case row(entityIndex: Int, row: RowReference)
        /// A registered object matched on the committed row without pending changes: the object
        /// is returned, sorted on the row's values (which its own may not be: unsaved changes, a
        /// merge not taken yet), as a store sorts its rows.
        case committed(ManagedObject, row: RowReference)
    }

    /// Calls `body` with the matches of an unsorted `request` that its page holds (past its
    /// ``FetchRequest/fetchOffset``, up to its ``FetchRequest/fetchLimit``), in scan order,
    /// stopping the scan once the page is full.
    func forEachPageCandidate<Result>(_ request: FetchRequest<Result>, _ body: (Candidate) throws -> Void) throws {
        let offset = Swift.max(request.fetchOffset, 0)
        let limit = request.fetchLimit > 0 ? request.fetchLimit : Int.max
        var skipped = 0
        var taken = 0
        try forEachCandidate(request) { candidate in
            if skipped < offset {
                skipped += 1
                return true
            }
            try body(candidate)
            taken += 1
            return taken < limit
        }
    }

    /// The objects `request` returns, sorted and paged, each of class `Result`; objects made
    /// for committed rows are unregistered (`detached`) until the caller registers them.
    private func matchingObjects<Result>(_ request: FetchRequest<Result>) throws -> [ManagedObject] {
        var objects: [ManagedObject] = []
        guard request.isSorted else {
            // Each match becomes an object as the scan finds it.
            try forEachPageCandidate(request) { candidate in
                objects.append(object(for: candidate))
            }
            return objects
        }
        // Only the page becomes objects.
        let (candidates, page) = try sortedPage(request)
        objects.reserveCapacity(page.count)
        for position in page {
            objects.append(object(for: candidates[position]))
        }
        return objects
    }

    /// The matches of a sorted `request` that its page holds, in its order — what `fetch`,
    /// `fetchObjectIDs`, `enumerate` and `fetchValues` return — as candidates and the positions
    /// of the page's among them, in order.
    ///
    /// A limited page needs only the order's first positions (the top 20 of a million): read in
    /// the order of an index when the first attribute sort allows it (see
    /// ``indexOrderedCandidates(_:_:)``), otherwise found without sorting the rest when the others
    /// are committed rows that need no object.
    func sortedPage<Result>(_ request: FetchRequest<Result>) throws -> (candidates: [Candidate], page: ArraySlice<Int>)
    {
        let end = Swift.max(request.fetchOffset, 0).addingReportingOverflow(request.fetchLimit)
        var candidates: [Candidate] = []
        var hasRows = false
        if request.fetchLimit > 0, !end.overflow, let leading = try indexOrderedCandidates(request, end.partialValue) {
            candidates = leading
            hasRows = true
        } else {
            try forEachCandidate(request) { candidate in
                if case .row = candidate {
                    hasRows = true
                }
                candidates.append(candidate)
                return true
            }
        }
        let prefix = request.fetchLimit > 0 && !end.overflow && hasRows ? end.partialValue : nil
        let order = try sortedOrder(of: candidates, request, prefix: prefix)
        return (candidates, order[pageRange(count: order.count, request)])
    }

    /// The candidates among which the first `count` of `request`'s order are, read in the order of
    /// the index of its first attribute sort, in fetch order; `nil` when the request cannot be
    /// answered that way (then every match is a candidate).
    ///
    /// The index holds the committed values: the rows are taken in its order (from the last
    /// entry when the sort is descending) until `count` of them match, and then every row tied
    /// with the last of those on the attribute (later sort keys and the fetch order decide
    /// among them). Every row left out has a value beyond those `count` matches'. The context's
    /// objects whose value may differ from the index's — unsaved changes, a merge not taken yet
    /// — are candidates whatever their place in the index, with their unsaved inserts. Without
    /// ``FetchRequest/includesPendingChanges``, every object is matched and sorted on its committed
    /// row, the index's value: no object is set apart, and there are no inserts.
    ///
    /// Taken when the request fetches one entity (no subentities), has no attribute constraint
    /// and no parent context, and its first attribute sort is on an
    /// indexed integer attribute; floating-point or date attribute while neither the
    /// index nor the objects hold a NaN (which Swift's `<` leaves unordered); or string attribute
    /// while the index's and the objects' values are all ASCII (where the index's byte order is
    /// Swift's `<`). An optional attribute's `nil`s are not in the index: an ascending sort
    /// needs none to be held by a committed row, a descending one finds its page before them.
    private func indexOrderedCandidates<Result>(_ request: FetchRequest<Result>, _ count: Int) throws
        -> [Candidate]?
    {
        guard usesIndexes, parent == nil, request.attributeConstraint == nil,
            let first = request.attributeSorts.first, count > 0
        else { return nil }
        let entityIndexes = fetchedEntityIndexes(for: request)
        guard entityIndexes.count == 1, let entityIndex = entityIndexes.first else { return nil }
        let entity = model.entities[entityIndex]
        let slot = first.slot(in: entity)
        let attribute = entity.attributes[slot]
        let isString = attribute.type == .string
        let isFloating = [.double, .float, .date].contains(attribute.type)
        guard
            isString || isFloating || [.integer16, .integer32, .integer64].contains(attribute.type)
        else { return nil }
        let snapshot = try coordinator.sync { try coordinator.snapshots(of: [entityIndex]) }[0]
        guard let index = snapshot.index(of: slot), !isString || index.ordered.nonASCIIStrings == 0,
            !isFloating || index.ordered.nanValues == 0
        else {
            return nil
        }
        // `nil` is not in the index and sorts first: an ascending sort of an attribute with `nil`
        // rows needs them (found by a scan); a descending one, only if the index runs out first.
        let nilRows = snapshot.liveCount - index.ordered.count
        guard first.ascending ? nilRows == 0 : nilRows == 0 || index.ordered.count >= count else { return nil }
        // The objects whose value may not be the index's.
        let pending = request.includesPendingChanges
        removeRepeatedPendingEntries()
        let unsettled = pending ? unsettledObjects(of: entityIndex, in: snapshot) : [:]
        let inserts =
            pending
            ? pendingInserts.filter { Self.isPendingInsert($0) && $0._objectID.key.entityIndex == entityIndex } : []
        if isString || isFloating {
            // Values the index's order would not place as Swift's `<` does: a full sort.
            for value in (Array(unsettled.values) + inserts).map({ $0._value(at: slot) }) {
                if case .string(let string) = value, !string.utf8.allSatisfy({ $0 < 0x80 }) {
                    return nil
                }
                if OrderedColumnIndex.isNaN(value) {
                    return nil
                }
            }
        }
        let matches = request.predicate.map(objectMatcher(for:))
        var scan = CandidateScan(
            context: self, entityIndex: entityIndex, registered: registry[entityIndex], predicate: matches,
            constraint: nil, layout: entity.rowLayout, includesPendingChanges: pending)
        var found: [(key: Int64, candidate: Candidate)] = []
        var boundary: StoredValue?
        try index.ordered.forEachEntry(descending: !first.ascending) { entry in
            if let boundary {
                guard entry.value == boundary else { return false }
            }
            guard unsettled[entry.key] == nil, let row = snapshot.reference(for: entry.key) else { return true }
            try scan.visit(row) { candidate in
                found.append((entry.key, candidate))
                return true
            }
            if boundary == nil, found.count >= count {
                boundary = entry.value
            }
            return true
        }
        if boundary == nil, nilRows > 0 {
            // Fewer matches in the index than the page needs: rows holding `nil` follow them.
            return nil
        }
        for (key, object) in unsettled where !object._state.contains(.deleted) {
            if try matches?(object) ?? true {
                found.append((key, .object(object)))
            }
        }
        found.sort { $0.key < $1.key }
        var candidates = found.map(\.candidate)
        for object in inserts where try matches?(object) ?? true {
            candidates.append(.object(object))
        }
        return candidates
    }

    /// The order of `candidates` by `request`'s sorts — its attribute sorts, then its sort
    /// descriptors, ties in candidate order — as positions; with a `prefix`, only the first
    /// `prefix` positions.
    ///
    /// Keys are extracted once per candidate: attribute sorts read the row's value, sort
    /// descriptors their key path, and committed rows that are not registered are read on one
    /// reusable object per entity (loaded with each row in turn, as predicates read them), so
    /// that no object is made for a row outside the returned page. When a sort descriptor's keys
    /// cannot be extracted (a string comparator, a value of another type), the candidates become
    /// objects and are compared with the descriptors. Without pending changes, objects are sorted
    /// on the committed rows they were matched on.
    func sortedOrder<Result>(of candidates: [Candidate], _ request: FetchRequest<Result>, prefix: Int? = nil) throws
        -> [Int]
    {
        let entityIndexes = fetchedEntityIndexes(for: request)
        let readers = request.attributeSorts.map {
            AttributeSortReader($0, entityIndexes: entityIndexes, model: model)
        }
        if !readers.isEmpty, request.sortDescriptors.isEmpty,
            let order = attributeOrder(of: candidates, readers: readers, prefix: prefix)
        {
            // Attribute sorts alone: keys read from the rows, no object loaded.
            return order
        }
        // One reusable object per entity whose committed rows are candidates, made before the
        // keys are read: an array that is not changed while they are read needs no dynamic
        // exclusivity check at each read, as a dictionary filled on demand did.
        var reusable = [ManagedObject?](repeating: nil, count: model.entities.count)
        for candidate in candidates {
            switch candidate {
            case .object:
                break
            case .row(let entityIndex, let row):
                if reusable[entityIndex] == nil {
                    reusable[entityIndex] = makeObject(entityIndex: entityIndex, reference: row)
                }
            case .committed(let object, let row):
                let entityIndex = object._objectID.key.entityIndex!
                if reusable[entityIndex] == nil {
                    reusable[entityIndex] = makeObject(entityIndex: entityIndex, reference: row)
                }
            }
        }
        let scratch = reusable
        /// An object loaded with `row`: the entity's reusable one.
        func reading(_ entityIndex: Int, _ row: RowReference) -> ManagedObject {
            let reused = scratch[entityIndex]!
            reused._takeCommittedRow(row)
            reused._objectID = ObjectID(key: reused._objectID.key, rawValue: row.primaryKey)
            return reused
        }
        /// What candidate `index` is sorted on: its object, or its committed row's values.
        func sortedOn(_ index: Int) -> ManagedObject {
            switch candidates[index] {
            case .object(let object):
                return object
            case .row(let entityIndex, let row):
                return reading(entityIndex, row)
            case .committed(let object, let row):
                return reading(object._objectID.key.entityIndex!, row)
            }
        }
        if readers.isEmpty,
            let order = SortKey.order(
                count: candidates.count, by: request.sortDescriptors, prefix: prefix,
                element: { unsafeDowncast(sortedOn($0), to: Result.self) })
        {
            // Sort descriptors alone: their extractors read `Result`s directly.
            return order
        }
        if !readers.isEmpty, let descriptorExtractors = SortKey.extractors(for: request.sortDescriptors) {
            var extractors: [(ManagedObject) -> SortKey?] = readers.map { reader in { reader.key(of: $0) } }
            for extract in descriptorExtractors {
                extractors.append { extract(unsafeDowncast($0, to: Result.self)) }
            }
            let reversed = readers.map(\.descending) + request.sortDescriptors.map { $0.order == .reverse }
            if let order = SortKey.order(
                count: candidates.count, extractors: extractors, reversed: reversed, prefix: prefix, element: sortedOn)
            {
                return order
            }
        }
        // Keys that cannot be extracted: sort objects, comparing the attributes' values, then
        // with the descriptors.
        let objects = candidates.indices.map { index -> ManagedObject in
            let object = sortedOn(index)
            // A reusable object is reloaded by the next candidate: each needs its own here.
            return scratch.contains { $0 === object } ? makeObject(reusing: object) : object
        }
        let descriptors = request.sortDescriptors
        return candidates.indices.sorted { left, right in
            let (a, b) = (objects[left], objects[right])
            for reader in readers {
                var result = SortKey.compare(reader.key(of: a) ?? .null, reader.key(of: b) ?? .null)
                if reader.descending {
                    result =
                        result == .orderedAscending
                        ? .orderedDescending : result == .orderedDescending ? .orderedAscending : .orderedSame
                }
                if result != .orderedSame {
                    return result == .orderedAscending
                }
            }
            for descriptor in descriptors {
                let result = descriptor.compare(unsafeDowncast(a, to: Result.self), unsafeDowncast(b, to: Result.self))
                if result != .orderedSame {
                    return result == .orderedAscending
                }
            }
            return left < right
        }
    }

    /// The order of `candidates` by the attribute sorts `readers` alone (ties in candidate order),
    /// with each key read from the candidate's committed row, or its object's values for a
    /// candidate matched with its pending changes; `nil` when a value has no sort key.
    private func attributeOrder(of candidates: [Candidate], readers: [AttributeSortReader], prefix: Int?) -> [Int]? {
        var keys: [SortKey] = []
        keys.reserveCapacity(candidates.count * readers.count)
        for candidate in candidates {
            for reader in readers {
                let key: SortKey?
                switch candidate {
                case .object(let object):
                    key = reader.key(of: object)
                case .row(let entityIndex, let row):
                    key = reader.key(ofRow: row, entityIndex: entityIndex)
                case .committed(let object, let row):
                    key = object._objectID.key.entityIndex.flatMap { reader.key(ofRow: row, entityIndex: $0) }
                }
                guard let key else { return nil }
                keys.append(key)
            }
        }
        return SortKey.order(keys: keys, columns: readers.count, reversed: readers.map(\.descending), prefix: prefix)
    }

    /// A new unregistered object holding the committed row `object` (a reusable one) holds now.
    private func makeObject(reusing object: ManagedObject) -> ManagedObject {
        guard let entityIndex = object._objectID.key.entityIndex, let row = object._committedReference else {
            return object
        }
        return makeObject(entityIndex: entityIndex, reference: row)
    }

    func object(for candidate: Candidate) -> ManagedObject {
        switch candidate {
        case .object(let object), .committed(let object, _): return object
        case .row(let entityIndex, let row): return makeObject(entityIndex: entityIndex, reference: row)
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
        let objectPredicate = request.predicate.map(objectMatcher(for:))
        let constraint = request.attributeConstraint
        for (position, (entityIndex, snapshot)) in zip(entityIndexes, snapshots).enumerated() {
            let slot = constraint?.slot(in: model.entities[entityIndex])
            let layout = model.entities[entityIndex].rowLayout
            // The scan's state lives in a local struct changed by its mutating methods: state
            // captured by nested functions would be checked for exclusive access dynamically on
            // every row.
            var scan = CandidateScan(
                context: self, entityIndex: entityIndex, registered: registry[entityIndex], predicate: objectPredicate,
                constraint: constraint.flatMap { constraint in slot.map { (constraint, $0) } }, layout: layout,
                includesPendingChanges: request.includesPendingChanges)
            if let overlay = overlays?[position] {
                // The parent's changed rows replace the committed ones; its inserted objects
                // (temporary, negative keys) follow, in the order they were inserted, then the
                // objects an undo brought back after their deletion was saved (inserted again
                // under their permanent keys, which the committed rows no longer hold).
                /// A changed row of the parent, in a block of its own.
                func reference(_ row: CommittedRow) -> RowReference {
                    row.reference ?? RowReference(block: RowBlock(layout: layout, row: row)!, index: 0)
                }
                try snapshot.forEachLiveRow { row in
                    if let changed = overlay[row.primaryKey] {
                        if !changed.isDeleted {
                            try scan.visit(reference(changed), body)
                        }
                    } else {
                        try scan.visit(row, body)
                    }
                }
                for key in overlay.keys.filter({ $0 < 0 }).sorted() where scan.keepGoing {
                    if let row = overlay[key], !row.isDeleted {
                        try scan.visit(reference(row), body)
                    }
                }
                for key in overlay.keys.filter({ $0 > 0 && !snapshot.contains(primaryKey: $0) }).sorted()
                where scan.keepGoing {
                    if let row = overlay[key], !row.isDeleted {
                        try scan.visit(reference(row), body)
                    }
                }
            } else if usesIndexes, let constraint, let slot, let index = snapshot.index(of: slot),
                let found = index.candidates(for: constraint)
            {
                var keys = Set(found)
                if request.includesPendingChanges {
                    // Unsaved values (and merges not yet taken) are in the objects, not the index.
                    addRegisteredKeys(
                        satisfying: constraint, slot: slot, entityIndex: entityIndex, snapshot: snapshot, to: &keys)
                }
                for key in keys.sorted() {
                    guard scan.keepGoing else { break }
                    if let row = snapshot.reference(for: key) {
                        try scan.visit(row, body)
                    }
                }
            } else {
                scanning: for group in snapshot.blocks {
                    for block in group {
                        for index in 0..<block.count where block.isLive(index) {
                            try scan.visit(RowReference(block: block, index: index), body)
                            guard scan.keepGoing else { break scanning }
                        }
                    }
                }
            }
            guard scan.keepGoing else { return }
        }
        guard request.includesPendingChanges else { return }
        removeRepeatedPendingEntries()
        let entitySet = Set(entityIndexes)
        for object in pendingInserts where Self.isPendingInsert(object) {
            guard let entityIndex = object._objectID.key.entityIndex, entitySet.contains(entityIndex) else { continue }
            if let constraint,
                !constraint.isSatisfied(by: object._value(at: constraint.slot(in: model.entities[entityIndex])))
            {
                continue
            }
            if try objectPredicate?(object) ?? true {
                guard try body(.object(object)) else { return }
            }
        }
    }

    /// Adds to `keys` the registered objects of an entity whose values satisfy `constraint` now
    /// (values an index of the committed rows does not know): among ``unsettledObjects(of:in:)``.
    private func addRegisteredKeys(
        satisfying constraint: AttributeConstraint,
        slot: Int,
        entityIndex: Int,
        snapshot: TableSnapshot,
        to keys: inout Set<Int64>
    ) {
        for (key, object) in unsettledObjects(of: entityIndex, in: snapshot)
        where constraint.isSatisfied(by: object._value(at: slot)) {
            keys.insert(key)
        }
    }

    /// The registered objects of an entity, with rows in `snapshot`, whose values may not be
    /// those rows' (and so not what the snapshot's indexes say), by key: the objects with unsaved
    /// changes, the objects whose `awakeFromFetch()` set values (``awakenedValueKeys``), and the
    /// objects holding an older row than `snapshot`'s (a merge not taken yet).
    ///
    /// Whether there are any of the latter is known without looking at every object while the
    /// table's update token is the one the context last found every object current with;
    /// otherwise every object is looked at, and the token noted when all of them are current.
    private func unsettledObjects(of entityIndex: Int, in snapshot: TableSnapshot) -> [Int64: ManagedObject] {
        var unsettled: [Int64: ManagedObject] = [:]
        if !awakenedValueKeys[entityIndex].isEmpty {
            // Values an `awakeFromFetch()` set: not changes, not in the index either.
            for key in awakenedValueKeys[entityIndex] {
                guard let object = registry[entityIndex][key] else {
                    awakenedValueKeys[entityIndex].remove(key)
                    continue
                }
                if snapshot.reference(for: key) != nil {
                    unsettled[key] = object
                }
            }
        }
        if let token = snapshot.updateToken, currentRowsToken[entityIndex] === token {
            for object in pendingUpdates
            where Self.isPendingUpdate(object) && object._objectID.key.entityIndex == entityIndex
                && snapshot.reference(for: object._objectID.rawValue) != nil
            {
                unsettled[object._objectID.rawValue] = object
            }
            return unsettled
        }
        var allCurrent = true
        for (key, object) in registry[entityIndex] where key > 0 {
            // A row deleted since does not count: neither a scan nor an index finds it.
            guard let row = snapshot.reference(for: key) else { continue }
            if row.version != object._snapshotVersion {
                allCurrent = false
                unsettled[key] = object
            } else if Self.isPendingUpdate(object) {
                unsettled[key] = object
            }
        }
        if allCurrent {
            // The next lookups look at the changed objects only, until a commit replaces a row.
            currentRowsToken[entityIndex] = snapshot.updateToken
        }
        return unsettled
    }

    /// How a fetch matches objects against `predicate`: compiled to a closure when every node of
    /// it can be (see ``CompiledPredicate``), otherwise with Foundation's `evaluate`.
    func matcher<Result: ManagedObject>(for predicate: Predicate<Result>) -> (Result) throws -> Bool {
        if compilesPredicates, let compiled = CompiledPredicate(predicate) {
            return compiled.matches
        }
        return predicate.evaluate
    }

    /// ``matcher(for:)`` on objects known to be of class `Result`: a compiled predicate's
    /// evaluator called directly, without a closure of the generic type in between.
    func objectMatcher<Result: ManagedObject>(for predicate: Predicate<Result>) -> (ManagedObject) throws -> Bool {
        if compilesPredicates, let compiled = CompiledPredicate(predicate) {
            let evaluator = compiled.evaluator
            return { object in
                var frame = PredicateFrame(root: object)
                return try evaluator(&frame)
            }
        }
        return { object in try predicate.evaluate(unsafeDowncast(object, to: Result.self)) }
    }

    private func countWithoutPredicate<Result>(_ request: FetchRequest<Result>) throws -> Int {
        let entityIndexes = self.fetchedEntityIndexes(for: request)
        let snapshots = try coordinator.sync { try coordinator.snapshots(of: entityIndexes) }
        var count = snapshots.reduce(0) { $0 + $1.liveCount }
        if request.includesPendingChanges {
            removeRepeatedPendingEntries()
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

/// One entity's part of ``ManagedObjectContext/forEachCandidate(_:_:)``: the state of the scan
/// of its rows, and what it does with each.
///
/// Not generic: the fetched type is in the predicate only, so that a scan of a generic fetch
/// looks no generic metadata up per row.
private struct CandidateScan {
    let context: ManagedObjectContext
    let entityIndex: Int
    /// The context's objects of the entity.
    let registered: IdentityMap
    /// The request's predicate, on objects of the fetched type.
    let predicate: ((ManagedObject) throws -> Bool)?
    /// The request's attribute constraint's check of a row (a committed one, or an object's),
    /// prepared once for the scan.
    let rowConstraint: ((UnsafeRawPointer) -> Bool)?
    let layout: RowLayout
    let includesPendingChanges: Bool
    /// Whether every committed row matches (no predicate, no constraint): then none is looked at.
    let matchesEveryRow: Bool
    /// The reusable object unregistered rows are matched through, so that rows that do not
    /// match never allocate anything.
    var scratch: ManagedObject?
    /// Whether the caller asked for more.
    var keepGoing = true

    init(
        context: ManagedObjectContext,
        entityIndex: Int,
        registered: IdentityMap,
        predicate: ((ManagedObject) throws -> Bool)?,
        constraint: (AttributeConstraint, Int)?,
        layout: RowLayout,
        includesPendingChanges: Bool
    ) {
        self.context = context
        self.entityIndex = entityIndex
        self.registered = registered
        self.predicate = predicate
        rowConstraint = constraint.map { constraint, slot in constraint.rowMatcher(slot: slot, layout: layout) }
        self.layout = layout
        self.includesPendingChanges = includesPendingChanges
        matchesEveryRow = predicate == nil && constraint == nil
    }

    /// Offers the row (or the context's object for it) to `body` if it matches.
    mutating func visit(
        _ row: RowReference,
        _ body: (ManagedObjectContext.Candidate) throws -> Bool
    ) throws {
        guard keepGoing else { return }
        context.rowsExamined &+= 1
        if let object = registered[row.primaryKey] {
            if includesPendingChanges {
                guard !object._state.contains(.deleted) else { return }
                if try matches(object) {
                    keepGoing = try body(.object(object))
                }
            } else if try matchesEveryRow || matchesCommitted(row) {
                keepGoing = try body(.committed(object, row: row))
            }
        } else if try matchesEveryRow || matchesCommitted(row) {
            keepGoing = try body(.row(entityIndex: entityIndex, row: row))
        }
    }

    /// Whether `object`, as it is now, matches.
    private func matches(_ object: ManagedObject) throws -> Bool {
        // The object's row has the committed rows' layout (its transient fields follow).
        if let rowConstraint, !rowConstraint(object._row) {
            return false
        }
        return try predicate?(object) ?? true
    }

    /// Whether the committed row matches (read through the reusable object).
    private mutating func matchesCommitted(_ row: RowReference) throws -> Bool {
        if let rowConstraint, !rowConstraint(row.fields) {
            return false
        }
        guard let predicate else { return true }
        let probe: ManagedObject
        if let scratch {
            scratch._takeCommittedRow(row)
            scratch._objectID = ObjectID(key: scratch._objectID.key, rawValue: row.primaryKey)
            probe = scratch
        } else {
            probe = context.makeObject(entityIndex: entityIndex, reference: row)
            scratch = probe
        }
        return try predicate(probe)
    }
}
