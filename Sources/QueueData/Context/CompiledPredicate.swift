import Foundation

/// A `#Predicate` compiled to a closure: the same expression tree, evaluated without
/// Foundation's generic machinery (a bindings list searched and cast from `Any` for every
/// variable read, an existential per node), which costs about a microsecond per object.
///
/// Compiling changes how a predicate is evaluated, never what it means: every node does what
/// its `evaluate(_:)` does, with the same operators on the same values (`==`, `<`, `&&` with
/// its short circuit, `??`, `contains`, `starts(with:)`), and key paths are read on the object
/// itself, through its real getters — a computed property, a relationship or an attribute alike.
/// The fetch hands the closure the same objects it handed `evaluate`: registered objects, and a
/// reusable object loaded with each committed row, so rows that do not match still never make
/// an object. A predicate with any node outside the compiled set (`contains(where:)`,
/// `allSatisfy`, division, casts, regexes, ...) is not compiled; the fetch then evaluates it as
/// before. Tests compare both on thousands of random predicates and rows.
///
/// The frame a compiled predicate is evaluated on is not generic (its root is an object): a
/// generic one had its type's metadata looked up at run time on every evaluation.
struct CompiledPredicate<Object: AnyObject> {
    /// The compiled expression, on a frame whose root is an `Object`.
    let evaluator: PredicateEvaluator<Bool>

    /// Whether `object` matches.
    func matches(_ object: Object) throws -> Bool {
        var frame = PredicateFrame(root: object)
        return try evaluator(&frame)
    }

    /// Compiles `predicate`, or returns `nil` when one of its nodes is not compiled.
    init?(_ predicate: Predicate<Object>) {
        guard let expression = predicate.expression as? any CompilablePredicateExpression<Bool> else { return nil }
        let compiler = PredicateCompiler(root: predicate.variable.key, rootType: Object.self)
        guard let evaluator = expression.compiled(compiler) else { return nil }
        self.evaluator = evaluator
    }
}

/// What a compiled node reads its variables from: the object being matched, and the values
/// bound by enclosing `flatMap`s.
struct PredicateFrame {
    let root: AnyObject
    var bound: [PredicateExpressions.VariableID: Any] = [:]
}

/// A compiled node: its value for one frame.
typealias PredicateEvaluator<Output> = (inout PredicateFrame) throws -> Output

/// The variables a node may read: the predicate's own (of class `rootType`), and those bound by
/// enclosing nodes.
struct PredicateCompiler {
    let root: PredicateExpressions.VariableID
    let rootType: AnyObject.Type
    var bound: Set<PredicateExpressions.VariableID> = []

    func binding(_ variable: PredicateExpressions.VariableID) -> PredicateCompiler {
        var compiler = self
        compiler.bound.insert(variable)
        return compiler
    }
}

/// A predicate expression that can be compiled to a closure.
protocol CompilablePredicateExpression<Output>: PredicateExpression {
    /// The node as a closure, or `nil` if it (or a node below it) cannot be compiled.
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>?
}

// MARK: Leaves

extension PredicateExpressions.Variable: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>? {
        if key == compiler.root {
            guard compiler.rootType == Output.self else { return nil }
            // The root's class: the cast is an identity.
            return { frame in unsafeBitCast(frame.root, to: Output.self) }
        }
        guard compiler.bound.contains(key) else { return nil }
        let key = self.key
        return { frame in frame.bound[key] as! Output }
    }
}

extension PredicateExpressions.KeyPath: CompilablePredicateExpression where Root: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>? {
        guard let root = root.compiled(compiler) else { return nil }
        let keyPath = self.keyPath
        return { frame in try root(&frame)[keyPath: keyPath] }
    }
}

extension PredicateExpressions.Value: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>? {
        let value = self.value
        return { _ in value }
    }
}

extension PredicateExpressions.NilLiteral: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>? {
        { _ in nil }
    }
}

// MARK: Comparisons

extension PredicateExpressions.Equal: CompilablePredicateExpression
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Bool>? {
        guard let lhs = lhs.compiled(compiler), let rhs = rhs.compiled(compiler) else { return nil }
        return { frame in try lhs(&frame) == rhs(&frame) }
    }
}

extension PredicateExpressions.NotEqual: CompilablePredicateExpression
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Bool>? {
        guard let lhs = lhs.compiled(compiler), let rhs = rhs.compiled(compiler) else { return nil }
        return { frame in try lhs(&frame) != rhs(&frame) }
    }
}

