import Foundation
import Testing

@testable import QueueData

/// Every kind of attribute a compiled predicate reads, and computed properties it reads through
/// their getters, as `evaluate` does.
final class Specimen: ManagedObject {
    @Attribute var count: Int = 0
    @Attribute var small: Int16 = 0
    @Attribute var weight: Double = 0
    @Attribute var ratio: Float = 0
    @Attribute var label: String = ""
    @Attribute var note: String? = nil
    @Attribute var flag: Bool = false
    @Attribute var seen: Date? = nil
    @Attribute var level: Int? = nil

    /// Computed from an attribute.
    var doubled: Int { count * 2 }
    /// Computed from two attributes, of an attribute's type.
    var noteOrLabel: String { note ?? label }
    /// Equal to the attribute for lowercase labels only.
    var lowerLabel: String { label.lowercased() }
    /// Equal to the attribute for non-negative counts only.
    var clampedCount: Int { max(count, 0) }
    /// Traps unless `seen` is set: only a predicate that checks `seen` first may read it.
    var seenDay: Int { Int(seen!.timeIntervalSince1970 / 86_400) }
}

let specimenModel = ManagedObjectModel([Specimen.self])

/// Builds random predicates over `Specimen` from Foundation's expression types, as
/// `#Predicate` would.
final class PredicateGenerator {
    typealias Variable = PredicateExpressions.Variable<Specimen>
    typealias Expression = any StandardPredicateExpression<Bool>

    var random: SeededGenerator
    static let labels = ["", "a", "ab", "Ab", "abc", "b", "é", "e\u{301}", "ée", "zz"]
    static let weights: [Double] = [0, -0.0, 1.5, -2, .nan, .infinity, 3]
    static let dates = (0..<4).map { Date(timeIntervalSince1970: Double($0) * 86_400) }

    init(seed: UInt64) {
        random = SeededGenerator(seed: seed)
    }

    func pick<Element>(_ elements: [Element]) -> Element {
        elements[Int(random.next() % UInt64(elements.count))]
    }

    func integer(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(random.next() % UInt64(range.count))
    }

    func predicate(depth: Int) -> Predicate<Specimen> {
        Predicate<Specimen> { specimen in self.expression(specimen, depth: depth) }
    }

    private func keyPath<Value>(
        _ variable: Variable,
        _ keyPath: KeyPath<Specimen, Value> & Sendable
    ) -> PredicateExpressions.KeyPath<Variable, Value> {
        PredicateExpressions.build_KeyPath(root: variable, keyPath: keyPath)
    }

    private func compare<Value: Comparable & Codable & Sendable>(
        _ lhs: PredicateExpressions.KeyPath<Variable, Value>,
        _ value: Value
    ) -> Expression {
        let op = pick([
            PredicateExpressions.ComparisonOperator.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual,
        ])
        let constant = PredicateExpressions.build_Arg(value)
        // Either side may hold the attribute.
        if random.next() % 2 == 0 {
            return PredicateExpressions.build_Comparison(lhs: lhs, rhs: constant, op: op)
        }
        return PredicateExpressions.build_Comparison(lhs: constant, rhs: lhs, op: op)
    }

    private func equal<Value: Equatable & Codable & Sendable>(
        _ lhs: PredicateExpressions.KeyPath<Variable, Value>,
        _ value: Value
    ) -> Expression {
        let constant = PredicateExpressions.build_Arg(value)
        if random.next() % 2 == 0 {
            return PredicateExpressions.build_Equal(lhs: lhs, rhs: constant)
        }
        return PredicateExpressions.build_NotEqual(lhs: constant, rhs: lhs)
    }

    private func both(_ lhs: Expression, _ rhs: Expression, and: Bool) -> Expression {
        func combine<L: StandardPredicateExpression<Bool>, R: StandardPredicateExpression<Bool>>(
            _ lhs: L,
            _ rhs: R
        ) -> Expression {
            and
                ? PredicateExpressions.build_Conjunction(lhs: lhs, rhs: rhs)
                : PredicateExpressions.build_Disjunction(lhs: lhs, rhs: rhs)
        }
        return combine(lhs, rhs)
    }

