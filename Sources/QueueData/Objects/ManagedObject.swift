internal import CQueueDataShims
import Foundation

/// The base class of every persistent object.
///
/// Subclass it and declare attributes with ``Attribute``:
///
/// ```swift
/// final class Destination: ManagedObject {
///     @Attribute var name: String = ""
///     @Attribute var rating: Int = 0
/// }
/// ```
///
/// Objects are created by their context (``ManagedObjectContext/insert(_:)``, fetches) and
/// belong to it: every property access must run on the context's queue and traps otherwise,
/// as does using an object after its context was deallocated or its manager closed. Objects
/// are not `Sendable`; pass their ``objectID`` between queues instead.
///
/// A context holds at most one instance per ``ObjectID``, so identity comparison (`===`,
/// `==`) tells whether two references are the same object.
///
/// A subclass's `deinit` must not use the object's context (fetch, read its registered or
/// changed objects): an object can go while its context is updating its own bookkeeping — a
/// save re-keying it, a block end letting it go. Do clean-up that needs the context in
/// ``willSave()`` or before dropping the object instead.
open class ManagedObject: Hashable {
    /// The object's entity.
    public final var entity: EntityDescription {
        // Kept by the ID's key (every object's key is its coordinator's, which has the entity),
        // not by the object: one reference less in every object.
        _objectID.key.entity!
    }

    // These are read and written on every save and merge of the object, and only by
    // QueueData, on the context's queue, never while another access to the same property is
    // in progress (no closure or user code runs inside one): dynamic exclusivity checks
    // (a runtime call and a thread-local access set per access) are turned off for them.

    /// The object's ID (temporary until the object's first save).
    @exclusivity(unchecked) final var _objectID: ObjectID
    /// The block holding the committed row this context last saw (`nil` until an inserted
    /// object is saved), at `_committedIndex`: a block of the coordinator's table, shared with
    /// every other context's object for rows of it, or a block of its own for a row that lives
    /// in no table. See `_snapshot`.
    @exclusivity(unchecked) final var _committed: RowBlock?

    // The fields every attribute access reads come last, next to the subclass's attribute
    // storage, so that one access touches as few cache lines as possible.

    /// The queue confinement of the object's context.
    @usableFromInline
    final let _confinement: QueueConfinement
    /// The row: one typed field per slot, laid out by the entity's ``RowLayout`` (the columns,
    /// then the transient attributes). Attribute getters load their field from it directly.
    ///
    /// An object made from a committed row shares it: `_row` points into the row's block
    /// (`_committed`, held by the coordinator's table and every other context's object for
    /// rows of it), so fetching copies no values. The first write copies the row into storage
    /// the object owns (`_writableRow`); every write goes through it, so a shared row is never
    /// written.
    @usableFromInline @exclusivity(unchecked)
    final var _row: UnsafeRawPointer
    /// The object's ``ObjectState``, and whether it owns its row (`ObjectState._ownsRow`).
    /// Read inline by the attribute setters.
    @usableFromInline @exclusivity(unchecked)
    final var _stateBits: UInt16
    /// The index of the committed row in `_committed` (a block holds at most 32 rows).
    @exclusivity(unchecked) final var _committedIndex: UInt16 = 0
    // The last fields are 2 bytes each, as are the attribute wrappers a subclass adds after
    // them: an object of four attributes takes 80 bytes (an 80-byte allocation).

    /// The committed version of `_snapshot` (0 for an object never saved): the version of its
    /// committed row, kept by the row's block.
    final var _snapshotVersion: Int64 {
        guard let block = _committed else { return 0 }
        return block.version(Int(_committedIndex))
    }

    /// What the context knows about the object.
    final var _state: ObjectState {
        get { ObjectState(rawValue: _stateBits & ~ObjectState._notStates) }
        set { _stateBits = ObjectState._withWritableInPlace(newValue.rawValue | (_stateBits & ObjectState._ownsRow)) }
    }

    /// The fields of the committed row this context last saw, if any.
    final var _committedFields: UnsafeRawPointer? {
        guard let block = _committed else { return nil }
        return UnsafeRawPointer(block.row(Int(_committedIndex)))
    }

    /// Where the committed row this context last saw lives, if the object has one.
    final var _committedReference: RowReference? {
        guard let block = _committed else { return nil }
        return RowReference(block: block, index: Int(_committedIndex))
    }

    /// The committed values this context last saw (`nil` until an inserted object is saved),
    /// read out of the committed row.
    final var _snapshot: [StoredValue]? {
        guard let fields = _committedFields else { return nil }
        return entity.rowLayout.values(fields, count: entity.columnCount)
    }

    /// Takes `values` at `version` (at least 1) as the committed row this context last saw,
    /// keeping the object's current values: the row gets a block of its own (and the object
    /// first a row of its own, if it shared the old committed row).
    final func _setSnapshot(_ values: [StoredValue], version: Int64) {
        if _stateBits & ObjectState._ownsRow == 0 {
            _copyRowIntoOwnStorage()
        }
        _committed = Self._block(
            entity, CommittedRow(primaryKey: _objectID.rawValue, version: Swift.max(version, 1), values: values))
        _committedIndex = 0
    }

    /// A block of its own for `row`, a committed row that lives in no table.
    private static func _block(_ entity: EntityDescription, _ row: CommittedRow) -> RowBlock {
        guard let block = RowBlock(layout: entity.rowLayout, row: row) else {
            preconditionFailure("QueueData: a row of \(entity.name) holds values that do not fit its attributes")
        }
        return block
    }

