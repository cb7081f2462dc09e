import Foundation

/// How many rounds a randomized test that compares one context's results with a reference runs:
/// `rounds`, divided by `QUEUEDATA_ROUNDS_DIVISOR` when it is set.
///
/// CI's ThreadSanitizer run sets it (`.ci/run`): these tests run on one queue, at full size in
/// the plain `swift test` before it, and at full size they were half the sanitized run's time.
func scaledRounds(_ rounds: Int) -> Int {
    guard let divisor = roundsDivisor, divisor > 1 else { return rounds }
    return Swift.max(1, rounds / divisor)
}

private let roundsDivisor = ProcessInfo.processInfo.environment["QUEUEDATA_ROUNDS_DIVISOR"].flatMap(Int.init)
