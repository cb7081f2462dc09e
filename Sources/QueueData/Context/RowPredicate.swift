import Foundation

/// A `#Predicate` compiled to read rows: every key path on the matched object is resolved, once
/// per fetch and entity, to the row slot of the persistent attribute it names (see
/// ``KeyPathProbe``), and the compiled nodes read the values in place — a committed row's, or a
/// registered object's current values, which have the same slots. No object is made or
/// reloaded per row, and no key path is applied.
///
/// It compiles only where every key path on the matched object names a persistent attribute of
/// a native type (``AttributeValue``); a predicate reading a computed property, a relationship,
/// a transient attribute or the object itself compiles to read objects instead
/// (``CompiledPredicate``). The nodes are ``CompiledPredicate``'s, so the results are the same;
/// a comparison of an attribute with a constant of the common types (`Int`, `Int16`, `Int32`,
/// `Int64`, `Double`, `String`, `Date`, and `Bool` for `==`/`!=`) compares the stored payload
/// directly (``RowComparison``), with the same operator on the same values.
struct RowPredicate {
    /// Whether the row whose values start at the pointer matches.
    let matches: (UnsafePointer<StoredValue>) throws -> Bool

    /// Compiles `predicate` to read rows of the entity `entityIndex`, or returns `nil` (also when
    /// one of its key paths was not resolved for the entity yet).
    init?<Object>(_ predicate: Predicate<Object>, entityIndex: Int, context: ManagedObjectContext) {
        guard let expression = predicate.expression as? any CompilablePredicateExpression<Bool> else { return nil }
        var compiler = PredicateCompiler<RowValues>(root: predicate.variable.key)
        compiler.rows = RowSlotResolver(context: context, entityIndex: entityIndex)
        guard let evaluate = expression.compiled(compiler) else { return nil }
        matches = { row in
            var frame = PredicateFrame(root: RowValues(), row: row)
            return try evaluate(&frame)
        }
    }

    /// The node reading the value at `slot` of the frame's row.
    static func reader<Frame, Output>(slot: Int) -> PredicateEvaluator<Frame, Output>? {
        guard let native = Output.self as? any AttributeValue.Type else { return nil }
        return reader(native, slot: slot)
    }

    private static func reader<Frame, Output, Native: AttributeValue>(
        _: Native.Type, slot: Int
    ) -> PredicateEvaluator<Frame, Output> {
        { frame in
            let stored = frame.row.unsafelyUnwrapped[slot]
            guard let value = Native(storedValue: stored) else {
                RowComparison.trapUnreadable(stored, as: Native.self)
            }
            // `Native` is `Output`: the cast is an identity.
            return unsafeBitCast(value, to: Output.self)
        }
    }
}

/// The root of a predicate compiled to read rows: the values are in the frame's `row`.
struct RowValues {}

/// Resolves key paths on a predicate's root to row slots, while compiling to read rows: the slots
/// the context resolved for the entity.
struct RowSlotResolver {
    let context: ManagedObjectContext
    let entityIndex: Int

    func slot(of keyPath: AnyKeyPath) -> Int? {
        context.resolvedSlot(of: keyPath, entityIndex: entityIndex) ?? nil
    }
}

/// Collects the key paths a predicate reads on its object, while compiling it to read objects
/// and resolve them.
final class KeyPathLearner {
    let context: ManagedObjectContext
    var keyPaths: [AnyKeyPath] = []

    init(context: ManagedObjectContext) {
        self.context = context
    }
}

/// The predicate's variable node, recognized without knowing its type.
protocol RootVariableExpression {
    var variableKey: PredicateExpressions.VariableID { get }
}

extension PredicateExpressions.Variable: RootVariableExpression {
    var variableKey: PredicateExpressions.VariableID { key }
}

/// A key path node, recognized without knowing its types.
protocol KeyPathPredicateExpression {
    /// The row slot the key path reads, when compiling to read rows and it is a key path on the
    /// matched object naming a persistent attribute.
    func rowSlot<Frame>(_ compiler: PredicateCompiler<Frame>) -> Int?
    /// The type of the value it reads.
    var valueType: Any.Type { get }
}

extension PredicateExpressions.KeyPath: KeyPathPredicateExpression {
    func rowSlot<Frame>(_ compiler: PredicateCompiler<Frame>) -> Int? {
        guard let rows = compiler.rows, (root as? any RootVariableExpression)?.variableKey == compiler.root else {
            return nil
        }
        return rows.slot(of: keyPath)
    }

    var valueType: Any.Type { Output.self }
}

/// A constant node, recognized without knowing its type.
protocol ConstantPredicateExpression {
    var constant: Any { get }
}

extension PredicateExpressions.Value: ConstantPredicateExpression {
    var constant: Any { value }
}

/// A comparison of an attribute with a constant, on the stored payload in place: for an
/// attribute of type `Int`, `Int16`, `Int32` or `Int64`, `Double`, `String` or `Date`, every
/// operator; for `Bool`, `==` and `!=`. The payload, read as the attribute's type (as its getter
/// reads it), and the constant are compared with the operator the predicate names, so the result
/// is the predicate's.
enum RowComparison {
    enum Operator {
        case equal, notEqual, lessThan, lessThanOrEqual, greaterThan, greaterThanOrEqual

