import Foundation

/// Records the changes of one ``ManagedObjectContext`` so that they can be undone and redone,
/// in groups: QueueData's own undo manager, shaped like Foundation's `UndoManager` (which
/// Foundation on Linux does not have).
///
/// A context has none until you give it one, as in Core Data:
///
/// ```swift
/// context.performAndWait {
///     context.undoManager = UndoManager()
/// }
/// context.performAndWait {
///     destination.rating = 5                 // one perform block: one group
/// }
/// context.performAndWait {
///     context.undo()                         // rating is back to what it was
///     context.redo()                         // and 5 again
/// }
/// ```
///
/// It records inserts, deletes, and changes to attributes (transient ones included) and
/// relationships (both sides); each block entered with `perform`, `performAndWait`,
/// `enqueue` or `performChanges` is a group by default (``groupsByEvent``), and
/// ``beginUndoGrouping()``/``endUndoGrouping()`` group several blocks or split one. Merges of
/// other contexts' saves, refreshes and the context's own save never become undoable actions.
///
/// A context with an undo manager applies delete rules at the end of each event rather than at
/// the save (as Core Data's `propagatesDeletesAtEndOfEvent`): the group of a deletion holds
/// what its cascades delete and the inverses it nullifies, so one undo brings them all back,
/// linked. A deny rule refusing the deletion leaves it to the save, which reports it.
///
/// Undoing changes the context like any other change: after a save, an undo is a new change
/// to save (an undone insertion deletes the object, an undone deletion inserts it again under
/// its ID). What another context did is never undone:
/// - an attribute or to-one relationship is set back only if it still holds the value the
///   undone change gave it (a merge that changed it since wins);
/// - a to-many relationship gets back the objects the change removed and loses the ones it
///   added, keeping what merges added or removed (an object a merge moved elsewhere since is
///   not put back: both sides of a link agree);
/// - an object another context deleted is not brought back, references to it are not
///   restored, and the ``UndoOutcome`` of ``undo()`` names it;
/// - objects another context's save linked to an unsaved object an undo takes away let go of it
///   (they are not taken away with it);
/// - a reference to an object this context's own save deleted (in an older group) is not
///   restored either, but that object's delete rule applies as the save would have applied it
///   (a cascade deletes the object the undo restores), and undoing the deletion's group brings
///   both back, linked.
///
/// ``ManagedObjectContext/rollback()`` and ``ManagedObjectContext/reset()`` remove every
/// action, as in Core Data.
///
/// Recording costs nothing when a context has no undo manager. With one, each insertion and
/// the first change of an object in each event copy the object's values, and processing the
/// event's changes compares them: the cost grows with the objects changed, not the context.
///
/// - Important: Once given to a context, use it only on the context's queue (every method
///   checks, and traps otherwise). One undo manager serves one context.
public final class UndoManager {
    /// The context the manager records (set by ``ManagedObjectContext/undoManager``).
    weak var context: ManagedObjectContext?
    var isAttached = false

    var undoStack: [UndoGroup] = []
    var redoStack: [UndoGroup] = []
    /// The group being recorded while ``groupingLevel`` is above 0.
    var openGroup = UndoGroup(id: 1)
    var nextGroupID = 2
    /// For each object removed (deleted, or an insertion undone): the group recording its latest
    /// removal, so that the changes a save makes because of a deletion (its delete rules) join
    /// the group that can bring it back.
    var removedBy: [ObjectIdentifier: Int] = [:]
    /// Each object removed, by its ID: a key an undo cannot restore because the object is gone
    /// from the store is this context's own saved deletion when it names one of these (left
    /// with `deletedBySave`), and another context's otherwise.
    var removedObjects: [ObjectID: ManagedObject] = [:]
    /// The objects removed (and not brought back since) by a save's cascade, or by an undo or
    /// redo taking them out again as the cascade had: an undo or redo that takes one out of the
    /// reach of every cascade of a deleted object brings it back, as the save would have kept it.
    var removedByCascade: Set<ObjectIdentifier> = []
    /// The objects an undo took out of existence after a save's delete rules had removed them
    /// already: a reference to one is dropped silently (it is neither this context's saved
    /// deletion nor another context's).
    var undoneInsertions: Set<ObjectID> = []
    /// For each object inserted while recording: the group that recorded its insertion first
    /// (its creation).
    var insertedBy: [ObjectIdentifier: Int] = [:]
    /// Levels opened by blocks of the `perform` family, and by ``beginUndoGrouping()``.
    var eventLevel = 0
    var explicitLevel = 0
    var disabledCount = 0
    /// Set while a group is being applied: nothing is recorded then.
    var applying: Direction?

