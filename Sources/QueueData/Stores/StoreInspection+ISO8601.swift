import Foundation

@_spi(StoreTool)
extension StoreInspection {
    /// The date ISO 8601 `text` names, read as an import reads it: `2026-11-24T19:56:03.250Z`,
    /// an offset instead of `Z`, a date alone (midnight UTC), an expanded year (`+10000-…`);
    /// `nil` for anything else, a day the month does not have included. What `qd export
    /// --where` compares dates with.
    public static func date(fromISO8601 text: String) -> Date? {
        ISO8601Text.date(from: Substring(text))
    }
}
