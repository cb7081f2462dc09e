import Foundation
@_spi(StoreTool) import QueueData

/// The `--where` expression of `qd export`, over a row's stored values:
///
///     rating >= 3 and (country == 'PT' or name contains "Lis") and not visited == nil
///
/// Comparisons (`==`, `!=`, `<`, `<=`, `>`, `>=`, `contains`, `beginswith`) put an attribute
/// on the left and a literal on the right: a number, a quoted string, `true`, `false`, `nil`;
/// dates compare with ISO 8601 strings. `and`, `or`, `not` and parentheses combine them.
///
/// Each literal is checked against its attribute's type as the expression is parsed — an
/// integer for an integer attribute, a quoted ISO 8601 date for a date, and so on — so a typo
/// is a usage error saying what is wrong, never a filter that silently matches nothing.
/// Integers and decimals compare exactly.
indirect enum RowFilter {
    case comparison(column: Int, op: String, literal: Literal)
    case and(RowFilter, RowFilter)
    case or(RowFilter, RowFilter)
    case not(RowFilter)

    /// A literal, already of its attribute's type.
    enum Literal {
        case integer(Int64)
        case double(Double)
        case decimal(Decimal)
        case string(String)
        case bool(Bool)
        case date(Date)
        case uuid(UUID)
        case url(String)
        case null
    }

    /// Parses `text` against `entity`'s attributes.
    static func parse(_ text: String, entity: EntityDescription) throws -> RowFilter {
        var parser = Parser(tokens: try tokenize(text), entity: entity)
        let filter = try parser.expression()
        guard parser.index == parser.tokens.count else {
            throw ToolFailure(.usage, "--where: unexpected '\(parser.tokens[parser.index])'.")
        }
        return filter
    }

    /// Whether `values` (a row, in the entity's column order) match.
    func matches(_ values: [StoredValue]) -> Bool {
        switch self {
        case .and(let left, let right): return left.matches(values) && right.matches(values)
        case .or(let left, let right): return left.matches(values) || right.matches(values)
        case .not(let inner): return !inner.matches(values)
        case .comparison(let column, let op, let literal):
            let value = column < values.count ? values[column] : .null
            if case .null = literal {
                return op == "==" ? value.isNull : op == "!=" ? !value.isNull : false
            }
            if op == "contains" || op == "beginswith" {
                guard case .string(let text) = value, case .string(let needle) = literal else { return false }
                return op == "contains" ? text.contains(needle) : text.hasPrefix(needle)
            }
            guard let order = Self.compare(value, literal) else { return op == "!=" }
            switch op {
            case "==": return order == .orderedSame
            case "!=": return order != .orderedSame
            case "<": return order == .orderedAscending
            case "<=": return order != .orderedDescending
            case ">": return order == .orderedDescending
            default: return order != .orderedAscending
            }
        }
    }

    /// How `value` compares with `literal`; `nil` when they do not compare: a value of another
    /// type, nil, or NaN (which, as in a `#Predicate` and in SQL, is neither equal to, less nor
    /// greater than any number: only `!=` matches it).
    private static func compare(_ value: StoredValue, _ literal: Literal) -> ComparisonResult? {
        func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
            a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        }
        if value.isNaN {
            return nil
        }
        switch (value, literal) {
        case (.integer(let a), .integer(let b)): return order(a, b)
        case (.double(let a), .double(let b)): return order(a, b)
        case (.decimal(let a), .decimal(let b)): return order(a, b)
        case (.string(let a), .string(let b)): return order(a, b)
        case (.bool(let a), .bool(let b)): return a == b ? .orderedSame : (a ? .orderedDescending : .orderedAscending)
        case (.uuid(let a), .uuid(let b)): return order(a.uuidString, b.uuidString)
        case (.url(let a), .url(let b)): return order(a.absoluteString, b)
        case (.date(let a), .date(let b)): return order(a, b)
        default: return nil
        }
    }

    /// The literal `token` as a value of `attribute`, or a usage error saying why it is not one.
    static func literal(_ token: String, op: String, for attribute: AttributeDescription) throws -> Literal {
        let quoted = token.first == "'" || token.first == "\""
        let text = quoted ? String(token.dropFirst().dropLast()) : token
        if !quoted, ["nil", "null"].contains(token.lowercased()) {
            guard op == "==" || op == "!=" else {
                throw ToolFailure(.usage, "--where: nil compares with == and != only, not \(op).")
            }
            return .null
        }
        func refuse(_ expected: String) -> ToolFailure {
            ToolFailure(
                .usage,
                "--where: \(token) is not \(expected), and '\(attribute.name)' is of type \(attribute.type.rawValue).")
        }
        if op == "contains" || op == "beginswith" {
            guard attribute.type == .string else {
                throw ToolFailure(
                    .usage,
                    "--where: \(op) works on string attributes, and '\(attribute.name)' is of type "
                        + "\(attribute.type.rawValue).")
            }
        }
        switch attribute.type {
        case .string:
            guard quoted else { throw refuse("a quoted string ('text')") }
            return .string(text)
        case .integer16, .integer32, .integer64:
            guard !quoted, let value = Int64(text) else { throw refuse("an integer") }
            return .integer(value)
        case .double:
            guard !quoted, let value = Double(text), !value.isNaN else { throw refuse("a number") }
            return .double(value)
        case .float:
            // As a `Float`, as the attribute holds it: `0.1` is the value an export shows as 0.1.
            guard !quoted, let value = Float(text), !value.isNaN else { throw refuse("a number") }
            return .double(Double(value))
        case .decimal:
            guard !quoted, Double(text) != nil,
                let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
            else { throw refuse("a number") }
            return .decimal(value)
        case .boolean:
            switch text.lowercased() {
            case "true" where !quoted: return .bool(true)
            case "false" where !quoted: return .bool(false)
            default: throw refuse("true or false")
            }
        case .date:
            guard quoted, let date = StoreInspection.date(fromISO8601: text) else {
                throw refuse("a quoted ISO 8601 date ('2026-11-24' or '2026-11-24T19:56:03Z')")
            }
            return .date(date)
        case .uuid:
            guard quoted, let uuid = UUID(uuidString: text) else { throw refuse("a quoted UUID") }
            return .uuid(uuid)
        case .uri:
            guard quoted else { throw refuse("a quoted URL") }
            return .url(text)
        case .binaryData, .transformable:
            throw ToolFailure(
                .usage,
                "--where: '\(attribute.name)' (\(attribute.type.rawValue)) compares with nil only (== nil, != nil).")
        }
    }

    private static func tokenize(_ text: String) throws -> [String] {
        var tokens: [String] = []
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character.isWhitespace {
                index = text.index(after: index)
            } else if character == "'" || character == "\"" {
                var end = text.index(after: index)
                while end < text.endIndex, text[end] != character {
                    end = text.index(after: end)
                }
                guard end < text.endIndex else { throw ToolFailure(.usage, "--where: a string is not closed.") }
                tokens.append(String(text[index...end]))
                index = text.index(after: end)
            } else if "()".contains(character) {
                tokens.append(String(character))
                index = text.index(after: index)
            } else if "=!<>".contains(character) {
                var end = text.index(after: index)
                if end < text.endIndex, text[end] == "=" {
                    end = text.index(after: end)
                }
                tokens.append(String(text[index..<end]))
                index = end
            } else {
                var end = index
                while end < text.endIndex, !text[end].isWhitespace, !"()=!<>'\"".contains(text[end]) {
                    end = text.index(after: end)
                }
                tokens.append(String(text[index..<end]))
                index = end
            }
        }
        return tokens
    }

    private struct Parser {
        let tokens: [String]
        let entity: EntityDescription
        var index = 0

        mutating func next() -> String? {
            guard index < tokens.count else { return nil }
            defer { index += 1 }
            return tokens[index]
        }

        func peek() -> String? { index < tokens.count ? tokens[index].lowercased() : nil }

        mutating func expression() throws -> RowFilter {
            var left = try conjunction()
            while peek() == "or" {
                index += 1
                left = .or(left, try conjunction())
            }
            return left
        }

        mutating func conjunction() throws -> RowFilter {
            var left = try negation()
            while peek() == "and" {
                index += 1
                left = .and(left, try negation())
            }
            return left
        }

        mutating func negation() throws -> RowFilter {
            if peek() == "not" {
                index += 1
                return .not(try negation())
            }
            if peek() == "(" {
                index += 1
                let inner = try expression()
                guard next() == ")" else { throw ToolFailure(.usage, "--where: a ')' is missing.") }
                return inner
            }
            return try comparison()
        }

        mutating func comparison() throws -> RowFilter {
            guard let name = next() else { throw ToolFailure(.usage, "--where: the expression ends early.") }
            guard let column = entity.index(ofAttribute: name) else {
                throw ToolFailure(
                    .usage,
                    "--where: '\(entity.name)' has no attribute '\(name)'; its attributes are "
                        + "\(entity.attributes.map(\.name).joined(separator: ", ")).")
            }
            guard let op = next()?.lowercased(),
                ["==", "!=", "<", "<=", ">", ">=", "contains", "beginswith", "="].contains(op)
            else { throw ToolFailure(.usage, "--where: expected a comparison after '\(name)'.") }
            guard let token = next() else { throw ToolFailure(.usage, "--where: a value is missing after '\(op)'.") }
            let comparison = op == "=" ? "==" : op
            let literal = try RowFilter.literal(token, op: comparison, for: entity.attributes[column])
            return .comparison(column: column, op: comparison, literal: literal)
        }
    }
}

