import Foundation

/// A requirement of a ``FetchRequest`` on one stored attribute, by name: its value must be one
/// of ``values`` (compared in stored form), or — a range or prefix constraint — lie between
/// ``lowerBound`` and ``upperBound`` and start with ``prefix``, where those are set.
///
/// Answered from the attribute's index when it has one (``AttributeOptions/indexed``, or unique);
/// otherwise checked on each row's stored value, without making objects of the rows that do not
/// satisfy it.
public struct AttributeConstraint: Sendable, Hashable {
    /// The attribute's name, as the model has it.
    public var attributeName: String
    /// The values the attribute may hold, in stored form (ignored by a range or prefix
    /// constraint).
    public var values: [StoredValue]
    /// The lowest value the attribute may hold (`nil`: no lower end), compared by the
    /// comparison operators of the attribute's Swift type.
    public var lowerBound: StoredValue?
    /// Whether the attribute may equal ``lowerBound``.
    public var includesLowerBound = true
    /// The highest value the attribute may hold (`nil`: no upper end).
    public var upperBound: StoredValue?
    /// Whether the attribute may equal ``upperBound``.
    public var includesUpperBound = true
    /// What a string attribute must start with (`String.starts(with:)`: whole characters).
    public var prefix: String?

    /// Creates a constraint that the attribute equals one of `values`.
    public init(attributeName: String, values: [StoredValue]) {
        self.attributeName = attributeName
        self.values = values
    }

    /// Creates a range constraint: the attribute lies between `lowerBound` and `upperBound`
    /// (either may be `nil`, not both), compared by the `<=` and `>=` (`<` and `>` for an end
    /// not included) of its Swift type. An attribute that is `nil` never does, nor a `Double` or
    /// `Float` NaN, which compares false; a `Date` whose interval is NaN satisfies `<=` and `>=`
    /// (derived from `Date`'s `<`), so it lies in every range but one whose upper end is not
    /// included.
    public init(
        attributeName: String,
        lowerBound: StoredValue?,
        includesLowerBound: Bool = true,
        upperBound: StoredValue?,
        includesUpperBound: Bool = true
    ) {
        self.attributeName = attributeName
        self.values = []
        self.lowerBound = lowerBound
        self.includesLowerBound = includesLowerBound
        self.upperBound = upperBound
        self.includesUpperBound = includesUpperBound
    }

    /// Creates a prefix constraint: the string attribute starts with `prefix` (whole characters,
    /// as `String.starts(with:)` compares them). An attribute that is `nil` never does.
    public init(attributeName: String, prefix: String) {
        self.attributeName = attributeName
        self.values = []
        self.prefix = prefix
    }

    /// Whether this is a range or prefix constraint rather than a list of values.
    var isRange: Bool {
        lowerBound != nil || upperBound != nil || prefix != nil
    }

    /// The attribute's slot in `entity`'s rows; traps, naming what is wrong, when the entity
    /// has no such attribute or a value cannot be one of its values.
    func slot(in entity: EntityDescription) -> Int {
        guard let slot = entity.attributeIndexes[attributeName] else {
            fatalError(
                "QueueData: a FetchRequest requires '\(attributeName)' of '\(entity.name)', which has no attribute of "
                    + "that name (a relationship or a transient attribute cannot be required this way).")
        }
        let attribute = entity.attributes[slot]
        let described =
            "'\(entity.name).\(attributeName)', of type \(attribute.type.rawValue)"
            + (attribute.isOptional ? " (optional)" : "")
        for value in values where !value.fits(attribute.type, isOptional: attribute.isOptional) {
            fatalError("QueueData: a FetchRequest requires \(described), to equal \(value), which it can never hold.")
        }
        if lowerBound != nil || upperBound != nil {
            switch attribute.type {
            case .integer16, .integer32, .integer64, .double, .float, .date, .string: break
            default:
                fatalError(
                    "QueueData: a FetchRequest requires \(described), to lie in a range; only integer, floating-point, "
                        + "date and string attributes can.")
            }
            for bound in [lowerBound, upperBound].compactMap({ $0 })
            where bound == .null || !bound.fits(attribute.type, isOptional: false) {
                fatalError(
                    "QueueData: a FetchRequest requires \(described), to lie in a range ending at \(bound), which is not "
                        + "one of its values.")
            }
        }
        if prefix != nil, attribute.type != .string {
            fatalError("QueueData: a FetchRequest requires \(described), to start with a prefix; only strings can.")
        }
        return slot
    }

