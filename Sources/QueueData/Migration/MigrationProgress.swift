/// How far a migration has come, reported to ``ContextManagerDelegate/migrationDidProgress(_:)``.
///
/// Units are rows: converting counts each row once, each custom step and the final write
/// count every row once more, so ``fractionCompleted`` moves steadily from 0 to 1.
public struct MigrationProgress: Sendable, Hashable, CustomStringConvertible {
    /// What the migration is doing.
    public enum Phase: Sendable, Hashable {
        /// Converting rows to the current model (the inferred changes).
        case converting
        /// Running the custom step with this name.
        case runningStep(String)
        /// Writing the migrated store.
        case writing
        /// Done: the migrated store is in place.
        case finished
    }

    /// What the migration is doing.
    public var phase: Phase
    /// The units done.
    public var completedUnitCount: Int
    /// The units of the whole migration.
    public var totalUnitCount: Int

    /// Creates a progress report.
    public init(phase: Phase, completedUnitCount: Int, totalUnitCount: Int) {
        self.phase = phase
        self.completedUnitCount = completedUnitCount
        self.totalUnitCount = totalUnitCount
    }

    /// The fraction done, from 0 to 1.
    public var fractionCompleted: Double {
        totalUnitCount > 0 ? Double(completedUnitCount) / Double(totalUnitCount) : 1
    }

    /// `converting: 40%`, say.
    public var description: String {
        let phaseText: String
        switch phase {
        case .converting: phaseText = "converting"
        case .runningStep(let name): phaseText = "running '\(name)'"
        case .writing: phaseText = "writing"
        case .finished: phaseText = "finished"
        }
        return "\(phaseText): \(Int((fractionCompleted * 100).rounded(.down)))%"
    }
}
