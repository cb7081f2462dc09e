import Foundation

/// An entity and a key path of its objects.
struct KeyPathSlot: Hashable {
    var entityIndex: Int
    var keyPath: AnyKeyPath
}

extension ManagedObjectContext {
    /// `predicate` compiled for the rows of the entity at `entityIndex`, or `nil` when it
    /// cannot run on rows.
    func compiledPredicate<Object>(_ predicate: Predicate<Object>, entityIndex: Int) -> CompiledPredicate? {
        guard compilesPredicates else { return nil }
        return CompiledPredicate.compile(predicate) { keyPath, type, isOptional, probe in
            self.attributeSlot(
                KeyPathSlot(entityIndex: entityIndex, keyPath: keyPath), type: type, isOptional: isOptional,
                probe: probe)
        }
    }

    /// The slot of the attribute `key`'s key path reads, as stored, found by reading it on
    /// objects made of sample rows (a key path is opaque): it must return the attribute's
    /// value whatever the other attributes hold. Cached.
    private func attributeSlot(
        _ key: KeyPathSlot,
        type: AttributeType,
        isOptional: Bool,
        probe: (ManagedObject) -> StoredValue?
    ) -> Int? {
        if let cached = keyPathSlots[key] {
            return cached
        }
        let entity = model.entities[key.entityIndex]
        let candidates = entity.attributes.indices.filter {
            entity.attributes[$0].type == type && entity.attributes[$0].isOptional == isOptional
        }
        var found: Int?
        if let samples = Self.samples(of: type) {
            var scratch: ManagedObject?
            func read(_ values: [StoredValue]) -> StoredValue? {
                let row = CommittedRow(primaryKey: 1, version: 1, values: values)
                if let scratch {
                    scratch._load(values)
                } else {
                    scratch = makeObject(entityIndex: key.entityIndex, row: row)
                }
                return probe(scratch!)
            }
            // Every other attribute takes its default, then one sample, then the other: the
            // key path must return the candidate's value whatever they hold (`note ?? label`
            // reads `label` only while `note` is nil).
            let backgrounds = [0, 1, 2].map { variant in
                var row = entity.defaultRow
                guard variant > 0 else { return row }
                for (index, attribute) in entity.attributes.enumerated() {
                    if let others = Self.samples(of: attribute.type) {
                        row[index] = variant == 1 ? others.0 : others.1
                    }
                }
                return row
            }
            search: for candidate in candidates {
                for background in backgrounds {
                    // The candidate alone holds the other sample, both ways round, and nil when
                    // optional.
                    var first = background
                    var second = background
                    for other in candidates {
                        first[other] = samples.0
                        second[other] = samples.1
                    }
                    first[candidate] = samples.1
                    second[candidate] = samples.0
                    guard read(first) == samples.1, read(second) == samples.0 else { continue search }
                    if isOptional {
                        first[candidate] = .null
                        guard read(first) == .null else { continue search }
                    }
                }
                found = candidate
                break
            }
        }
        keyPathSlots[key] = .some(found)
        return found
    }

    /// Two different values of an attribute type, as stored.
    private static func samples(of type: AttributeType) -> (StoredValue, StoredValue)? {
        switch type {
        case .boolean: return (.bool(false), .bool(true))
        case .integer16, .integer32, .integer64: return (.integer(1), .integer(2))
        case .double, .float: return (.double(1), .double(2))
        case .string: return (.string("a"), .string("b"))
        case .date: return (.date(Date(timeIntervalSince1970: 1)), .date(Date(timeIntervalSince1970: 2)))
        case .binaryData: return (.data(Data([1])), .data(Data([2])))
        case .uuid:
            return (
                .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!),
                .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000002")!)
            )
        case .uri: return (.url(URL(string: "qd:a")!), .url(URL(string: "qd:b")!))
        case .decimal: return (.decimal(1), .decimal(2))
        default: return nil
        }
    }
}