    /// Whether `value` is one of ``values``.
    @inline(__always)
    func isSatisfied(by value: StoredValue) -> Bool {
        if isRange {
            return isInRange(value)
        }
        return values.withUnsafeBufferPointer { candidates in
            for index in candidates.indices where candidates[index] == value {
                return true
            }
            return false
        }
    }

    /// Whether `value` lies in the range and starts with the prefix, by the `<`, `<=`, `>`,
    /// `>=` and `starts(with:)` of its Swift type (what the same requirement written in a
    /// `#Predicate` evaluates).
    private func isInRange(_ value: StoredValue) -> Bool {
        if let lowerBound {
            guard Self.compare(value, lowerBound, includesLowerBound ? (>=, >=, >=, >=) : (>, >, >, >)) else {
                return false
            }
        }
        if let upperBound {
            guard Self.compare(value, upperBound, includesUpperBound ? (<=, <=, <=, <=) : (<, <, <, <)) else {
                return false
            }
        }
        if let prefix {
            guard case .string(let string) = value, string.starts(with: prefix) else { return false }
        }
        return true
    }

    /// `lhs` and `rhs` compared by the operator for their type; `false` when they are not of
    /// one ordered kind (`nil`, a boolean, …).
    private static func compare(
        _ lhs: StoredValue,
        _ rhs: StoredValue,
        _ operators: (
            (Int64, Int64) -> Bool, (Double, Double) -> Bool, (Date, Date) -> Bool, (String, String) -> Bool
        )
    ) -> Bool {
        switch (lhs, rhs) {
        case (.integer(let left), .integer(let right)): return operators.0(left, right)
        case (.double(let left), .double(let right)): return operators.1(left, right)
        case (.date(let left), .date(let right)): return operators.2(left, right)
        case (.string(let left), .string(let right)): return operators.3(left, right)
        default: return false
        }
    }
}

