/// What a save does when objects it changes were changed or deleted by another save since
/// this context last saw them (optimistic locking conflicts): Core Data's five policies, or
/// your own.
///
/// The fixture: object O with attributes a, b, c at version 1 in contexts A and B. B sets a
/// and b and saves (version 2). A, still based on version 1, sets b and c and saves:
///
/// | policy | A's save | the store afterwards |
/// |---|---|---|
/// | ``error`` | throws ``MergeConflictError`` | a, b from B; c original; A keeps its changes |
/// | ``mergeByPropertyStoreTrump`` | succeeds | a from B, b from **B**, c from A |
/// | ``mergeByPropertyObjectTrump`` | succeeds | a from B, b from **A**, c from A |
/// | ``overwrite`` | succeeds | A's whole object: a **original**, b, c from A |
/// | ``rollback`` | succeeds | a, b from B, c **original**; A's other objects still save |
///
/// When the other side **deleted** the object A changed: ``error`` throws;
/// ``mergeByPropertyStoreTrump`` and ``rollback`` let the deletion stand (A's object leaves
/// the context); ``mergeByPropertyObjectTrump`` and ``overwrite`` write A's object back, under
/// the same ID. When A **deleted** an object the other side changed: ``error`` throws;
/// ``mergeByPropertyStoreTrump`` and ``rollback`` keep the other side's version (A's deletion
/// is discarded); ``mergeByPropertyObjectTrump`` and ``overwrite`` delete it. Deleting an
/// object that is already deleted is never a conflict. An object the other side deleted that
/// stays deleted (the policy let the deletion stand, or the context did not save it) leaves the
/// relationships of the objects the save writes, as a merge of that deletion would: the save
/// succeeds and the store stays consistent.
///
/// **Uniqueness constraints** (`@Attribute(.unique)`, ``ManagedObject/uniquenessConstraints``):
/// an *inserted* object whose unique values another object already holds (saved, or inserted
/// earlier in the same save) is a constraint conflict. ``error`` (and a custom policy) throws
/// ``MergeConflictError`` naming both objects in
/// ``MergeConflictError/constraintConflicts``. The other four **upsert**, as Core Data does:
/// the inserted object goes into the existing one, which keeps its ``ObjectID``, and every
/// reference to the inserted object now points at it. An inserted object has no "last seen"
/// values, so every one of its attributes counts as set: which side's values the upserted
/// object carries is decided per policy, never by comparing a value with the attribute's
/// default (a record re-imported with a value revised back to the default carries that value
/// under the policies where the inserted object wins):
///
/// | policy | attributes | to-one relationships | to-many relationships |
/// |---|---|---|---|
/// | ``mergeByPropertyObjectTrump`` | all the inserted object's | the inserted object's, where it has one; else the existing object's | both joined |
/// | ``mergeByPropertyStoreTrump`` | all the existing object's | the existing object's, where it has one; else the inserted object's | both joined |
/// | ``overwrite`` | all the inserted object's | the inserted object's (none if it has none) | the inserted object's |
/// | ``rollback`` | all the existing object's | the existing object's | both joined |
///
/// "All the inserted object's" includes attributes it never assigned: they carry their
/// defaults into the existing object, as Core Data's new record overwrites all fields of the
/// existing one. To change only some attributes of an existing object, fetch it and set them.
/// Several inserts of one value in the same save upsert one after the other, in insertion
/// order (under ``mergeByPropertyObjectTrump``, the last one's attributes win).
///
/// After the save the inserted object has the existing object's ID and values; if the context
/// had that object registered, the registered instance stays and the inserted one leaves the
/// context (still readable). An *update* that would duplicate another object's unique values,
/// or an insert colliding with an object of another entity of its hierarchy or with two
/// objects, always throws. Relationships other objects hold to the inserted object move to
/// the existing one whatever the policy (the graph stays consistent, which is why to-many
/// relationships are joined even under ``rollback``): if the inserted object was put in
/// another object's to-many whose inverse is a to-one, the existing object's to-one follows
/// it, even under ``mergeByPropertyStoreTrump`` and ``rollback``.
///
/// After a save that resolved conflicts, the saving context's objects hold what was stored.
/// Resolution runs on the coordinator's queue, in the same step as the commit: no other save
/// can slip in between.
public struct MergePolicy: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case error
        case mergeByPropertyStoreTrump
        case mergeByPropertyObjectTrump
        case overwrite
        case rollback
        case custom(String, @Sendable ([MergeConflict]) -> [MergeConflict.Resolution])
    }

    let kind: Kind

    /// The default: a conflict fails the save with ``MergeConflictError``; nothing is written
    /// and the context keeps its changes.
    public static let error = MergePolicy(kind: .error)

    /// Property by property, with the store's changes winning: attributes the other side
    /// changed keep its values; the context's other changes are saved.
    public static let mergeByPropertyStoreTrump = MergePolicy(kind: .mergeByPropertyStoreTrump)

    /// Property by property, with the context's changes winning: attributes the context
    /// changed take its values; the other side's other changes are kept.
    public static let mergeByPropertyObjectTrump = MergePolicy(kind: .mergeByPropertyObjectTrump)

    /// The context's whole object is written, including attributes it did not change.
    public static let overwrite = MergePolicy(kind: .overwrite)

    /// The context's changes to conflicting objects are discarded; its other changes are saved.
    public static let rollback = MergePolicy(kind: .rollback)

    /// Your own policy: `resolve` receives every conflict of a save and returns one
    /// resolution per conflict, in order. It runs on the coordinator's queue, during the
    /// commit: keep it quick, and don't call QueueData from it.
    public static func custom(
        named name: String = "custom",
        _ resolve: @escaping @Sendable ([MergeConflict]) -> [MergeConflict.Resolution]
    ) -> MergePolicy {
        MergePolicy(kind: .custom(name, resolve))
    }

    /// The policy's name.
    public var description: String {
        switch kind {
        case .error: return "error"
        case .mergeByPropertyStoreTrump: return "mergeByPropertyStoreTrump"
        case .mergeByPropertyObjectTrump: return "mergeByPropertyObjectTrump"
        case .overwrite: return "overwrite"
        case .rollback: return "rollback"
        case .custom(let name, _): return name
        }
    }

    /// Whether the policy is one of the four built-in ones that resolve every conflict, which
    /// the coordinator applies to rows directly (no dictionaries).
    var resolvesOnRows: Bool {
        switch kind {
        case .mergeByPropertyStoreTrump, .mergeByPropertyObjectTrump, .overwrite, .rollback: return true
        case .error, .custom: return false
        }
    }

    /// A built-in policy's resolution of a conflict, on rows in slot order.
    ///
    /// - Returns: `nil` to keep the store's version, `.some(nil)` to delete, `.some(row)` to
    ///   write `row`.
    func resolveOnRows(snapshot: [StoredValue], committed: [StoredValue]?, object: [StoredValue]?) -> [StoredValue]?? {
        switch kind {
        case .rollback:
            return nil
        case .mergeByPropertyStoreTrump:
            guard let committed, let object else { return nil }
            var merged = committed
            for slot in merged.indices
            where !StoredValue.isSame(object[slot], snapshot[slot])
                && StoredValue.isSame(committed[slot], snapshot[slot])
            {
                merged[slot] = object[slot]
            }
            return .some(merged)
        case .mergeByPropertyObjectTrump:
            guard let object else { return .some(nil) }
            guard let committed else { return .some(object) }
            var merged = committed
            for slot in merged.indices where !StoredValue.isSame(object[slot], snapshot[slot]) {
                merged[slot] = object[slot]
            }
            return .some(merged)
        case .overwrite:
            guard let object else { return .some(nil) }
            return .some(object)
        case .error, .custom:
            preconditionFailure("QueueData: \(self) does not resolve on rows")
        }
    }

    /// The row an upserted insert leaves in the object it went into (see the table in the
    /// type's documentation): the attributes of one side whole, chosen by the policy alone;
    /// relationships merged as a conflict is, with the defaults (no related objects) as the
    /// inserted object's "last seen" values. To-many relationships are joined afterwards by
    /// the caller, except under ``overwrite``.
    func upsertedRow(
        existing: [StoredValue],
        inserted: [StoredValue],
        attributeCount: Int,
        defaults: [StoredValue]
    ) -> [StoredValue] {
        var row: [StoredValue]
        switch kind {
        case .mergeByPropertyObjectTrump, .overwrite: row = inserted
        case .mergeByPropertyStoreTrump, .rollback: row = existing
        case .error, .custom: preconditionFailure("QueueData: \(self) does not upsert")
        }
        guard attributeCount < row.count else { return row }
        // With both rows, the policies keep one (`nil`) or write a row; they never delete.
        let related =
            resolveOnRows(snapshot: defaults, committed: existing, object: inserted).flatMap { $0 } ?? existing
        row.replaceSubrange(attributeCount..., with: related[attributeCount...])
        return row
    }

    /// How the policy resolves `conflicts`, one resolution each.
    func resolutions(for conflicts: [MergeConflict]) -> [MergeConflict.Resolution] {
        switch kind {
        case .error:
            return conflicts.map { _ in .fail }
        case .rollback:
            return conflicts.map { _ in .keepStoreVersion }
        case .mergeByPropertyStoreTrump:
            return conflicts.map { conflict in
                guard let committed = conflict.committedValues, let object = conflict.objectValues else {
                    return .keepStoreVersion
                }
                var merged = committed
                for name in conflict.changedAttributes
                where StoredValue.isSame(conflict.snapshotValues[name] ?? .null, committed[name] ?? .null) {
                    merged[name] = object[name]
                }
                return .write(merged)
            }
        case .mergeByPropertyObjectTrump:
            return conflicts.map { conflict in
                guard let object = conflict.objectValues else { return .delete }
                guard let committed = conflict.committedValues else { return .write(object) }
                var merged = committed
                for name in conflict.changedAttributes {
                    merged[name] = object[name]
                }
                return .write(merged)
            }
        case .overwrite:
            return conflicts.map { conflict in
                guard let object = conflict.objectValues else { return .delete }
                return .write(object)
            }
        case .custom(_, let resolve):
            return resolve(conflicts)
        }
    }
}

