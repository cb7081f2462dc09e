import Dispatch
import Foundation

// Building, ordering and finding a controller's entries.
extension FetchedResultsController {
    /// The order of entries whose sort keys are equal: the order a fetch gives (saved objects
    /// entity by entity in the request's order, then by primary key; then unsaved inserts in
    /// the order they were inserted).
    func tiePrecedes(_ lhs: ObjectID, _ rhs: ObjectID) -> Bool {
        let left = tieKey(lhs)
        let right = tieKey(rhs)
        return (left.0, left.1, left.2) < (right.0, right.1, right.2)
    }

    private func tieKey(_ id: ObjectID) -> (Int, Int, Int64) {
        if id.isTemporaryID {
            return (1, 0, id.rawValue)
        }
        let entityIndex = id.key.entityIndex ?? managedObjectContext.entityIndex(of: id) ?? 0
        return (0, entityPositions[entityIndex] ?? 0, id.rawValue)
    }

    /// Whether `lhs` goes before `rhs` in a section.
    func precedes(_ lhs: ControllerEntry, _ rhs: ControllerEntry) -> Bool {
        ordering.precedes(lhs, rhs, tie: tiePrecedes)
    }

    /// Whether the section `lhs` goes before `rhs`.
    func sectionPrecedes(_ lhs: ControllerSection, _ rhs: ControllerSection) -> Bool {
        if sectionsFollowSort, let left = lhs.entries.first, let right = rhs.entries.first {
            return precedes(left, right)
        }
        return lhs.name < rhs.name
    }

    /// The entry of `object` as it is now, and its section's name.
    func entry(for object: ManagedObject, id: ObjectID) throws -> (entry: ControllerEntry, sectionName: String) {
        let typed = unsafeDowncast(object, to: Object.self)
        return (
            ControllerEntry(id: id, keys: ordering.keys(of: typed), object: holdsObjects ? object : nil),
            sectionName?(typed) ?? ""
        )
    }

    /// Whether `object` belongs in the controller now: an object of a fetched entity, neither
    /// deleted nor gone, matching the predicate.
    func belongs(_ object: ManagedObject) throws -> Bool {
        let state = object._state
        guard !state.contains(.deleted), !state.contains(.detached),
            let entityIndex = object._objectID.key.entityIndex, entityPositions[entityIndex] != nil,
            object is Object
        else { return false }
        return try matches?(unsafeDowncast(object, to: Object.self)) ?? true
    }

    /// The position of `entry` in `entries` (where it is, or where it would go).
    ///
    /// - Complexity: O(log *n*) comparisons.
    func position(of entry: ControllerEntry, in entries: [ControllerEntry]) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if precedes(entries[middle], entry) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    /// Where the entry with `id` is, by a scan of the IDs.
    func locate(_ id: ObjectID, in sections: [ControllerSection]) -> IndexPath? {
        for (sectionIndex, section) in sections.enumerated() {
            if let position = section.entries.firstIndex(where: { $0.id == id }) {
                return IndexPath(indexes: [sectionIndex, position])
            }
        }
        return nil
    }

    /// Every match of the request now, sorted and grouped in sections.
    func fetchSections() throws -> [ControllerSection] {
        let context = managedObjectContext
        var candidates: [ManagedObjectContext.Candidate] = []
        let registrations = context.registrationCount
        try context.forEachCandidate(fetchRequest) { candidate in
            candidates.append(candidate)
            return true
        }
        var entries: [(entry: ControllerEntry, sectionName: String)] = []
        entries.reserveCapacity(candidates.count)
        // Rows not registered are read through one object per entity, unless the controller
        // holds its objects.
        var probes: [Int: ManagedObject] = [:]
        // A controller that holds its objects registers them all before any `awakeFromFetch()`
        // runs, and reads them after.
        var registered: [ManagedObject?] = []
        if holdsObjects {
            registered = candidates.map { candidate in
                guard case .row = candidate else { return nil }
                return context.registerScanned(context.object(for: candidate), since: registrations)
            }
            context.awakeFetched(registered.compactMap { $0 })
        }
        for (position, candidate) in candidates.enumerated() {
            switch candidate {
            case .object(let object), .committed(let object, _):
                entries.append(try entry(for: object, id: object._objectID))
            case .row(let entityIndex, let row):
                let id = ObjectID(key: context.coordinator.entityKeys[entityIndex], rawValue: row.primaryKey)
                if let object = registered.isEmpty ? nil : registered[position] {
                    entries.append(try entry(for: object, id: id))
                } else {
                    let probe: ManagedObject
                    if let existing = probes[entityIndex] {
                        existing._takeCommittedRow(row)
                        existing._objectID = id
                        probe = existing
                    } else {
                        probe = context.makeObject(entityIndex: entityIndex, reference: row)
                        probes[entityIndex] = probe
                    }
                    entries.append(try entry(for: probe, id: id))
                }
            }
        }
        return group(entries)
    }

