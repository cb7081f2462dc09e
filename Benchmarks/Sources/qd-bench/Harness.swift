import Dispatch
import Foundation
import QueueData

/// A baseline's figure, in the unit of the row it belongs to.
struct Baseline {
    var name: String
    var value: Double
}

/// One line of the results table.
struct Measurement {
    var workload: String
    var subject: Double
    /// The baseline the goal is stated against.
    var baseline: Double
    var baselineName: String
    var unit: String
    var goal: Double?
    var note: String = ""
    /// A goal on the subject's own figure (in `unit`), instead of on the ratio.
    var absoluteGoal: Double? = nil
    /// Further baselines measured in the same run, printed with the subject's ratio to each.
    var otherBaselines: [Baseline] = []
    /// Whether a larger figure is better (a throughput): the goal is then a lower bound on
    /// the ratio.
    var higherIsBetter = false

    var ratio: Double { subject / baseline }

    /// Whether the goal is met, or nil without a goal.
    var isGoalMet: Bool? {
        if let absoluteGoal {
            return higherIsBetter ? subject >= absoluteGoal : subject <= absoluteGoal
        }
        return goal.map { higherIsBetter ? ratio >= $0 : ratio <= $0 }
    }

    var goalDescription: String {
        let bound = higherIsBetter ? "≥" : "≤"
        if let absoluteGoal {
            return "\(bound) " + format(absoluteGoal, unit: unit)
        }
        return goal.map { String(format: "\(bound) %.1f×", $0) } ?? "—"
    }
}

/// Runs `body` `repetitions` times after one warm-up run and returns the median time in seconds.
func medianSeconds(repetitions: Int, _ body: () throws -> Void) rethrows -> Double {
    try body()
    var times: [Double] = []
    for _ in 0..<repetitions {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
    times.sort()
    return times[times.count / 2]
}

/// Runs `setUp` (untimed), then `body` (timed) with what it returned, then `tearDown`
/// (untimed), `repetitions` times after one warm-up run; returns the median time of `body`
/// in seconds.
func medianSeconds<State>(
    repetitions: Int,
    setUp: () throws -> State,
    measure body: (State) throws -> Void,
    tearDown: (State) throws -> Void
) rethrows -> Double {
    var times: [Double] = []
    for _ in 0...repetitions {
        let state = try setUp()
        let start = DispatchTime.now().uptimeNanoseconds
        try body(state)
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        try tearDown(state)
    }
    times.removeFirst()
    times.sort()
    return times[times.count / 2]
}

/// Keeps a value alive so the optimizer cannot remove the work that produced it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// `value` in `unit`: seconds shown as ns, µs or ms; bytes (`B`) and throughputs
/// (`saves/s`) as they are.
func format(_ value: Double, unit: String) -> String {
    switch unit {
    case "ns": return String(format: "%.2f ns", value * 1e9)
    case "µs": return String(format: "%.1f µs", value * 1e6)
    case "ms": return String(format: value < 1e-3 ? "%.3f ms" : "%.1f ms", value * 1e3)
    default: return String(format: "%.0f \(unit)", value)
    }
}

/// A ratio with two decimals, or two significant digits below 0.1 (so that 0.002× does not
/// print as 0.00×).
func formatRatio(_ ratio: Double) -> String {
    String(format: ratio < 0.1 ? "%.2g×" : "%.2f×", ratio)
}

func printTable(_ rows: [Measurement]) {
    let header = ["workload", "QueueData", "baseline (of the goal)", "ratio", "other baselines (ratio)", "goal", "met"]
    var lines = [header]
    for row in rows {
        let others = row.otherBaselines.map { other in
            "\(format(other.value, unit: row.unit)) (\(other.name)) \(formatRatio(row.subject / other.value))"
        }
        lines.append([
            row.workload, format(row.subject, unit: row.unit),
            "\(format(row.baseline, unit: row.unit)) (\(row.baselineName))",
            formatRatio(row.ratio), others.isEmpty ? "—" : others.joined(separator: "; "),
            row.goalDescription, row.isGoalMet.map { $0 ? "met" : "not met" } ?? "—",
        ])
    }
    let widths = header.indices.map { column in lines.map { $0[column].count }.max()! }
    for (index, line) in lines.enumerated() {
        print(zip(line, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: " | "))
        if index == 0 {
            print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "-|-"))
        }
    }
    for row in rows where !row.note.isEmpty {
        print("  \(row.workload): \(row.note)")
    }
}

/// Returns its argument through a call the optimizer cannot see into, so that work on it is
/// not hoisted out of a loop of repetitions.
@inline(never) @_optimize(none)
func opaque<T>(_ value: T) -> T {
    value
}

/// Keeps the last did-save notification a context posted.
final class NotificationCapture: @unchecked Sendable {
    private(set) var last: Notification?
    private var token: (any NSObjectProtocol)?

    init(object: AnyObject) {
        token = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveNotification, object: object, queue: nil
        ) { [weak self] notification in
            self?.last = notification
        }
    }
}
