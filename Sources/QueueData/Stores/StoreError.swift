import Foundation

/// A store could not be opened, read or written.
///
/// Failures to open never modify the store's files: a corrupt, locked, unreadable or
/// incompatible store stays as it was, so it can be inspected, repaired or opened by the
/// right version of the app. A failed commit leaves the saving context's changes in place.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable, comparable code (an extensible set).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The store's data is damaged; ``StoreError/offset`` says where, when known.
        public static let corrupted = Code(rawValue: "corrupted")
        /// Another manager or process has the store open.
        public static let locked = Code(rawValue: "locked")
        /// The file is not a store of this kind, or was written by a newer format version.
        public static let unsupportedFormat = Code(rawValue: "unsupportedFormat")
        /// The store was written with a different model and cannot be migrated: automatic
        /// migration is off, or the mapping cannot be inferred (the message lists every
        /// difference).
        public static let incompatibleModel = Code(rawValue: "incompatibleModel")
        /// A migration that could be planned failed on the data: a value a conversion or
        /// transform cannot carry over, or a custom step that threw or left invalid rows. The
        /// store is left as it was.
        public static let migrationFailed = Code(rawValue: "migrationFailed")
        /// A file-system operation failed (permissions, disk full, I/O error).
        public static let io = Code(rawValue: "io")
        /// The store was closed (its manager was closed), or refuses commits after a failed write.
        public static let closed = Code(rawValue: "closed")
        /// The manager's configuration is unusable (for example, an invalid store name).
        public static let invalidConfiguration = Code(rawValue: "invalidConfiguration")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for humans: what happened and what to do.
    public var message: String
    /// The file concerned, if any.
    public var url: URL?
    /// The byte offset of the problem in `url`, for corruption.
    public var offset: Int64?
    /// For a text file (the JSON store's document): the line of ``offset``, counted from 1.
    public var line: Int?
    /// For a text file: the column of ``offset`` on its ``line``, in bytes, counted from 1.
    public var column: Int?
    /// The underlying error, if any.
    public var underlyingError: (any Error)?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        url: URL? = nil,
        offset: Int64? = nil,
        underlyingError: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.url = url
        self.offset = offset
        self.underlyingError = underlyingError
    }

    /// Sets ``offset``, and ``line`` and ``column`` for a text file, from an offset in `bytes`
    /// (the file's contents).
    mutating func locate(_ offset: Int, inText bytes: UnsafeRawBufferPointer) {
        let clamped = Swift.max(0, Swift.min(offset, bytes.count))
        self.offset = Int64(clamped)
        var line = 1
        var lineStart = 0
        for index in 0..<clamped where bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        self.line = line
        self.column = clamped - lineStart + 1
    }

    /// `StoreError(code): message [path at line L, column C (offset O)]`.
    public var description: String {
        var text = "StoreError(\(code)): \(message)"
        if let url {
            text += " [\(url.path)"
            if let line, let column {
                text += " at line \(line), column \(column)"
                if let offset {
                    text += " (offset \(offset))"
                }
            } else if let offset {
                text += " at offset \(offset)"
            }
            text += "]"
        }
        if let underlyingError {
            text += " (\(underlyingError))"
        }
        return text
    }
}
