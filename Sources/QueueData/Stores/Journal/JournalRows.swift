/// The rows of one entity while a journal is read: kept in key order as the snapshot and the
/// ever-increasing keys of later inserts deliver them (looked up by binary search, never
/// hashed), with the rare row inserted below the highest key kept aside.
///
/// Replaces a dictionary by primary key: opening a store no longer hashes every row, and the
/// rows come out in key order, as the coordinator keeps them, without sorting them.
struct JournalRows {
    /// The keys of `values`, increasing.
    private var keys: [Int64] = []
    /// The rows of `keys`; `nil` for a row deleted since it was read.
    private var values: [[StoredValue]?] = []
    /// Rows inserted with a key below the highest one of `keys` that `keys` does not hold.
    private var unordered: [Int64: [StoredValue]] = [:]
    /// How many rows there are (deleted ones not counted).
    private(set) var count = 0

    init(reservingCapacity capacity: Int = 0) {
        keys.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
    }

    /// Adds a row whose key is above every key so far (the snapshot's rows, in order); one
    /// that is not goes where the subscript puts it.
    mutating func append(_ row: [StoredValue], forKey key: Int64) {
        guard keys.last.map({ $0 < key }) ?? true else {
            self[key] = row
            return
        }
        keys.append(key)
        values.append(row)
        count += 1
    }

    /// The row with `key`, if there is one; setting `nil` deletes it.
    subscript(key: Int64) -> [StoredValue]? {
        get {
            if let position = position(of: key) {
                return values[position]
            }
            return unordered[key]
        }
        set {
            if let last = keys.last, key <= last {
                if let position = position(of: key) {
                    count += (newValue == nil ? 0 : 1) - (values[position] == nil ? 0 : 1)
                    values[position] = newValue
                } else if let newValue {
                    if unordered.updateValue(newValue, forKey: key) == nil {
                        count += 1
                    }
                } else if unordered.removeValue(forKey: key) != nil {
                    count -= 1
                }
            } else if let newValue {
                keys.append(key)
                values.append(newValue)
                count += 1
            }
        }
    }

    /// Calls `body` with the key of every row, in no particular order.
    func forEachKey(_ body: (Int64) -> Void) {
        for (key, row) in zip(keys, values) where row != nil {
            body(key)
        }
        for key in unordered.keys {
            body(key)
        }
    }

    /// The rows, in key order.
    func storedRows() -> [StoredRow] {
        var rows: [StoredRow] = []
        rows.reserveCapacity(count)
        for (key, row) in zip(keys, values) {
            if let row {
                rows.append(StoredRow(primaryKey: key, values: row))
            }
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
