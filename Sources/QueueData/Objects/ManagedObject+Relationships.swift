extension ManagedObject {
    /// The objects the relationship at row slot `column` points to, loading the ones the
    /// context does not hold yet; related rows that no longer exist are left out.
    final func _relatedObjects(column: Int) -> [ManagedObject] {
        guard let context = _confinement.context else {
            _confinement._trapNotConfined(_subjectDescription)
        }
        return context.relatedObjects(of: self, column: column)
    }

    /// Points the relationship at row slot `column` to `objects`, updating the inverse of every
    /// object that joins or leaves it.
    final func _setRelatedObjects(_ objects: [ManagedObject], column: Int) {
        guard let context = _confinement.context else {
            _confinement._trapNotConfined(_subjectDescription)
        }
        context.setRelationship(of: self, column: column, to: objects)
    }

    /// The object of the to-one relationship declared `slot`th (the ``Relationship`` wrapper's
    /// read).
    @usableFromInline
    final func _relatedObject(relationshipSlot slot: Int) -> ManagedObject? {
        guard let context = _confinement.context else {
            _confinement._trapNotConfined(_subjectDescription)
        }
        return context.relatedObject(of: self, column: entity.attributes.count + slot)
    }

    /// The objects of the to-many relationship declared `slot`th, in order (the ``Relationship``
    /// wrapper's read).
    @usableFromInline
    final func _relatedObjects(relationshipSlot slot: Int) -> [ManagedObject] {
        _relatedObjects(column: entity.attributes.count + slot)
    }

    /// Points the to-one relationship declared `slot`th to `object` (the ``Relationship``
    /// wrapper's write).
    @usableFromInline
    final func _setRelatedObject(_ object: ManagedObject?, relationshipSlot slot: Int) {
        guard let context = _confinement.context else {
            _confinement._trapNotConfined(_subjectDescription)
        }
        context.setToOneRelationship(of: self, column: entity.attributes.count + slot, to: object)
    }

    /// Points the to-many relationship declared `slot`th to `objects` (the ``Relationship``
    /// wrapper's write).
    @usableFromInline
    final func _setRelatedObjects(_ objects: [ManagedObject], relationshipSlot slot: Int) {
        _setRelatedObjects(objects, column: entity.attributes.count + slot)
    }

    /// The objects of the relationship named `key`, in order (for a to-one: none or one).
    ///
    /// Works for every entity, including those described without a subclass. Traps if the
    /// entity has no such relationship.
    ///
    /// - Important: Call on the context's queue.
    public final func relatedObjects(forKey key: String) -> [ManagedObject] {
        _confinement.check(_subjectDescription)
        return _relatedObjects(column: _column(ofRelationship: key))
    }

    /// Points the relationship named `key` to `objects` (at most one for a to-one), updating
    /// the inverses.
    ///
    /// Traps if the entity has no such relationship, or an object is of the wrong entity or
    /// of another context.
    ///
    /// - Important: Call on the context's queue.
    public final func setRelatedObjects(_ objects: [ManagedObject], forKey key: String) {
        _confinement.check(_subjectDescription)
        _setRelatedObjects(objects, column: _column(ofRelationship: key))
    }

    /// The IDs of the objects the relationship named `name` points to, in order (for a to-one:
    /// none or one), without loading or registering them (Core Data's
    /// `objectIDs(forRelationshipNamed:)`): what the object holds now, unsaved changes included
    /// (an inserted object's ID is temporary until its save).
    ///
    /// Traps if the entity has no such relationship.
    ///
    /// - Important: Call on the context's queue.
    public final func objectIDs(forRelationshipNamed name: String) -> [ObjectID] {
        _confinement.check(_subjectDescription)
        let column = _column(ofRelationship: name)
        guard let context = _confinement.context else {
            _confinement._trapNotConfined(_subjectDescription)
        }
        return context.relatedObjectIDs(of: self, column: column)
    }

    private func _column(ofRelationship key: String) -> Int {
        guard let column = entity.column(ofRelationship: key) else {
            fatalError("QueueData: entity '\(entity.name)' has no relationship '\(key)'")
        }
        return column
    }
}
