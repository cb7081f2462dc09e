internal import CQueueDataShims
import Foundation

/// An entity and a key path of its objects.
struct KeyPathSlot: Hashable {
    var entityIndex: Int
    var keyPath: AnyKeyPath
}

/// Collects, while installed on a thread, the attribute reads of one object: which key path
/// (the `@Attribute` property's own, as its wrapper receives it) read which slot.
///
/// A key path is only ever known to be an attribute this way, by the attribute's wrapper
/// receiving it: reading key paths on made-up rows would run the app's computed properties on
/// values that never exist (and could trap), and could not tell `label.lowercased()` from
/// `label` on lowercase samples.
final class AttributeReadRecorder {
    private let object: ObjectIdentifier
    private(set) var reads: [(keyPath: AnyKeyPath, slot: Int)] = []

    init(object: ManagedObject) {
        self.object = ObjectIdentifier(object)
    }

    /// Called by the attribute getter's slow path.
    func record(_ keyPath: AnyKeyPath, slot: Int, of object: ManagedObject) {
        if ObjectIdentifier(object) == self.object {
            reads.append((keyPath, slot))
        }
    }

    /// Runs `body` with this recorder installed on the thread.
    func recording<Result>(_ body: () throws -> Result) rethrows -> Result {
        let previous = qd_attribute_reads_get()
        qd_attribute_reads_set(Unmanaged.passUnretained(self).toOpaque())
        defer { qd_attribute_reads_set(previous) }
        return try withExtendedLifetime(self) { try body() }
    }
}

extension ManagedObjectContext {
    /// How many objects a fetch evaluates while learning its predicate's key paths before it
    /// gives up compiling it (a key path to a computed property is never learned).
    static let predicateLearningLimit = 16

    /// `predicate` compiled for the rows of the entity at `entityIndex`, or `nil` when it
    /// cannot run on rows, or reads key paths this context has not yet seen read an attribute.
    func compiledPredicate<Object>(_ predicate: Predicate<Object>, entityIndex: Int) -> CompiledPredicate? {
        guard compilesPredicates else { return nil }
        return CompiledPredicate.compile(predicate) { keyPath, type, isOptional in
            guard let slot = self.keyPathSlots[KeyPathSlot(entityIndex: entityIndex, keyPath: keyPath)] else {
                return nil
            }
            let attribute = self.model.entities[entityIndex].attributes[slot]
            return attribute.type == type && attribute.isOptional == isOptional ? slot : nil
        }
    }

    /// Evaluates `predicate` on `object` as a fetch does, recording which of its key paths
    /// read which attribute, so that the predicate can be compiled.
    func evaluateLearning<Object>(_ predicate: Predicate<Object>, on object: ManagedObject) throws -> Bool {
        let recorder = AttributeReadRecorder(object: object)
        let result = try recorder.recording {
            try confinement.withoutFastPath { try predicate.evaluate(object as! Object) }
        }
        let entityIndex = object._objectID.key.entityIndex!
        for read in recorder.reads {
            keyPathSlots[KeyPathSlot(entityIndex: entityIndex, keyPath: read.keyPath)] = read.slot
        }
        return result
    }
}
