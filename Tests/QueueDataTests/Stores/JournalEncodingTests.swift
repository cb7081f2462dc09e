import Foundation
import Testing

@testable import QueueData

@Suite("Journal change records")
struct JournalEncodingTests {
    @Test(
        "inserted rows encoded from where the tables hold them are the bytes their stored values encode to, every field kind, over random rows"
    )
    func rowsEncodeAsTheirValues() throws {
        let model = ManagedObjectModel([AllTypes.self])
        let entity = try #require(model.entity(named: "AllTypes"))
        let layout = entity.rowLayout
        let mapping = JournalPayload.SchemaMapping(schema: model.entities, model: model)
        var random = SeededGenerator(seed: 23)
        for round in 0..<200 {
            // A column's value: one of the samples that fits it (its default when none does).
            func value(_ column: Int) -> StoredValue {
                let attribute = entity.attributes[column]
                let fitting = RowLayoutTests.samples.filter { sample in
                    guard attribute.type == .transformable else {
                        return sample.fits(attribute.type, isOptional: attribute.isOptional)
                    }
                    if case .data = sample { return true }
                    return sample == .null
                }
                return fitting.randomElement(using: &random) ?? entity.defaultRow[column]
            }
            let count = Int.random(in: 1...40, using: &random)
            let block = RowBlock(layout: layout, capacity: count)
            var rows: [StoredRow] = []
            for index in 0..<count {
                let values = (0..<entity.columnCount).map(value)
                let key = Int64(index * Int.random(in: 1...3, using: &random) + 1)
                #expect(block.append(primaryKey: Int64(index), version: 1, values: values))
                rows.append(StoredRow(primaryKey: key, values: values))
            }
            // Rows given as values too (an undo's restored rows): written after the others.
            let restored = (0..<Int.random(in: 0...3, using: &random)).map { index in
                StoredRow(primaryKey: Int64(1_000 + index), values: (0..<entity.columnCount).map(value))
            }
            // The references' rows carry the keys: the record takes them from there.
            var packed = ChangeSet.EntityChanges(entityName: "AllTypes", inserted: restored)
            let referenced = RowBlock(layout: layout, capacity: count)
            for (index, row) in rows.enumerated() {
                referenced.append(copyingRow: block.row(index), primaryKey: row.primaryKey, version: 1)
                packed.insertedReferences.append(RowReference(block: referenced, index: index))
            }
            let plain = ChangeSet.EntityChanges(entityName: "AllTypes", inserted: rows + restored)
            let packedBytes = JournalPayload.encodeChanges(
                ChangeSet(entities: [packed], nextPrimaryKeys: ["AllTypes": 2_000]), mapping: mapping)
            let plainBytes = JournalPayload.encodeChanges(
                ChangeSet(entities: [plain], nextPrimaryKeys: ["AllTypes": 2_000]), mapping: mapping)
            #expect(packedBytes == plainBytes, "round \(round)")
            // And unpacked, the change set lists the same rows, in the same order.
            var unpacked = ChangeSet(entities: [packed], nextPrimaryKeys: [:])
            unpacked.unpackInsertedRows()
            #expect(unpacked.entities[0].insertedReferences.isEmpty)
            #expect(unpacked.entities[0].inserted.count == rows.count + restored.count)
            for (found, expected) in zip(unpacked.entities[0].inserted, rows + restored) {
                #expect(found.primaryKey == expected.primaryKey)
                #expect(zip(found.values, expected.values).allSatisfy { StoredValue.isSame($0, $1) })
            }
        }
    }

    @Test(
        "rows encoded from the tables count toward the journal's compaction estimate: inserts alone never make it rewrite the store"
    )
    func insertedRowsCountForCompaction() throws {
        let directory = TemporaryDirectory("encoding-compaction")
        let fileSystem = FaultyFileSystem()
        let manager = journalManager(
            directory, fileSystem: fileSystem, model: ManagedObjectModel([Destination.self]),
            backgroundCompaction: false)
        defer { manager.close() }
        let context = try makeContext(manager, "inserts")
        try context.performAndWait {
            for index in 0..<20_000 {
                context.insert(Destination.self).name = String(index % 10)
            }
            try context.save()
        }
        fileSystem.reset()
        // Rows far larger than the estimate's default size: uncounted, they made the log look
        // mostly dead, and the journal compacted twice.
        let text = String(repeating: "x", count: 2_000)
        try context.performAndWait {
            for round in 0..<3_000 {
                context.insert(Destination.self).country = text + String(round)
                try context.save()
            }
        }
        #expect(fileSystem.log.filter { $0 == "rename" }.isEmpty, "the journal compacted")
    }
}
