import Dispatch
import Foundation

/// A scratchpad of managed objects confined to one serial `DispatchQueue`.
///
/// Get one from ``ContextManager``: ``ContextManager/createContext(for:)`` hands out one
/// context per queue. A context is only ever touched on its queue: every method and every
/// property of its objects checks that and traps otherwise. From elsewhere, enter it with
/// `perform(_:)` (asynchronous), ``performAndWait(_:)`` or `try await perform(_:)`;
/// ``queue`` is the one property readable from anywhere.
///
/// Changes stay in the context until ``save()`` commits them through the coordinator;
/// the context then posts ``didSaveNotification``, and every other context of the same
/// manager merges the save asynchronously on its own queue. A child context
/// (``newChildContext()``) is a scratchpad over another context: it reads through its
/// ``parent`` and saves into it instead.
///
/// A context holds its objects with pending changes until they are saved or rolled back,
/// and lets go of the others once nothing outside it references them, at the end of the
/// block that `perform` or `performAndWait` runs (``retainsRegisteredObjects``, `false` by
/// default, keeps every one until ``reset()``). A long import inside one block keeps what it
/// registered until the block ends: split it into blocks, or reset between batches.
///
/// `@unchecked Sendable`: references to a context may cross threads (to call `perform`),
/// but all of its mutable state is touched only on `queue`, which every entry point checks.
public final class ManagedObjectContext: @unchecked Sendable {
    /// The serial queue the context is confined to.
    public let queue: DispatchQueue
    /// The context's name, used in trap messages (the queue's label unless given).
    public let name: String
    /// The context a child context reads from and saves into (see ``newChildContext()``);
    /// `nil` for a context of the manager, which reads from and saves to the store. Readable
    /// from anywhere.
    public let parent: ManagedObjectContext?

    let confinement: QueueConfinement
    let coordinator: StoreCoordinator
    let model: ManagedObjectModel
    /// Each entity (of `model`) and its entity key (of `coordinator`), unretained: both hold
    /// them as long as the context. Objects are made from them without retaining and releasing
    /// each around every object (see `makeObject(entityIndex:reference:)`).
    private let objectParts: [(entity: Unmanaged<EntityDescription>, key: Unmanaged<EntityKey>)]
    private let onDeinit: @Sendable () -> Void
    var observer: (any NSObjectProtocol)?
    /// The ``objectsDidChange`` streams made of this context, which end when it goes away.
    let observations = ContextObservations()
    /// Entered by each asynchronous fetch while it is in flight (see ``AsynchronousFetchToken``),
    /// so that ``ContextManager/closeGracefully()`` can wait for the fetches started before it.
    let asynchronousFetches = DispatchGroup()
    /// The changes of the save whose ``didSaveNotification`` this context is posting (`nil`
    /// otherwise): the other contexts' observers, called on this queue during the post, read
    /// them here instead of through `userInfo` (a dictionary look-up and a dynamic cast, which
    /// every context paid on every save).
    var postedSaveChanges: SaveChanges?

    // Everything below is confined to `queue`.
    //
    // The registry, the pending lists and `rowsExamined` are accessed for every object
    // inserted, fetched or saved, only by QueueData and never while another access to the same
    // property is in progress (no closure or user code runs inside one; an object a subclass
    // deinitializes there must not use its context, as ManagedObject's documentation says):
    // dynamic exclusivity checks (a runtime call and a thread-local access set per access,
    // ≈ 200 instructions) are turned off for them.