    /// The row, to write: copied first into storage the object owns if it shares a committed row.
    @usableFromInline
    final var _writableRow: UnsafeMutableRawPointer {
        if _stateBits & ObjectState._ownsRow == 0 {
            _copyRowIntoOwnStorage()
        }
        return UnsafeMutableRawPointer(mutating: _row)
    }

    /// Stops sharing a committed row: copies it into storage the object owns.
    @usableFromInline
    final func _copyRowIntoOwnStorage() {
        let layout = entity.rowLayout
        let storage = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(layout.objectRowSize, 8), alignment: 8)
        // A shared row has no transient fields (objects with transient attributes always own
        // their rows): copy the columns.
        layout.initializeRow(storage, copying: _row, byteCount: layout.rowSize)
        _row = UnsafeRawPointer(storage)
        _stateBits = ObjectState._withWritableInPlace(_stateBits | ObjectState._ownsRow)
    }

    /// Frees the row the object owns, if it owns one.
    private func _freeOwnRow() {
        if _stateBits & ObjectState._ownsRow != 0 {
            let storage = UnsafeMutableRawPointer(mutating: _row)
            entity.rowLayout.destroyObjectRow(storage)
            storage.deallocate()
            _stateBits = ObjectState._withWritableInPlace(_stateBits & ~ObjectState._ownsRow)
        }
    }

    /// Takes `row` as its committed row and its current values, sharing the row where it lives
    /// when it can (the row was read from a table, and the object has no transient
    /// attributes): for an object with no unsaved changes, after a save or a merge. Any
    /// storage it owned is freed; transient attributes keep their values.
    final func _takeCommittedRow(_ row: CommittedRow) {
        if let reference = row.reference, reference.version == row.version {
            _takeCommittedRow(reference)
        } else {
            _takeCommittedRow(RowReference(block: Self._block(entity, row), index: 0))
        }
    }

    /// Takes the row at `reference` as its committed row and its current values (see
    /// ``_takeCommittedRow(_:)-(CommittedRow)``).
    final func _takeCommittedRow(_ reference: RowReference) {
        let fields = UnsafeRawPointer(reference.fields)
        if entity.rowLayout.hasTransientSlots {
            _load(fields)
        } else {
            _freeOwnRow()
            _row = fields
        }
        _committed = reference.block
        _committedIndex = UInt16(truncatingIfNeeded: reference.index)
    }

    /// Points the object at row `index` of `block`: the same committed row (key and version) in
    /// a later copy of the block it points into, made by a save that wrote another of the
    /// block's rows. It reads the same values, and no longer holds the older copy.
    final func _rebase(onto block: RowBlock, index: Int) {
        if _stateBits & ObjectState._ownsRow == 0 {
            _row = UnsafeRawPointer(block.row(index))
        }
        _committed = block
        _committedIndex = UInt16(truncatingIfNeeded: index)
    }

    /// Creates an object. Only QueueData can make an ``ObjectConstruction``: insert objects
    /// with ``ManagedObjectContext/insert(_:)`` instead of calling this.
    ///
    /// A subclass with its own designated initializer must implement this one as
    /// `required init(_ construction: ObjectConstruction) { super.init(construction) }` and
    /// must not assign attributes before calling it.
    public required init(_ construction: ObjectConstruction) {
        // Read in place: copying the parameters would retain every reference they hold. The
        // common paths read only what the parameters hold by value (a reference read from them
        // is retained and released around its use): the entity only when something is wrong,
        // its layout only for an object with a row of its own.
        let parameters = construction.parameters
        if parameters.pointee.checksDeclarations {
            let declared = qd_attribute_slot_get()
            let declaredRelationships = qd_relationship_slot_get()
            let declaredTransients = qd_transient_slot_get() - parameters.pointee.columnCount
            if declared != parameters.pointee.attributeCount
                || declaredRelationships != parameters.pointee.relationshipCount
                || declaredTransients != parameters.pointee.transientCount
            {
                let entity = parameters.pointee.entity
                fatalError(
                    "QueueData: \(type(of: self)) declares \(declared) @Attribute (and \(declaredTransients) "
                        + "transient) and \(declaredRelationships) @Relationship properties but its entity "
                        + "'\(entity.name)' has \(entity.attributes.count) (and \(entity.transientAttributes.count)) and "
                        + "\(entity.relationships.count). Build the ManagedObjectModel from this class, and declare "
                        + "every attribute with an initial value.")
            }
        }
        self._confinement = parameters.pointee.confinement
        self._objectID = ObjectID(key: parameters.pointee.key, rawValue: parameters.pointee.rawKey)
        let state: ObjectState = parameters.pointee.isPrototype ? [.detached] : [.constructing]
        let committedFields = parameters.pointee.committedFields
        if let committedFields {
            self._committed = parameters.pointee.committedBlock
            self._committedIndex = UInt16(truncatingIfNeeded: parameters.pointee.committedIndex)
            if parameters.pointee.sharesCommittedRow {
                // A committed row, with no transient attributes: shared, not copied.
                self._stateBits = ObjectState._withWritableInPlace(state.rawValue)
                self._row = committedFields
                return
            }
        }
        let layout = parameters.pointee.entity.rowLayout
        let storage = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(layout.objectRowSize, 8), alignment: 8)
        self._stateBits = ObjectState._withWritableInPlace(state.rawValue | ObjectState._ownsRow)
        self._row = UnsafeRawPointer(storage)
        layout.initializeRow(storage, copying: layout.defaults, byteCount: layout.objectRowSize)
        if let values = parameters.pointee.values {
            _load(values)
        } else if let committedFields {
            _load(committedFields)
        }
    }

    deinit {
        if _stateBits & ObjectState._ownsRow != 0 {
            let storage = UnsafeMutableRawPointer(mutating: _row)
            entity.rowLayout.destroyObjectRow(storage)
            storage.deallocate()
        }
    }

    // MARK: Values by slot

    /// The value in `slot`, in its stored form.
    @usableFromInline
    final func _value(at slot: Int) -> StoredValue {
        entity.rowLayout.value(_row, slot: slot)
    }

    /// The values of the columns (the committed row's slots), in their stored form.
    final var _columnValues: [StoredValue] {
        entity.rowLayout.values(_row, count: entity.columnCount)
    }

    /// The values of every slot (the columns, then the transient attributes).
    final var _slotValues: [StoredValue] {
        entity.rowLayout.values(_row, count: entity.objectSlotCount)
    }

    /// Whether `slot` holds the value the committed row holds (`false` for an object that was
    /// never saved).
    final func _isCommittedValue(at slot: Int) -> Bool {
        guard let committed = _committedFields else { return false }
        return entity.rowLayout.isSame(_row, committed, slot: slot)
    }

    /// Whether every column holds its committed value (`false` for an object never saved).
    final var _hasCommittedValues: Bool {
        guard let committed = _committedFields else { return false }
        return entity.rowLayout.isSameRow(_row, committed, count: entity.columnCount)
    }

    /// Replaces the value in `slot` without any bookkeeping (no change is registered). Traps
    /// if the value does not fit the slot.
    final func _storeValue(_ value: StoredValue, at slot: Int) {
        guard entity.rowLayout.setValue(value, in: _writableRow, slot: slot) else {
            _trapMisfit(value, slot: slot)
        }
    }

    /// Replaces the values of the first `values.count` slots with `values`, without any
    /// bookkeeping.
    final func _load(_ values: [StoredValue]) {
        for (slot, value) in values.enumerated() {
            _storeValue(value, at: slot)
        }
    }

    /// Replaces the columns' values with those of the committed row at `fields`, without any
    /// bookkeeping.
    final func _load(_ fields: UnsafeRawPointer) {
        let layout = entity.rowLayout
        let row = _writableRow
        layout.destroyRow(row)
        layout.initializeRow(row, copying: fields, byteCount: layout.rowSize)
    }

    /// Puts every transient attribute back to its default, without registering a change.
    /// Whether every transient attribute holds its default. Transient values are never saved,
    /// so an object whose columns hold their committed values still has an unsaved change if
    /// one of them does not (as near as the object can tell: one set back to its default, or
    /// left changed since a save, counts as what it holds).
    final var _transientsHoldDefaults: Bool {
        let count = entity.columnCount
        guard entity.objectSlotCount > count else { return true }
        for (offset, value) in entity.transientDefaults.enumerated()
        where !StoredValue.isSame(_value(at: count + offset), value) {
            return false
        }
        return true
    }

    final func _resetTransientAttributes() {
        let count = entity.columnCount
        guard entity.objectSlotCount > count else { return }
        for (offset, value) in entity.transientDefaults.enumerated() {
            _storeValue(value, at: count + offset)
        }
    }

    /// The name of the entity this class represents: the class name, unless overridden.
    open class var entityName: String {
        String(describing: self)
    }

    /// The entity's name in stores written before it was renamed (Core Data's renaming
    /// identifier): override it when you rename the class (or its `entityName`), and
    /// migration carries the rows over. When renaming again, keep the first name: stores
    /// record it, so stores of every earlier version are matched. Not inherited by subclasses.
    open class var originalEntityName: String? {
        nil
    }

    /// Sets of attributes whose values no two objects of the entity may share (Core Data's
    /// uniqueness constraints), beyond single attributes declared `@Attribute(.unique)`:
    ///
    /// ```swift
    /// override class var uniquenessConstraints: [[String]] { [["firstName", "lastName"]] }
    /// ```
    ///
    /// A save that would create a duplicate is a constraint conflict, settled by the context's
    /// ``MergePolicy``.
    open class var uniquenessConstraints: [[String]] {
        []
    }

    // MARK: Identity and state

    /// The object's ID: temporary until its context saves it.
    ///
    /// - Important: Call on the context's queue.
    public final var objectID: ObjectID {
        _confinement.check(_subjectDescription)
        return _objectID
    }

    /// The context the object belongs to; `nil` once it left it (deleted and saved, deleted by
    /// a merge, discarded by `rollback()` or `reset()`).
    ///
    /// - Important: Call on the context's queue.
    public final var managedObjectContext: ManagedObjectContext? {
        _confinement.check(_subjectDescription)
        return _state.contains(.detached) ? nil : _confinement.context
    }

    /// Whether the object was inserted and not saved yet.
    ///
    /// - Important: Call on the context's queue.
    public final var isInserted: Bool {
        _confinement.check(_subjectDescription)
        return _state.contains(.inserted)
    }

    /// Whether the object has unsaved changes to its attributes or relationships (transient
    /// attributes included), and is not inserted or deleted.
    ///
    /// - Important: Call on the context's queue.
    public final var isUpdated: Bool {
        _confinement.check(_subjectDescription)
        return _state.contains(.updated) && !_state.contains(.inserted) && !_state.contains(.deleted)
    }

    /// Whether the object will be deleted by the next save, or was deleted (by a save of its
    /// context or by a merged save of another context: it then also left its context, and
    /// ``managedObjectContext`` is `nil`).
    ///
    /// - Important: Call on the context's queue.
    public final var isDeleted: Bool {
        _confinement.check(_subjectDescription)
        return _state.contains(.deleted)
    }

    /// Whether the object is inserted, updated or deleted and not yet saved (`false` once it
    /// left its context).
    ///
    /// - Important: Call on the context's queue.
    public final var hasChanges: Bool {
        _confinement.check(_subjectDescription)
        return !_state.contains(.detached)
            && (_state.contains(.inserted) || _state.contains(.updated) || _state.contains(.deleted))
    }

    /// Whether a save would write the object (Core Data's `hasPersistentChangedValues`): it is
    /// inserted, or pending deletion, or one of its attributes or relationships differs from its
    /// committed value. Unlike ``hasChanges``, a change of transient attributes alone does not
    /// count, nor does a value changed and then set back.
    ///
    /// - Important: Call on the context's queue.
    public final var hasPersistentChangedValues: Bool {
        _confinement.check(_subjectDescription)
        let state = _state
        guard !state.contains(.detached) else { return false }
        if state.contains(.inserted) || state.contains(.deleted) {
            return true
        }
        guard state.contains(.updated), let committed = _committedFields else { return false }
        let layout = entity.rowLayout
        for index in 0..<entity.columnCount where !layout.isSame(_row, committed, slot: index) {
            return true
        }
        return false
    }

    /// The attributes and relationships whose values differ from the committed ones, with their
    /// current values (a relationship's in its stored form: the related rows' keys, see
    /// ``StoredValue``), as Core Data's `changedValues()`.
    ///
    /// For an inserted object: those whose values differ from their defaults.
    ///
    /// - Important: Call on the context's queue.
    public final func changedValues() -> [String: StoredValue] {
        _confinement.check(_subjectDescription)
        let layout = entity.rowLayout
        let baseline = _committedFields ?? UnsafeRawPointer(layout.defaults)
        var changes: [String: StoredValue] = [:]
        for index in 0..<entity.columnCount where !layout.isSame(_row, baseline, slot: index) {
            changes[entity.columnName(index)] = _value(at: index)
        }
        return changes
    }

    /// The committed values (as last fetched, saved or merged) of `keys` — attribute or
    /// relationship names (a relationship's value in its stored form) — or of every attribute
    /// when `keys` is `nil`. Empty for an object that was never saved.
    ///
    /// Traps when a key names neither an attribute nor a relationship of the entity (as Core Data
    /// raises an exception).
    ///
    /// - Important: Call on the context's queue.
    public final func committedValues(forKeys keys: [String]?) -> [String: StoredValue] {
        _confinement.check(_subjectDescription)
        guard let snapshot = _snapshot else { return [:] }
        var values: [String: StoredValue] = [:]
        for key in keys ?? entity.attributes.map(\.name) {
            guard let index = entity.column(named: key), index < snapshot.count else {
                fatalError("QueueData: entity '\(entity.name)' has no attribute or relationship '\(key)'")
            }
            values[key] = snapshot[index]
        }
        return values
    }

    // MARK: Life cycle hooks

    /// Called once, on the context's queue, right after the object is inserted. Override it
    /// to set up initial values beyond the declared defaults; call `super`.
    open func awakeFromInsert() {}

    /// Called on the context's queue after the object's values were loaded from the store into
    /// its context: once the object is registered there — by a fetch (`fetch`, `enumerate`,
    /// an asynchronous fetch, a fetched-results controller), ``ManagedObjectContext/object(with:)``
    /// and ``ManagedObjectContext/existingObject(with:as:)``, or following a relationship to an
    /// object the context did not hold — and again after
    /// ``ManagedObjectContext/refresh(_:mergeChanges:)`` or
    /// ``ManagedObjectContext/refreshAllObjects()`` reloaded them. Override it to compute derived
    /// values, typically ``AttributeOptions/transient`` attributes and other caches; call `super`
    /// first.
    ///
    /// As in Core Data, the context's change processing is off around it: values set here are
    /// the object's values, not changes — the object is not updated, observers are not told, the
    /// undo manager records nothing (a persistent attribute set here is saved only along with a
    /// later change of the object; until then fetches match and sort the object on the value set,
    /// whether they read an index or evaluate a predicate). Do not change relationships here:
    /// their inverses would be changed as changes. A fetch made here returns the instances the
    /// fetch that loaded the object returns (one instance per ID, whichever registered it first;
    /// a fetch registers and calls its objects one by one, an enumeration's batch, a controller
    /// and a lookup by IDs register all of theirs first). A `refresh(self, mergeChanges:)` made
    /// here reloads the values without calling it again: the running call goes on.
    ///
    /// Not called for inserted objects (``awakeFromInsert()``), for rows a fetch only evaluated
    /// a predicate or a sort on (objects a predicate reaches through a relationship are loaded
    /// into the context, as when your code follows it, and called), in the private contexts that
    /// match committed values or fetch asynchronously on another context's behalf (their objects
    /// never reach you: the context you fetch in calls it when it registers them), nor when a merge
    /// of another context's save, `rollback()` or an undo changes a registered object's values
    /// (observe ``ManagedObjectContext/objectsDidChangeNotification`` for those).
    open func awakeFromFetch() {}

    /// Called on the context's queue when the object is about to be deleted, before anything
    /// changes: by ``ManagedObjectContext/delete(_:)``, and for each object a cascade delete
    /// rule deletes along with another, when the rule applies (at the save, or at the end of
    /// the event with an undo manager). The object still has its values and relationships;
    /// use it to clean up what the object stands for outside the store (a file it names, say),
    /// or to delete or change other objects (whose deletions apply their own rules). An object
    /// already deleted — the one whose cascade takes this one along — cannot be changed:
    /// setting its values traps, so check ``isDeleted`` before updating, say, a total on it.
    /// Not called for objects another context's save deleted (a merge removes them), nor for
    /// deletions a child context's save or an undo or redo applies. Call `super`.
    open func prepareForDeletion() {}

    /// Called at `save()`, on the context's queue, for each object the save will write —
    /// inserted, updated or deleted — before validation; call `super`.
    ///
    /// It may still change the object (or others): objects changed during a round of
    /// `willSave()` calls get another call, until a round changes nothing, so compute values
    /// that converge (setting a value equal to the current one is not a change). A save whose
    /// `willSave()` calls keep changing objects for 100 rounds fails with ``ValidationError``.
    /// A deleted object cannot be changed.
    open func willSave() {}

    /// Called after a successful `save()`, on the context's queue, for each object the save
    /// called ``willSave()`` on — inserted (now with its permanent ID), updated or deleted (no
    /// longer in its context) — before ``ManagedObjectContext/didSaveNotification`` is posted;
    /// call `super`. An updated object whose values were set back to its saved ones (or whose
    /// only change was a transient attribute) gets it too, though the save wrote nothing for it.
    /// Changes made here are not part of the save that just happened: they make the context
    /// dirty again.
    open func didSave() {}

    /// Called at `save()` for each inserted or updated object, before its
    /// ``validateForInsert()`` or ``validateForUpdate()``. Throw a ``ValidationError``
    /// (or any error) to refuse the save; the context reports every failure of the save in
    /// one ``ValidationError`` and keeps its changes. Call `super`.
    open func validateForSave() throws {}

    /// Called at `save()` for each inserted object, after its ``validateForSave()`` (Core Data's
    /// hook for what only a new object must satisfy). Throw a ``ValidationError`` (or any error)
    /// to refuse the save: failures are reported with the others, and the context keeps its
    /// changes. An object that an undo brings back after its deletion was saved is inserted
    /// again: it gets this call. Call `super`.
    open func validateForInsert() throws {}

    /// Called at `save()` for each updated object (not inserted, not deleted), after its
    /// ``validateForSave()`` (Core Data's hook for what a change of a saved object must
    /// satisfy). Throw a ``ValidationError`` (or any error) to refuse the save: failures are
    /// reported with the others, and the context keeps its changes. Call `super`.
    open func validateForUpdate() throws {}

    /// Called at `save()` for each object the save deletes (after the delete rules applied:
    /// objects a cascade deletes too), after ``validateForSave()`` ran on the others. Throw a
    /// ``ValidationError`` (or any error) to refuse the deletion: the save fails as for any
    /// other validation failure, reporting them all, and the context keeps its changes (the
    /// object stays pending deletion). Deny delete rules are checked without it. A child
    /// context's save calls it, and so does the parent's save of the deletions the child
    /// pushed, as any save validates what it deletes (as in Core Data). Call `super`.
    open func validateForDelete() throws {}

    // MARK: Key-value access

    /// The value of the attribute named `key` in its stored form.
    ///
    /// Works for every entity, including those described without a subclass. Traps if the
    /// entity has no such attribute.
    ///
    /// - Important: Call on the context's queue.
    public final func value(forKey key: String) -> StoredValue {
        _confinement.check(_subjectDescription)
        return _value(at: _index(ofKey: key))
    }

    /// Sets the attribute named `key` from its stored form.
    ///
    /// Traps if the entity has no such attribute or the value does not fit its type.
    ///
    /// - Important: Call on the context's queue.
    public final func setValue(_ value: StoredValue, forKey key: String) {
        _confinement.check(_subjectDescription)
        let index = _index(ofKey: key)
        let attribute = entity.attribute(atSlot: index)
        guard value.fits(attribute.type, isOptional: attribute.isOptional) else {
            fatalError(
                "QueueData: \(value) does not fit \(entity.name).\(key), of type "
                    + "\(attribute.type.rawValue)\(attribute.isOptional ? "?" : "")")
        }
        _setValue(value, at: index)
    }

    private func _index(ofKey key: String) -> Int {
        guard let index = entity.slot(ofAttribute: key) else {
            fatalError("QueueData: entity '\(entity.name)' has no attribute '\(key)'")
        }
        return index
    }

    // MARK: Hashable

    /// Identity: a context holds one instance per object.
    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool {
        lhs === rhs
    }

    /// Hashes the object's identity.
    public final func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }

    // MARK: Internals used by the attribute accessors

    /// Checks that the caller runs where the object's context admits it; traps otherwise. The
    /// attribute getters' check: inside the context's own blocks a thread-local comparison,
    /// inline; elsewhere one call that takes only the object, so that a loop of gets keeps
    /// its values in registers across it (the confinement's own `check` keeps the
    /// confinement and the subject's inputs alive across its slow path, spilling a loop's
    /// values to the stack).
    @inlinable @inline(__always)
    final func _checkConfined() {
        if !_confinement._isMarkedCurrent() && !_isConfinedOffMark(self) {
            _trapOffQueue()
        }
    }

    /// Traps, naming the object and why it is not usable here.
    @usableFromInline @inline(never)
    final func _trapOffQueue() -> Never {
        _confinement._trapNotConfined(_subjectDescription)
    }

    /// What trap messages call this object.
    @usableFromInline
    final var _subjectDescription: String {
        "a \(entity.name) object"
    }

    /// Sets the value in `slot` from its stored form, registering the change (the path of
    /// ``setValue(_:forKey:)``, of transformable and custom attribute types, and of
    /// relationships). Setting the value the slot holds changes nothing.
    @usableFromInline
    final func _setValue(_ value: StoredValue, at slot: Int) {
        let layout = entity.rowLayout
        if layout.isSame(_row, slot: slot, as: value) {
            return
        }
        guard layout.setValue(value, in: _prepareToWrite(slot: slot), slot: slot) else {
            _trapMisfit(value, slot: slot)
        }
    }

    /// Changes the value at `slot` (a relationship's) in place with `change`, which returns
    /// whether it changed it. When the object needs no bookkeeping the value is moved out of
    /// its slot first, so that a to-many relationship's keys (held nowhere else once copied on
    /// a first change) grow without being copied each time.
    final func _updateValue(at slot: Int, _ change: (inout StoredValue) -> Bool) {
        let layout = entity.rowLayout
        if _canChangeWithoutRegistering && layout.kinds[slot] == .storedValue {
            let pointer = (UnsafeMutableRawPointer(mutating: _row) + layout.offsets[slot])
                .assumingMemoryBound(to: StoredValue.self)
            var value = pointer.move()
            _ = change(&value)
            pointer.initialize(to: value)
        } else {
            var value = _value(at: slot)
            if change(&value) {
                _setValue(value, at: slot)
            }
        }
    }

    /// Registers a change of `slot` if the object's state needs it (a first change since the
    /// context last processed its changes; a deleted or detached object traps), and returns
    /// the row to write the new value into (the object's own: copied first if it shared a
    /// committed row).
    @usableFromInline
    final func _prepareToWrite(slot: Int) -> UnsafeMutableRawPointer {
        let bits = _stateBits
        if bits & ObjectState._freelyWritableMask == 0 || bits & ObjectState._blockedMask != 0 {
            _willChangeValue(at: slot)
        }
        return _writableRow
    }

    /// ``_prepareToWrite(slot:)`` for the slot whose field is at `offset`.
    @usableFromInline
    final func _prepareToWrite(offset: Int) -> UnsafeMutableRawPointer {
        let bits = _stateBits
        if bits & ObjectState._freelyWritableMask == 0 || bits & ObjectState._blockedMask != 0 {
            _willChangeValue(at: _slot(atOffset: offset))
        }
        return _writableRow
    }

    /// The slot whose field is at `offset` in the object's row.
    @usableFromInline
    final func _slot(atOffset offset: Int) -> Int {
        entity.rowLayout.slot(atOffset: offset)
    }

    /// Traps for a value that does not fit its slot's type.
    final func _trapMisfit(_ value: StoredValue, slot: Int) -> Never {
        let kind = entity.rowLayout.kinds[slot]
        fatalError(
            "QueueData: \(value) does not fit \(entity.name).\(entity.columnName(slot)), stored as \(kind.fieldType). An "
                + "AttributeValue type's storedValue must be of its attributeType.")
    }

    /// Whether a change needs no bookkeeping: the object was already changed since its
    /// context last processed its pending changes (it is inserted or updated, and listed for the
    /// next ``ManagedObjectContext/processPendingChanges()``), or it is being constructed; and
    /// it is neither deleted nor detached; and it owns its row.
    ///
    /// One bit test: `_stateBits` keeps the answer (`ObjectState._writableInPlace`), updated
    /// wherever the state or the row's ownership changes.
    @inlinable
    final var _canChangeWithoutRegistering: Bool {
        _stateBits & ObjectState._writableInPlace != 0
    }

    /// Registers the first change of a committed object with its context, and refuses
    /// changes to objects that left their context or are deleted.
    @usableFromInline
    final func _willChangeValue(at slot: Int) {
        let state = _state
        if state.contains(.constructing) {
            return
        }
        if state.contains(.awakening) {
            if slot < entity.columnCount, let context = _confinement.context {
                context.noteAwakenedValue(of: self)
            }
            return
        }
        if state.contains(.detached) {
            fatalError(
                "QueueData: \(entity.name).\(entity.columnName(slot)) was set on an object that is no "
                    + "longer in its context (it was deleted and saved, deleted by another context, "
                    + "or discarded by rollback() or reset()). Fetch it again.")
        }
        if state.contains(.deleted) {
            fatalError(
                "QueueData: \(entity.name).\(entity.columnName(slot)) was set on a deleted object. "
                    + "Undo the deletion first: rollback(), or undo() when the context has an undo manager.")
        }
        guard let context = _confinement.context else {
            _confinement._trapNotConfined(_subjectDescription)
        }
        if let undoManager = context.undoManagerValue {
            undoManager.willChange(self)
        }
        var newState = state
        if !state.contains(.inserted) && !state.contains(.updated) {
            newState.insert(.updated)
            context._registerUpdated(self)
        }
        if !state.contains(.noted) {
            newState.insert(.noted)
            context._noteChanged(self)
        }
        _state = newState
    }

    @usableFromInline
    final func _trapUndecodable(slot: Int, stored: StoredValue, error: (any Error)?) -> Never {
        let attribute = entity.attribute(atSlot: slot)
        fatalError(
            "QueueData: \(entity.name).\(attribute.name) holds \(stored), which cannot be read as its "
                + "declared type\(error.map { ": \($0)" } ?? ""). A transformable type must stay "
                + "decodable from what earlier versions stored.")
    }

    @usableFromInline
    final func _trapUnencodable(slot: Int, error: any Error) -> Never {
        fatalError(
            "QueueData: the value set on \(entity.name).\(entity.attribute(atSlot: slot).name) cannot be encoded "
                + "as JSON: \(error)")
    }
}

