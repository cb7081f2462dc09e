/// How far an export or an import has come: for a progress bar.
public struct ExportProgress: Sendable, Hashable {
    /// The records written (or read) so far.
    public var completedCount: Int
    /// The records there are in all, as counted when the work started.
    public var totalCount: Int

    /// Creates a progress report.
    public init(completedCount: Int, totalCount: Int) {
        self.completedCount = completedCount
        self.totalCount = totalCount
    }

    /// `completedCount / totalCount`, between 0 and 1 (1 when there is nothing to do).
    public var fractionCompleted: Double {
        totalCount > 0 ? Swift.min(1, Double(completedCount) / Double(totalCount)) : 1
    }
}
