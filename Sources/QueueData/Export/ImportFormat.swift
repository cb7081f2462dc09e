import Foundation

/// The format of a file to import: JSON Lines (an object per line, as
/// ``JSONLinesExportFormatter`` writes) or CSV with a header row (as ``CSVExportFormatter``
/// writes).
public struct ImportFormat: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case jsonLines
        case csv(delimiter: UInt8)
    }

    let kind: Kind

    /// JSON Lines: one JSON object per line, keyed by attribute and relationship name.
    public static let jsonLines = ImportFormat(kind: .jsonLines)

    /// CSV (RFC 4180) with a header row naming the attributes and relationships, delimited by
    /// commas.
    public static let csv = ImportFormat(kind: .csv(delimiter: UInt8(ascii: ",")))

    /// CSV with a header row, delimited by `delimiter` (an ASCII character other than `"`, CR
    /// and LF; any other traps).
    public static func csv(delimiter: Character) -> ImportFormat {
        guard let byte = delimiter.asciiValue, byte != UInt8(ascii: "\""), byte != 0x0A, byte != 0x0D else {
            preconditionFailure(
                "QueueData: the CSV delimiter \(String(reflecting: delimiter)) cannot be used: pick an ASCII "
                    + "character other than a quote, CR or LF.")
        }
        return ImportFormat(kind: .csv(delimiter: byte))
    }

    /// The format a file's extension names: `jsonl` (or `ndjson`) and `csv`; `nil` for others.
    public init?(fileExtension: String) {
        switch fileExtension.lowercased() {
        case "jsonl", "ndjson": self = .jsonLines
        case "csv": self = .csv
        case "tsv": self = .csv(delimiter: "\t")
        default: return nil
        }
    }

    private init(kind: Kind) {
        self.kind = kind
    }

    /// `jsonl`, or `csv`.
    public var description: String {
        switch kind {
        case .jsonLines: return "jsonl"
        case .csv: return "csv"
        }
    }
}
