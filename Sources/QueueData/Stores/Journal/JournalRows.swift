/// The rows of one entity while a journal (or a JSON store document) is read: kept in key order
/// as the snapshot and the ever-increasing keys of later inserts deliver them (looked up by
/// binary search, never hashed), with the rare row inserted below the highest key kept aside.
///
/// Replaces a dictionary by primary key: opening a store no longer hashes every row, and the
/// rows come out in key order, as the coordinator keeps them, without sorting them. The values
/// of the rows in key order are one flat array (`columns` per row), decoded into it straight
/// from the file: no array per row is made, filled and freed on the way to the coordinator's
/// row blocks (see ``forEachRowInKeyOrder(_:)``).
struct JournalRows {
    /// The number of values of each row.
    let columns: Int
    /// The keys of the rows of `values`, increasing.
    private var keys: [Int64] = []
    /// The values of the rows of `keys`, `columns` per row, in the same order.
    private var values: [StoredValue] = []
    /// Whether each row of `keys` is live (`false` for a row deleted since it was read).
    private var isLive: [Bool] = []
    /// Rows inserted with a key below the highest one of `keys` that `keys` does not hold.
    private var unordered: [Int64: [StoredValue]] = [:]
    /// How many rows there are (deleted ones not counted).
    private(set) var count = 0

    init(columns: Int, reservingCapacity capacity: Int = 0) {
        self.columns = columns
        keys.reserveCapacity(capacity)
        isLive.reserveCapacity(capacity)
        values.reserveCapacity(capacity * columns)
    }

    /// Makes room for `additional` more rows at the end, growing geometrically (so that many
    /// small records do not each copy the rows).
    mutating func reserveCapacity(adding additional: Int) {
        let needed = keys.count + additional
        guard needed > keys.capacity else { return }
        let capacity = Swift.max(needed, keys.capacity * 2)
        keys.reserveCapacity(capacity)
        isLive.reserveCapacity(capacity)
        values.reserveCapacity(capacity * columns)
    }

    /// Adds a row whose key is above every key so far (the snapshot's rows, in order); one
    /// that is not goes where the subscript puts it.
    mutating func append(_ row: [StoredValue], forKey key: Int64) {
        precondition(row.count == columns, "QueueData: a journal row of \(row.count) values for \(columns) columns")
        guard keys.last.map({ $0 < key }) ?? true else {
            self[key] = row
            return
        }
        keys.append(key)
        values.append(contentsOf: row)
        isLive.append(true)
        count += 1
    }

    /// ``append(_:forKey:)`` of a row whose `columns` values `read` returns in turn, decoded
    /// straight into the flat array when the key is above every key so far. If `read` throws,
    /// nothing is added.
    mutating func append(forKey key: Int64, reading read: () throws -> StoredValue) rethrows {
        guard keys.last.map({ $0 < key }) ?? true else {
            var row: [StoredValue] = []
            row.reserveCapacity(columns)
            for _ in 0..<columns {
                row.append(try read())
            }
            self[key] = row
            return
        }
        let start = values.count
        do {
            for _ in 0..<columns {
                values.append(try read())
            }
        } catch {
            values.removeSubrange(start...)
            throw error
        }
        keys.append(key)
        isLive.append(true)
        count += 1
    }

    /// The row with `key`, if there is one; setting `nil` deletes it.
    subscript(key: Int64) -> [StoredValue]? {
        get {
            if let position = position(of: key) {
                return isLive[position] ? Array(values[position * columns..<(position + 1) * columns]) : nil
            }
            return unordered[key]
        }
        set {
            precondition(
                newValue.map { $0.count == columns } ?? true, "QueueData: a journal row of the wrong width")
            if let last = keys.last, key <= last {
                if let position = position(of: key) {
                    count += (newValue == nil ? 0 : 1) - (isLive[position] ? 1 : 0)
                    isLive[position] = newValue != nil
                    // A deleted row's values are released now, not when the rows are.
                    let row = newValue ?? Array(repeating: .null, count: columns)
                    values.replaceSubrange(position * columns..<(position + 1) * columns, with: row)
                } else if let newValue {
                    if unordered.updateValue(newValue, forKey: key) == nil {
                        count += 1
                    }
                } else if unordered.removeValue(forKey: key) != nil {
                    count -= 1
                }
            } else if let newValue {
                keys.append(key)
                values.append(contentsOf: newValue)
                isLive.append(true)
                count += 1
            }
        }
    }

    /// Calls `body` with the key of every row, in no particular order.
    func forEachKey(_ body: (Int64) -> Void) {
        for (key, live) in zip(keys, isLive) where live {
            body(key)
        }
        for key in unordered.keys {
            body(key)
        }
    }

    /// Whether every row is in the flat array (no row was inserted below the highest key), so
    /// that ``forEachRowInKeyOrder(_:)`` sees them all.
    var isInKeyOrder: Bool { unordered.isEmpty }

    /// Calls `body` with the key and values of every row of the flat array, in key order (all
    /// the rows when ``isInKeyOrder``). The buffer is valid during the call only.
    func forEachRowInKeyOrder(_ body: (Int64, UnsafeBufferPointer<StoredValue>) throws -> Void) rethrows {
        try values.withUnsafeBufferPointer { buffer in
            for (position, key) in keys.enumerated() where isLive[position] {
                try body(key, UnsafeBufferPointer(rebasing: buffer[position * columns..<(position + 1) * columns]))
            }
        }
    }

    /// The rows, in key order.
    func storedRows() -> [StoredRow] {
        var rows: [StoredRow] = []
        rows.reserveCapacity(count)
        forEachRowInKeyOrder { key, row in
            rows.append(StoredRow(primaryKey: key, values: Array(row)))
        }
        if !unordered.isEmpty {
            for (key, row) in unordered {
                rows.append(StoredRow(primaryKey: key, values: row))
            }
            rows.sort { $0.primaryKey < $1.primaryKey }
        }
        return rows
    }

    /// The position of `key` in `keys`, if it is there.
    private func position(of key: Int64) -> Int? {
        var low = 0
        var high = keys.count
        while low < high {
            let middle = low + (high - low) / 2
            if keys[middle] < key {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low < keys.count && keys[low] == key ? low : nil
    }
}