    private func not(_ wrapped: Expression) -> Expression {
        func negate<W: StandardPredicateExpression<Bool>>(_ wrapped: W) -> Expression {
            PredicateExpressions.build_Negation(wrapped)
        }
        return negate(wrapped)
    }

    private func conditional(_ test: Expression, _ whenTrue: Expression, _ whenFalse: Expression) -> Expression {
        func build<
            T: StandardPredicateExpression<Bool>, L: StandardPredicateExpression<Bool>,
            R: StandardPredicateExpression<Bool>
        >(
            _ test: T,
            _ whenTrue: L,
            _ whenFalse: R
        ) -> Expression {
            PredicateExpressions.build_Conditional(test, whenTrue, whenFalse)
        }
        return build(test, whenTrue, whenFalse)
    }

    /// Arithmetic, unary minus, `?:` and `flatMap` over an optional.
    private func computed(_ specimen: Variable, depth: Int) -> Expression {
        switch random.next() % 3 {
        case 0:
            // count * k + -m > n
            let product = PredicateExpressions.build_Arithmetic(
                lhs: keyPath(specimen, \.count), rhs: PredicateExpressions.build_Arg(integer(-3...3)),
                op: pick([.multiply, .add, .subtract]))
            let sum = PredicateExpressions.build_Arithmetic(
                lhs: product,
                rhs: PredicateExpressions.build_UnaryMinus(PredicateExpressions.build_Arg(integer(-3...3))),
                op: .add)
            return PredicateExpressions.build_Comparison(
                lhs: sum, rhs: PredicateExpressions.build_Arg(integer(-6...6)), op: .greaterThan)
        case 1:
            // level.flatMap { $0 * 2 } == k
            let mapped = PredicateExpressions.build_flatMap(keyPath(specimen, \.level)) { level in
                PredicateExpressions.build_Arithmetic(
                    lhs: level, rhs: PredicateExpressions.build_Arg(2), op: .multiply)
            }
            let target: Int? = random.next() % 3 == 0 ? nil : integer(-4...4)
            return PredicateExpressions.build_Equal(lhs: mapped, rhs: PredicateExpressions.build_Arg(target))
        default:
            return conditional(
                equal(keyPath(specimen, \.flag), true), expression(specimen, depth: max(depth - 1, 0)),
                expression(specimen, depth: max(depth - 1, 0)))
        }
    }