/// The `--sort` keys of `qd export`: `name`, `-rating` (descending), separated by commas.
struct RowOrder {
    let keys: [(column: Int, descending: Bool)]

    init(_ text: String, entity: EntityDescription) throws {
        keys = try text.split(separator: ",").map { part in
            var name = part.trimmingCharacters(in: .whitespaces)
            var descending = false
            if name.hasPrefix("-") {
                descending = true
                name.removeFirst()
            } else if name.lowercased().hasSuffix(":desc") {
                descending = true
                name.removeLast(5)
            }
            guard let column = entity.index(ofAttribute: name) else {
                throw ToolFailure(.usage, "--sort: '\(entity.name)' has no attribute '\(name)'.")
            }
            return (column, descending)
        }
    }

    /// Whether `left` goes before `right` (`nil` first, as in an ascending Core Data sort).
    func precedes(_ left: [StoredValue], _ right: [StoredValue]) -> Bool {
        for (column, descending) in keys {
            let order = Self.compare(left[column], right[column])
            if order != .orderedSame {
                return (order == .orderedAscending) != descending
            }
        }
        return false
    }

    /// How `a` orders against `b`: NaN as nil (as the library's attribute sorts order it, and
    /// as SQLite stores it), so that every value has its place.
    private static func compare(_ a: StoredValue, _ b: StoredValue) -> ComparisonResult {
        func order<T: Comparable>(_ a: T, _ b: T) -> ComparisonResult {
            a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        }
        switch (a.isNaN ? .null : a, b.isNaN ? .null : b) {
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        case (.integer(let x), .integer(let y)): return order(x, y)
        case (.double(let x), .double(let y)): return order(x, y)
        case (.string(let x), .string(let y)): return order(x, y)
        case (.date(let x), .date(let y)): return order(x, y)
        case (.decimal(let x), .decimal(let y)): return order(x, y)
        case (.bool(let x), .bool(let y)): return x == y ? .orderedSame : (x ? .orderedDescending : .orderedAscending)
        case (.uuid(let x), .uuid(let y)): return order(x.uuidString, y.uuidString)
        case (.url(let x), .url(let y)): return order(x.absoluteString, y.absoluteString)
        default: return .orderedSame
        }
    }
}

extension StoredValue {
    /// Whether the value is a NaN: a `Double`, `Decimal` or `Date` that is not a number.
    fileprivate var isNaN: Bool {
        switch self {
        case .double(let value): return value.isNaN
        case .decimal(let value): return value.isNaN
        case .date(let value): return value.timeIntervalSinceReferenceDate.isNaN
        default: return false
        }
    }
}
