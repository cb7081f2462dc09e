/// Runs `body` with a time limit: a stream that never delivers (or never ends) fails the test
/// instead of hanging it.
///
/// The limit is generous on purpose: the suite's tests run in parallel on the machine's cores,
/// synchronous tests hold the cooperative pool's threads while they run, and under the thread
/// sanitizer a task can wait tens of seconds for one. It is there to catch a hang, not to time
/// anything.
func within<Value: Sendable>(
    seconds: Double = 300,
    _ body: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw CancellationError()
        }
        return value
    }
}
