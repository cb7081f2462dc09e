extension ManagedObjectContext {
    /// The link of the relationship at row slot `column` of `object`'s entity.
    func link(of object: ManagedObject, column: Int) -> RelationshipLink {
        model.relationshipLinks[object._objectID.key.entityIndex!][column - object.entity.attributes.count]
    }

    /// The objects `object`'s relationship at `column` points to, in stored order.
    func relatedObjects(of object: ManagedObject, column: Int) -> [ManagedObject] {
        let value = object._value(at: column)
        if case .integer = value {
            // A to-one: found without decoding keys into arrays.
            return relatedObject(of: object, column: column).map { [$0] } ?? []
        }
        let keys = RelationshipKeys.decode(value)
        guard !keys.isEmpty else { return [] }
        return objects(entityIndex: link(of: object, column: column).destinationIndex, keys: keys)
    }

    /// The IDs of the objects `object`'s relationship at `column` points to, in stored order,
    /// without loading any: a registered object's own ID (a child's object whose parent saved it
    /// since has its permanent one), otherwise the ID of the key.
    func relatedObjectIDs(of object: ManagedObject, column: Int) -> [ObjectID] {
        let keys = RelationshipKeys.decode(object._value(at: column))
        guard !keys.isEmpty else { return [] }
        let entityIndex = link(of: object, column: column).destinationIndex
        let entityKey = coordinator.entityKeys[entityIndex]
        return keys.map { key in
            if let registered = registry[entityIndex][adoptedPermanentKeys[key] ?? key] {
                return registered._objectID
            }
            return ObjectID(key: entityKey, rawValue: key)
        }
    }

    /// The object `object`'s to-one relationship at `column` points to (loaded if it is not
    /// registered yet), or `nil`.
    func relatedObject(of object: ManagedObject, column: Int) -> ManagedObject? {
        guard case .integer(let key) = object._value(at: column) else { return nil }
        let entityIndex = link(of: object, column: column).destinationIndex
        // Registered: what `objects(entityIndex:keys:)` returns, without its arrays.
        if let registered = registry[entityIndex][key] {
            return registered
        }
        return objects(entityIndex: entityIndex, keys: [key]).first
    }

    /// The context's objects of one entity for `keys`, in order, loading the missing ones
    /// from the coordinator in one step; keys whose rows are gone are left out.
    func objects(entityIndex: Int, keys: [Int64]) -> [ManagedObject] {
        // A child also reads its parent's inserted objects, by their temporary keys.
        let missing = keys.filter { (parent != nil || $0 > 0) && registry[entityIndex][$0] == nil }
        if !missing.isEmpty, parent != nil {
            let rows = (try? baseRows(entityIndex: entityIndex, primaryKeys: missing)) ?? []
            var registered: [ManagedObject] = []
            for case let row? in rows where registry[entityIndex][row.primaryKey] == nil {
                registered.append(register(makeObject(entityIndex: entityIndex, row: row)))
            }
            awakeFetched(registered)
            if !adoptedPermanentKeys.isEmpty {
                return keys.compactMap { registry[entityIndex][adoptedPermanentKeys[$0] ?? $0] }
            }
        } else if !missing.isEmpty {
            let coordinator = self.coordinator
            let rows =
                (try? coordinator.sync {
                    try coordinator.committedRows(entityIndex: entityIndex, primaryKeys: missing)
                }) ?? []
            var registered: [ManagedObject] = []
            for case let row? in rows where registry[entityIndex][row.primaryKey] == nil {
                registered.append(register(makeObject(entityIndex: entityIndex, row: row)))
            }
            awakeFetched(registered)
        }
        return keys.compactMap { registry[entityIndex][$0] }
    }

    /// Points `source`'s relationship at `column` to `targets`, and keeps every inverse in step:
    /// objects that leave stop pointing back, objects that join point back (leaving their
    /// previous owner first, for a to-one inverse).
    func setRelationship(of source: ManagedObject, column: Int, to targets: [ManagedObject]) {
        let link = self.link(of: source, column: column)
        let relationship = link.relationship
        var newKeys: [Int64] = []
        var seen = Set<Int64>()
        for target in targets {
            checkTarget(target, of: source, link: link)
            if seen.insert(target._objectID.rawValue).inserted {
                newKeys.append(target._objectID.rawValue)
            }
        }
        precondition(relationship.isToMany || newKeys.count <= 1, "a to-one relationship holds one object")
        let oldKeys = RelationshipKeys.decode(source._value(at: column))
        let unchanged = relationship.isOrdered ? oldKeys == newKeys : Set(oldKeys) == seen
        guard !unchanged else { return }
        let oldSet = Set(oldKeys)
        source._setValue(RelationshipKeys.encode(newKeys, for: relationship), at: column)
        let sourceKey = source._objectID.rawValue
        // Objects that left: they stop pointing back.
        let removed = oldKeys.filter { !seen.contains($0) }
        for object in objects(entityIndex: link.destinationIndex, keys: removed) {
            removeKey(sourceKey, from: object, column: link.inverseColumn, relationship: link.inverse)
        }
        // Objects that joined: they point back, leaving their previous owner (a to-one inverse
        // holds one).
        let byKey = Dictionary(targets.map { ($0._objectID.rawValue, $0) }, uniquingKeysWith: { first, _ in first })
        for key in newKeys where !oldSet.contains(key) {
            guard let target = byKey[key] else { continue }
            pointBack(target, to: source, column: column, link: link)
        }
    }

    /// Points `source`'s to-one relationship at `column` to `target` (or to nothing), and keeps
    /// the inverses in step, as `setRelationship(of:column:to:)` does, with no sets or arrays.
    func setToOneRelationship(of source: ManagedObject, column: Int, to target: ManagedObject?) {
        let link = self.link(of: source, column: column)
        guard !link.relationship.isToMany else {
            setRelationship(of: source, column: column, to: target.map { [$0] } ?? [])
            return
        }
        if let target {
            checkTarget(target, of: source, link: link)
        }
        let oldKey: Int64?
        if case .integer(let key) = source._value(at: column) {
            oldKey = key
        } else {
            oldKey = nil
        }
        let newKey = target?._objectID.rawValue
        guard oldKey != newKey else { return }
        source._setValue(newKey.map { .integer($0) } ?? .null, at: column)
        // The object that left stops pointing back; the one that joined points back.
        if let oldKey {
            for object in objects(entityIndex: link.destinationIndex, keys: [oldKey]) {
                removeKey(
                    source._objectID.rawValue, from: object, column: link.inverseColumn, relationship: link.inverse)
            }
        }
        if let target {
            pointBack(target, to: source, column: column, link: link)
        }
    }

    /// Traps unless `target` can be related to `source` through `link`: of this context, of
    /// the destination entity, and still in the context.
    private func checkTarget(_ target: ManagedObject, of source: ManagedObject, link: RelationshipLink) {
        let relationship = link.relationship
        guard target._confinement === confinement else {
            fatalError(
                "QueueData: \(source.entity.name).\(relationship.name) was set to an object of another context "
                    + "('\(target._confinement.contextName)'). Get this context's instance with "
                    + "object(with: objectID) first.")
        }
        guard target._objectID.key.entityIndex == link.destinationIndex else {
            fatalError(
                "QueueData: \(source.entity.name).\(relationship.name) takes \(relationship.destinationEntityName) "
                    + "objects, not \(target.entity.name) objects.")
        }
        guard !target._state.contains(.detached) else {
            fatalError(
                "QueueData: \(source.entity.name).\(relationship.name) was set to a "
                    + "\(target.entity.name) object that is no longer in its context. Fetch it again.")
        }
    }

    /// Makes `target`, which just joined `source`'s relationship at `column`, point back at
    /// `source` through the inverse; a to-one inverse leaves its previous owner first.
    func pointBack(_ target: ManagedObject, to source: ManagedObject, column: Int, link: RelationshipLink) {
        let sourceKey = source._objectID.rawValue
        if link.inverse.isToMany {
            addKey(sourceKey, to: target, column: link.inverseColumn, relationship: link.inverse)
            return
        }
        let previous = RelationshipKeys.decode(target._value(at: link.inverseColumn)).first
        guard previous != sourceKey else { return }
        if let previous {
            let sourceIndex = source._objectID.key.entityIndex!
            for owner in objects(entityIndex: sourceIndex, keys: [previous]) {
                removeKey(target._objectID.rawValue, from: owner, column: column, relationship: link.relationship)
            }
        }
        target._updateInverse(at: link.inverseColumn) { value in
            value = .integer(sourceKey)
            return true
        }
    }

    /// Removes `key` from `object`'s relationship at `column`.
    ///
    /// A deleted object whose deletion is not saved yet follows too: its delete rules read its
    /// relationships at the save, so an object moved out of its way must no longer be listed
    /// (a deny rule would refuse the save again).
    func removeKey(_ key: Int64, from object: ManagedObject, column: Int, relationship: RelationshipDescription) {
        if relationship.isToMany {
            object._updateInverse(at: column) { RelationshipKeys.remove(key, from: &$0, for: relationship) }
        } else {
            object._updateInverse(at: column) { value in
                guard case .integer(key) = value else { return false }
                value = .null
                return true
            }
        }
    }

    /// Adds `key` to `object`'s to-many relationship at `column`, at the end if ordered.
    func addKey(_ key: Int64, to object: ManagedObject, column: Int, relationship: RelationshipDescription) {
        object._updateInverse(at: column) { RelationshipKeys.insert(key, into: &$0, for: relationship) }
    }
}

extension ManagedObject {
    /// Changes the relationship value at `slot` to keep an inverse in step; `change` returns
    /// whether it changed the value.
    ///
    /// An object deleted but not saved yet takes the change without becoming updated (it is
    /// not written: its row goes away with the save, and `rollback()` restores its committed
    /// values); any other object registers the change as a set would.
    final func _updateInverse(at slot: Int, _ change: (inout StoredValue) -> Bool) {
        let state = _state
        if state.contains(.deleted) && !state.contains(.detached) {
            if let undoManager = _confinement.context?.undoManagerValue {
                undoManager.willChange(self)
            }
            var value = _value(at: slot)
            if change(&value) {
                _storeValue(value, at: slot)
            }
        } else {
            _updateValue(at: slot, change)
        }
    }
}
