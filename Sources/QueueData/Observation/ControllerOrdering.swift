import Foundation

/// One sort value of a controller's entry: a value extracted once (``SortKey``), or `nil`.
enum ControllerKey: Sendable {
    case none
    case value(SortKey)

    /// The key of `value` (an attribute read through a sort descriptor's key path), or `nil`
    /// when it has no extractable form.
    init?(_ value: Any) {
        if let key = SortKey(value) {
            self = .value(key)
        } else if let optional = value as? any _OptionalAttributeValue, optional._isNil {
            self = .none
        } else {
            return nil
        }
    }

    /// `nil` orders before every value, as `SortDescriptor` orders optionals.
    static func compare(_ lhs: ControllerKey, _ rhs: ControllerKey) -> ComparisonResult {
        switch (lhs, rhs) {
        case (.none, .none): return .orderedSame
        case (.none, .value): return .orderedAscending
        case (.value, .none): return .orderedDescending
        case (.value(let a), .value(let b)): return SortKey.compare(a, b)
        }
    }
}

/// One object in a controller: its ID, its sort keys (when the ordering extracts them), and
/// the object itself when the controller holds it.
struct ControllerEntry {
    var id: ObjectID
    var keys: [ControllerKey]
    var object: ManagedObject?
}

/// A section of a controller: its name and its entries in order.
struct ControllerSection {
    var name: String
    var entries: [ControllerEntry]
}

/// How a controller orders its entries: by keys extracted once from each object, or — when a
/// sort descriptor has a string comparator or a key that cannot be extracted — by the sort
/// descriptors on the objects themselves. Ties are broken by the order a fetch gives.
struct ControllerOrdering<Object: ManagedObject> {
    /// The attribute sorts (``FetchRequest/attributeSorts``), applied before the descriptors.
    let attributeSorts: [AttributeSort]
    let descriptors: [SortDescriptor<Object>]
    let keyPaths: [PartialKeyPath<Object>]?
    /// When the ordering compares objects: the descriptors' key paths, if every descriptor has
    /// one of an extractable type (a string compared with a comparator, say). Entries keep
    /// these keys to tell an update that changed a sort value (a move) from one that did not;
    /// `nil` when a descriptor's value cannot be kept.
    let changeKeyPaths: [PartialKeyPath<Object>]?
    /// Whether each key column (the attribute sorts', then the descriptors') is descending.
    let reversed: [Bool]

    init(_ descriptors: [SortDescriptor<Object>], attributeSorts: [AttributeSort] = []) {
        self.attributeSorts = attributeSorts
        self.descriptors = descriptors
        var keyPaths: [PartialKeyPath<Object>]? = []
        var changeKeyPaths: [PartialKeyPath<Object>]? = []
        for descriptor in descriptors {
            guard let keyPath = descriptor.keyPath,
                controllerExtractableTypes.contains(ObjectIdentifier(type(of: keyPath).valueType))
            else {
                keyPaths = nil
                changeKeyPaths = nil
                break
            }
            changeKeyPaths?.append(keyPath)
            if descriptor.stringComparator == nil {
                keyPaths?.append(keyPath)
            } else {
                keyPaths = nil
            }
        }
        guard let keyPaths else {
            self.keyPaths = nil
            self.changeKeyPaths = changeKeyPaths
            self.reversed = []
            return
        }
        self.keyPaths = keyPaths
        self.changeKeyPaths = nil
        self.reversed = attributeSorts.map { !$0.ascending } + descriptors.map { $0.order == .reverse }
    }

    /// Whether entries are compared by extracted keys.
    var usesKeys: Bool { keyPaths != nil }

    /// The key of `object`'s value of the attribute `sort` sorts by (checked to be one of its
    /// entity's, of an ordered type, when the controller was made).
    private static func attributeKey(of object: ManagedObject, _ sort: AttributeSort) -> ControllerKey {
        guard let slot = object.entity.attributeIndexes[sort.attributeName],
            let key = SortKey(attributeValue: object._value(at: slot))
        else { return .none }
        if case .null = key {
            return .none
        }
        return .value(key)
    }

    /// The keys of `object`: what the ordering compares, or, when it compares objects, the
    /// values it reads (none when they cannot be kept).
    func keys(of object: Object) -> [ControllerKey] {
        guard let keyPaths = keyPaths ?? changeKeyPaths else { return [] }
        var keys: [ControllerKey] = []
        keys.reserveCapacity(attributeSorts.count + keyPaths.count)
        for sort in attributeSorts {
            keys.append(Self.attributeKey(of: object, sort))
        }
        for keyPath in keyPaths {
            guard let key = ControllerKey(object[keyPath: keyPath]) else {
                preconditionFailure("QueueData: a sort key of an extractable type could not be extracted")
            }
            keys.append(key)
        }
        return keys
    }

    /// Whether `lhs` goes before `rhs`: by the sort descriptors, then by `tie`.
    func precedes(_ lhs: ControllerEntry, _ rhs: ControllerEntry, tie: (ObjectID, ObjectID) -> Bool) -> Bool {
        if usesKeys {
            for column in lhs.keys.indices {
                var result = ControllerKey.compare(lhs.keys[column], rhs.keys[column])
                if reversed[column] {
                    result =
                        result == .orderedAscending
                        ? .orderedDescending : result == .orderedDescending ? .orderedAscending : .orderedSame
                }
                if result != .orderedSame {
                    return result == .orderedAscending
                }
            }
        } else if let left = lhs.object, let right = rhs.object {
            for sort in attributeSorts {
                var result = ControllerKey.compare(
                    Self.attributeKey(of: left, sort), Self.attributeKey(of: right, sort))
                if !sort.ascending {
                    result =
                        result == .orderedAscending
                        ? .orderedDescending : result == .orderedDescending ? .orderedAscending : .orderedSame
                }
                if result != .orderedSame {
                    return result == .orderedAscending
                }
            }
            let a = unsafeDowncast(left, to: Object.self)
            let b = unsafeDowncast(right, to: Object.self)
            for descriptor in descriptors {
                let result = descriptor.compare(a, b)
                if result != .orderedSame {
                    return result == .orderedAscending
                }
            }
        }
        return tie(lhs.id, rhs.id)
    }

    /// Whether a value the entry is sorted by differs between `old` and `new`; `nil` when the
    /// entries do not keep those values (a descriptor without a key path, or of a type whose
    /// values cannot be kept).
    func keysDiffer(_ old: ControllerEntry, _ new: ControllerEntry) -> Bool? {
        guard usesKeys || changeKeyPaths != nil else { return nil }
        // Compared as values: equal values compare the same under any comparator.
        return zip(old.keys, new.keys).contains { ControllerKey.compare($0, $1) != .orderedSame }
    }
}

/// The value types whose keys ``SortKey`` extracts, and their optionals.
let controllerExtractableTypes: Set<ObjectIdentifier> = {
    let types: [Any.Type] = [
        String.self, Int.self, Int64.self, Int32.self, Int16.self, Int8.self, UInt.self, UInt64.self,
        UInt32.self, UInt16.self, UInt8.self, Double.self, Float.self, Date.self, Decimal.self, UUID.self,
        String?.self, Int?.self, Int64?.self, Int32?.self, Int16?.self, Int8?.self, UInt?.self, UInt64?.self,
        UInt32?.self, UInt16?.self, UInt8?.self, Double?.self, Float?.self, Date?.self, Decimal?.self,
        UUID?.self,
    ]
    return Set(types.map(ObjectIdentifier.init))
}()
