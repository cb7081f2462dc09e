import Foundation

/// How a fetch matches one entity's rows and objects against its predicate: in place on row
/// values (``RowPredicate``) once every key path the predicate reads on the object is resolved
/// to a persistent attribute; on objects until then, and for good when one of them is anything
/// else (a computed property, a relationship) or the predicate is not compiled.
///
/// Until the key paths are resolved, objects are matched with the predicate compiled to read
/// them through ``ManagedObjectContext/reading(_:on:)``, which resolves each key path the first
/// time it reads it: key paths are probed only where the predicate reads them anyway.
final class EntityMatcher<Result: ManagedObject> {
    private enum Mode {
        case learning(CompiledPredicate<Result>, KeyPathLearner)
        case rows(RowPredicate)
        case objects
    }

    private var mode: Mode
    private let entityIndex: Int
    private let predicate: Predicate<Result>
    /// The predicate on objects: compiled, or Foundation's `evaluate`.
    private let objectMatcher: (Result) throws -> Bool
    private unowned let context: ManagedObjectContext

    init(
        _ predicate: Predicate<Result>, objectMatcher: @escaping (Result) throws -> Bool, entityIndex: Int,
        context: ManagedObjectContext
    ) {
        self.predicate = predicate
        self.objectMatcher = objectMatcher
        self.entityIndex = entityIndex
        self.context = context
        mode = .objects
        guard context.readsRows, context.compilesPredicates else { return }
        if let rows = RowPredicate(predicate, entityIndex: entityIndex, context: context) {
            // Every key path was resolved by an earlier fetch.
            mode = .rows(rows)
        } else {
            let learner = KeyPathLearner(context: context)
            if let learning = CompiledPredicate(predicate, learning: learner),
                !learner.keyPaths.contains(where: {
                    context.resolvedSlot(of: $0, entityIndex: entityIndex) == .some(nil)
                })
            {
                mode = .learning(learning, learner)
            }
        }
    }

    /// The predicate on row values, once it reads rows: then ``matches(_:)`` is not needed for
    /// committed rows.
    var rowPredicate: RowPredicate? {
        if case .rows(let rows) = mode { rows } else { nil }
    }

    /// Whether `object`, with its current values, matches.
    func matches(_ object: ManagedObject) throws -> Bool {
        switch mode {
        case .rows(let rows):
            return try rows.matches(object._values)
        case .objects:
            return try objectMatcher(unsafeDowncast(object, to: Result.self))
        case .learning(let learning, let learner):
            let result = try learning.matches(unsafeDowncast(object, to: Result.self))
            var complete = true
            for keyPath in learner.keyPaths {
                switch context.resolvedSlot(of: keyPath, entityIndex: entityIndex) {
                case .none: complete = false
                case .some(.none):
                    // Not a persistent attribute: objects it is.
                    mode = .objects
                    return result
                case .some(.some): break
                }
            }
            if complete {
                mode = RowPredicate(predicate, entityIndex: entityIndex, context: context).map(Mode.rows) ?? .objects
            }
            return result
        }
    }
}