extension AttributeConstraint {
    /// The constraint's check on the field of `slot` of a row laid out by `layout`, prepared once
    /// for a scan: what ``isSatisfied(by:)`` answers for the field's stored form, for every row.
    ///
    /// A range of an integer, floating-point, date or string attribute compares the field where
    /// it lies, as its own type, with bounds converted once; every other constraint (values,
    /// prefixes, bounds of another kind than the field's) reads the stored form. Reading the
    /// stored form and checking it with the constraint at each row copied the constraint, its
    /// strings and its bounds for each row (the fetch kept it in an optional tuple, copied through
    /// generic value witnesses): ≈ 950 instructions a row.
    func rowMatcher(slot: Int, layout: RowLayout) -> (UnsafeRawPointer) -> Bool {
        let offset = layout.offsets[slot]
        if isRange, prefix == nil {
            switch layout.kinds[slot] {
            case .int64:
                if let range = OrderedRange(self, key: Self.integerKey) {
                    return { row in range.contains(row.load(fromByteOffset: offset, as: Int64.self)) }
                }
            case .int32:
                if let range = OrderedRange(self, key: Self.integerKey) {
                    return { row in range.contains(Int64(row.load(fromByteOffset: offset, as: Int32.self))) }
                }
            case .int16:
                if let range = OrderedRange(self, key: Self.integerKey) {
                    return { row in range.contains(Int64(row.load(fromByteOffset: offset, as: Int16.self))) }
                }
            case .optionalInt64:
                if let range = OrderedRange(self, key: Self.integerKey) {
                    return { row in row.load(fromByteOffset: offset, as: Int64?.self).map(range.contains) ?? false }
                }
            case .optionalInt32:
                if let range = OrderedRange(self, key: Self.integerKey) {
                    return { row in
                        row.load(fromByteOffset: offset, as: Int32?.self).map { range.contains(Int64($0)) } ?? false
                    }
                }
            case .optionalInt16:
                if let range = OrderedRange(self, key: Self.integerKey) {
                    return { row in
                        row.load(fromByteOffset: offset, as: Int16?.self).map { range.contains(Int64($0)) } ?? false
                    }
                }
            case .double:
                if let range = OrderedRange(self, key: Self.doubleKey) {
                    return { row in range.contains(row.load(fromByteOffset: offset, as: Double.self)) }
                }
            case .optionalDouble:
                if let range = OrderedRange(self, key: Self.doubleKey) {
                    return { row in row.load(fromByteOffset: offset, as: Double?.self).map(range.contains) ?? false }
                }
            case .date:
                if let range = OrderedRange(self, key: Self.dateKey) {
                    return { row in range.contains(row.load(fromByteOffset: offset, as: Date.self)) }
                }
            case .optionalDate:
                if let range = OrderedRange(self, key: Self.dateKey) {
                    return { row in row.load(fromByteOffset: offset, as: Date?.self).map(range.contains) ?? false }
                }
            case .string:
                if let range = OrderedRange(self, key: Self.stringKey) {
                    // Compared in place: the field is initialized as a `String`.
                    return { row in range.contains((row + offset).assumingMemoryBound(to: String.self).pointee) }
                }
            case .optionalString:
                if let range = OrderedRange(self, key: Self.stringKey) {
                    return { row in
                        guard let string = (row + offset).assumingMemoryBound(to: String?.self).pointee else {
                            return false
                        }
                        return range.contains(string)
                    }
                }
            default:
                break
            }
        }
        let constraint = self
        return { row in constraint.isSatisfied(by: layout.value(row, slot: slot)) }
    }

    private static func integerKey(_ value: StoredValue) -> Int64? {
        guard case .integer(let integer) = value else { return nil }
        return integer
    }

    private static func doubleKey(_ value: StoredValue) -> Double? {
        guard case .double(let double) = value else { return nil }
        return double
    }

    private static func dateKey(_ value: StoredValue) -> Date? {
        guard case .date(let date) = value else { return nil }
        return date
    }

    private static func stringKey(_ value: StoredValue) -> String? {
        guard case .string(let string) = value else { return nil }
        return string
    }
}

/// The bounds of a range constraint as one Swift type, compared by that type's operators as
/// ``AttributeConstraint/isSatisfied(by:)`` compares them (a NaN satisfies no bound).
private struct OrderedRange<Key: Comparable> {
    let lowerBound: Key?
    let includesLowerBound: Bool
    let upperBound: Key?
    let includesUpperBound: Bool

    /// The constraint's bounds as keys; `nil` if a bound is not of the key's kind (the stored
    /// form's comparison then answers, `false` for every value).
    init?(_ constraint: AttributeConstraint, key: (StoredValue) -> Key?) {
        if let bound = constraint.lowerBound {
            guard let key = key(bound) else { return nil }
            lowerBound = key
        } else {
            lowerBound = nil
        }
        if let bound = constraint.upperBound {
            guard let key = key(bound) else { return nil }
            upperBound = key
        } else {
            upperBound = nil
        }
        includesLowerBound = constraint.includesLowerBound
        includesUpperBound = constraint.includesUpperBound
    }

    @inline(__always)
    func contains(_ value: Key) -> Bool {
        if let lowerBound {
            guard includesLowerBound ? value >= lowerBound : value > lowerBound else { return false }
        }
        if let upperBound {
            guard includesUpperBound ? value <= upperBound : value < upperBound else { return false }
        }
        return true
    }
}
