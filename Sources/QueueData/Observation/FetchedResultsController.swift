import Foundation

/// A list of objects that keeps itself up to date: the results of a ``FetchRequest``, grouped
/// in sections, following every change of its context — its own inserts, updates and deletes
/// (as ``ManagedObjectContext/processPendingChanges()`` reports them), merges of other contexts'
/// saves, refreshes, rollbacks and resets — and reporting exactly what changed (Core Data's
/// `NSFetchedResultsController`).
///
/// ```swift
/// let controller = FetchedResultsController(
///     fetchRequest: FetchRequest<Destination>(
///         predicate: #Predicate { $0.rating > 0 },
///         sortBy: [SortDescriptor(\.country), SortDescriptor(\.name)]),
///     managedObjectContext: context,
///     sectionNameKeyPath: \.country)
/// controller.delegate = board               // Core Data's callbacks, on the context's queue
/// try controller.performFetch()
/// let first = controller.object(at: IndexPath(indexes: [0, 0]))
/// ```
///
/// A controller is confined to its context's queue, like the context's objects: create and use
/// it there (every method checks and traps otherwise); its ``snapshot`` is `Sendable`.
///
/// **Order.** Objects are sorted by the request's attribute sorts (``FetchRequest/attributeSorts``),
/// then its sort descriptors; ties are ordered by object ID: permanent IDs by primary key, then
/// temporary IDs (unsaved inserts) in the order they were inserted. That is the order a fetch
/// gives them, but for an unsaved insert that has a permanent ID — an object an undo brought
/// back after a save deleted it — which a fetch lists with the unsaved inserts, and the
/// controller by its primary key. With a section key path, objects
/// are grouped by the section name: when the request has no attribute sorts and its first sort
/// descriptor sorts by the section key path (as Core Data requires), sections come in that
/// order; otherwise sections are ordered by name (`<`), each holding its objects in sorted order.
///
/// **Changes.** An update that changes a sort key or the section name moves the object (`.move`);
/// one that makes it stop or start matching the predicate deletes or inserts it; any other
/// change of a fetched object is an `.update`, as is an inserted object getting its permanent ID
/// when its context saves. Only changes to objects of the fetched entities count: a predicate or
/// sort key that reads a related object is not re-evaluated when only the related object changes
/// (as in Core Data). Changes of other contexts count once merged into this one.
///
/// **Cost.** A change is applied where it lands: a controller of 100k objects told of one
/// changed object evaluates that object, finds its old and new places by binary search and a
/// scan of object IDs, and moves array elements; it never re-fetches or re-sorts. With a
/// ``FetchRequest/fetchBatchSize``, the controller keeps object IDs and sort keys, and
/// materializes (registers in the context) the objects asked for, a batch at a time.
///
/// The request's `fetchLimit` and `fetchOffset` must be 0, and `includesPendingChanges` `true`:
/// a controller always shows the context's objects with their unsaved changes.
open class FetchedResultsController<Object: ManagedObject> {
    /// The request whose results the controller holds (never modified).
    public let fetchRequest: FetchRequest<Object>
    /// The context whose objects the controller follows.
    public let managedObjectContext: ManagedObjectContext
    /// The key path that names each object's section, or `nil` for one section named `""`.
    public let sectionNameKeyPath: AnyKeyPath?
    /// Told of every batch of changes, on the context's queue. Held weakly.
    public weak var delegate: (any FetchedResultsControllerDelegate<Object>)?

    let sectionName: ((Object) -> String)?
    /// How entries compare: by extracted keys, or by the sort descriptors on objects.
    let ordering: ControllerOrdering<Object>
    /// Whether sections follow the first sort descriptor (it sorts by the section key path).
    let sectionsFollowSort: Bool
    /// The position of each fetched entity's index in the request's entity list (ties order).
    let entityPositions: [Int: Int]
    let matches: ((Object) throws -> Bool)?
    /// Whether entries hold their objects (no batch size, or an ordering that compares objects).
    let holdsObjects: Bool
    let batchSize: Int
    /// The sections, in order; `nil` before the first fetch.
    var storage: [ControllerSection]?
    /// Whether the controller follows its context's changes yet.
    var isObserving = false
    /// Changes received while an asynchronous fetch runs, applied when it lands.
    var pendingDuringFetch: [ObjectsDidChange]?
    /// The observations of ``snapshots``, held weakly: an observation ends with its iterator.
    var snapshotChannels: [WeakChannel<FetchedResultsSnapshot>] = []