/// One optimistic-locking conflict: an object a save changes (or deletes) whose committed
/// version is no longer the one the saving context last saw.
public struct MergeConflict: Sendable, CustomStringConvertible {
    /// How a policy settles a conflict.
    public enum Resolution: Sendable, Equatable {
        /// Fail the save with ``MergeConflictError`` (nothing is written).
        case fail
        /// Discard the context's change to this object; the committed version stands (if the
        /// other side deleted the object, it stays deleted).
        case keepStoreVersion
        /// Write these values, by attribute or relationship name as the conflict's values name
        /// them (properties not listed keep their committed values, or the context's last-seen
        /// values if the object was deleted — which writes it back). A relationship takes the
        /// related objects' keys in the form the conflict gave them; the objects on the other
        /// side are kept in step.
        case write([String: StoredValue])
        /// Delete the object.
        case delete
    }

    /// The object.
    public let objectID: ObjectID
    /// The committed version the context last saw (its snapshot): the old version.
    public let snapshotVersion: Int64
    /// The version committed now (the new version), or `nil` if the object was deleted.
    public let committedVersion: Int64?
    /// The values the context last saw (Core Data's cached snapshot).
    public let snapshotValues: [String: StoredValue]
    /// The values committed now (the persisted snapshot), or `nil` if the object was deleted.
    public let committedValues: [String: StoredValue]?
    /// The context's values (the object snapshot), or `nil` if the context deleted the object.
    public let objectValues: [String: StoredValue]?
    /// Whether the other side is the parent of the saving child context (it has no versions).
    var isWithParent = false

