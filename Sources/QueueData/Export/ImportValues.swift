import Foundation

/// Reads attribute values from the text of CSV fields and the values of JSON objects, in the
/// forms exports write (see ``ExportOutput/appendText(_:of:)`` and
/// ``ExportOutput/appendJSON(_:of:)``).
enum ImportValues {
    /// The value of `attribute` a CSV field holds, or the reason it holds none. An empty unquoted
    /// field is `nil`: refused for a required attribute, as JSON's `null` is, except a string's,
    /// which is the empty string (as CSV writers other than QueueData's write it).
    static func value(
        fromText text: String,
        quoted: Bool,
        attribute: AttributeDescription
    ) -> Result<StoredValue, Refusal> {
        if text.isEmpty && !quoted && attribute.isOptional {
            return .success(.null)
        }
        if text.isEmpty && !quoted && attribute.type != .string {
            return .failure(Refusal("is empty (nil), but the attribute is not optional"))
        }
        let value: StoredValue?
        switch attribute.type {
        case .boolean:
            switch text.lowercased() {
            case "true", "1", "yes": value = .bool(true)
            case "false", "0", "no": value = .bool(false)
            default: value = nil
            }
        case .integer16, .integer32, .integer64:
            value = Int64(text).map { .integer($0) }
        case .double:
            value = double(text).map { .double($0) }
        case .float:
            // As a Float attribute's value is held: `0.1` is Float(0.1), not the Double 0.1.
            value = double(text).flatMap(float)
        case .string:
            value = .string(text)
        case .date:
            value = ISO8601Text.date(from: Substring(text)).map { .date($0) }
        case .binaryData:
            value = Data(base64Encoded: text).map { .data($0) }
        case .uuid:
            value = UUID(uuidString: text).map { .uuid($0) }
        case .uri:
            value = URL(string: text).map { .url($0) }
        case .decimal:
            value = decimal(text).map { .decimal($0) }
        case .transformable:
            let data = Data(text.utf8)
            value = StoredValue.isSingleJSONValue(data) ? .data(data) : nil
        }
        return checked(value, text: text, attribute: attribute)
    }

    /// The value of `attribute` the JSON value `json` holds (the bytes of one value, already
    /// checked against the JSON grammar), or the reason it holds none.
    static func value(fromJSON json: UnsafeRawBufferPointer, attribute: AttributeDescription) -> Result<
        StoredValue, Refusal
    > {
        var scanner = JSONScanner(json)
        let text = String(decoding: json, as: UTF8.self)
        if (try? scanner.consumeNull()) == true {
            if attribute.isOptional {
                return .success(.null)
            }
            // A required transformable attribute cannot be nil: `null` is the JSON it holds (a
            // value that encodes as null, as an export writes it).
            if attribute.type == .transformable {
                return .success(.data(Data(json)))
            }
            return .failure(Refusal("is null, but the attribute is not optional"))
        }
        let isString = json.first == UInt8(ascii: "\"")
        let value: StoredValue?
        switch attribute.type {
        case .boolean:
            value = (try? scanner.bool()).map { .bool($0) }
        case .integer16, .integer32, .integer64:
            value = isString ? nil : (try? scanner.integer()).map { .integer($0) }
        case .double:
            value = (try? scanner.double()).map { .double($0) }
        case .float:
            value = (try? scanner.double()).flatMap(float)
        case .string:
            value = isString ? (try? scanner.string()).map { .string($0) } : nil
        case .date:
            if isString {
                value = (try? scanner.string()).flatMap { ISO8601Text.date(from: Substring($0)) }.map { .date($0) }
            } else {
                value = (try? scanner.double()).map { .date(Date(timeIntervalSince1970: $0)) }
            }
        case .binaryData:
            value = isString ? (try? scanner.string()).flatMap { Data(base64Encoded: $0) }.map { .data($0) } : nil
        case .uuid:
            value = isString ? (try? scanner.string()).flatMap { UUID(uuidString: $0) }.map { .uuid($0) } : nil
        case .uri:
            value = isString ? (try? scanner.string()).flatMap { URL(string: $0) }.map { .url($0) } : nil
        case .decimal:
            if isString {
                value = (try? scanner.string()).flatMap { decimal($0) }.map { .decimal($0) }
            } else {
                value = decimal(text).map { .decimal($0) }
            }
        case .transformable:
            value = .data(Data(json))
        }
        return checked(value, text: text, attribute: attribute)
    }

    /// Why a value was refused.
    struct Refusal: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private static func checked(
        _ value: StoredValue?,
        text: String,
        attribute: AttributeDescription
    ) -> Result<StoredValue, Refusal> {
        let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
        guard let value, value.fits(attribute.type, isOptional: attribute.isOptional) else {
            return .failure(
                Refusal("\(String(reflecting: shown)) is not a value of type \(attribute.type.rawValue)"))
        }
        return .success(value)
    }

    /// `value` as a `Float` attribute holds it (`0.1` is Float(0.1)); `nil` for a finite number
    /// beyond `Float`'s range, which would become infinity.
    private static func float(_ value: Double) -> StoredValue? {
        let float = Float(value)
        guard float.isFinite || !value.isFinite else { return nil }
        return .double(Double(float))
    }

    private static func double(_ text: String) -> Double? {
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: return Double(text)
        }
    }

    /// A decimal from its whole text (see `Decimal(exactText:)`).
    private static func decimal(_ text: String) -> Decimal? {
        Decimal(exactText: text)
    }
}