@available(*, unavailable, message: "Managed objects are confined to their context's queue; pass objectID instead")
extension ManagedObject: Sendable {}

/// What a context knows about one of its objects.
@usableFromInline
struct ObjectState: OptionSet, Sendable {
    @usableFromInline
    let rawValue: UInt16

    @usableFromInline
    init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// States in which attributes change without registering the object: noted (inserted or
    /// updated, and already listed for the next `processPendingChanges()`), constructing.
    @usableFromInline
    static let _freelyWritableMask: UInt16 = 0b11_0000
    /// States in which a change must go through `_willChangeValue`: deleted, detached.
    @usableFromInline
    static let _blockedMask: UInt16 = 0b00_1100
    /// Not a state: the bit of `ManagedObject._stateBits` that says the object owns its row
    /// (it does not share a committed row).
    @usableFromInline
    static let _ownsRow: UInt16 = 1 << 15
    /// Not a state: the bit of `ManagedObject._stateBits` that says a change needs no
    /// bookkeeping and may be written in place (a freely writable state, not blocked, and the
    /// object owns its row): what an attribute setter's fast path tests, derived from the other
    /// bits by ``_withWritableInPlace(_:)`` whenever they change.
    @usableFromInline
    static let _writableInPlace: UInt16 = 1 << 14
    /// The bits of `ManagedObject._stateBits` that are not states.
    static let _notStates: UInt16 = _ownsRow | _writableInPlace