    /// The attributes the context changed (all of them if it deleted the object).
    public var changedAttributes: [String] {
        guard let objectValues else { return snapshotValues.keys.sorted() }
        return objectValues.keys.sorted().filter { name in
            !StoredValue.isSame(objectValues[name]!, snapshotValues[name] ?? .null)
        }
    }

    /// `ID: version a → b` (or `deleted`; for a child's save, what its parent did), and what the
    /// context did.
    public var description: String {
        let committed =
            isWithParent
            ? (committedVersion == nil ? "deleted in the parent context" : "changed in the parent context since read")
            : committedVersion.map { "version \(snapshotVersion) → \($0)" } ?? "deleted by another save"
        let local = objectValues == nil ? "deleted here" : "changed here: \(changedAttributes.joined(separator: ", "))"
        return "\(objectID): \(committed); \(local)"
    }
}

extension MergePolicy {
    /// `row` of `entity` with the values a custom policy's ``MergeResolution/write(_:)`` gave,
    /// by attribute or relationship name (a conflict's values name both: a policy may write
    /// them back as it got them); traps, naming the policy, for a name the entity lacks or a
    /// value its attribute or relationship cannot hold (a bug in the policy, not in the data).
    func row(writing values: [String: StoredValue], over row: [StoredValue], of entity: EntityDescription)
        -> [StoredValue]
    {
        var row = row
        for (name, value) in values {
            if let column = entity.column(ofRelationship: name) {
                let relationship = entity.relationships[column - entity.attributes.count]
                let fits: Bool
                switch value {
                case .null: fits = true
                case .integer: fits = !relationship.isToMany
                case .data(let keys): fits = relationship.isToMany && keys.count % 8 == 0
                default: fits = false
                }
                guard fits else {
                    fatalError(
                        "QueueData: the merge policy '\(self)' wrote \(value) to the relationship "
                            + "'\(entity.name).\(name)', which takes the related objects' keys as the conflict gave them."
                    )
                }
                row[column] = value
                continue
            }
            guard let slot = entity.index(ofAttribute: name),
                value.fits(entity.attributes[slot].type, isOptional: entity.attributes[slot].isOptional)
            else {
                fatalError(
                    "QueueData: the merge policy '\(self)' wrote \(value) to '\(entity.name).\(name)', which does "
                        + "not exist or does not take it.")
            }
            row[slot] = value
        }
        return row
    }
}