    /// The identity map: registered objects of each entity by primary key (temporary IDs
    /// by their negative key).
    @exclusivity(unchecked) var registry: [IdentityMap]
    /// Objects inserted, updated and deleted since the last save. An entry is current only
    /// while the object's state still says so (see the computed sets).
    @exclusivity(unchecked) var pendingInserts: [ManagedObject] = []
    @exclusivity(unchecked) var pendingUpdates: [ManagedObject] = []
    @exclusivity(unchecked) var pendingDeletes: [ManagedObject] = []
    /// For each entity, the ``EntityTable/updateToken`` of the last snapshot every registered
    /// object without unsaved changes was found to hold the row of (`nil`: not known). While a
    /// snapshot still has that token, a lookup in an index needs to look at the objects with
    /// unsaved changes only, not at every registered one.
    var currentRowsToken: [EntityTable.UpdateToken?]
    /// Objects inserted, changed or deleted since the last ``processPendingChanges()``, each
    /// once (an object's `.noted` state says it is listed; deleted objects are listed by
    /// `delete`). What they report is decided by their state when the changes are processed.
    @exclusivity(unchecked) var changedSinceProcessing: [ManagedObject] = []
    /// The objects whose ``ManagedObject/prepareForDeletion()`` is running: deleting one of
    /// them from its own hook does not call the hook again.
    var objectsPreparingForDeletion: [ObjectIdentifier] = []
    /// QueueData's own observers of every change (see `addChangeObserver(owner:_:)`).
    var changeObservers: [ChangeObserver] = []
    var mergesAutomaticallyValue = true
    /// Whether fetches compile their predicates (see ``CompiledPredicate``); tests turn it off
    /// to compare with Foundation's evaluation.
    var compilesPredicates = true
    /// Whether fetches use the attribute indexes (tests turn it off to compare with a scan).
    var usesIndexes = true
    /// How many committed rows fetches have examined (a test tells a lookup from a scan by it).
    @exclusivity(unchecked) var rowsExamined = 0
    var mergePolicyValue: MergePolicy = .error
    var transactionAuthorValue: String?
    /// The undo manager recording the context's changes (see ``undoManager``).
    var undoManagerValue: UndoManager?
    /// The permanent keys the context's saves gave to temporary keys, kept once a child
    /// context was made (its objects keep the temporary IDs it pushed): temporary → permanent.
    var permanentKeysForChildren: [Int64: Int64]?
    /// The children made of this context, while they live (the keys above are kept for them).
    var children: [WeakChild] = []
    /// A child's objects known by a temporary ID of its parent (inserted there, or by this
    /// child and pushed): when the parent saves them, they take their permanent IDs here too.
    var temporaryKeysFromParent: [(entityIndex: Int, key: Int64)] = []
    /// The permanent keys a child's objects took, by their temporary keys (references read
    /// before they changed still find them).
    var adoptedPermanentKeys: [Int64: Int64] = [:]
    /// See ``retainsRegisteredObjects``.
    var retainsRegisteredObjectsValue = false
    /// Registered objects that may have become releasable since the last check (registered,
    /// saved or rolled back), by entity and key: checked at the end of the block.
    var releaseCandidates: [(entityIndex: Int, key: Int64)] = []
    /// Whether the next check looks at every registered object instead of the candidates.
    var checksEveryRegisteredObject = false
    /// Whether an object of ``pendingUpdates`` may have lost its last change without a save or a
    /// rollback (a refresh, a merge, an undo): the end of the block then drops such entries, which
    /// would hold their objects (see `dropSettledPendingUpdates()`).
    var pendingUpdatesMaySettle = false
    /// Whether an entry of ``pendingInserts`` or ``pendingDeletes`` may be pending again while
    /// still listed (an undo or redo that brought an object back or removed it again, a child's
    /// save that won over a pending deletion): a later append may then list it twice. Fetches
    /// and counts, which read the lists entry by entry, first call
    /// `removeRepeatedPendingEntries()`.
    var pendingListsMayRepeat = false
    /// How many objects the registry kept at the last check of every object.
    var objectsKeptAtLastFullCheck = 0
    /// How many objects `register(_:)` registered (wrapping): a scan whose count changed while
    /// it ran looks its rows up again before registering them (see `registerScanned(_:since:)`).
    @exclusivity(unchecked) var registrationCount = 0
    /// For each entity, the keys of objects whose `awakeFromFetch()` set a stored value (not a
    /// change: they are not in ``pendingUpdates``), which the indexes of the committed rows do
    /// not know; keys no longer registered are dropped by `unsettledObjects(of:in:)`.
    var awakenedValueKeys: [Set<Int64>]
    /// Whether objects registered from committed rows get their ``ManagedObject/awakeFromFetch()``:
    /// `false` in the private contexts that match, sort or read for another context (a fetch of
    /// committed values, an asynchronous fetch, a controller's, an export), whose objects the app
    /// never sees.
    var awakesFetchedObjects = true