    /// `bits` (states and `_ownsRow`) with `_writableInPlace` set to what they say.
    @inline(__always)
    static func _withWritableInPlace(_ bits: UInt16) -> UInt16 {
        let bits = bits & ~_writableInPlace
        let writable = bits & _freelyWritableMask != 0 && bits & (_blockedMask | _ownsRow) == _ownsRow
        return writable ? bits | _writableInPlace : bits
    }

    /// Inserted and not saved.
    static let inserted = ObjectState(rawValue: 1 << 0)
    /// Has unsaved attribute changes (registered in the context's updated objects).
    static let updated = ObjectState(rawValue: 1 << 1)
    /// Deleted (pending, or saved/merged when also `detached`).
    static let deleted = ObjectState(rawValue: 1 << 2)
    /// No longer registered in its context: reads still work, writes trap.
    static let detached = ObjectState(rawValue: 1 << 3)
    /// Being constructed: attribute writes are initial values, not changes.
    static let constructing = ObjectState(rawValue: 1 << 4)
    /// Listed in the context's changes since its last `processPendingChanges()` (which clears
    /// it): later changes before then need no bookkeeping.
    static let noted = ObjectState(rawValue: 1 << 5)
    /// Inserted since the context's last `processPendingChanges()`: reported as inserted, not
    /// updated (and not at all if discarded before then).
    static let insertedInEvent = ObjectState(rawValue: 1 << 6)
    /// Deleted by its own context (by a save of it, not a merge of another context's save, or
    /// discarded after an undo brought it back under its permanent ID): an undo may write it
    /// back.
    static let deletedBySave = ObjectState(rawValue: 1 << 7)
    /// Already in the lists a save is building (set and cleared within that one call): each
    /// object is listed once without hashing it.
    static let listed = ObjectState(rawValue: 1 << 8)
    /// Registered from a committed row and not yet given its ``ManagedObject/awakeFromFetch()``
    /// (set by `register(_:)`, cleared by the call that registered it once its batch is
    /// registered).
    static let awaitingAwake = ObjectState(rawValue: 1 << 9)
    /// In its ``ManagedObject/awakeFromFetch()``: attribute writes are the object's values, not
    /// changes (as while `constructing`), but each goes through `_willChangeValue`, which notes
    /// the objects whose stored values no longer are their committed row's (see
    /// `ManagedObjectContext.awakenedValueKeys`).
    static let awakening = ObjectState(rawValue: 1 << 10)

