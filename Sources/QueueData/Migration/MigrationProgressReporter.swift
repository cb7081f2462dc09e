/// Reports a migration's progress in rows: converting counts each row once, each step and
/// the write every row once more.
final class MigrationProgressReporter {
    private let report: (@Sendable (MigrationProgress) -> Void)?
    private let unit: Int
    private let total: Int
    private var completed = 0
    private var converted = 0
    private var phase = MigrationProgress.Phase.converting

    /// How many rows pass between two reports while converting.
    static let interval = 4096

    init(rowCount: Int, stepCount: Int, report: (@Sendable (MigrationProgress) -> Void)?) {
        self.report = report
        self.unit = max(rowCount, 1)
        self.total = unit * (2 + stepCount)
        send()
    }

    func convertedRow() {
        converted += 1
        if converted % Self.interval == 0 {
            completed = converted
            send()
        }
    }

    func startStep(_ name: String) {
        completed = max(completed, unit)
        phase = .runningStep(name)
        send()
    }

    func finishStep() {
        completed += unit
        send()
    }

    func startWriting() {
        completed = total - unit
        phase = .writing
        send()
    }

    func finish() {
        completed = total
        phase = .finished
        send()
    }

    private func send() {
        report?(MigrationProgress(phase: phase, completedUnitCount: completed, totalUnitCount: total))
    }
}
