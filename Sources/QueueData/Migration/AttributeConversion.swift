import Foundation

/// How migration turns the stored values of one attribute into values of its current type
/// and optionality: a lossless conversion inferred from the two types, or the attribute's
/// transform.
struct AttributeConversion: Sendable {
    enum Kind: Sendable {
        /// The stored form is already right (integer widening, `Float` to `Double`).
        case none
        /// An integer becomes a `Double` (or a `Float`), if it is exactly representable.
        case integerToFloatingPoint(isFloat: Bool)
        /// An integer becomes a `Decimal`.
        case integerToDecimal
        /// `false`/`true` becomes 0/1.
        case booleanToInteger
        /// Any value becomes its text.
        case toString(from: AttributeType)
        /// The attribute's declared transform.
        case transform(@Sendable (StoredValue) throws -> StoredValue)
    }

    let kind: Kind
    /// What `nil` becomes, for an optional attribute that became non-optional.
    let nullReplacement: StoredValue?
    let target: AttributeDescription

    /// The conversion from `old` to `new`, `nil` when the values carry over as they are.
    ///
    /// - Throws: A sentence naming the attribute, when the change can lose information and
    ///   there is no transform.
    static func between(
        _ old: AttributeDescription,
        _ new: AttributeDescription,
        entityName: String,
        transform: (@Sendable (StoredValue) throws -> StoredValue)?
    ) throws(ConversionProblem) -> AttributeConversion? {
        let typeChanged = old.type != new.type
        let becameRequired = old.isOptional && !new.isOptional
        // A transform runs whenever the stored type or optionality differs (becoming optional
        // included); without one, values carry over unless they may not fit.
        guard typeChanged || old.isOptional != new.isOptional else { return nil }
        if let transform {
            return AttributeConversion(kind: .transform(transform), nullReplacement: nil, target: new)
        }
        guard typeChanged || becameRequired else { return nil }
        let kind: Kind
        if typeChanged {
            guard let inferred = inferredKind(from: old.type, to: new.type) else {
                throw ConversionProblem(
                    "attribute '\(entityName).\(new.name)' changed type from \(old.type.rawValue) to "
                        + "\(new.type.rawValue), which can lose information: declare a `transform:` for it, or "
                        + "give it a new name and fill it from the original rows in a MigrationStep")
            }
            kind = inferred
        } else {
            kind = .none
        }
        var nullReplacement: StoredValue?
        if becameRequired {
            guard new.hasDeclaredDefault else {
                throw ConversionProblem(
                    "attribute '\(entityName).\(new.name)' became non-optional without a declared default for the "
                        + "rows that hold nil: declare a default or a `transform:`")
            }
            nullReplacement = new.defaultValue
        }
        return AttributeConversion(kind: kind, nullReplacement: nullReplacement, target: new)
    }

    /// The lossless conversions: widening, integers to floating point or decimal, Booleans to
    /// integers, and anything to text.
    private static func inferredKind(from old: AttributeType, to new: AttributeType) -> Kind? {
        switch (old, new) {
        case (.integer16, .integer32), (.integer16, .integer64), (.integer32, .integer64), (.float, .double):
            return Kind.none
        case (.integer16, .double), (.integer32, .double), (.integer64, .double):
            return .integerToFloatingPoint(isFloat: false)
        case (.integer16, .float):
            return .integerToFloatingPoint(isFloat: true)
        case (.integer16, .decimal), (.integer32, .decimal), (.integer64, .decimal):
            return .integerToDecimal
        case (.boolean, .integer16), (.boolean, .integer32), (.boolean, .integer64):
            return .booleanToInteger
        case (_, .string):
            return .toString(from: old)
        default:
            return nil
        }
    }