    /// Creates a controller with one section.
    ///
    /// - Important: Call on the context's queue. Traps if the request has a fetch limit or
    ///   offset, or excludes pending changes.
    public convenience init(fetchRequest: FetchRequest<Object>, managedObjectContext: ManagedObjectContext) {
        self.init(fetchRequest, managedObjectContext, keyPath: nil, name: nil)
    }

    /// Creates a controller whose objects are grouped in sections by `sectionNameKeyPath`.
    ///
    /// - Important: Call on the context's queue.
    public convenience init(
        fetchRequest: FetchRequest<Object>,
        managedObjectContext: ManagedObjectContext,
        sectionNameKeyPath: KeyPath<Object, String>
    ) {
        self.init(fetchRequest, managedObjectContext, keyPath: sectionNameKeyPath) { $0[keyPath: sectionNameKeyPath] }
    }

    /// Creates a controller whose objects are grouped in sections by `sectionNameKeyPath`; `nil`
    /// values make a section named `""`.
    ///
    /// - Important: Call on the context's queue.
    public convenience init(
        fetchRequest: FetchRequest<Object>,
        managedObjectContext: ManagedObjectContext,
        sectionNameKeyPath: KeyPath<Object, String?>
    ) {
        self.init(fetchRequest, managedObjectContext, keyPath: sectionNameKeyPath) {
            $0[keyPath: sectionNameKeyPath] ?? ""
        }
    }

    private init(
        _ request: FetchRequest<Object>,
        _ context: ManagedObjectContext,
        keyPath: AnyKeyPath?,
        name: ((Object) -> String)?
    ) {
        context.checkConfined()
        precondition(
            request.fetchLimit == 0 && request.fetchOffset == 0,
            "QueueData: a FetchedResultsController's request must not have a fetchLimit or fetchOffset: the "
                + "controller holds every match. Page through controller.sections instead.")
        precondition(
            request.includesPendingChanges,
            "QueueData: a FetchedResultsController follows the context's objects with their unsaved changes: "
                + "its request must have includesPendingChanges true.")
        self.fetchRequest = request
        self.managedObjectContext = context
        self.sectionNameKeyPath = keyPath
        self.sectionName = name
        self.ordering = ControllerOrdering(request.sortDescriptors, attributeSorts: request.attributeSorts)
        self.sectionsFollowSort =
            keyPath != nil && request.attributeSorts.isEmpty
            && request.sortDescriptors.first.map { $0.keyPath.map { $0 == keyPath } ?? false } == true
        let indexes = context.fetchedEntityIndexes(for: request)
        for index in indexes {
            // Checked once here: a wrong name or type traps with a message.
            for sort in request.attributeSorts {
                _ = sort.slot(in: context.model.entities[index])
            }
        }
        self.entityPositions = Dictionary(uniqueKeysWithValues: indexes.enumerated().map { ($1, $0) })
        let predicateMatches = request.predicate.map(context.matcher(for:))
        if let constraint = request.attributeConstraint {
            // Checked once here (a wrong name or value traps with a message), then by slot.
            for index in indexes {
                _ = constraint.slot(in: context.model.entities[index])
            }
            self.matches = { object in
                guard let slot = object.entity.attributeIndexes[constraint.attributeName],
                    constraint.isSatisfied(by: object._value(at: slot))
                else { return false }
                return try predicateMatches?(object) ?? true
            }
        } else {
            self.matches = predicateMatches
        }
        self.batchSize = Swift.max(request.fetchBatchSize, 0)
        self.holdsObjects = request.fetchBatchSize <= 0 || !ordering.usesKeys
    }

    // MARK: Fetching

    /// Fetches the objects and starts following the context's changes. Reports nothing to the
    /// delegate; call it again to start over (after changing nothing: the request is fixed).
    ///
    /// - Throws: An error of the predicate; ``StoreError`` if the store was closed.
    /// - Important: Call on the context's queue.
    public func performFetch() throws {
        let context = managedObjectContext
        context.checkConfined()
        try context.confinement.withMarkedBlock {
            context.processPendingChangesOnQueue()
            let sections = try fetchSections()
            storage = sections
            startObserving()
            sendSnapshot(makeSnapshot(sections))
        }
    }