        init?(_ op: PredicateExpressions.ComparisonOperator) {
            switch op {
            case .lessThan: self = .lessThan
            case .lessThanOrEqual: self = .lessThanOrEqual
            case .greaterThan: self = .greaterThan
            case .greaterThanOrEqual: self = .greaterThanOrEqual
            @unknown default: return nil
            }
        }

        /// The operator with its operands swapped (`1 < x` is `x > 1`).
        var swapped: Operator {
            switch self {
            case .equal, .notEqual: self
            case .lessThan: .greaterThan
            case .lessThanOrEqual: .greaterThanOrEqual
            case .greaterThan: .lessThan
            case .greaterThanOrEqual: .lessThanOrEqual
            }
        }
    }

    /// The node comparing `lhs` with `rhs` in place, when compiling to read rows and one side is
    /// an attribute of a supported type and the other a constant; otherwise `nil`.
    static func make<Frame>(
        _ lhs: Any, _ op: Operator, _ rhs: Any, _ compiler: PredicateCompiler<Frame>
    ) -> PredicateEvaluator<Frame, Bool>? {
        guard compiler.rows != nil else { return nil }
        let keyPath: any KeyPathPredicateExpression
        let constant: Any
        let order: Operator
        if let left = lhs as? any KeyPathPredicateExpression, let right = rhs as? any ConstantPredicateExpression {
            (keyPath, constant, order) = (left, right.constant, op)
        } else if let left = lhs as? any ConstantPredicateExpression, let right = rhs as? any KeyPathPredicateExpression
        {
            (keyPath, constant, order) = (right, left.constant, op.swapped)
        } else {
            return nil
        }
        let type = keyPath.valueType
        guard isSupported(type), let slot = keyPath.rowSlot(compiler),
            let compare = comparison(type: type, constant: constant, order)
        else { return nil }
        return { frame in compare(frame.row.unsafelyUnwrapped + slot) }
    }

    private static func isSupported(_ type: Any.Type) -> Bool {
        type == Int.self || type == Int64.self || type == Int32.self || type == Int16.self || type == Double.self
            || type == String.self || type == Date.self || type == Bool.self
    }

    /// The comparison of the value at a pointer with `constant`, a value of `type`.
    private static func comparison(
        type: Any.Type, constant: Any, _ order: Operator
    ) -> ((UnsafePointer<StoredValue>) -> Bool)? {
        switch constant {
        case let bound as Int where type == Int.self: return integers(Int64(bound), order)
        case let bound as Int64 where type == Int64.self: return integers(bound, order)
        case let bound as Int32 where type == Int32.self:
            return values(bound, order) { if case .integer(let value) = $0 { Int32(exactly: value) } else { nil } }
        case let bound as Int16 where type == Int16.self:
            return values(bound, order) { if case .integer(let value) = $0 { Int16(exactly: value) } else { nil } }
        case let bound as Double where type == Double.self:
            return values(bound, order) { if case .double(let value) = $0 { value } else { nil } }
        case let bound as String where type == String.self:
            return values(bound, order) { if case .string(let value) = $0 { value } else { nil } }
        case let bound as Date where type == Date.self:
            return values(bound, order) { if case .date(let value) = $0 { value } else { nil } }
        case let bound as Bool where type == Bool.self:
            guard order == .equal || order == .notEqual else { return nil }
            let equal = order == .equal
            return { pointer in
                guard case .bool(let value) = pointer.pointee else { trapUnreadable(pointer.pointee, as: Bool.self) }
                return (value == bound) == equal
            }
        default: return nil
        }
    }

    private static func integers(_ bound: Int64, _ order: Operator) -> (UnsafePointer<StoredValue>) -> Bool {
        values(bound, order) { if case .integer(let value) = $0 { value } else { nil } }
    }

    @inline(__always)
    private static func values<Value: Comparable>(
        _ bound: Value, _ order: Operator, _ read: @escaping (StoredValue) -> Value?
    ) -> (UnsafePointer<StoredValue>) -> Bool {
        @inline(__always) func value(_ pointer: UnsafePointer<StoredValue>) -> Value {
            guard let value = read(pointer.pointee) else { trapUnreadable(pointer.pointee, as: Value.self) }
            return value
        }
        switch order {
        case .equal: return { value($0) == bound }
        case .notEqual: return { value($0) != bound }
        case .lessThan: return { value($0) < bound }
        case .lessThanOrEqual: return { value($0) <= bound }
        case .greaterThan: return { value($0) > bound }
        case .greaterThanOrEqual: return { value($0) >= bound }
        }
    }

    /// A row value of another type than its attribute's: stores check every value they read, so
    /// this is a defect, as reading it through the object's getter would trap.
    static func trapUnreadable<Value>(_ stored: StoredValue, as _: Value.Type) -> Never {
        fatalError("QueueData: a row holds \(stored) where a \(Value.self) attribute was expected.")
    }
}