    /// The bits that only say what the next `processPendingChanges()` reports.
    static let eventBits: ObjectState = [.noted, .insertedInEvent]
}

/// The parameters of a ``ManagedObject`` under construction. Only QueueData creates these.
///
/// `@unchecked Sendable`: it points to parameters that live for as long as the initializer it
/// is passed to runs, on the thread that runs it (on the stack of the call that constructs the
/// object, or forever for the discovery prototype's); it is never used after that call.
public struct ObjectConstruction: @unchecked Sendable {
    /// A pointer, so that passing the parameters to every initializer of a subclass chain and
    /// on to ``ManagedObject``'s copies no reference-counted value.
    let parameters: UnsafePointer<ObjectConstructionParameters>
}

/// What ``ObjectConstruction`` points to.
///
/// The references are not retained: whoever makes the parameters keeps what they refer to
/// alive for as long as the parameters are used (``ManagedObject/_make(entity:confinement:key:rawKey:values:reference:)``
/// holds them as its arguments; the discovery prototype's live as long as the process). Only
/// the object retains what it keeps: one retain and release fewer of each, per object made.
struct ObjectConstructionParameters {
    unowned(unsafe) let entity: EntityDescription
    unowned(unsafe) let confinement: QueueConfinement
    /// The object's ID: its key's entity key, and its raw value.
    unowned(unsafe) let key: EntityKey
    let rawKey: Int64
    /// The values the object starts with (the columns), when they are not the committed row's.
    let values: [StoredValue]?
    /// The block of the committed row the object was made from, if any (its version is the
    /// row's), and the row's index in it.
    unowned(unsafe) let committedBlock: RowBlock?
    let committedIndex: Int
    /// The committed row's fields, in `committedBlock`.
    let committedFields: UnsafeRawPointer?
    /// Whether the object shares the committed row (it has one, takes no other values and has
    /// no transient attributes).
    let sharesCommittedRow: Bool
    let isPrototype: Bool
    /// Whether the slots the subclass's attributes took are checked against the entity's
    /// counts (not for a prototype, nor for an entity described without a subclass).
    let checksDeclarations: Bool
    /// The entity's counts, for that check.
    let columnCount: Int
    let attributeCount: Int
    let relationshipCount: Int
    let transientCount: Int