    func expression(_ specimen: Variable, depth: Int) -> Expression {
        if random.next() % 8 == 0 {
            return computed(specimen, depth: depth)
        }
        switch random.next() % (depth > 0 ? 20 : 16) {
        case 0: return compare(keyPath(specimen, \.count), integer(-6...6))
        case 1: return compare(keyPath(specimen, \.small), Int16(integer(-4...4)))
        case 2: return compare(keyPath(specimen, \.weight), pick(Self.weights))
        case 3: return compare(keyPath(specimen, \.ratio), Float(pick([0, 1.5, -1, 2])))
        case 4: return compare(keyPath(specimen, \.label), pick(Self.labels))
        case 5: return equal(keyPath(specimen, \.label), pick(Self.labels))
        case 6: return equal(keyPath(specimen, \.note), random.next() % 3 == 0 ? nil : pick(Self.labels))
        case 7: return equal(keyPath(specimen, \.flag), random.next() % 2 == 0)
        case 8: return equal(keyPath(specimen, \.seen), random.next() % 3 == 0 ? nil : pick(Self.dates))
        case 9: return equal(keyPath(specimen, \.level), random.next() % 3 == 0 ? nil : integer(-2...2))
        case 10: return equal(keyPath(specimen, \.weight), pick(Self.weights))
        case 11:
            let values = (0..<integer(0...3)).map { _ in integer(-6...6) }
            return PredicateExpressions.build_contains(
                PredicateExpressions.build_Arg(values), keyPath(specimen, \.count))
        case 12:
            let prefix = PredicateExpressions.build_Arg(pick(Self.labels))
            return PredicateExpressions.build_starts(keyPath(specimen, \.label), with: prefix)
        case 13:
            let part = PredicateExpressions.build_Arg(pick(Self.labels))
            return PredicateExpressions.build_contains(keyPath(specimen, \.label), part)
        case 14:
            // (level ?? k) > m
            let coalesced = PredicateExpressions.build_NilCoalesce(
                lhs: keyPath(specimen, \.level), rhs: PredicateExpressions.build_Arg(integer(-2...2)))
            return PredicateExpressions.build_Comparison(
                lhs: coalesced, rhs: PredicateExpressions.build_Arg(integer(-2...2)), op: .greaterThan)
        case 15:
            // Computed properties: read through their getters, compiled or not.
            return random.next() % 2 == 0
                ? compare(keyPath(specimen, \.doubled), integer(-6...6))
                : equal(keyPath(specimen, \.noteOrLabel), pick(Self.labels))
        case 16, 17:
            return both(
                expression(specimen, depth: depth - 1), expression(specimen, depth: depth - 1),
                and: random.next() % 2 == 0)
        case 18:
            return not(expression(specimen, depth: depth - 1))
        default:
            return PredicateExpressions.build_Equal(
                lhs: keyPath(specimen, \.note), rhs: PredicateExpressions.build_NilLiteral())
        }
    }

    /// Sets random values on `specimen`.
    func fill(_ specimen: Specimen) {
        specimen.count = integer(-6...6)
        specimen.small = Int16(integer(-4...4))
        specimen.weight = pick(Self.weights)
        specimen.ratio = Float(pick([0, 1.5, -1, 2]))
        specimen.label = pick(Self.labels)
        specimen.note = random.next() % 3 == 0 ? nil : pick(Self.labels)
        specimen.flag = random.next() % 2 == 0
        specimen.seen = random.next() % 3 == 0 ? nil : pick(Self.dates)
        specimen.level = random.next() % 3 == 0 ? nil : integer(-2...2)
    }
}