    /// - Parameters:
    ///   - observesSaves: Whether the context merges other contexts' saves (`false` for the
    ///     private contexts of asynchronous fetches, which only read committed rows).
    ///   - sharesParentValidity: Whether the context is invalid whenever `parent` is (a child
    ///     context); `false` for an asynchronous fetch's private context, whose reads through
    ///     a closed parent throw ``StoreError/Code/closed`` instead of trapping.
    init(
        queue: DispatchQueue,
        name: String?,
        coordinator: StoreCoordinator,
        observesSaves: Bool = true,
        parent: ManagedObjectContext? = nil,
        sharesParentValidity: Bool = true,
        onDeinit: @escaping @Sendable () -> Void
    ) {
        let name = name ?? (queue.label.isEmpty ? "unnamed" : queue.label)
        self.queue = queue
        self.name = name
        self.parent = parent
        self.coordinator = coordinator
        self.model = coordinator.model
        self.objectParts = zip(coordinator.model.entities, coordinator.entityKeys).map {
            (Unmanaged.passUnretained($0), Unmanaged.passUnretained($1))
        }
        self.onDeinit = onDeinit
        self.confinement = QueueConfinement(
            queue: queue, contextName: name, parent: sharesParentValidity ? parent?.confinement : nil)
        self.registry = Array(repeating: [:], count: coordinator.model.entities.count)
        self.currentRowsToken = Array(repeating: nil, count: coordinator.model.entities.count)
        self.awakenedValueKeys = Array(repeating: [], count: coordinator.model.entities.count)
        confinement.context = self
        if observesSaves {
            startObservingSaves()
        }
    }

    deinit {
        if let observer {
            NotificationCenter.default.removeObserver(observer)
        }
        if confinement.isOwnStateValid {
            confinement.invalidate(.contextDeallocated)
        }
        // Objects that outlive the context keep their rows, but every access traps.
        onDeinit()
    }

    /// Invalidates the context: later use traps, naming `reason`.
    func invalidate(_ reason: QueueConfinement.State) {
        confinement.invalidate(reason)
    }

    @inline(__always)
    func checkConfined() {
        confinement.check("ManagedObjectContext '\(name)'")
    }

    // MARK: Settings

    /// Whether saves of other contexts of the same manager are merged into this one
    /// (default `true`). When `false`, call ``mergeChanges(fromContextDidSave:)`` yourself.
    ///
    /// - Important: Call on the context's queue.
    public var automaticallyMergesChangesFromOtherContexts: Bool {
        get {
            checkConfined()
            return mergesAutomaticallyValue
        }
        set {
            checkConfined()
            mergesAutomaticallyValue = newValue
        }
    }

    /// How ``save()`` resolves conflicts with saves of other contexts (default
    /// ``MergePolicy/error``): see ``MergePolicy``.
    ///
    /// - Important: Call on the context's queue.
    public var mergePolicy: MergePolicy {
        get {
            checkConfined()
            return mergePolicyValue
        }
        set {
            checkConfined()
            mergePolicyValue = newValue
        }
    }

    // MARK: Change tracking

    /// Whether the context has unsaved inserts, updates or deletes.
    ///
    /// - Important: Call on the context's queue.
    public var hasChanges: Bool {
        checkConfined()
        return pendingInserts.contains(where: Self.isPendingInsert)
            || pendingUpdates.contains(where: Self.isPendingUpdate)
            || pendingDeletes.contains(where: Self.isPendingDelete)
    }

    /// The objects inserted since the last save.
    ///
    /// - Important: Call on the context's queue.
    public var insertedObjects: Set<ManagedObject> {
        checkConfined()
        return Set(pendingInserts.lazy.filter(Self.isPendingInsert))
    }

    /// The saved objects changed since the last save (not counting inserted or deleted ones).
    ///
    /// - Important: Call on the context's queue.
    public var updatedObjects: Set<ManagedObject> {
        checkConfined()
        return Set(pendingUpdates.lazy.filter(Self.isPendingUpdate))
    }

    /// The objects the next save will delete.
    ///
    /// - Important: Call on the context's queue.
    public var deletedObjects: Set<ManagedObject> {
        checkConfined()
        return Set(pendingDeletes.lazy.filter(Self.isPendingDelete))
    }

    /// Every object registered in the context: its objects with pending changes, the objects
    /// it registered during the current block, and the others that something outside the
    /// context still referenced when it last checked (see ``retainsRegisteredObjects``).
    ///
    /// - Important: Call on the context's queue.
    public var registeredObjects: Set<ManagedObject> {
        checkConfined()
        var objects = Set<ManagedObject>()
        for entityObjects in registry {
            objects.formUnion(entityObjects.values)
        }
        return objects
    }

    static func isPendingInsert(_ object: ManagedObject) -> Bool {
        object._state.contains(.inserted) && !object._state.contains(.detached)
    }

    static func isPendingUpdate(_ object: ManagedObject) -> Bool {
        let state = object._state
        return state.contains(.updated) && !state.contains(.inserted) && !state.contains(.deleted)
            && !state.contains(.detached)
    }

    static func isPendingDelete(_ object: ManagedObject) -> Bool {
        object._state.contains(.deleted) && !object._state.contains(.detached)
    }