    /// Fetches without blocking the context's queue: matches and sorts the committed rows on a
    /// private queue, then, on the context's queue, takes in the context's own unsaved changes
    /// and the changes that arrived meanwhile, so that the result is what `performFetch()`
    /// would give at that moment. Reports nothing to the delegate.
    ///
    /// Callable from any task; the controller itself is used on the context's queue.
    ///
    /// - Throws: An error of the predicate; ``StoreError`` if the store was closed (or the
    ///   manager closed while the fetch was in flight).
    public func performFetch() async throws {
        let box = UncheckedSendableBox(self)
        let context = managedObjectContext
        // Changes from now on are kept, to apply once the result lands: whatever the private
        // queue's snapshot missed is among them (applying one twice does no harm).
        try await context.performIfOpen {
            box.value.pendingDuringFetch = []
            box.value.startObserving()
        }
        let worker = try await context.committedControllerEntries(for: fetchRequest, controller: box)
        try await context.performIfOpen {
            try box.value.install(committed: worker)
            box.value.sendSnapshot(box.value.makeSnapshot(box.value.storage ?? []))
        }
    }

    /// The fetched objects, section after section; `nil` before `performFetch()`. With a
    /// `fetchBatchSize`, reading it materializes every object.
    ///
    /// - Important: Call on the context's queue.
    public var fetchedObjects: [Object]? {
        managedObjectContext.checkConfined()
        guard let storage else { return nil }
        return managedObjectContext.confinement.withMarkedBlock {
            storage.flatMap { materialize($0.entries[...]) }
        }
    }

    /// The sections, in order; `nil` before `performFetch()`.
    ///
    /// - Important: Call on the context's queue.
    public var sections: [FetchedResultsSection<Object>]? {
        managedObjectContext.checkConfined()
        return storage?.enumerated().map { index, section in
            FetchedResultsSection(
                name: section.name, indexTitle: sectionIndexTitle(forSectionName: section.name),
                numberOfObjects: section.entries.count, controller: self, index: index)
        }
    }

    /// The object at `indexPath` (section, then position within it), materializing its batch.
    ///
    /// - Important: Call on the context's queue. Traps if there is no such object.
    public func object(at indexPath: IndexPath) -> Object {
        managedObjectContext.checkConfined()
        guard let storage, indexPath.count == 2, storage.indices.contains(indexPath[0]),
            storage[indexPath[0]].entries.indices.contains(indexPath[1])
        else {
            fatalError("QueueData: FetchedResultsController has no object at \(indexPath).")
        }
        let entries = storage[indexPath[0]].entries
        let position = indexPath[1]
        if let object = entries[position].object {
            return unsafeDowncast(object, to: Object.self)
        }
        let start = batchSize > 0 ? position - position % batchSize : position
        let end = Swift.min(start + Swift.max(batchSize, 1), entries.count)
        return managedObjectContext.confinement.withMarkedBlock {
            let batch = materialize(entries[start..<end])
            return batch[position - start]
        }
    }

    /// Where `object` is (section, then position within it), or `nil` when the controller does
    /// not hold it.
    ///
    /// - Complexity: A binary search when the object's sort keys are those it was placed with,
    ///   otherwise a scan of the object IDs.
    /// - Important: Call on the context's queue.
    public func indexPath(forObject object: Object) -> IndexPath? {
        managedObjectContext.checkConfined()
        guard let storage else { return nil }
        return managedObjectContext.confinement.withMarkedBlock {
            let id = object._objectID
            if let guess = try? entry(for: object, id: id),
                let sectionIndex = storage.firstIndex(where: { $0.name == guess.sectionName }),
                case let entries = storage[sectionIndex].entries,
                case let position = position(of: guess.entry, in: entries),
                position < entries.count, entries[position].id == id
            {
                return IndexPath(indexes: [sectionIndex, position])
            }
            return locate(id, in: storage)
        }
    }

    /// The section index titles, in the order of the sections that first give them, without
    /// repeats (sections "Angola", "Benin" and "austria" give "A" and "B").
    ///
    /// - Important: Call on the context's queue.
    public var sectionIndexTitles: [String] {
        managedObjectContext.checkConfined()
        var titles: [String] = []
        var seen: Set<String> = []
        for section in storage ?? [] {
            if let title = sectionIndexTitle(forSectionName: section.name), seen.insert(title).inserted {
                titles.append(title)
            }
        }
        return titles
    }