extension PredicateExpressions.Comparison: CompilablePredicateExpression
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Bool>? {
        guard let lhs = lhs.compiled(compiler), let rhs = rhs.compiled(compiler) else { return nil }
        switch op {
        case .lessThan: return { frame in try lhs(&frame) < rhs(&frame) }
        case .lessThanOrEqual: return { frame in try lhs(&frame) <= rhs(&frame) }
        case .greaterThan: return { frame in try lhs(&frame) > rhs(&frame) }
        case .greaterThanOrEqual: return { frame in try lhs(&frame) >= rhs(&frame) }
        @unknown default: return nil
        }
    }
}

// MARK: Logic

extension PredicateExpressions.Conjunction: CompilablePredicateExpression
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Bool>? {
        guard let lhs = lhs.compiled(compiler), let rhs = rhs.compiled(compiler) else { return nil }
        return { frame in try lhs(&frame) && rhs(&frame) }
    }
}

extension PredicateExpressions.Disjunction: CompilablePredicateExpression
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Bool>? {
        guard let lhs = lhs.compiled(compiler), let rhs = rhs.compiled(compiler) else { return nil }
        return { frame in try lhs(&frame) || rhs(&frame) }
    }
}

extension PredicateExpressions.Negation: CompilablePredicateExpression where Wrapped: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Bool>? {
        guard let wrapped = wrapped.compiled(compiler) else { return nil }
        return { frame in try !wrapped(&frame) }
    }
}

extension PredicateExpressions.Conditional: CompilablePredicateExpression
where Test: CompilablePredicateExpression, If: CompilablePredicateExpression, Else: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>? {
        guard let test = test.compiled(compiler), let trueBranch = trueBranch.compiled(compiler),
            let falseBranch = falseBranch.compiled(compiler)
        else { return nil }
        return { frame in try test(&frame) ? trueBranch(&frame) : falseBranch(&frame) }
    }
}

// MARK: Optionals

extension PredicateExpressions.NilCoalesce: CompilablePredicateExpression
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>? {
        guard let lhs = lhs.compiled(compiler), let rhs = rhs.compiled(compiler) else { return nil }
        return { frame in try lhs(&frame) ?? rhs(&frame) }
    }
}

extension PredicateExpressions.OptionalFlatMap: CompilablePredicateExpression
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>? {
        guard let wrapped = wrapped.compiled(compiler),
            let transform = transform.compiled(compiler.binding(variable.key))
        else { return nil }
        let key = variable.key
        return { frame in
            guard let inner = try wrapped(&frame) else { return nil }
            let outer = frame.bound.updateValue(inner, forKey: key)
            defer { frame.bound[key] = outer }
            // As `evaluate` does: the transform may return `Result` or `Result?`.
            return try transform(&frame) as! Result?
        }
    }
}

// MARK: Sequences and strings

extension PredicateExpressions.SequenceContains: CompilablePredicateExpression
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Bool>? {
        guard let sequence = sequence.compiled(compiler), let element = element.compiled(compiler) else {
            return nil
        }
        return { frame in
            let list = try sequence(&frame)
            let search = try element(&frame)
            return list.contains(search)
        }
    }
}

extension PredicateExpressions.SequenceStartsWith: CompilablePredicateExpression
where Base: CompilablePredicateExpression, Prefix: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Bool>? {
        guard let base = base.compiled(compiler), let prefix = prefix.compiled(compiler) else { return nil }
        return { frame in try base(&frame).starts(with: prefix(&frame)) }
    }
}

extension PredicateExpressions.CollectionContainsCollection: CompilablePredicateExpression
where Base: CompilablePredicateExpression, Other: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Bool>? {
        guard let base = base.compiled(compiler), let other = other.compiled(compiler) else { return nil }
        return { frame in try base(&frame).contains(other(&frame)) }
    }
}

// MARK: Arithmetic

extension PredicateExpressions.UnaryMinus: CompilablePredicateExpression where Wrapped: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>? {
        guard let wrapped = wrapped.compiled(compiler) else { return nil }
        return { frame in try -wrapped(&frame) }
    }
}

extension PredicateExpressions.Arithmetic: CompilablePredicateExpression
where LHS: CompilablePredicateExpression, RHS: CompilablePredicateExpression {
    func compiled(_ compiler: PredicateCompiler) -> PredicateEvaluator<Output>? {
        guard let lhs = lhs.compiled(compiler), let rhs = rhs.compiled(compiler) else { return nil }
        switch op {
        case .add: return { frame in try lhs(&frame) + rhs(&frame) }
        case .subtract: return { frame in try lhs(&frame) - rhs(&frame) }
        case .multiply: return { frame in try lhs(&frame) * rhs(&frame) }
        @unknown default: return nil
        }
    }
}