    /// Sorts `entries` and groups them in sections.
    func group(_ entries: [(entry: ControllerEntry, sectionName: String)]) -> [ControllerSection] {
        let sorted = entries.sorted { precedes($0.entry, $1.entry) }
        guard sectionName != nil else {
            return [ControllerSection(name: "", entries: sorted.map(\.entry))]
        }
        var sections: [ControllerSection] = []
        if sectionsFollowSort {
            for (entry, name) in sorted {
                if sections.last?.name == name {
                    sections[sections.count - 1].entries.append(entry)
                } else {
                    sections.append(ControllerSection(name: name, entries: [entry]))
                }
            }
            return sections
        }
        var byName: [String: Int] = [:]
        for (entry, name) in sorted {
            if let index = byName[name] {
                sections[index].entries.append(entry)
            } else {
                byName[name] = sections.count
                sections.append(ControllerSection(name: name, entries: [entry]))
            }
        }
        return sections.sorted { $0.name < $1.name }
    }

    /// Takes the result of an asynchronous fetch: the committed matches the private queue
    /// found, then the context's own state (its registered objects and unsaved inserts, which
    /// may differ from the committed rows) and the changes that arrived meanwhile, applied
    /// without reporting.
    func install(committed: [CommittedControllerEntry]) throws {
        let context = managedObjectContext
        let changes = pendingDuringFetch ?? []
        pendingDuringFetch = nil
        var entries = committed.map {
            (entry: ControllerEntry(id: $0.id, keys: $0.keys, object: nil), sectionName: $0.sectionName)
        }
        if holdsObjects {
            let objects = try context.registeredObjects(entries.map(\.entry.id), as: ManagedObject.self)
            var byID: [ObjectID: ManagedObject] = [:]
            for object in objects {
                byID[object._objectID] = object
            }
            entries = try entries.compactMap { item in
                guard let object = byID[item.entry.id] else { return nil }
                return try entry(for: object, id: item.entry.id)
            }
        }
        storage = group(entries)
        // What the context holds may differ from the committed rows: its registered objects
        // (unsaved changes, merges not taken), its unsaved inserts.
        var ids: [ObjectID] = []
        for entityIndex in entityPositions.keys {
            ids += context.registry[entityIndex].values.map(\._objectID)
        }
        for change in changes {
            try update(with: change, extra: ids, reports: false)
            ids = []
        }
        try update(with: ObjectsDidChange(), extra: ids, reports: false)
    }
}

/// A match found by an asynchronous fetch on a private queue: what the controller's queue
/// needs to place it.
struct CommittedControllerEntry: Sendable {
    let id: ObjectID
    let keys: [ControllerKey]
    let sectionName: String
}

extension ManagedObjectContext {
    /// The committed matches of `controller`'s request, found by a private context on a private
    /// queue: their IDs, sort keys and section names (for a controller that compares objects, the
    /// IDs only).
    ///
    /// `controller` crosses to the private queue boxed: only its immutable configuration (the
    /// request, the ordering, the section name function) is read there.
    func committedControllerEntries<Object>(
        for request: FetchRequest<Object>,
        controller: UncheckedSendableBox<FetchedResultsController<Object>>
    ) async throws -> [CommittedControllerEntry] {
        var copy = request
        copy.includesPendingChanges = false
        let committed = copy
        let coordinator = self.coordinator
        let workerName = "\(name) (fetched-results controller)"
        return try await withCheckedThrowingContinuation { continuation in
            let workerQueue = DispatchQueue(label: "QueueData.FetchedResultsController")
            workerQueue.async {
                let worker = ManagedObjectContext(
                    queue: workerQueue, name: workerName, coordinator: coordinator, observesSaves: false,
                    onDeinit: {})
                worker.awakesFetchedObjects = false
                let outcome = Swift.Result {
                    try worker.performAndWait { try worker.controllerEntries(committed, controller.value) }
                }
                continuation.resume(with: outcome)
            }
        }
    }

    /// On a private context: the entries of every committed match.
    private func controllerEntries<Object>(
        _ request: FetchRequest<Object>,
        _ controller: FetchedResultsController<Object>
    ) throws -> [CommittedControllerEntry] {
        var entries: [CommittedControllerEntry] = []
        var probes: [Int: ManagedObject] = [:]
        try forEachCandidate(request) { candidate in
            guard case .row(let entityIndex, let row) = candidate else { return true }
            let id = ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: row.primaryKey)
            let probe: ManagedObject
            if let existing = probes[entityIndex] {
                existing._takeCommittedRow(row)
                existing._objectID = id
                probe = existing
            } else {
                probe = makeObject(entityIndex: entityIndex, reference: row)
                probes[entityIndex] = probe
            }
            let typed = unsafeDowncast(probe, to: Object.self)
            entries.append(
                CommittedControllerEntry(
                    id: id, keys: controller.ordering.keys(of: typed),
                    sectionName: controller.sectionName?(typed) ?? ""))
            return true
        }
        return entries
    }
}