    init(
        entity: EntityDescription,
        confinement: QueueConfinement,
        key: EntityKey,
        rawKey: Int64,
        values: [StoredValue]?,
        committed: RowReference?,
        isPrototype: Bool
    ) {
        self.entity = entity
        self.confinement = confinement
        self.key = key
        self.rawKey = rawKey
        self.values = values
        self.committedBlock = committed?.block
        self.committedIndex = committed?.index ?? 0
        self.committedFields = committed.map { UnsafeRawPointer($0.fields) }
        self.sharesCommittedRow = committed != nil && values == nil && !entity.rowLayout.hasTransientSlots
        self.isPrototype = isPrototype
        self.checksDeclarations = !isPrototype && entity.managedObjectClass != ManagedObject.self
        self.columnCount = entity.columnCount
        self.attributeCount = entity.attributes.count
        self.relationshipCount = entity.relationships.count
        self.transientCount = entity.transientAttributes.count
    }
}

extension ManagedObject {
    /// Constructs an object of `entity`'s class, handing out attribute slots from 0.
    ///
    /// - Parameters:
    ///   - values: The columns' values it starts with; `nil`: the committed row's, or the
    ///     defaults for an object without one.
    ///   - committed: The committed row it was made from (shared when `values` is `nil`), with
    ///     its version.
    static func _make(
        entity: EntityDescription,
        confinement: QueueConfinement,
        objectID: ObjectID,
        values: [StoredValue]? = nil,
        committed: CommittedRow? = nil
    ) -> ManagedObject {
        let reference = committed.map { row in
            row.reference.flatMap { $0.version == row.version ? $0 : nil }
                ?? RowReference(block: _block(entity, row), index: 0)
        }
        return _make(entity: entity, confinement: confinement, objectID: objectID, values: values, reference: reference)
    }

