internal import CQueueDataShims

/// Learns which key paths of a predicate are attributes, by watching the attribute reads of
/// a real evaluation.
///
/// Every `@Attribute` getter knows its own key path (the wrapped property's). While a recorder
/// is installed on the thread and the context's fast path is switched off, each getter reports
/// its key path and slot here. A predicate's key path that *equals* a reported one, read on
/// the object being matched, is that attribute — key path equality, not a name or a guess, so a
/// computed property that reads an attribute is never taken for it. The recorder only watches
/// evaluations the fetch performs anyway, on real rows: it runs no code the fetch would not.
final class AttributeReadRecorder {
    /// One attribute read: the getter's key path, its slot, and the object it was read on.
    struct Read {
        let keyPath: AnyKeyPath
        let slot: Int
        let object: ObjectIdentifier
    }

    private(set) var reads: [Read] = []

    func record(_ keyPath: AnyKeyPath, slot: Int, object: ManagedObject) {
        reads.append(Read(keyPath: keyPath, slot: slot, object: ObjectIdentifier(object)))
    }

    /// Runs `body` (on the context's queue) with every attribute read on this thread reported
    /// here: the confinement's thread-local fast path is switched off for its duration, so each
    /// read takes the slow path, which reports and checks it.
    func recording<Result>(_ body: () throws -> Result) rethrows -> Result {
        reads.removeAll(keepingCapacity: true)
        let previousRecorder = qd_read_recorder_get()
        let previousToken = qd_confinement_current()
        qd_read_recorder_set(Unmanaged.passUnretained(self).toOpaque())
        qd_confinement_set_current(nil)
        defer {
            qd_confinement_set_current(previousToken)
            qd_read_recorder_set(previousRecorder)
        }
        return try body()
    }

    /// The slot of the attribute whose key path is `keyPath`, if the last recording read it on
    /// `object`.
    func slot(of keyPath: AnyKeyPath, on object: ManagedObject) -> Int? {
        let identifier = ObjectIdentifier(object)
        return reads.first { $0.object == identifier && $0.keyPath == keyPath }?.slot
    }
}