    /// Called by an object on its first change since it was fetched or saved.
    func _registerUpdated(_ object: ManagedObject) {
        pendingUpdates.append(object)
    }

    /// Called by an object on its first change since the last ``processPendingChanges()``.
    func _noteChanged(_ object: ManagedObject) {
        changedSinceProcessing.append(object)
    }

    // MARK: Inserting and deleting

    /// Inserts a new object of `type`, with its attributes' default values and a temporary ID,
    /// and calls its ``ManagedObject/awakeFromInsert()``.
    ///
    /// Traps if `type` is not an entity of the manager's model.
    ///
    /// - Important: Call on the context's queue.
    @discardableResult
    public func insert<Object: ManagedObject>(_ type: Object.Type) -> Object {
        checkConfined()
        guard let entityIndex = model.entityIndex(of: type) else {
            fatalError(
                "QueueData: \(type) is not an entity of this context's model; add it to your "
                    + "ContextManagerDelegate's managedObjectModel.")
        }
        return unsafeDowncast(insertObject(entityIndex: entityIndex), to: Object.self)
    }

    /// Inserts a new object of the entity named `entityName` (for entities described without
    /// a subclass, or when the entity is only known by name).
    ///
    /// Traps if the model has no such entity.
    ///
    /// - Important: Call on the context's queue.
    @discardableResult
    public func insert(entityName: String) -> ManagedObject {
        checkConfined()
        guard let entityIndex = model.entityIndexes[entityName] else {
            fatalError("QueueData: the model has no entity named '\(entityName)'.")
        }
        return insertObject(entityIndex: entityIndex)
    }

    private func insertObject(entityIndex: Int) -> ManagedObject {
        // Made from the context's unretained entity and key, as fetched objects are.
        let parts = objectParts[entityIndex]
        let rawKey = ObjectID.temporaryRawValue()
        let object = parts.entity._withUnsafeGuaranteedRef { entity in
            parts.key._withUnsafeGuaranteedRef { key in
                ManagedObject._make(entity: entity, confinement: confinement, key: key, rawKey: rawKey, reference: nil)
            }
        }
        object._state = [.inserted, .noted, .insertedInEvent]
        registry[entityIndex][rawKey] = object
        pendingInserts.append(object)
        changedSinceProcessing.append(object)
        undoManagerValue?.recordInsertion(object)
        confinement.withMarkedBlock {
            object.awakeFromInsert()
        }
        return object
    }

    /// Marks `object` for deletion at the next save; deleting an object inserted since the
    /// last save simply discards it.
    ///
    /// The object's ``ManagedObject/prepareForDeletion()`` runs first, with its values and
    /// relationships as they are; so does that of each object a cascade delete rule deletes
    /// with it, when the rule is applied.
    ///
    /// Traps if the object belongs to another context.
    ///
    /// - Important: Call on the context's queue.
    public func delete(_ object: ManagedObject) {
        checkConfined()
        guard object._confinement === confinement else {
            fatalError(
                "QueueData: delete(_:) was called on context '\(name)' with a \(object.entity.name) object "
                    + "of another context ('\(object._confinement.contextName)'). Get this context's "
                    + "instance with object(with: objectID) first.")
        }
        delete(object, preparing: true)
    }

    /// ``delete(_:)``, calling the object's ``ManagedObject/prepareForDeletion()`` first when
    /// `preparing` (a deletion the app asked for, or a cascade of one); not for deletions a
    /// merge or a child's save applies.
    func delete(_ object: ManagedObject, preparing: Bool) {
        if object._state.contains(.detached) || object._state.contains(.deleted) {
            return
        }
        if preparing, !objectsPreparingForDeletion.contains(ObjectIdentifier(object)) {
            objectsPreparingForDeletion.append(ObjectIdentifier(object))
            confinement.withMarkedBlock {
                object.prepareForDeletion()
            }
            objectsPreparingForDeletion.removeLast()
        }
        let state = object._state
        if state.contains(.detached) || state.contains(.deleted) {
            return
        }
        undoManagerValue?.recordDeletion(object)
        if !state.contains(.noted) {
            changedSinceProcessing.append(object)
        }
        if state.contains(.inserted) {
            unregister(object)
            // Still listed: reported as deleted, or not at all if inserted in the same event. An
            // object an undo brought back under its permanent ID is deleted here again.
            object._state = ObjectState([.deleted, .detached, .noted]).union(state.intersection(.insertedInEvent))
                .union(object._objectID.isTemporaryID ? [] : .deletedBySave)
            discardRelationships(of: object, preparing: preparing)
            return
        }
        object._state.formUnion([.deleted, .noted])
        pendingDeletes.append(object)
    }

