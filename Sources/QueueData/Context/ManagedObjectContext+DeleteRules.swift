extension ManagedObjectContext {
    /// Applies the delete rules of every object the save deletes, before anything is
    /// validated or written: cascades delete the related objects (and theirs, cycles ending),
    /// nullify (and no action) makes the related objects that stay stop pointing back.
    ///
    /// - Returns: The objects a deny rule protects; when there are any, nothing was changed.
    func propagateDeletes() -> [ValidationError.Failure] {
        propagateDeletes(of: pendingDeletes.filter(Self.isPendingDelete))
    }

    /// Applies the delete rules of the objects deleted since the context last processed its
    /// changes, and of the objects pending deletion that were linked to since: called when the
    /// context processes its changes with an undo manager, so that the group of a change holds
    /// everything the delete rules change because of it (Core Data's
    /// `propagatesDeletesAtEndOfEvent`). A deny rule refusing a deletion leaves it to the save,
    /// which reports it; the other deletions of the event still apply their rules.
    ///
    /// A link made to an object deleted in an earlier event does not stay: the deleted object's
    /// rule applies to the object linked (a cascade deletes it, a nullify lets it go) and both
    /// sides forget the link, so no group ever holds a link to an object that was already
    /// deleted when it was made (which no undo of the deletion could put back in order). A deny
    /// rule keeps the link, for the save to refuse.
    func propagateDeletesOfEvent(_ undoManager: UndoManager) {
        var propagated = Set<ObjectIdentifier>()
        let deletedNow = Set(changedSinceProcessing.lazy.filter(Self.isPendingDelete).map(ObjectIdentifier.init))
        while true {
            var roots = (changedSinceProcessing + undoManager.preImages.map(\.object)).filter { object in
                !object.entity.relationships.isEmpty && Self.isPendingDelete(object)
                    && propagated.insert(ObjectIdentifier(object)).inserted
            }
            guard !roots.isEmpty else { return }
            for root in roots where !deletedNow.contains(ObjectIdentifier(root)) {
                guard let image = undoManager.preImages.first(where: { $0.object === root }) else { continue }
                roots += dropLinksMade(to: root, since: image.values)
            }
            // A deny rule refusing one deletion leaves the others' rules to apply: each root on
            // its own then (a root another one's cascade reached is propagated with it).
            if !propagateDeletes(of: roots).isEmpty, roots.count > 1 {
                for root in roots {
                    _ = propagateDeletes(of: [root])
                }
            }
            // What the rules deleted was propagated with its roots: applying its rules on its
            // own would detach it from the deleted objects that took it along.
            for object in changedSinceProcessing where Self.isPendingDelete(object) {
                propagated.insert(ObjectIdentifier(object))
            }
        }
    }

    /// Undoes the links made to `deleted` (pending deletion since an earlier event) since it
    /// held `values`, as its delete rules would have had the links been there when it was
    /// deleted: the objects its cascades reach are deleted (returned, for their own rules),
    /// the others let go; a deny rule's links stay.
    private func dropLinksMade(to deleted: ManagedObject, since values: [StoredValue]) -> [ManagedObject] {
        var cascaded: [ManagedObject] = []
        let key = deleted._objectID.rawValue
        forEachRelationship(of: deleted) { column, link in
            guard link.relationship.deleteRule != .deny else { return }
            let before = Set(RelationshipKeys.decode(values[column]))
            let added = RelationshipKeys.decode(deleted._value(at: column)).filter { !before.contains($0) }
            guard !added.isEmpty else { return }
            for target in objects(entityIndex: link.destinationIndex, keys: added) {
                removeKey(target._objectID.rawValue, from: deleted, column: column, relationship: link.relationship)
                removeKey(key, from: target, column: link.inverseColumn, relationship: link.inverse)
                if link.relationship.deleteRule == .cascade, !target._state.contains(.deleted) {
                    delete(target, preparing: true)
                    if Self.isPendingDelete(target) {
                        cascaded.append(target)
                    }
                }
            }
        }
        return cascaded
    }

    /// Applies the delete rules of `roots` (objects pending deletion); see
    /// ``propagateDeletes()``. The objects the rules delete get
    /// ``ManagedObject/prepareForDeletion()`` when `preparing` (not when a merge applies them).
    func propagateDeletes(of roots: [ManagedObject], preparing: Bool = true) -> [ValidationError.Failure] {
        guard !roots.isEmpty, roots.contains(where: { !$0.entity.relationships.isEmpty }) else { return [] }
        // Every object the save will delete, following cascades, without changing anything yet.
        var doomed: [ManagedObject] = []
        var seen = Set<ObjectIdentifier>()
        var queue = roots
        while let object = queue.popLast() {
            guard seen.insert(ObjectIdentifier(object)).inserted else { continue }
            doomed.append(object)
            forEachRelationship(of: object) { column, link in
                guard link.relationship.deleteRule == .cascade else { return }
                // Only objects that point back: a link the other side has let go of (a merge
                // kept its local change) is not one, and must not take that object along.
                let key = object._objectID.rawValue
                queue += relatedObjects(of: object, column: column).filter {
                    !$0._state.contains(.detached)
                        && RelationshipKeys.contains(key, in: $0._value(at: link.inverseColumn))
                }
            }
        }
        var failures: [ValidationError.Failure] = []
        for object in doomed {
            forEachRelationship(of: object) { column, link in
                guard link.relationship.deleteRule == .deny else { return }
                let blocking = relatedObjects(of: object, column: column).filter {
                    !seen.contains(ObjectIdentifier($0)) && !$0._state.contains(.deleted)
                }
                guard !blocking.isEmpty else { return }
                failures.append(
                    ValidationError.Failure(
                        objectID: object._objectID, entityName: object.entity.name, property: link.relationship.name,
                        reason: "cannot be deleted while '\(link.relationship.name)' refers to "
                            + blocking.map { "\($0._objectID)" }.joined(separator: ", ")
                            + " (its delete rule is deny)"))
            }
        }
        guard failures.isEmpty else { return failures }
        // What was pending deletion before the hooks run: a `prepareForDeletion()` deleting
        // another object adds a root whose rules apply too.
        let pending = Set(pendingDeletes.lazy.filter(Self.isPendingDelete).map(ObjectIdentifier.init))
        for object in doomed where !object._state.contains(.deleted) {
            delete(object, preparing: preparing)
        }
        for object in doomed {
            detachFromRelatedObjects(object, keeping: seen)
        }
        let deletedByHooks = pendingDeletes.filter {
            Self.isPendingDelete($0) && !pending.contains(ObjectIdentifier($0)) && !seen.contains(ObjectIdentifier($0))
        }
        return propagateDeletes(of: deletedByHooks)
    }

    /// Makes the objects `object` points to stop pointing back, except those in `doomed` (they
    /// go too).
    func detachFromRelatedObjects(_ object: ManagedObject, keeping doomed: Set<ObjectIdentifier> = []) {
        let key = object._objectID.rawValue
        forEachRelationship(of: object) { column, link in
            for target in relatedObjects(of: object, column: column) where !doomed.contains(ObjectIdentifier(target)) {
                removeKey(key, from: target, column: link.inverseColumn, relationship: link.inverse)
            }
        }
    }

    /// An inserted object being discarded: cascades discard (or delete) its related objects,
    /// and the others stop pointing to it, at once (it never reaches the store). The objects a
    /// cascade takes along get ``ManagedObject/prepareForDeletion()`` when `preparing` (not
    /// when a child's save discards the object: the child called them).
    func discardRelationships(of object: ManagedObject, preparing: Bool) {
        guard !object.entity.relationships.isEmpty else { return }
        var cascaded: [ManagedObject] = []
        forEachRelationship(of: object) { column, link in
            if link.relationship.deleteRule == .cascade {
                cascaded += relatedObjects(of: object, column: column)
            }
        }
        detachFromRelatedObjects(object)
        for target in cascaded {
            delete(target, preparing: preparing)
        }
    }

    /// Calls `body` with the row slot and link of each of `object`'s relationships.
    private func forEachRelationship(of object: ManagedObject, _ body: (Int, RelationshipLink) -> Void) {
        let entity = object.entity
        guard !entity.relationships.isEmpty, let entityIndex = object._objectID.key.entityIndex else { return }
        for (offset, link) in model.relationshipLinks[entityIndex].enumerated() {
            body(entity.attributes.count + offset, link)
        }
    }
}
