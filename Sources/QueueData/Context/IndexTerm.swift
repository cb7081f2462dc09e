import Foundation

/// A requirement of a predicate that an index can answer: a key path read on the object being
/// matched must equal one of some constant values. Found among the operands of the predicate's
/// top-level `&&`: `$0.code == code`, `code == $0.code`, `codes.contains($0.code)`.
struct IndexTerm {
    let keyPath: AnyKeyPath
    /// The constants, in the stored form of their values; `nil` for a constant of a type whose
    /// `==` the stored form does not follow (a custom `AttributeValue`, a decimal, a URL).
    let values: [StoredValue]?

    /// The stored form of a constant, for the value types whose `==` is the stored form's:
    /// strings, integers, Booleans, floating-point numbers, dates, data, UUIDs, and `nil`.
    static func storedValue(ofConstant value: Any) -> StoredValue? {
        if let optional = value as? any _OptionalAttributeValue, optional._isNil {
            return .null
        }
        switch value {
        case let value as String: return .string(value)
        case let value as Int: return .integer(Int64(value))
        case let value as Int64: return .integer(value)
        case let value as Int32: return .integer(Int64(value))
        case let value as Int16: return .integer(Int64(value))
        case let value as Bool: return .bool(value)
        case let value as Double: return .double(value)
        case let value as Float: return .double(Double(value))
        case let value as Date: return .date(value)
        case let value as Data: return .data(value)
        case let value as UUID: return .uuid(value)
        default: return nil
        }
    }

    /// Whether a stored constant can be compared with the values of an attribute of `type`.
    static func fits(_ value: StoredValue, _ attribute: AttributeDescription) -> Bool {
        switch (value, attribute.type) {
        case (.null, _): return attribute.isOptional
        case (.string, .string), (.bool, .boolean), (.date, .date), (.data, .binaryData), (.uuid, .uuid): return true
        case (.integer, .integer16), (.integer, .integer32), (.integer, .integer64): return true
        case (.double, .double), (.double, .float): return true
        default: return false
        }
    }
}

/// A key path read on the predicate's variable.
protocol RootKeyPathExpression {
    func keyPath(ofRoot root: PredicateExpressions.VariableID) -> AnyKeyPath?
}

/// A variable of a predicate.
protocol VariableExpression {
    var variableKey: PredicateExpressions.VariableID { get }
}

/// A constant of a predicate.
protocol ConstantExpression {
    var constant: Any { get }
}

extension PredicateExpressions.Variable: VariableExpression {
    var variableKey: PredicateExpressions.VariableID { key }
}

extension PredicateExpressions.KeyPath: RootKeyPathExpression {
    func keyPath(ofRoot root: PredicateExpressions.VariableID) -> AnyKeyPath? {
        guard let variable = self.root as? any VariableExpression, variable.variableKey == root else { return nil }
        return keyPath
    }
}

extension PredicateExpressions.Value: ConstantExpression {
    var constant: Any { value }
}

extension PredicateExpressions.NilLiteral: ConstantExpression {
    var constant: Any { Optional<Int>.none as Any }
}

// The nodes that hold terms; they are compilable only when their operands are, so a term is
// only ever used with a compiled predicate.

extension PredicateExpressions.Conjunction
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func indexTerms(root: PredicateExpressions.VariableID) -> [IndexTerm] {
        lhs.indexTerms(root: root) + rhs.indexTerms(root: root)
    }
}

extension PredicateExpressions.Equal
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func indexTerms(root: PredicateExpressions.VariableID) -> [IndexTerm] {
        for (side, other) in [(lhs as Any, rhs as Any), (rhs as Any, lhs as Any)] {
            if let keyPath = (side as? any RootKeyPathExpression)?.keyPath(ofRoot: root),
                let constant = (other as? any ConstantExpression)?.constant
            {
                return [
                    IndexTerm(keyPath: keyPath, values: IndexTerm.storedValue(ofConstant: constant).map { [$0] })
                ]
            }
        }
        return []
    }
}

extension PredicateExpressions.SequenceContains
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func indexTerms(root: PredicateExpressions.VariableID) -> [IndexTerm] {
        guard let keyPath = (element as? any RootKeyPathExpression)?.keyPath(ofRoot: root),
            let constants = (sequence as? any ConstantExpression)?.constant as? any Sequence
        else { return [] }
        var values: [StoredValue]? = []
        for constant in constants {
            guard let value = IndexTerm.storedValue(ofConstant: constant) else {
                values = nil
                break
            }
            values?.append(value)
        }
        return [IndexTerm(keyPath: keyPath, values: values)]
    }
}

/// A key path of the objects of one entity, for the slots its context's fetches learned (kept
/// by the context, on its queue).
struct AttributeSlotKey: Hashable {
    let entityIndex: Int
    let keyPath: AnyKeyPath
}