    /// The index title of the section named `sectionName`: its first letter, capitalized, as
    /// Core Data's default (`nil` for an empty name). Override it in a subclass for others.
    open func sectionIndexTitle(forSectionName sectionName: String) -> String? {
        sectionName.first.map { String($0).uppercased() }
    }

    /// The sections and their object IDs as they are now (empty before `performFetch()`).
    ///
    /// - Important: Call on the context's queue.
    public var snapshot: FetchedResultsSnapshot {
        managedObjectContext.checkConfined()
        return makeSnapshot(storage ?? [])
    }

    /// The controller's snapshots as an `AsyncSequence` any task can iterate: the current one
    /// first (once fetched), then one after each batch of changes. A slow consumer gets the
    /// latest. The observation ends when the iterating task is cancelled, the loop ends, or the
    /// controller is released.
    ///
    /// - Important: Call on the context's queue (the stream itself is iterated anywhere).
    public var snapshots: ObservationStream<FetchedResultsSnapshot> {
        managedObjectContext.checkConfined()
        let channel = ObservationChannel<FetchedResultsSnapshot> { _, latest in latest }
        snapshotChannels.append(WeakChannel(channel))
        if let storage {
            channel.send(makeSnapshot(storage))
        }
        return ObservationStream(channel: channel)
    }

    deinit {
        for box in snapshotChannels {
            box.channel?.finish()
        }
    }

    /// Sends `snapshot` to every live observation of ``snapshots``.
    func sendSnapshot(_ snapshot: @autoclosure () -> FetchedResultsSnapshot) {
        snapshotChannels.removeAll { $0.channel == nil }
        guard !snapshotChannels.isEmpty else { return }
        let value = snapshot()
        for box in snapshotChannels {
            box.channel?.send(value)
        }
    }

    // MARK: Internals

    func makeSnapshot(_ sections: [ControllerSection]) -> FetchedResultsSnapshot {
        FetchedResultsSnapshot(sections: sections.map { .init(name: $0.name, objectIDs: $0.entries.map(\.id)) })
    }

    /// The objects of the section named `name`, materialized.
    func objects(inSection name: String) -> [Object] {
        managedObjectContext.checkConfined()
        guard let section = storage?.first(where: { $0.name == name }) else { return [] }
        return managedObjectContext.confinement.withMarkedBlock { materialize(section.entries[...]) }
    }

    /// The objects of `entries`, registering the missing ones in one trip to the coordinator.
    func materialize(_ entries: ArraySlice<ControllerEntry>) -> [Object] {
        let context = managedObjectContext
        let missing = entries.filter { $0.object == nil }.map(\.id)
        var found: [ObjectID: ManagedObject] = [:]
        if !missing.isEmpty {
            let objects = (try? context.registeredObjects(missing, as: ManagedObject.self)) ?? []
            for object in objects {
                found[object._objectID] = object
            }
        }
        return entries.map { entry in
            let object = entry.object ?? found[entry.id] ?? placeholder(for: entry.id)
            return unsafeDowncast(object, to: Object.self)
        }
    }

    /// An object for an ID whose row is gone: it has left the context and holds no values.
    func placeholder(for id: ObjectID) -> ManagedObject {
        let context = managedObjectContext
        let entityIndex = context.entityIndex(of: id) ?? entityPositions.keys.min()!
        let object = ManagedObject._make(
            entity: context.model.entities[entityIndex], confinement: context.confinement,
            objectID: ObjectID(key: context.coordinator.entityKeys[entityIndex], rawValue: id.rawValue))
        object._state = [.deleted, .detached]
        return object
    }

    func startObserving() {
        guard !isObserving else { return }
        isObserving = true
        managedObjectContext.addChangeObserver(owner: self) { [unowned self] changes in
            if pendingDuringFetch != nil {
                pendingDuringFetch?.append(changes)
            } else if storage != nil {
                apply(changes)
            }
        }
    }
}

/// A weak reference to an observation channel.
final class WeakChannel<Element: Sendable> {
    weak var channel: ObservationChannel<Element>?

    init(_ channel: ObservationChannel<Element>) {
        self.channel = channel
    }
}

@available(*, unavailable, message: "A controller is confined to its context's queue")
extension FetchedResultsController: Sendable {}