    /// ``_make(entity:confinement:objectID:values:committed:)`` for a row where it lives.
    static func _make(
        entity: EntityDescription,
        confinement: QueueConfinement,
        objectID: ObjectID,
        values: [StoredValue]? = nil,
        reference: RowReference?
    ) -> ManagedObject {
        _make(
            entity: entity, confinement: confinement, key: objectID.key, rawKey: objectID.rawValue, values: values,
            reference: reference)
    }

    /// ``_make(entity:confinement:objectID:values:reference:)`` for the ID of `key` and
    /// `rawKey`.
    static func _make(
        entity: EntityDescription,
        confinement: QueueConfinement,
        key: EntityKey,
        rawKey: Int64,
        values: [StoredValue]? = nil,
        reference: RowReference?
    ) -> ManagedObject {
        // The object finds its entity through its ID's key.
        precondition(key.entity === entity, "QueueData: an object's ID must have its coordinator's key")
        let saved = qd_construction_begin(entity.rowLayout.offsetTable, entity.objectSlotCount, entity.columnCount)
        defer { qd_construction_set(saved) }
        // (Every reference the parameters hold is an argument of this call: alive throughout.)
        var parameters = ObjectConstructionParameters(
            entity: entity, confinement: confinement, key: key, rawKey: rawKey, values: values, committed: reference,
            isPrototype: false)
        let object = withUnsafePointer(to: &parameters) { pointer in
            entity.managedObjectClass.init(ObjectConstruction(parameters: pointer))
        }
        object._state.remove(.constructing)
        return object
    }
}

/// The slow path of ``ManagedObject/_checkConfined()``: the confinement's slow path, for the
/// object's confinement. A function, not a static method: a call from another module passes no
/// metatype (whose accessor it called first). `@_effects(readonly)`, as the confinement's slow
/// path: its result is always used, so the call is never removed.
@usableFromInline @inline(never) @_effects(readonly)
func _isConfinedOffMark(_ object: ManagedObject) -> Bool {
    object._confinement.isConfinedOffMark()
}
