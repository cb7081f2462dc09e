/// One undoable step of an ``UndoManager``. Applying an entry *backward* undoes it; undoing
/// a group records, for each entry it applied, the entry that applies the opposite way, so a
/// redo is applying those backward in turn.
enum UndoEntry {
    /// The object came into the context (inserted, or brought back): backward, it leaves again.
    case insertion(ManagedObject)
    /// The object left the context or was marked deleted: backward, it comes back.
    case deletion(ManagedObject)
    /// Slots of the object changed: backward, each takes its old value again.
    case values(ValuesChange)
}

/// What changed in one object's slots during one event (the values it had when the event
/// first changed it, against those it had when the changes were processed).
struct ValuesChange {
    let object: ManagedObject
    var changes: [SlotChange]
    /// The committed values the object was based on when these changes were made (`nil`:
    /// never saved), and their version. An undo that sets a slot back to the committed value
    /// it had then, where a merge changed that slot's committed value since, sets it to the
    /// committed value now: it never reverts what a merge brought.
    var baseSnapshot: [StoredValue]?
    var baseVersion: Int64
}

/// One slot's change. Relationship slots hold keys as the object held them: temporary keys of
/// objects saved since are translated when the change is applied.
struct SlotChange {
    let slot: Int
    var old: StoredValue
    var new: StoredValue
}

/// A group of entries that one `undo()` undoes and one `redo()` redoes.
struct UndoGroup {
    /// Tells groups apart (increasing: a later group has a larger one).
    var id = 0
    var entries: [Recorded] = []
    var actionName = ""
    var isEmpty: Bool { entries.isEmpty }

    /// Whether the group holds a removal of `object` (undoing the group brings it back).
    func removes(_ object: ManagedObject) -> Bool {
        entries.contains { recorded in
            if case .deletion(let removed) = recorded.entry { return removed === object }
            return false
        }
    }
}

extension UndoGroup {
    /// An entry of a group, and whether a save added it after the group was recorded.
    struct Recorded {
        let entry: UndoEntry
        /// The entry records what a save's delete rules (or `willSave()`) did because of a
        /// deletion the group holds, after the group was recorded (undoing a later group may have
        /// changed the deleted objects since: see `UndoManager.apply(_:in:keeping:mirroredOnly:lost:)`),
        /// or applies such an entry the other way (see `UndoManager.removedByCascade`).
        let isSaveConsequence: Bool
    }
}
