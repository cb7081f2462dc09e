import Foundation

/// Format 4: the persistent history. A snapshot ends with the *history section* (the purge point,
/// the last transaction number, and every transaction kept, with its changes by entity name and
/// property name, so that it outlives migrations); every change record ends with its
/// *transaction trailer* (number, timestamp, author, context name), the changes themselves being
/// the record's. Rows and history are in the same checksummed records: a crash cut keeps or
/// loses both.
extension JournalPayload {
    // MARK: History section

    static func writeHistory(_ history: StoreHistory, to writer: inout BinaryWriter) {
        writer.writeVarint(UInt64(history.purgedThrough))
        writer.writeVarint(UInt64(history.lastTransactionNumber))
        writer.writeVarint(UInt64(history.transactions.count))
        for transaction in history.transactions {
            writeTransactionHeader(transaction, to: &writer)
            writer.writeVarint(UInt64(transaction.entities.count))
            for entity in transaction.entities {
                writer.writeString(entity.entityName)
                writer.writeVarint(UInt64(entity.inserted.count))
                for key in entity.inserted {
                    writer.writeVarint(UInt64(key))
                }
                writer.writeVarint(UInt64(entity.updated.count))
                for update in entity.updated {
                    writer.writeVarint(UInt64(update.primaryKey))
                    writer.writeVarint(UInt64(update.properties.count))
                    for property in update.properties {
                        writer.writeString(property)
                    }
                }
                writer.writeVarint(UInt64(entity.deleted.count))
                for key in entity.deleted {
                    writer.writeVarint(UInt64(key))
                }
            }
        }
    }

    static func readHistory(_ reader: inout BinaryReader) throws -> StoreHistory {
        var history = StoreHistory()
        history.purgedThrough = try readNumber(&reader, "purge point")
        history.lastTransactionNumber = try readNumber(&reader, "last transaction number")
        let count = try reader.readCount(minimumElementSize: 12, "history transaction")
        history.transactions.reserveCapacity(count)
        for _ in 0..<count {
            var transaction = try readTransactionHeader(&reader)
            let entityCount = try reader.readCount(minimumElementSize: 4, "history entity")
            for _ in 0..<entityCount {
                var entity = StoredTransaction.EntityChanges(entityName: try reader.readString())
                let insertCount = try reader.readCount(minimumElementSize: 1, "history insert")
                for _ in 0..<insertCount {
                    entity.inserted.append(try readHistoryKey(&reader))
                }
                let updateCount = try reader.readCount(minimumElementSize: 2, "history update")
                for _ in 0..<updateCount {
                    let key = try readHistoryKey(&reader)
                    let propertyCount = try reader.readCount(minimumElementSize: 1, "history property")
                    var properties: [String] = []
                    for _ in 0..<propertyCount {
                        properties.append(try reader.readString())
                    }
                    entity.updated.append(StoredTransaction.Update(primaryKey: key, properties: properties))
                }
                let deleteCount = try reader.readCount(minimumElementSize: 1, "history delete")
                for _ in 0..<deleteCount {
                    entity.deleted.append(try readHistoryKey(&reader))
                }
                transaction.entities.append(entity)
            }
            history.transactions.append(transaction)
        }
        if let problem = history.problem {
            throw reader.error(problem)
        }
        return history
    }

    // MARK: Transaction trailer

    /// The number, timestamp, author and context name of `transaction`.
    static func writeTransactionHeader(_ transaction: StoredTransaction, to writer: inout BinaryWriter) {
        writer.writeVarint(UInt64(transaction.number))
        writer.writeUInt64(transaction.timestamp.timeIntervalSinceReferenceDate.bitPattern)
        writer.writeOptionalString(transaction.author)
        writer.writeOptionalString(transaction.contextName)
    }

    /// A transaction's number, timestamp, author and context name; no changes yet.
    static func readTransactionHeader(_ reader: inout BinaryReader) throws -> StoredTransaction {
        let number = try readNumber(&reader, "transaction number")
        let seconds = Double(bitPattern: try reader.readUInt64())
        guard seconds.isFinite else {
            throw reader.error("transaction \(number) has no valid timestamp")
        }
        let author = try reader.readOptionalString()
        let contextName = try reader.readOptionalString()
        return StoredTransaction(
            number: number, timestamp: Date(timeIntervalSinceReferenceDate: seconds), author: author,
            contextName: contextName,
            entities: [])
    }

    /// A transaction number or purge point: at most `Int64.max`.
    private static func readNumber(_ reader: inout BinaryReader, _ what: String) throws -> Int64 {
        let value = try reader.readVarint()
        guard value <= UInt64(Int64.max) else {
            throw reader.error("the history's \(what) \(value) is out of range")
        }
        return Int64(value)
    }

    private static func readHistoryKey(_ reader: inout BinaryReader) throws -> Int64 {
        let value = try reader.readVarint()
        guard value > 0, value <= UInt64(Int64.max) else {
            throw reader.error("the history names the invalid primary key \(value)")
        }
        return Int64(value)
    }
}
