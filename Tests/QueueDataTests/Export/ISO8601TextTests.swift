import Foundation
import Testing

@testable import QueueData

@Suite("ISO 8601 text")
struct ISO8601TextTests {
    /// Every date written reads back, in the years 0000–9999 and outside them (the expanded
    /// form, a sign and at least five digits), to the millisecond.
    @Test(arguments: [
        ("0001-01-01T00:00:00.000Z", -62_135_596_800.0),
        ("0000-03-01T12:00:00.500Z", -62_161_991_999.5),
        ("-00001-12-31T23:59:59.999Z", -62_167_219_200.001),
        ("-05000-06-15T00:00:00.000Z", -219_937_680_000.0),
        ("9999-12-31T23:59:59.999Z", 253_402_300_799.999),
        ("+10000-01-01T00:00:00.000Z", 253_402_300_800.0),
        ("+123456-07-08T09:10:11.012Z", 3_833_744_202_611.012),
    ])
    func datesRoundTrip(text: String, seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(ISO8601Text.string(date) == text)
        let read = try #require(ISO8601Text.date(from: Substring(text)))
        #expect(read.timeIntervalSince1970 == seconds)
        #expect(ISO8601Text.string(read) == text)
    }

    /// Random dates over ±30,000 years, with milliseconds, read back as written.
    @Test func randomDatesRoundTrip() throws {
        var generator = SeededGenerator(seed: 8601)
        for _ in 0..<5_000 {
            let milliseconds = Int64.random(in: -1_000_000_000_000_000...1_000_000_000_000_000, using: &generator)
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let text = ISO8601Text.string(date)
            let read = try #require(ISO8601Text.date(from: Substring(text)), "\(text)")
            #expect(ISO8601Text.string(read) == text)
            #expect(abs(read.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.001, "\(text)")
        }
    }

    /// A day the month does not have is refused (leap years as the Gregorian calendar has them);
    /// the days it has are read.
    @Test func daysAreCheckedAgainstTheMonth() {
        for text in [
            "2024-02-30", "2023-02-29", "1900-02-29", "2024-04-31", "2024-06-31", "2024-09-31", "2024-11-31",
            "2024-02-31T00:00:00Z", "2024-00-10", "2024-13-01", "2024-01-00", "2024-01-32", "+1000-01-01",
            "+0000012024-01-01", "12024-01-01",
        ] {
            #expect(ISO8601Text.date(from: Substring(text)) == nil, "\(text)")
        }
        for text in ["2024-02-29", "2000-02-29", "2023-01-31", "2023-04-30", "2023-12-31T23:59:59Z", "-00004-02-29"] {
            #expect(ISO8601Text.date(from: Substring(text)) != nil, "\(text)")
        }
    }
}
