import Foundation

/// The bytes a formatter writes: an ``ExportWriter`` hands one to each hook of an
/// ``ExportFormatter`` and streams what it holds to the file as it fills.
///
/// Besides raw bytes and text, it writes values in the forms the built-in formatters use,
/// so that a formatter of your own writes them the same way: ``appendText(_:of:)`` (CSV's
/// text form) and ``appendJSON(_:of:)``.
public struct ExportOutput: Sendable {
    /// The bytes written since the writer last took them.
    public internal(set) var bytes: [UInt8] = []

    /// Creates an empty output.
    public init() {}

    /// Appends the UTF-8 bytes of `text`.
    public mutating func append(_ text: some StringProtocol) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Appends one byte.
    public mutating func append(byte: UInt8) {
        bytes.append(byte)
    }

    /// Appends bytes.
    public mutating func append(contentsOf newBytes: some Sequence<UInt8>) {
        bytes.append(contentsOf: newBytes)
    }

    /// Appends `date` as ISO 8601 text in UTC with milliseconds: `2026-11-24T19:56:03.250Z`.
    public mutating func appendISO8601(_ date: Date) {
        ISO8601Text.append(date, to: &bytes)
    }

    /// Appends `string` as a JSON string: quoted, with `"`, `\` and control characters escaped
    /// (`\n`, `\t`, `\u001f`, ...); other characters, non-ASCII ones included, as UTF-8.
    public mutating func appendJSONString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var start = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case 0x22: bytes.append(UInt8(ascii: "\""))
                case 0x5C: bytes.append(UInt8(ascii: "\\"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [
                        UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)],
                        hex[Int(byte & 0xF)],
                    ])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `value`, a value of `field`, as text: the form of CSV fields.
    ///
    /// Booleans `true`/`false`; numbers in the shortest form that reads back the same (a
    /// `Float` attribute's as a `Float`: `0.1`), `NaN`,
    /// `Infinity` and `-Infinity` for the non-finite ones; dates ISO 8601
    /// (``appendISO8601(_:)``); binary data in Base64; a transformable attribute's JSON
    /// encoding as it is; UUIDs, URLs and decimals in their usual form; object IDs as their
    /// ``ObjectID/uriRepresentation``, a to-many relationship's separated by spaces. `nil`
    /// appends nothing.
    ///
    /// - Returns: `false` for `nil` (nothing appended), so that a formatter can tell it from
    ///   an empty string.
    @discardableResult
    public mutating func appendText(_ value: ExportValue, of field: ExportField) -> Bool {
        switch value {
        case .value(let stored):
            return appendText(stored, of: field)
        case .object(let id):
            guard let id else { return false }
            appendURI(of: id)
        case .objects(let ids):
            for (index, id) in ids.enumerated() {
                if index > 0 {
                    bytes.append(UInt8(ascii: " "))
                }
                appendURI(of: id)
            }
        }
        return true
    }

    private mutating func appendText(_ value: StoredValue, of field: ExportField) -> Bool {
        switch value {
        case .null: return false
        case .bool(let value): append(value ? "true" : "false")
        case .integer(let value): append(String(value))
        case .double(let value): appendNumber(value, isFloat: field.isFloat, json: false)
        case .string(let value): append(value)
        case .date(let value): appendISO8601(value)
        case .data(let data):
            if case .attribute(.transformable, _) = field.kind {
                bytes.append(contentsOf: data)
            } else {
                append(data.base64EncodedString())
            }
        case .uuid(let value): append(value.uuidString)
        case .url(let value): append(value.absoluteString)
        case .decimal(let value): append(value.description)
        }
        return true
    }

    /// Appends `value`, a value of `field`, as JSON: `null`, `true`/`false`, numbers (the
    /// non-finite ones as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`, which JSON has no
    /// numbers for), strings (dates ISO 8601, binary data Base64, UUIDs, URLs), a
    /// transformable attribute's JSON encoding embedded as it is, object IDs as URI strings,
    /// and a to-many relationship as an array of them.
    public mutating func appendJSON(_ value: ExportValue, of field: ExportField) {
        switch value {
        case .value(let stored):
            appendJSON(stored, of: field)
        case .object(let id):
            if let id {
                bytes.append(UInt8(ascii: "\""))
                appendURI(of: id)
                bytes.append(UInt8(ascii: "\""))
            } else {
                append("null")
            }
        case .objects(let ids):
            bytes.append(UInt8(ascii: "["))
            for (index, id) in ids.enumerated() {
                if index > 0 {
                    bytes.append(UInt8(ascii: ","))
                }
                bytes.append(UInt8(ascii: "\""))
                appendURI(of: id)
                bytes.append(UInt8(ascii: "\""))
            }
            bytes.append(UInt8(ascii: "]"))
        }
    }

    private mutating func appendJSON(_ value: StoredValue, of field: ExportField) {
        switch value {
        case .null: append("null")
        case .bool(let value): append(value ? "true" : "false")
        case .integer(let value): append(String(value))
        case .double(let value): appendNumber(value, isFloat: field.isFloat, json: true)
        case .string(let value): appendJSONString(value)
        case .date(let value):
            bytes.append(UInt8(ascii: "\""))
            appendISO8601(value)
            bytes.append(UInt8(ascii: "\""))
        case .data(let data):
            if case .attribute(.transformable, _) = field.kind, StoredValue.isSingleJSONValue(data) {
                bytes.append(contentsOf: data)
            } else {
                appendJSONString(data.base64EncodedString())
            }
        case .uuid(let value): appendJSONString(value.uuidString)
        case .url(let value): appendJSONString(value.absoluteString)
        case .decimal(let value):
            if value.isNaN {
                append("\"NaN\"")
            } else {
                append(value.description)
            }
        }
    }

    /// Appends the ID's URI (never escaped in JSON: a URI holds no quote, backslash or control
    /// character).
    private mutating func appendURI(of id: ObjectID) {
        if id.rawValue > 0 {
            bytes.append(contentsOf: id.key.permanentURIPrefix.utf8)
            bytes.append(contentsOf: String(id.rawValue).utf8)
        } else {
            append(id.uriRepresentation.absoluteString)
        }
    }

    /// Appends a number in its shortest form that reads back as the same value: a `Float`
    /// attribute's (held as a `Double`) as a `Float` — `0.1`, not `0.10000000149011612`.
    private mutating func appendNumber(_ value: Double, isFloat: Bool, json: Bool) {
        if value.isNaN {
            append(json ? "\"NaN\"" : "NaN")
        } else if value.isInfinite {
            let text = value < 0 ? "-Infinity" : "Infinity"
            append(json ? "\"\(text)\"" : text)
        } else if isFloat, let float = Float(exactly: value) {
            append(float.description)
        } else {
            append(value.description)
        }
    }
}