    // MARK: Looking up objects by ID

    /// The object with `objectID`: the registered instance, or one loaded from the store.
    /// `nil` if no such object exists (never saved, deleted, or from another store).
    ///
    /// - Important: Call on the context's queue.
    public func object(with objectID: ObjectID) -> ManagedObject? {
        checkConfined()
        guard let entityIndex = entityIndex(of: objectID) else { return nil }
        if let registered = registry[entityIndex][objectID.rawValue] {
            return registered
        }
        if parent != nil {
            guard let row = (try? baseRows(entityIndex: entityIndex, primaryKeys: [objectID.rawValue]))?.first,
                let row
            else { return nil }
            return awakeFetched(register(makeObject(entityIndex: entityIndex, row: row)))
        }
        guard !objectID.isTemporaryID else { return nil }
        let row = try? coordinator.sync {
            try coordinator.committedRow(entityIndex: entityIndex, primaryKey: objectID.rawValue)
        }
        guard let row = row ?? nil else { return nil }
        return awakeFetched(register(makeObject(entityIndex: entityIndex, row: row)))
    }

    /// The object with `objectID`, as `type`.
    ///
    /// - Throws: ``ContextError`` `.objectNotFound` when no such object exists (never saved,
    ///   deleted, from another store), `.wrongType` when it is not a `type`.
    /// - Important: Call on the context's queue.
    public func existingObject<Object: ManagedObject>(
        with objectID: ObjectID,
        as type: Object.Type = Object.self
    ) throws -> Object {
        guard let object = object(with: objectID) else {
            throw ContextError(
                .objectNotFound,
                "No \(objectID.entityName) object with ID \(objectID) exists in context '\(name)'"
                    + (objectID.isTemporaryID && parent == nil ? " (a temporary ID: save its context first)." : "."),
                objectID: objectID)
        }
        guard let typed = object as? Object else {
            throw ContextError(
                .wrongType, "\(objectID) is a \(Swift.type(of: object)), not a \(Object.self).", objectID: objectID)
        }
        return typed
    }

    // MARK: Registration

    /// The entity index of an ID of this context's store, or `nil`.
    func entityIndex(of objectID: ObjectID) -> Int? {
        let key = objectID.key
        if let index = key.entityIndex, index < coordinator.entityKeys.count, coordinator.entityKeys[index] === key {
            return index
        }
        guard key.storeIdentifier == coordinator.storeIdentifier else { return nil }
        return model.entityIndexes[key.entityName]
    }

    /// An unregistered object holding a committed row (readable, not writable).
    func makeObject(entityIndex: Int, row: CommittedRow) -> ManagedObject {
        let object = ManagedObject._make(
            entity: model.entities[entityIndex], confinement: confinement,
            objectID: ObjectID(key: coordinator.entityKeys[entityIndex], rawValue: row.primaryKey), committed: row)
        object._state = [.detached]
        return object
    }

    /// An unregistered object (`detached`) for the committed row at `reference`, sharing it.
    func makeObject(entityIndex: Int, reference: RowReference) -> ManagedObject {
        let parts = objectParts[entityIndex]
        let object = parts.entity._withUnsafeGuaranteedRef { entity in
            parts.key._withUnsafeGuaranteedRef { key in
                ManagedObject._make(
                    entity: entity, confinement: confinement, key: key, rawKey: reference.primaryKey,
                    reference: reference)
            }
        }
        object._state = [.detached]
        return object
    }

    /// Registers an object made by `makeObject`, to be given its
    /// ``ManagedObject/awakeFromFetch()`` by `awakeFetched(_:)` once its batch is registered.
    @discardableResult @inline(__always)
    func register(_ object: ManagedObject) -> ManagedObject {
        object._state = .awaitingAwake
        registrationCount &+= 1
        let index = object._objectID.key.entityIndex!
        registry[index][object._objectID.rawValue] = object
        noteReleaseCandidate(entityIndex: index, key: object._objectID.rawValue)
        if object._objectID.rawValue < 0 {
            // Only a child registers rows with temporary keys: its parent's inserted objects.
            temporaryKeysFromParent.append((index, object._objectID.rawValue))
        }
        return object
    }

    func unregister(_ object: ManagedObject) {
        guard let index = object._objectID.key.entityIndex else { return }
        if registry[index][object._objectID.rawValue] === object {
            registry[index][object._objectID.rawValue] = nil
        }
    }
}
