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
    public final let entity: EntityDescription
    // These are read and written on every save and merge of the object, and only by
    // QueueData, on the context's queue, never while another access to the same property is
    // in progress (no closure or user code runs inside one): dynamic exclusivity checks
    // (a runtime call and a thread-local access set per access) are turned off for them.

    /// The object's ID (temporary until the object's first save).
    @exclusivity(unchecked) final var _objectID: ObjectID
    /// The committed values this context last saw (`nil` until an inserted object is saved);
    /// see `_snapshot`.
    @exclusivity(unchecked) final var _committedRow: [StoredValue]?
    /// The committed version of `_snapshot`.
    @exclusivity(unchecked) final var _snapshotVersion: Int64 = 0

    // The fields every attribute access reads come last, next to the subclass's attribute
    // storage, so that one access touches as few cache lines as possible.

    /// The queue confinement of the object's context.
    @usableFromInline
    final let _confinement: QueueConfinement
    /// The object's ``ObjectState``, and whether it owns its row (`ObjectState._ownsRow`).
    /// Read inline by the attribute setters.
    @usableFromInline @exclusivity(unchecked)
    final var _stateBits: UInt16
    /// The row: one slot per attribute, in the entity's order (then the transient attributes).
    ///
    /// An object made from a committed row shares it: `_values` points into the buffer of
    /// `_committedRow` (the same array the coordinator's table and every other context's
    /// object for that row hold), so fetching copies no values. The first write copies the row
    /// into storage the object owns (`_writableValues`); every write goes through it, so a
    /// shared row is never written.
    @usableFromInline @exclusivity(unchecked)
    final var _values: UnsafePointer<StoredValue>

    /// What the context knows about the object.
    final var _state: ObjectState {
        get { ObjectState(rawValue: _stateBits & ~ObjectState._ownsRow) }
        set { _stateBits = newValue.rawValue | (_stateBits & ObjectState._ownsRow) }
    }

    /// The committed values this context last saw (`nil` until an inserted object is saved).
    /// Setting it first gives a sharing object a row of its own: the row it shares is the old
    /// value's.
    final var _snapshot: [StoredValue]? {
        get { _committedRow }
        set {
            if _stateBits & ObjectState._ownsRow == 0 {
                _copyRowIntoOwnStorage()
            }
            _committedRow = newValue
        }
    }

    /// The row, to write: copied first into storage the object owns if it shares a committed row.
    @usableFromInline
    final var _writableValues: UnsafeMutablePointer<StoredValue> {
        if _stateBits & ObjectState._ownsRow == 0 {
            _copyRowIntoOwnStorage()
        }
        return UnsafeMutablePointer(mutating: _values)
    }

    /// Stops sharing a committed row: copies it into storage the object owns.
    @usableFromInline
    final func _copyRowIntoOwnStorage() {
        let count = entity.objectSlotCount
        let storage = UnsafeMutablePointer<StoredValue>.allocate(capacity: Swift.max(count, 1))
        storage.initializeStoredValues(from: _values, count: count)
        _values = UnsafePointer(storage)
        _stateBits |= ObjectState._ownsRow
    }

    /// Takes `values` as its committed row and its current values, sharing the row when it can
    /// (the object has no transient attributes): for an object with no unsaved changes, after a
    /// save or a merge. Any storage it owned is freed.
    final func _takeCommittedRow(_ values: [StoredValue]) {
        let count = entity.columnCount
        guard entity.objectSlotCount == count, count > 0, values.count == count else {
            _load(values)
            _snapshot = values
            return
        }
        if _stateBits & ObjectState._ownsRow != 0 {
            let storage = UnsafeMutablePointer(mutating: _values)
            storage.deinitialize(count: count)
            storage.deallocate()
            _stateBits &= ~ObjectState._ownsRow
        }
        _committedRow = values
        _values = values.withUnsafeBufferPointer { $0.baseAddress! }
    }

    /// Creates an object. Only QueueData can make an ``ObjectConstruction``: insert objects
    /// with ``ManagedObjectContext/insert(_:)`` instead of calling this.
    ///
    /// A subclass with its own designated initializer must implement this one as
    /// `required init(_ construction: ObjectConstruction) { super.init(construction) }` and
    /// must not assign attributes before calling it.
    public required init(_ construction: ObjectConstruction) {
        let entity = construction.entity
        let count = entity.columnCount
        let slotCount = entity.objectSlotCount
        if !construction.isPrototype && entity.managedObjectClass != ManagedObject.self {
            let declared = qd_attribute_slot_get()
            let declaredRelationships = qd_relationship_slot_get()
            let declaredTransients = qd_transient_slot_get() - count
            if declared != entity.attributes.count || declaredRelationships != entity.relationships.count
                || declaredTransients != entity.transientAttributes.count
            {
                fatalError(
                    "QueueData: \(type(of: self)) declares \(declared) @Attribute (and \(declaredTransients) "
                        + "transient) and \(declaredRelationships) @Relationship properties but its entity "
                        + "'\(entity.name)' has \(entity.attributes.count) (and \(entity.transientAttributes.count)) and "
                        + "\(entity.relationships.count). Build the ManagedObjectModel from this class, and declare "
                        + "every attribute with an initial value.")
            }
        }
        self.entity = entity
        self._confinement = construction.confinement
        self._objectID = construction.objectID
        self._committedRow = construction.snapshot
        self._snapshotVersion = construction.snapshotVersion
        let state: ObjectState = construction.isPrototype ? [.detached] : [.constructing]
        if let snapshot = construction.snapshot, let values = construction.values, slotCount == count, count > 0,
            snapshot.count == count,
            values.withUnsafeBufferPointer({ $0.baseAddress }) == snapshot.withUnsafeBufferPointer({ $0.baseAddress })
        {
            // A committed row, with no transient attributes: shared, not copied.
            self._stateBits = state.rawValue
            self._values = snapshot.withUnsafeBufferPointer { $0.baseAddress! }
            return
        }
        let storage = UnsafeMutablePointer<StoredValue>.allocate(capacity: Swift.max(slotCount, 1))
        self._stateBits = state.rawValue | ObjectState._ownsRow
        self._values = UnsafePointer(storage)
        let source = construction.values ?? entity.defaultRow
        precondition(source.count == count, "QueueData: a row of \(entity.name) must have \(count) values")
        source.withUnsafeBufferPointer { buffer in
            storage.initializeStoredValues(from: buffer.baseAddress!, count: count)
        }
        if slotCount > count {
            entity.transientDefaults.withUnsafeBufferPointer { buffer in
                (storage + count).initializeStoredValues(from: buffer.baseAddress!, count: buffer.count)
            }
        }
    }

    deinit {
        if _stateBits & ObjectState._ownsRow != 0 {
            let storage = UnsafeMutablePointer(mutating: _values)
            storage.deinitialize(count: entity.objectSlotCount)
            storage.deallocate()
        }
    }

    /// Puts every transient attribute back to its default, without registering a change.
    final func _resetTransientAttributes() {
        let count = entity.columnCount
        guard entity.objectSlotCount > count else { return }
        let values = _writableValues
        entity.transientDefaults.withUnsafeBufferPointer { buffer in
            (values + count).updateStoredValues(from: buffer.baseAddress!, count: buffer.count)
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

    /// The attributes whose values differ from the committed ones, with their current values.
    ///
    /// For an inserted object: the attributes whose values differ from their defaults.
    ///
    /// - Important: Call on the context's queue.
    public final func changedValues() -> [String: StoredValue] {
        _confinement.check(_subjectDescription)
        let baseline = _snapshot ?? entity.defaultRow
        var changes: [String: StoredValue] = [:]
        for (index, attribute) in entity.attributes.enumerated()
        where !StoredValue.isSame(_values[index], baseline[index]) {
            changes[attribute.name] = _values[index]
        }
        return changes
    }

    /// The committed values (as last fetched, saved or merged) of `keys`, or of every
    /// attribute when `keys` is `nil`. Empty for an object that was never saved.
    ///
    /// - Important: Call on the context's queue.
    public final func committedValues(forKeys keys: [String]?) -> [String: StoredValue] {
        _confinement.check(_subjectDescription)
        guard let snapshot = _snapshot else { return [:] }
        var values: [String: StoredValue] = [:]
        for key in keys ?? entity.attributes.map(\.name) {
            guard let index = entity.index(ofAttribute: key) else {
                fatalError("QueueData: entity '\(entity.name)' has no attribute '\(key)'")
            }
            values[key] = snapshot[index]
        }
        return values
    }

    // MARK: Life cycle hooks

    /// Called once, on the context's queue, right after the object is inserted. Override it
    /// to set up initial values beyond the declared defaults; call `super`.
    open func awakeFromInsert() {}

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
    /// wrote — inserted (now with its permanent ID), updated or deleted (no longer in its
    /// context) — before ``ManagedObjectContext/didSaveNotification`` is posted; call `super`.
    /// Changes made here are not part of the save that just happened: they make the context
    /// dirty again.
    open func didSave() {}

    /// Called at `save()` for each inserted or updated object. Throw a ``ValidationError``
    /// (or any error) to refuse the save; the context reports every failure of the save in
    /// one ``ValidationError`` and keeps its changes. Call `super`.
    open func validateForSave() throws {}

    // MARK: Key-value access

    /// The value of the attribute named `key` in its stored form.
    ///
    /// Works for every entity, including those described without a subclass. Traps if the
    /// entity has no such attribute.
    ///
    /// - Important: Call on the context's queue.
    public final func value(forKey key: String) -> StoredValue {
        _confinement.check(_subjectDescription)
        return _values[_index(ofKey: key)]
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

    /// What trap messages call this object.
    @usableFromInline
    final var _subjectDescription: String {
        "a \(entity.name) object"
    }

    @inlinable
    final func _setValue(_ value: StoredValue, at slot: Int) {
        let pointer = _values + slot
        if StoredValue._isSame(value, at: pointer) {
            return
        }
        if _canChangeWithoutRegistering && pointer.pointee._hasTrivialPayload {
            // The common case, inline: no bookkeeping, nothing to release. (Any call here
            // would make the optimizer retain and release the object around every set.) The
            // object owns its row: `_canChangeWithoutRegistering` says so.
            UnsafeMutablePointer(mutating: pointer).initialize(to: value)
        } else {
            _setValueSlowly(value, at: slot)
        }
    }

    /// Changes the value at `slot` in place with `change`, which returns whether it changed
    /// it. When the object needs no bookkeeping the value is moved out of its slot first, so
    /// that a to-many relationship's keys (held nowhere else once copied on a first change)
    /// grow without being copied each time.
    final func _updateValue(at slot: Int, _ change: (inout StoredValue) -> Bool) {
        if _canChangeWithoutRegistering {
            let pointer = UnsafeMutablePointer(mutating: _values + slot)
            var value = pointer.move()
            _ = change(&value)
            pointer.initialize(to: value)
        } else {
            var value = _values[slot]
            if change(&value) {
                _setValue(value, at: slot)
            }
        }
    }

    /// Registers the change if needed and replaces a value that may hold a payload.
    @usableFromInline
    final func _setValueSlowly(_ value: StoredValue, at slot: Int) {
        let bits = _stateBits
        if bits & ObjectState._freelyWritableMask == 0 || bits & ObjectState._blockedMask != 0 {
            _willChangeValue(at: slot)
        }
        _writableValues[slot] = value
    }

    /// Whether a change needs no bookkeeping: the object was already changed since its
    /// context last processed its pending changes (it is inserted or updated, and listed for the
    /// next ``ManagedObjectContext/processPendingChanges()``), or it is being constructed; and
    /// it is neither deleted nor detached; and it owns its row.
    @inlinable
    final var _canChangeWithoutRegistering: Bool {
        let bits = _stateBits
        return bits & ObjectState._freelyWritableMask != 0
            && bits & (ObjectState._blockedMask | ObjectState._ownsRow) == ObjectState._ownsRow
    }

    /// Registers the first change of a committed object with its context, and refuses
    /// changes to objects that left their context or are deleted.
    @usableFromInline
    final func _willChangeValue(at slot: Int) {
        let state = _state
        if state.contains(.constructing) {
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

    /// The bits that only say what the next `processPendingChanges()` reports.
    static let eventBits: ObjectState = [.noted, .insertedInEvent]
}

/// The parameters of a ``ManagedObject`` under construction. Only QueueData creates these.
public struct ObjectConstruction: Sendable {
    let entity: EntityDescription
    let confinement: QueueConfinement
    let objectID: ObjectID
    let values: [StoredValue]?
    let snapshot: [StoredValue]?
    let snapshotVersion: Int64
    let isPrototype: Bool
}

extension ManagedObject {
    /// Constructs an object of `entity`'s class, handing out attribute slots from 0.
    static func _make(
        entity: EntityDescription,
        confinement: QueueConfinement,
        objectID: ObjectID,
        values: [StoredValue]?,
        snapshot: [StoredValue]?,
        snapshotVersion: Int64
    ) -> ManagedObject {
        let saved = qd_attribute_slot_get()
        let savedRelationship = qd_relationship_slot_get()
        let savedTransient = qd_transient_slot_get()
        qd_attribute_slot_set(0)
        qd_relationship_slot_set(0)
        qd_transient_slot_set(entity.columnCount)
        defer {
            qd_attribute_slot_set(saved)
            qd_relationship_slot_set(savedRelationship)
            qd_transient_slot_set(savedTransient)
        }
        let object = entity.managedObjectClass.init(
            ObjectConstruction(
                entity: entity, confinement: confinement, objectID: objectID, values: values,
                snapshot: snapshot, snapshotVersion: snapshotVersion, isPrototype: false))
        object._state.remove(.constructing)
        return object
    }
}
