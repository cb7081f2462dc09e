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
    /// not included) of its Swift type. An attribute that is `nil` never does (nor a NaN, which
    /// compares false).
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

    /// Whether the field of `slot` of the row at `row` (laid out by `layout`) holds one of
    /// ``values``.
    @inline(__always)
    func isSatisfied(row: UnsafeRawPointer, slot: Int, layout: RowLayout) -> Bool {
        isSatisfied(by: layout.value(row, slot: slot))
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