@Suite("Compiled predicates")
struct CompiledPredicateTests {
    @Test("compiled predicates return what evaluate returns, on thousands of random predicates and rows")
    func differential() throws {
        let iterations =
            ProcessInfo.processInfo.environment["QUEUEDATA_PREDICATE_FUZZ"].flatMap(Int.init) ?? scaledRounds(1_500)
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "compiled-predicates")
        let seed = ProcessInfo.processInfo.environment["QUEUEDATA_PREDICATE_SEED"].flatMap(UInt64.init) ?? 7
        let generator = PredicateGenerator(seed: seed)
        var compiledCount = 0
        try context.performAndWait {
            for _ in 0..<400 {
                generator.fill(context.insert(Specimen.self))
            }
            try context.save()
            // Unsaved changes: updated objects and pending inserts are matched on their values.
            let all = try context.fetch(FetchRequest<Specimen>())
            for specimen in all.prefix(40) {
                generator.fill(specimen)
            }
            for _ in 0..<40 {
                generator.fill(context.insert(Specimen.self))
            }
            for iteration in 0..<iterations {
                let predicate = generator.predicate(depth: 3)
                var request = FetchRequest<Specimen>(predicate: predicate)
                request.includesPendingChanges = iteration % 3 != 0
                context.compilesPredicates = true
                let compiled = try context.fetchObjectIDs(request)
                if CompiledPredicate(predicate) != nil {
                    compiledCount += 1
                }
                context.compilesPredicates = false
                let evaluated = try context.fetchObjectIDs(request)
                context.compilesPredicates = true
                if compiled != evaluated {
                    Issue.record("predicate \(iteration) (seed \(seed)) differs: \(predicate)")
                    return
                }
                if iteration.isMultiple(of: 50) {
                    #expect(try context.count(for: request) == evaluated.count)
                }
            }
        }
        // Every generated shape is one the compiler covers.
        #expect(compiledCount == iterations, "\(compiledCount) of \(iterations) compiled")
    }

    @Test("computed properties and to-one key paths compile and read through the real getters")
    func keyPaths() throws {
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "compiled-key-paths")
        try context.performAndWait {
            for (label, count) in [("ABC", -5), ("abc", 0), ("Abc", 3)] {
                let specimen = context.insert(Specimen.self)
                specimen.label = label
                specimen.count = count
            }
            try context.save()
            context.reset()
            func compiles(_ predicate: Predicate<Specimen>) -> Bool {
                CompiledPredicate(predicate) != nil
            }
            #expect(compiles(#Predicate { $0.count >= -5 && $0.label.starts(with: "a") }))
            #expect(compiles(#Predicate { $0.note != nil || ($0.level ?? 0) >= 1 }))
            #expect(compiles(#Predicate { [1, 2, 3].contains($0.count) && !$0.flag }))
            #expect(compiles(#Predicate { $0.doubled > 3 }))
            #expect(compiles(#Predicate { $0.lowerLabel == "abc" }))
            #expect(compiles(#Predicate { $0.label.count > 2 }))
            #expect(compiles(#Predicate { $0.flag ? $0.count > 1 : $0.count < 1 }))
            #expect(compiles(#Predicate { $0.count * 2 - 1 > -3 }))
            func labels(_ predicate: Predicate<Specimen>) throws -> [String] {
                try context.fetch(FetchRequest<Specimen>(predicate: predicate, sortBy: [SortDescriptor(\.count)]))
                    .map(\.label)
            }
            // A computed property that returns the attribute for some rows only is read as itself.
            #expect(try labels(#Predicate { $0.lowerLabel == "abc" }) == ["ABC", "abc", "Abc"])
            #expect(try labels(#Predicate { $0.clampedCount == 0 }) == ["ABC", "abc"])
            #expect(try labels(#Predicate { $0.count + 1 > 2 }) == ["Abc"])
        }
        let graph = graphManager("memory", TemporaryDirectory("compiled-graph"))
        let graphContext = try graph.createContext()
        try graphContext.performAndWait {
            let explorer = graphContext.insert(Explorer.self)
            explorer.name = "Alice"
            for title in ["x", "y"] {
                let expedition = graphContext.insert(Expedition.self)
                expedition.title = title
                expedition.leader = title == "x" ? explorer : nil
            }
            try graphContext.save()
            graphContext.reset()
            let predicates: [Predicate<Expedition>] = [
                #Predicate { $0.leader?.name == "Alice" },
                #Predicate { $0.leader == nil },
                #Predicate { ($0.leader?.name ?? "nobody") == "nobody" },
                #Predicate { $0.leader.flatMap { $0.name.starts(with: "A") } == true },
                #Predicate { $0.tags.isEmpty },
                #Predicate { $0.tags.contains { $0.label == "x" } },
            ]
            var compiledCount = 0
            for predicate in predicates {
                compiledCount += CompiledPredicate(predicate) == nil ? 0 : 1
                graphContext.compilesPredicates = true
                let compiled = try graphContext.fetch(FetchRequest(predicate: predicate)).map(\.title)
                graphContext.compilesPredicates = false
                let evaluated = try graphContext.fetch(FetchRequest(predicate: predicate)).map(\.title)
                #expect(compiled == evaluated, "\(predicate)")
            }
            // `isEmpty` on a relationship is a key path too; `contains(where:)` is outside the
            // compiled set: Foundation evaluates it.
            #expect(compiledCount == predicates.count - 1)
            #expect(try graphContext.fetch(FetchRequest(predicate: predicates[0])).map(\.title) == ["x"])
        }
    }

    @Test("a computed property is never read on rows a predicate's own checks exclude, empty store or not")
    func computedPropertiesRunOnlyWhereEvaluateRunsThem() throws {
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "compiled-guarded")
        try context.performAndWait {
            let predicate = #Predicate<Specimen> { $0.seen != nil && $0.seenDay == 1 }
            #expect(CompiledPredicate(predicate) != nil)
            #expect(try context.fetch(FetchRequest(predicate: predicate)).isEmpty)
            for day in [nil, 1, 2] as [Int?] {
                context.insert(Specimen.self).seen = day.map { Date(timeIntervalSince1970: Double($0) * 86_400) }
            }
            try context.save()
            context.reset()
            #expect(try context.fetch(FetchRequest(predicate: predicate)).count == 1)
            #expect(try context.count(for: FetchRequest(predicate: predicate)) == 1)
        }
    }

    @Test("||, ?: and ?? skip what evaluate skips; nested flatMaps read outer variables")
    func shortCircuitsAndScopes() throws {
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "compiled-short-circuits")
        try context.performAndWait {
            // `seenDay` traps where `seen` is nil: a predicate may only read it where it checked.
            for (level, day, note) in [(1, nil, "1"), (nil, 2, "x"), (2, 1, "22"), (nil, 3, nil)]
                as [(Int?, Int?, String?)]
            {
                let specimen = context.insert(Specimen.self)
                specimen.level = level
                specimen.seen = day.map { Date(timeIntervalSince1970: Double($0) * 86_400) }
                specimen.note = note
                specimen.label = "\(level ?? 0)"
            }
            try context.save()
            context.reset()
            let predicates: [Predicate<Specimen>] = [
                #Predicate { $0.seen == nil || $0.seenDay == 1 },
                #Predicate { $0.seen == nil ? false : $0.seenDay >= 1 },
                #Predicate { $0.seen != nil && $0.level == nil },
                // Rows without a level have a date: `??` reads it only for them.
                #Predicate { ($0.level ?? $0.seenDay) >= 2 },
                // The outer `level` read inside the inner transform.
                #Predicate { specimen in
                    specimen.level.flatMap { level in specimen.note.flatMap { note in note.count == level } } == true
                },
                // A transform that returns an optional.
                #Predicate { specimen in specimen.level.flatMap { _ in specimen.note } == "22" },
            ]
            for predicate in predicates {
                #expect(CompiledPredicate(predicate) != nil, "\(predicate)")
                context.compilesPredicates = true
                let compiled = try context.fetch(FetchRequest(predicate: predicate, sortBy: [SortDescriptor(\.label)]))
                    .map(\.label)
                context.compilesPredicates = false
                let evaluated = try context.fetch(FetchRequest(predicate: predicate, sortBy: [SortDescriptor(\.label)]))
                    .map(\.label)
                context.compilesPredicates = true
                #expect(compiled == evaluated, "\(predicate)")
            }
            #expect(
                try context.fetch(FetchRequest(predicate: predicates[4], sortBy: [SortDescriptor(\.label)])).map(
                    \.label)
                    == ["1", "2"])
        }
    }

    @Test("a Float attribute holding a Double that is not a Float compares as the Float it reads as")
    func floatAttributes() throws {
        let manager = makeManager(model: specimenModel)
        let context = try makeContext(manager, "compiled-float")
        try context.performAndWait {
            let specimen = context.insert(Specimen.self)
            specimen.setValue(.double(0.1), forKey: "ratio")
            try context.save()
            context.reset()
            let target = Float(0.1)
            #expect(try context.count(for: FetchRequest<Specimen>(predicate: #Predicate { $0.ratio == target })) == 1)
            #expect(try context.count(for: FetchRequest<Specimen>(predicate: #Predicate { $0.ratio < target })) == 0)
        }
    }
}
