import Foundation

/// A file could not be imported: a record that cannot be read or does not fit the entity.
///
/// The import checks every record before it saves any, so an ``ImportError`` about the file's
/// contents means nothing was imported. It names the file, the line (counted from 1; for CSV,
/// the line the record starts on) and the field.
public struct ImportError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable, comparable code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String
        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// A record is not valid JSON, CSV or UTF-8, or a CSV row has the wrong number of fields.
        public static let malformedRecord = Code(rawValue: "malformedRecord")
        /// A field names no attribute or relationship of the entity.
        public static let unknownField = Code(rawValue: "unknownField")
        /// A value does not fit its attribute (a type, a range, a required value), or names an
        /// object that does not exist.
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// A CSV file has no header row.
        public static let missingHeader = Code(rawValue: "missingHeader")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for humans: what is wrong and what to do.
    public var message: String
    /// The file.
    public var url: URL?
    /// The line of the record, counted from 1.
    public var line: Int?
    /// The field concerned, if any.
    public var field: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, url: URL? = nil, line: Int? = nil, field: String? = nil) {
        self.code = code
        self.message = message
        self.url = url
        self.line = line
        self.field = field
    }

    /// `ImportError(code): message [path, line L, field F]`.
    public var description: String {
        var text = "ImportError(\(code)): \(message)"
        var place: [String] = []
        if let url { place.append(url.path) }
        if let line { place.append("line \(line)") }
        if let field { place.append("field '\(field)'") }
        if !place.isEmpty {
            text += " [\(place.joined(separator: ", "))]"
        }
        return text
    }
}