    /// The values of each object changed since the last processing, before its first change.
    var preImages: [PreImage] = []
    var preImaged: Set<ObjectIdentifier> = []
    /// Permanent keys of objects saved since their temporary keys were recorded.
    var permanentKeys: [Int64: Int64] = [:]
    /// While a save applies its delete rules: the group its changes join.
    var consequenceGroup: GroupPosition?
    /// For each saved object a merge (or refresh) changed: the committed version at which each
    /// slot last took another context's value.
    var mergedSlots: [ObjectID: [Int: Int64]] = [:]
    /// Objects a merged deletion's rules deleted here (a layer this context put into a sketch
    /// another context deleted): not an undoable action, so no undo points a relationship at
    /// them while they are pending deletion.
    var deletedByMerge: Set<ObjectID> = []
    var isSaving = false

    /// Which way a group is being applied.
    enum Direction {
        case undo, redo
    }

    /// Where a recorded group is.
    struct GroupPosition {
        var direction: Direction
        var index: Int
    }

    /// An object's values before its first change since the last processing.
    struct PreImage {
        let object: ManagedObject
        let values: [StoredValue]
        let baseSnapshot: [StoredValue]?
        let baseVersion: Int64
        /// Only the relationships' changes are recorded (an object's insertion).
        let relationshipsOnly: Bool
    }

    /// Posted on the context's queue after ``undo()`` changed the context; `object` is the
    /// undo manager and `userInfo[UndoOutcome.userInfoKey]` the ``UndoOutcome``.
    public static let didUndoChangeNotification = Notification.Name("QueueData.UndoManagerDidUndoChange")

    /// Posted on the context's queue after ``redo()`` changed the context; `object` is the
    /// undo manager and `userInfo[UndoOutcome.userInfoKey]` the ``UndoOutcome``.
    public static let didRedoChangeNotification = Notification.Name("QueueData.UndoManagerDidRedoChange")

    /// Creates an undo manager; give it to a context with ``ManagedObjectContext/undoManager``.
    public init() {}

    /// Traps unless the caller runs on the context's queue (when the manager has a context).
    func checkConfined() {
        if isAttached {
            guard let context else {
                fatalError(
                    "QueueData: an UndoManager was used after its context was deallocated. Keep a strong "
                        + "reference to the context for as long as you use its undo manager.")
            }
            context.checkConfined()
        }
    }

    // MARK: Settings

    /// How many groups ``undo()`` can go back (the oldest are forgotten first); 0, the
    /// default, keeps them all.
    ///
    /// - Important: Call on the context's queue.
    public var levelsOfUndo: Int {
        get {
            checkConfined()
            return levels
        }
        set {
            checkConfined()
            precondition(newValue >= 0, "QueueData: levelsOfUndo cannot be negative (0 keeps every group).")
            levels = newValue
            trimUndoStack()
        }
    }
    var levels = 0

    /// Whether each block of the `perform` family (`perform`, `performAndWait`, `enqueue`,
    /// `try await perform`, `performChanges`) is a group of its own (default `true`). When
    /// `false`, group changes yourself with ``beginUndoGrouping()`` and ``endUndoGrouping()``;
    /// changes made while no group is open form a group each time the context processes its
    /// changes.
    ///
    /// - Important: Call on the context's queue.
    public var groupsByEvent: Bool {
        get {
            checkConfined()
            return groupsByEventValue
        }
        set {
            checkConfined()
            groupsByEventValue = newValue
        }
    }
    var groupsByEventValue = true

    // MARK: Grouping

    /// Opens a group: changes until the matching ``endUndoGrouping()`` are undone together.
    /// Groups nest; the outermost one is what ``undo()`` undoes.
    ///
    /// The context's changes so far are processed first
    /// (``ManagedObjectContext/processPendingChanges()``), so that they are not part of it.
    ///
    /// - Important: Call on the context's queue.
    public func beginUndoGrouping() {
        checkConfined()
        processContextChanges()
        explicitLevel += 1
    }

    /// Closes the group opened by the matching ``beginUndoGrouping()``, after processing the
    /// context's changes so far into it.
    ///
    /// Traps if no group of yours is open.
    ///
    /// - Important: Call on the context's queue.
    public func endUndoGrouping() {
        checkConfined()
        guard explicitLevel > 0 else {
            fatalError(
                "QueueData: endUndoGrouping() was called without a matching beginUndoGrouping(). Call them in pairs.")
        }
        processContextChanges()
        explicitLevel -= 1
        closeGroupIfOutermost()
    }

    /// How many groups are open: your ``beginUndoGrouping()`` calls not yet ended, plus one per
    /// `perform` block running (with ``groupsByEvent``).
    ///
    /// - Important: Call on the context's queue.
    public var groupingLevel: Int {
        checkConfined()
        return eventLevel + explicitLevel
    }

