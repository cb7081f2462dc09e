import Foundation

/// Finds where a row of a store's contents lies in its file, so that a refusal of the row by
/// the checks at open (a value of the wrong type, a dangling reference, a transformable value
/// that does not decode) says where to look.
///
/// The built-in file stores set one on the contents they return; a custom store's contents
/// have none, and its refusals name the entity and the row only.
struct RowLocator: Sendable {
    /// Sets the place of the row with `primaryKey` of the entity named `entityName` on `error`:
    /// its offset, and its line and column in a text file.
    let locate: @Sendable (_ error: inout StoreError, _ entityName: String, _ primaryKey: Int64) -> Void

    /// Where the rows of one entity are in a text document: each row's primary key and byte
    /// offset, in the document's order.
    struct Places: Sendable {
        var keys: [Int64] = []
        var offsets: [Int] = []
    }

    /// A locator for a text document: each row's byte offset, found by its primary key among
    /// `places` (only when there is an error to report).
    static func text(bytes: [UInt8], places: [String: Places]) -> RowLocator {
        RowLocator { error, entityName, primaryKey in
            guard let entityPlaces = places[entityName],
                let index = entityPlaces.keys.firstIndex(of: primaryKey)
            else { return }
            let offset = entityPlaces.offsets[index]
            bytes.withUnsafeBytes { error.locate(offset, inText: $0) }
        }
    }
}
