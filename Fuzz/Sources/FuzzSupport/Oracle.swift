import Foundation
@_spi(Fuzzing) import QueueData

/// What the targets check beyond "no trap": errors are typed, and what the library accepts it
/// writes and reads back unchanged. A failed check traps, so that libFuzzer reports it.
public enum Oracle {
    /// Runs `body`, which may throw only a ``StoreError``: any other error escaping a decoder
    /// or an open is a finding.
    public static func expectingStoreErrors<T>(_ what: String, _ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch is StoreError {
            return nil
        } catch {
            fatalError("\(what) threw an error that is not a StoreError: \(type(of: error)): \(error)")
        }
    }

    /// Writes `contents` as a journal and reads it back: it must read, with the same rows.
    public static func checkRoundTrip(of contents: StoreContents) {
        let bytes = StoreDecoding.encodeJournal(contents)
        let decoded: StoreContents
        do {
            decoded = try StoreDecoding.decodeJournal(bytes)
        } catch {
            fatalError("contents that were read could not be read back after writing them as a journal: \(error)")
        }
        guard decoded.metadata == contents.metadata else {
            fatalError("the metadata changed in a journal round trip: \(contents.metadata) -> \(decoded.metadata)")
        }
        guard decoded.schema.map(\.name) == contents.schema.map(\.name) else {
            fatalError("the schema changed in a journal round trip")
        }
        for entity in contents.schema {
            let before = (contents.rows[entity.name] ?? []).sorted { $0.primaryKey < $1.primaryKey }
            let after = (decoded.rows[entity.name] ?? []).sorted { $0.primaryKey < $1.primaryKey }
            guard before.count == after.count else {
                fatalError("\(entity.name) had \(before.count) rows before a journal round trip, \(after.count) after")
            }
            for (old, new) in zip(before, after) {
                guard old.primaryKey == new.primaryKey, old.values.count == new.values.count,
                    zip(old.values, new.values).allSatisfy(isSame)
                else {
                    fatalError("a row of \(entity.name) changed in a journal round trip: \(old) -> \(new)")
                }
            }
        }
    }

    /// Writes `state` as a journal and reads it back: it must read, with the same rows.
    public static func checkRoundTrip(of state: StoreState) {
        var rows: [String: [StoredRow]] = [:]
        for (index, entity) in state.entities.enumerated() {
            var entityRows: [StoredRow] = []
            state.forEachRow(ofEntityAt: index) { key, values in
                entityRows.append(StoredRow(primaryKey: key, values: values))
            }
            rows[entity.name] = entityRows
        }
        checkRoundTrip(of: StoreContents(metadata: state.metadata, schema: state.entities, rows: rows))
    }

    /// Equal, bit for bit for floating-point values (`NaN` is itself, `-0.0` is not `0.0`).
    static func isSame(_ lhs: StoredValue, _ rhs: StoredValue) -> Bool {
        switch (lhs, rhs) {
        case (.double(let a), .double(let b)): return a.bitPattern == b.bitPattern
        case (.date(let a), .date(let b)):
            return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.decimal(let a), .decimal(let b)): return a == b || (a.isNaN && b.isNaN)
        default: return lhs == rhs
        }
    }
}
