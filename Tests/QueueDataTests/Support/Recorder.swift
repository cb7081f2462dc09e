import Foundation

/// A value shared between threads, behind an `NSLock` (a pthread mutex, which the thread
/// sanitizer understands; it reports false races inside `Synchronization.Mutex` on Linux).
/// Tests may use locks; `Sources/` may not.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }
}

/// Collects values reported from any thread, such as migration progress.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Locked<[Value]>([])

    func record(_ value: Value) {
        storage.withLock { $0.append(value) }
    }

    var values: [Value] { storage.withLock { $0 } }

    var count: Int { storage.withLock { $0.count } }
}