    /// Converts one stored value.
    ///
    /// - Throws: ``ConversionProblem`` when the value cannot be carried over exactly, or the
    ///   transform threw or returned a value that does not fit.
    func convert(_ value: StoredValue) throws -> StoredValue {
        if case .transform(let transform) = kind {
            let converted: StoredValue
            do {
                converted = try transform(value)
            } catch {
                throw ConversionProblem("its transform threw \(error)")
            }
            guard converted.fits(target.type, isOptional: target.isOptional) else {
                throw ConversionProblem(
                    "its transform returned \(converted), which does not fit \(target.type.rawValue)"
                        + (target.isOptional ? "?" : ""))
            }
            return converted
        }
        if value.isNull {
            return nullReplacement ?? .null
        }
        switch (kind, value) {
        case (.none, _):
            return value
        case (.integerToFloatingPoint(let isFloat), .integer(let integer)):
            if isFloat, let float = Float(exactly: integer) {
                return .double(Double(float))
            }
            if !isFloat, let double = Double(exactly: integer) {
                return .double(double)
            }
            throw ConversionProblem("\(integer) has no exact \(isFloat ? "Float" : "Double") representation")
        case (.integerToDecimal, .integer(let integer)):
            return .decimal(Decimal(integer))
        case (.booleanToInteger, .bool(let bool)):
            return .integer(bool ? 1 : 0)
        case (.toString, .date(let date)):
            guard let text = Self.isoText(of: date) else {
                throw ConversionProblem(
                    "a date that is not finite, or further than about 285,000 years from 1970, has no ISO 8601 text")
            }
            return .string(text)
        case (.toString(let type), _):
            return .string(Self.text(of: value, storedAs: type))
        default:
            throw ConversionProblem("the stored value \(value) is not of the stored type")
        }
    }

    /// A date in ISO 8601, UTC, in the proleptic Gregorian calendar, with its fraction of a
    /// second to the nanosecond: 3, 6 or 9 digits, as few as keep it exact
    /// (`2023-11-14T22:13:20.500Z`); years outside 0000–9999 in the expanded form
    /// (`+10000-01-01T00:00:00.000Z`). `nil` for a date that is not finite or further than
    /// about 285,000 years from 1970, which no such text holds exactly.
    static func isoText(of date: Date) -> String? {
        let seconds = date.timeIntervalSinceReferenceDate
        guard seconds.isFinite, abs(date.timeIntervalSince1970) < ISO8601Text.secondsLimit - 1 else { return nil }
        var whole = seconds.rounded(.down)
        var nanoseconds = ((seconds - whole) * 1e9).rounded()
        if nanoseconds >= 1e9 {
            whole += 1
            nanoseconds -= 1e9
        }
        // Whole seconds: the export's text, which ends in ".000Z".
        let base = ISO8601Text.string(Date(timeIntervalSinceReferenceDate: whole))
        let fraction = Int(nanoseconds)
        let digits: String
        if fraction % 1_000_000 == 0 {
            digits = padded(fraction / 1_000_000, to: 3)
        } else if fraction % 1_000 == 0 {
            digits = padded(fraction / 1_000, to: 6)
        } else {
            digits = padded(fraction, to: 9)
        }
        return "\(base.dropLast(4))\(digits)Z"
    }

    private static func padded(_ number: Int, to width: Int) -> String {
        let text = String(number)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    /// The text a value becomes: decimal digits, the shortest round-tripping form of a
    /// floating-point number, ISO 8601 dates to the nanosecond, base64 data, the JSON text of
    /// a transformable value.
    static func text(of value: StoredValue, storedAs type: AttributeType) -> String {
        switch value {
        case .null: return ""
        case .bool(let bool): return bool ? "true" : "false"
        case .integer(let integer): return String(integer)
        case .double(let double): return type == .float ? String(Float(double)) : String(double)
        case .string(let string): return string
        case .date(let date): return isoText(of: date) ?? date.formatted(.iso8601)
        case .data(let data):
            return type == .transformable ? String(decoding: data, as: UTF8.self) : data.base64EncodedString()
        case .uuid(let uuid): return uuid.uuidString
        case .url(let url): return url.absoluteString
        case .decimal(let decimal): return decimal.description
        }
    }
}

/// Why an attribute's values cannot be carried over: a sentence for a migration error.
struct ConversionProblem: Error, Sendable {
    let message: String

    init(_ message: String) {
        self.message = message
    }
}