    /// Names the action of the group being recorded (or, when none is open, of the last group
    /// recorded), for an "Undo ‹name›" menu item.
    ///
    /// - Important: Call on the context's queue.
    public func setActionName(_ actionName: String) {
        checkConfined()
        if eventLevel + explicitLevel > 0 {
            openGroup.actionName = actionName
        } else if !undoStack.isEmpty {
            undoStack[undoStack.count - 1].actionName = actionName
        }
    }

    /// The action name of the group ``undo()`` would undo ("" if it has none).
    ///
    /// - Important: Call on the context's queue.
    public var undoActionName: String {
        checkConfined()
        if !openGroup.isEmpty {
            return openGroup.actionName
        }
        return undoStack.last?.actionName ?? ""
    }

    /// The action name of the group ``redo()`` would redo ("" if it has none).
    ///
    /// - Important: Call on the context's queue.
    public var redoActionName: String {
        checkConfined()
        return redoStack.last?.actionName ?? ""
    }

    // MARK: Undoing and redoing

    /// Whether ``undo()`` has something to undo: a recorded group, or changes of the group
    /// being recorded (processed or not).
    ///
    /// - Important: Call on the context's queue.
    public var canUndo: Bool {
        checkConfined()
        return !undoStack.isEmpty || !openGroup.isEmpty || hasPendingChanges
    }

    /// Whether ``redo()`` has something to redo. Any new change recorded empties the redo
    /// stack.
    ///
    /// - Important: Call on the context's queue.
    public var canRedo: Bool {
        checkConfined()
        return !redoStack.isEmpty
    }

    /// Whether ``undo()`` is running.
    ///
    /// - Important: Call on the context's queue.
    public var isUndoing: Bool {
        checkConfined()
        return applying == .undo
    }

    /// Whether ``redo()`` is running.
    ///
    /// - Important: Call on the context's queue.
    public var isRedoing: Bool {
        checkConfined()
        return applying == .redo
    }

    /// Undoes the last group: processes the context's changes so far, closes the group being
    /// recorded (so that it is the one undone, if it changed anything), then applies the
    /// group's changes backward, records them for ``redo()``, processes the context's changes
    /// (posting ``ManagedObjectContext/objectsDidChangeNotification``) and posts
    /// ``didUndoChangeNotification``. Does nothing when there is nothing to undo.
    ///
    /// Traps when called inside a group you opened with ``beginUndoGrouping()``, or from
    /// inside an undo or redo.
    ///
    /// - Returns: What could not be undone: objects another context deleted. The rest of the
    ///   group is undone regardless.
    /// - Important: Call on the context's queue.
    @discardableResult
    public func undo() -> UndoOutcome {
        checkConfined()
        return run(.undo)
    }

    /// Redoes the last undone group, the same way ``undo()`` undoes one, and posts
    /// ``didRedoChangeNotification``. Does nothing when there is nothing to redo.
    ///
    /// - Returns: What could not be redone: objects another context deleted.
    /// - Important: Call on the context's queue.
    @discardableResult
    public func redo() -> UndoOutcome {
        checkConfined()
        return run(.redo)
    }

    /// Forgets every group, on both stacks (after processing the context's changes so far, so
    /// that later changes are recorded from there).
    ///
    /// - Important: Call on the context's queue.
    public func removeAllActions() {
        checkConfined()
        processContextChanges()
        forgetEverything()
    }

    /// Stops recording until the matching ``enableUndoRegistration()``; calls nest. Changes
    /// made meanwhile are not undoable (an undo later leaves alone what they set: see
    /// ``UndoManager``).
    ///
    /// - Important: Call on the context's queue.
    public func disableUndoRegistration() {
        checkConfined()
        processContextChanges()
        disabledCount += 1
    }

    /// Resumes recording, after as many calls as ``disableUndoRegistration()`` had.
    ///
    /// Traps when recording is not disabled.
    ///
    /// - Important: Call on the context's queue.
    public func enableUndoRegistration() {
        checkConfined()
        guard disabledCount > 0 else {
            fatalError(
                "QueueData: enableUndoRegistration() was called more often than disableUndoRegistration(). "
                    + "Call them in pairs.")
        }
        // The changes made while disabled are processed (and not recorded) first.
        processContextChanges()
        disabledCount -= 1
    }

    /// Whether changes are being recorded (no ``disableUndoRegistration()`` in effect).
    ///
    /// - Important: Call on the context's queue.
    public var isUndoRegistrationEnabled: Bool {
        checkConfined()
        return disabledCount == 0
    }
}

@available(*, unavailable, message: "An undo manager is confined to its context's queue")
extension UndoManager: Sendable {}
