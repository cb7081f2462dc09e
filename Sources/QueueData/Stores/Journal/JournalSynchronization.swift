/// One `fdatasync` of a journal, taken on the coordinator's queue and run on the journal's
/// ``JournalStore/synchronizationQueue``: it makes every record appended before it was taken
/// durable.
///
/// A value, so that it can cross from the coordinator's queue to the synchronization queue. The
/// descriptor stays open until the synchronization queue closes it (see `JournalStore.retire`).
struct JournalSynchronization: Sendable {
    let descriptor: Int32
    let path: String
    let fileSystem: any FileSystem

    /// Runs the `fdatasync`.
    ///
    /// - Throws: The file system's error; report it through
    ///   ``JournalStore/synchronizationFailed(_:)``.
    func run() throws {
        try fileSystem.synchronizeData(descriptor, path: path)
    }
}
