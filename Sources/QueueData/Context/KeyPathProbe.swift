internal import CQueueDataShims
import Foundation

/// Finds out which persistent attribute a key path names, so that fetches can read its values
/// straight from rows instead of making objects and applying the key path to them.
///
/// Key paths cannot be inspected, so the probe reads the key path once on a real object and
/// records what the object's attribute getters report (off the confinement's fast path, every
/// `@Attribute` getter reports its own key path and slot: see `_checkConfinement(reading:slot:)`).
/// The key path names an attribute only when exactly one getter ran, on that object, for that
/// very key path — the synthesized accessor of an `@Attribute` property — and the value it
/// returned is the stored one. A computed property (even one returning an attribute unchanged),
/// a relationship, a transient attribute or a key path through another object is not resolved:
/// fetches read those on objects, through their getters, as before.
final class KeyPathProbe {
    /// One attribute read reported while probing.
    struct Read {
        let object: ObjectIdentifier
        let keyPath: AnyKeyPath
        let slot: Int
    }

    /// The reads reported, in order.
    private(set) var reads: [Read] = []

    func record(_ object: ManagedObject, keyPath: AnyKeyPath, slot: Int) {
        reads.append(Read(object: ObjectIdentifier(object), keyPath: keyPath, slot: slot))
    }
}

/// A key path on objects of one entity (subentities may place an inherited attribute in another
/// slot).
struct KeyPathSlotKey: Hashable {
    let entityIndex: Int
    let keyPath: AnyKeyPath
}

extension ManagedObject {
    /// The slow path of an attribute getter's confinement check: reports the read to a probe
    /// resolving a key path on this thread, then checks as `QueueConfinement.check` does.
    @usableFromInline @inline(never)
    final func _checkConfinement(reading keyPath: AnyKeyPath, slot: Int) {
        if let probe = qd_key_path_probe_get() {
            Unmanaged<KeyPathProbe>.fromOpaque(probe).takeUnretainedValue().record(self, keyPath: keyPath, slot: slot)
        }
        if !_confinement._isConfinedSlowPath() {
            _confinement._trapNotConfined(_subjectDescription)
        }
    }
}

extension ManagedObjectContext {
    /// `root[keyPath: keyPath]`; the first time for the object's entity, read with the probe on,
    /// which resolves the key path's slot for later fetches (see ``resolvedSlot(of:entityIndex:)``).
    ///
    /// Predicates compiled to read objects read their key paths through this until every key
    /// path is resolved, so that probing reads only what the predicate reads anyway, where it
    /// reads it (a computed property that traps on some rows is never read on them).
    func reading<Root, Value>(_ keyPath: KeyPath<Root, Value>, on root: Root) -> Value {
        guard let object = root as? ManagedObject, let entityIndex = object._objectID.key.entityIndex else {
            return root[keyPath: keyPath]
        }
        let key = KeyPathSlotKey(entityIndex: entityIndex, keyPath: keyPath)
        if keyPathSlots[key] != nil {
            return root[keyPath: keyPath]
        }
        let (value, read) = probing(object) { root[keyPath: keyPath] }
        var slot: Int?
        if let read, read.keyPath == keyPath, let native = Value.self as? any AttributeValue.Type {
            slot = Self.slot(of: read, on: object, storedValue: Self.storedValue(of: value, as: native))
        }
        keyPathSlots[key] = slot ?? -1
        return value
    }

    /// The row slot of the persistent attribute `keyPath` names on objects of `object`'s entity,
    /// or `nil` when it names anything else; probes `object` if the key path was not resolved
    /// for the entity yet. Only for a key path the caller reads on `object` anyway (a sort's).
    func attributeSlot(of keyPath: AnyKeyPath, on object: ManagedObject) -> Int? {
        guard let entityIndex = object._objectID.key.entityIndex else { return nil }
        if let known = resolvedSlot(of: keyPath, entityIndex: entityIndex) {
            return known
        }
        let key = KeyPathSlotKey(entityIndex: entityIndex, keyPath: keyPath)
        // (`value` is `nil` when the key path's root is not the object's class.)
        let (value, read) = probing(object) { object[keyPath: keyPath] }
        var slot: Int?
        if let read, read.keyPath == keyPath, let value,
            let native = type(of: keyPath).valueType as? any AttributeValue.Type,
            let stored = Self.storedValue(ofAny: value, as: native)
        {
            slot = Self.slot(of: read, on: object, storedValue: stored)
        }
        keyPathSlots[key] = slot ?? -1
        return slot
    }

    /// The slot `keyPath` was resolved to for the entity: `.some(nil)` when it names no
    /// persistent attribute, `nil` when it was not probed yet.
    func resolvedSlot(of keyPath: AnyKeyPath, entityIndex: Int) -> Int?? {
        guard let known = keyPathSlots[KeyPathSlotKey(entityIndex: entityIndex, keyPath: keyPath)] else {
            return nil
        }
        return .some(known >= 0 ? known : nil)
    }

    /// Runs `read` with the probe on: returns its result and the one attribute read it reported
    /// on `object` (`nil` unless there was exactly one, on `object`).
    private func probing<Value>(_ object: ManagedObject, _ read: () -> Value) -> (Value, KeyPathProbe.Read?) {
        let probe = KeyPathProbe()
        let previousProbe = qd_key_path_probe_get()
        let previousToken = qd_confinement_current()
        qd_key_path_probe_set(Unmanaged.passUnretained(probe).toOpaque())
        // Off the fast path, every attribute getter reports its read. The block's frame is still
        // on the thread's chain, so the checks pass as before.
        qd_confinement_set_current(nil)
        let value = withExtendedLifetime(probe) { read() }
        qd_confinement_set_current(previousToken)
        qd_key_path_probe_set(previousProbe)
        guard probe.reads.count == 1, let only = probe.reads.first, only.object == ObjectIdentifier(object) else {
            return (value, nil)
        }
        return (value, only)
    }

    /// The read's slot, if it is a persistent attribute's and the value read is the stored one
    /// (a subclass overriding the property to compute another value is not the attribute).
    private static func slot(of read: KeyPathProbe.Read, on object: ManagedObject, storedValue: StoredValue?) -> Int? {
        guard read.slot < object.entity.columnCount, let storedValue,
            StoredValue.isSame(storedValue, object._values[read.slot])
        else { return nil }
        return read.slot
    }

    private static func storedValue<Value, Native: AttributeValue>(of value: Value, as _: Native.Type) -> StoredValue? {
        guard Value.self == Native.self else { return nil }
        return unsafeBitCast(value, to: Native.self).storedValue
    }

    private static func storedValue<Native: AttributeValue>(ofAny value: Any, as _: Native.Type) -> StoredValue? {
        (value as? Native)?.storedValue
    }
}
