import Foundation

/// Dates as ISO 8601 text in UTC with milliseconds (`2026-11-24T19:56:03.250Z`), written and
/// read without Foundation's formatters (a few nanoseconds instead of microseconds per date, for
/// exports of millions of rows).
///
/// Years outside 0000–9999 take ISO 8601's expanded form, a sign and at least five digits
/// (`+10000-01-01T00:00:00.000Z`, `-00001-12-31T23:59:59.999Z` for 2 BC: astronomical years,
/// year 0 is 1 BC), so that every date an export writes reads back.
enum ISO8601Text {
    /// The largest number of seconds from 1970 whose milliseconds fit an `Int64`, with margin.
    static let secondsLimit = 9_000_000_000_000_000.0 / 1000

    /// Appends `date` as `YYYY-MM-DDTHH:MM:SS.sssZ`, or `±YYYYY-MM-DDTHH:MM:SS.sssZ` outside the
    /// years 0000–9999. Dates further than about 285,000 years from 1970 (where a `Double`
    /// no longer holds milliseconds), and non-finite ones, are written by Foundation's formatter,
    /// which clamps them to its own range (NaN as `-4712-01-01T12:00:00Z`): they do not read back.
    static func append(_ date: Date, to bytes: inout [UInt8]) {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < secondsLimit else {
            bytes.append(contentsOf: date.formatted(.iso8601).utf8)
            return
        }
        let milliseconds = Int64((seconds * 1000).rounded(.toNearestOrAwayFromZero))
        var days = milliseconds / 86_400_000
        var remainder = milliseconds % 86_400_000
        if remainder < 0 {
            remainder += 86_400_000
            days -= 1
        }
        let (year, month, day) = civil(fromDays: days)
        if (0...9999).contains(year) {
            appendDigits(year, 4, &bytes)
        } else {
            bytes.append(UInt8(ascii: year < 0 ? "-" : "+"))
            let magnitude = year.magnitude
            var count = 5
            var limit: UInt64 = 100_000
            while magnitude >= limit {
                count += 1
                limit *= 10
            }
            appendDigits(Int64(magnitude), count, &bytes)
        }
        bytes.append(UInt8(ascii: "-"))
        appendDigits(month, 2, &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(day, 2, &bytes)
        bytes.append(UInt8(ascii: "T"))
        appendDigits(remainder / 3_600_000, 2, &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(remainder / 60_000 % 60, 2, &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(remainder / 1000 % 60, 2, &bytes)
        bytes.append(UInt8(ascii: "."))
        appendDigits(remainder % 1000, 3, &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// `date` as text (see ``append(_:to:)``).
    static func string(_ date: Date) -> String {
        var bytes: [UInt8] = []
        append(date, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (also with a space for `T`, a date
    /// alone, at midnight UTC, and an expanded year, `±YYYYY`); `nil` for anything else,
    /// including a day the month does not have (`2023-02-29`).
    static func date(from text: Substring) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<(index + count)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ character: Character) -> Bool {
            guard index < bytes.count, bytes[index] == character.asciiValue else { return false }
            index += 1
            return true
        }
        var sign = 1
        var yearDigits = 4
        if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            yearDigits = 0
            while index + yearDigits < bytes.count, bytes[index + yearDigits] >= 0x30, bytes[index + yearDigits] <= 0x39
            {
                yearDigits += 1
            }
            guard (5...9).contains(yearDigits) else { return nil }
        }
        guard let digits = number(yearDigits), expect("-"), let month = number(2), expect("-"),
            let day = number(2), (1...12).contains(month)
        else { return nil }
        let year = sign * digits
        guard (1...daysIn(month, of: year)).contains(day) else { return nil }
        var seconds = Double(days(fromCivil: year, month, day)) * 86_400
        if index == bytes.count {
            return Date(timeIntervalSince1970: seconds)
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "T") || bytes[index] == UInt8(ascii: " ") else {
            return nil
        }
        index += 1
        guard let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2),
            hour < 24, minute < 60, second < 61
        else { return nil }
        seconds += Double(hour * 3600 + minute * 60 + second)
        if expect(".") {
            var scale = 0.1
            var fraction = 0.0
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
            seconds += fraction
        }
        if !expect("Z") {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") else {
                return nil
            }
            let sign: Double = bytes[index] == UInt8(ascii: "+") ? 1 : -1
            index += 1
            guard let hours = number(2) else { return nil }
            _ = expect(":")
            guard let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            seconds -= sign * Double(hours * 3600 + minutes * 60)
        }
        guard index == bytes.count else { return nil }
        // Milliseconds are what an export writes: round to them, as the writer does, so that a
        // date read back equals the date written.
        return Date(timeIntervalSince1970: (seconds * 1000).rounded() / 1000)
    }

    /// The number of days of `month` (1–12) in the proleptic Gregorian `year`.
    private static func daysIn(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2:
            let isLeap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
            return isLeap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func appendDigits(_ value: Int64, _ count: Int, _ bytes: inout [UInt8]) {
        var divisor: Int64 = 1
        for _ in 1..<count {
            divisor *= 10
        }
        var value = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(value / divisor))
            value %= divisor
            divisor /= 10
        }
    }

    /// Howard Hinnant's `civil_from_days`: the proleptic Gregorian date `days` after 1970-01-01.
    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Howard Hinnant's `days_from_civil`.
    private static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
