import Foundation

/// What an export wrote.
public struct ExportResult: Sendable, Hashable {
    /// The file, under its final name.
    public var url: URL
    /// How many records it holds.
    public var recordCount: Int
    /// Its size in bytes.
    public var byteCount: Int64

    /// Creates a result.
    public init(url: URL, recordCount: Int, byteCount: Int64) {
        self.url = url
        self.recordCount = recordCount
        self.byteCount = byteCount
    }
}
