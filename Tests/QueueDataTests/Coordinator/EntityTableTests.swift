import Testing

@testable import QueueData

@Suite("Entity tables")
struct EntityTableTests {
    /// Rows of one integer column.
    let layout = RowLayout(columnKinds: [.int64], transientKinds: [], defaults: [.integer(0)])

    @Test("appends, replacements and deletes (with compaction) match a dictionary", arguments: 0..<6)
    func matchesDictionary(seed: Int) {
        var generator = SeededGenerator(seed: UInt64(seed))
        var table = EntityTable(layout: layout)
        var model: [Int64: Int64] = [:]
        var next: Int64 = 1
        for step in 0..<20_000 {
            let choice = Int.random(in: 0..<10, using: &generator)
            if (step < 6_000 && choice < 9) || model.isEmpty {
                table.append(CommittedRow(primaryKey: next, version: 1, values: [.integer(next)]))
                model[next] = 1
                next += Int64.random(in: 1...3, using: &generator)
            } else if choice < 8 {
                let key = model.keys.randomElement(using: &generator)!
                let removed = table.remove(key)
                #expect(removed)
                model[key] = nil
            } else {
                let key = model.keys.randomElement(using: &generator)!
                let version = model[key]! + 1
                table.replace(with: CommittedRow(primaryKey: key, version: version, values: [.integer(key)]))
                model[key] = version
            }
            if step % 997 == 0 {
                let snapshot = table.snapshot
                var seen: [Int64] = []
                snapshot.forEachLiveRow { seen.append($0.primaryKey) }
                #expect(seen == model.keys.sorted())
                #expect(snapshot.liveCount == model.count)
                for key in model.keys.prefix(50) {
                    #expect(snapshot.contains(primaryKey: key))
                    #expect(table.row(for: key)?.version == model[key])
                }
                #expect(!snapshot.contains(primaryKey: next + 5))
                #expect(table.row(for: next + 5) == nil)
            }
        }
        #expect(table.nextPrimaryKey >= next - 3)
    }

    @Test("a replacement re-indexes a column only where its stored value changes: bytes for strings, bits for numbers")
    func replacementsReindexChangedColumns() {
        #expect(ColumnIndex.isIndexedAlike(.string("é"), .string("é")))
        #expect(!ColumnIndex.isIndexedAlike(.string("é"), .string("e\u{301}")), "== but other bytes")
        #expect(!ColumnIndex.isIndexedAlike(.string(""), .string("a")))
        #expect(!ColumnIndex.isIndexedAlike(.double(0), .double(-0.0)), "== but other bits")
        #expect(ColumnIndex.isIndexedAlike(.double(.nan), .double(.nan)))
        #expect(!ColumnIndex.isIndexedAlike(.integer(1), .null))

        let layout = RowLayout(
            columnKinds: [.string, .int64], transientKinds: [], defaults: [.string(""), .integer(0)])
        var table = EntityTable(layout: layout)
        table.index(columns: [0])
        for key in Int64(1)...300 {
            table.append(CommittedRow(primaryKey: key, version: 1, values: [.string("code \(key)"), .integer(key)]))
        }
        let published = table.snapshot
        // Another column changes: the index is the same, and lookups still find the row. The
        // published snapshot holds the index's nodes, so any change would have copied its root.
        let root = published.index(of: 0)!.hashedRootIdentity
        table.replace(with: CommittedRow(primaryKey: 7, version: 2, values: [.string("code 7"), .integer(70)]))
        #expect(table.snapshot.index(of: 0)?.lookUp(.string("code 7")) == [7])
        #expect(table.snapshot.index(of: 0)?.hashedRootIdentity == root, "an unchanged column's index is untouched")
        // The indexed string changes to an equal one with other bytes: the ordered entries
        // follow (they are in byte order), and the hashed ones still find it.
        table.replace(with: CommittedRow(primaryKey: 8, version: 2, values: [.string("é"), .integer(8)]))
        #expect(table.snapshot.index(of: 0)?.hashedRootIdentity != root, "a changed column's index is copied")
        table.replace(with: CommittedRow(primaryKey: 8, version: 3, values: [.string("e\u{301}"), .integer(8)]))
        let index = table.snapshot.index(of: 0)!
        #expect(index.lookUp(.string("é")) == [8])
        #expect(index.lookUp(.string("code 8")).isEmpty)
        let strings = index.ordered.entries.compactMap { entry -> String? in
            guard entry.key == 8, case .string(let value) = entry.value else { return nil }
            return value
        }
        #expect(strings.map { Array($0.utf8) } == [Array("e\u{301}".utf8)])
        #expect(index.ordered.count == 300)
        // A change that keeps the byte length ("code 9" to "code 6") re-indexes too.
        table.replace(with: CommittedRow(primaryKey: 9, version: 2, values: [.string("code 6"), .integer(9)]))
        #expect(table.snapshot.index(of: 0)?.lookUp(.string("code 6")).sorted() == [6, 9])
        #expect(table.snapshot.index(of: 0)?.lookUp(.string("code 9")).isEmpty == true)
        // A large append into the table (more than an eighth of its rows: the indexes are
        // rebuilt once at its end) indexes both the rows before it and the new ones.
        table.append(
            contentsOf: (Int64(301)...400).map {
                CommittedRow(primaryKey: $0, version: 1, values: [.string("code \($0)"), .integer($0)])
            })
        let rebuilt = table.snapshot.index(of: 0)!
        #expect(rebuilt.lookUp(.string("code 350")) == [350])
        #expect(rebuilt.lookUp(.string("code 150")) == [150])
        #expect(rebuilt.lookUp(.string("é")) == [8])
        #expect(rebuilt.ordered.count == 400)
        #expect(rebuilt.ordered.entries.contains { $0.key == 399 })
        // The version published before the changes still indexes the old values.
        #expect(published.index(of: 0)?.lookUp(.string("code 8")) == [8])
        #expect(published.index(of: 0)?.lookUp(.string("é")).isEmpty == true)
    }

    @Test("NaN values stay out of the hashed part of an index (no lookup finds them) and in its ordered part")
    func nanValuesAreNotHashed() {
        #expect(ColumnIndex.isUnequalToItself(.double(.nan)))
        #expect(ColumnIndex.isUnequalToItself(.double(-.nan)))
        #expect(ColumnIndex.isUnequalToItself(.date(Date(timeIntervalSinceReferenceDate: .nan))))
        #expect(!ColumnIndex.isUnequalToItself(.double(.infinity)))
        #expect(!ColumnIndex.isUnequalToItself(.double(-0.0)))
        #expect(!ColumnIndex.isUnequalToItself(.null))
        #expect(!ColumnIndex.isUnequalToItself(.decimal(.nan)), "Decimal's NaN is == to itself")

        let layout = RowLayout(
            columnKinds: [.optionalDouble, .optionalDate], transientKinds: [], defaults: [.null, .null])
        let nanDate = StoredValue.date(Date(timeIntervalSinceReferenceDate: .nan))
        func values(_ key: Int64, nan: Bool) -> [StoredValue] {
            nan ? [.double(.nan), nanDate] : [.double(Double(key)), .date(Date(timeIntervalSinceReferenceDate: 1))]
        }
        var table = EntityTable(layout: layout)
        table.index(columns: [0, 1])
        // Every third row NaN, one by one and then in a bulk append (which rebuilds the index).
        for key in Int64(1)...30 {
            table.append(CommittedRow(primaryKey: key, version: 1, values: values(key, nan: key % 3 == 0)))
        }
        table.append(
            contentsOf: (Int64(31)...300).map {
                CommittedRow(primaryKey: $0, version: 1, values: values($0, nan: $0 % 3 == 0))
            })
        var nan = Set((Int64(1)...300).filter { $0 % 3 == 0 })
        var version: Int64 = 1
        var random = SeededGenerator(seed: 5)
        for round in 0..<400 {
            // A row turns NaN or back, or is saved again as it is.
            let key = Int64.random(in: 1...300, using: &random)
            let toNaN = round % 5 == 0 ? nan.contains(key) : !nan.contains(key)
            version += 1
            table.replace(with: CommittedRow(primaryKey: key, version: version, values: values(key, nan: toNaN)))
            if toNaN {
                nan.insert(key)
            } else {
                nan.remove(key)
            }
        }
        let doubles = table.snapshot.index(of: 0)!
        let dates = table.snapshot.index(of: 1)!
        #expect(doubles.hashedValueCount == 300 - nan.count, "one entry per distinct value that is not NaN")
        #expect(dates.hashedValueCount == (nan.count == 300 ? 0 : 1))
        #expect(doubles.lookUp(.double(.nan)).isEmpty && dates.lookUp(nanDate).isEmpty)
        for key in Int64(1)...300 {
            #expect(doubles.lookUp(.double(Double(key))) == (nan.contains(key) ? [] : [key]))
        }
        #expect(
            dates.lookUp(.date(Date(timeIntervalSinceReferenceDate: 1))).sorted()
                == (1...300).filter { !nan.contains($0) })
        // Ranges and sorts still see every row: NaN entries stay in the ordered part.
        #expect(doubles.ordered.count == 300 && dates.ordered.count == 300)
    }

    @Test("a snapshot is unaffected by later changes")
    func snapshotsAreStable() {
        var table = EntityTable(layout: layout)
        for key in 1...3_000 {
            table.append(CommittedRow(primaryKey: Int64(key), version: 1, values: [.integer(Int64(key))]))
        }
        let before = table.snapshot
        table.replace(with: CommittedRow(primaryKey: 10, version: 2, values: [.integer(-10)]))
        table.remove(20)
        table.append(CommittedRow(primaryKey: 5_000, version: 1, values: [.integer(5_000)]))
        var values: [Int64: StoredValue] = [:]
        before.forEachLiveRow { values[$0.primaryKey] = $0.values.first }
        #expect(values.count == 3_000)
        #expect(values[10] == .integer(10))
        #expect(values[20] == .integer(20))
        #expect(values[5_000] == nil)
    }

    @Test("rows across several groups of chunks: lookups, changes and snapshots match a dictionary")
    func acrossGroups() {
        var generator = SeededGenerator(seed: 17)
        var table = EntityTable(layout: layout)
        var model: [Int64: Int64] = [:]
        let rowCount = EntityTable.rowsPerGroup * 2 + EntityTable.chunkCapacity + 5
        for key in 1...Int64(rowCount) {
            table.append(CommittedRow(primaryKey: key * 2, version: 1, values: [.integer(key)]))
            model[key * 2] = 1
        }
        let before = table.snapshot
        let keys = model.keys.sorted()
        for _ in 0..<5_000 {
            let key = keys.randomElement(using: &generator)!
            guard let version = model[key] else { continue }
            if Bool.random(using: &generator) {
                table.replace(with: CommittedRow(primaryKey: key, version: version + 1, values: [.integer(-key)]))
                model[key] = version + 1
            } else {
                let removed = table.remove(key)
                #expect(removed)
                model[key] = nil
            }
        }
        let after = table.snapshot
        var seen: [Int64] = []
        after.forEachLiveRow { seen.append($0.primaryKey) }
        #expect(seen == model.keys.sorted())
        for key in keys where key % 7 == 0 || key > Int64(rowCount * 2 - 300) {
            #expect(table.row(for: key)?.version == model[key])
            #expect(after.row(for: key)?.version == model[key])
            #expect(before.row(for: key)?.version == 1, "the earlier snapshot keeps its rows")
            #expect(table.row(for: key + 1) == nil)
        }
        var unchanged = 0
        before.forEachLiveRow { row in
            if row.version == 1, row.values == [.integer(row.primaryKey / 2)] {
                unchanged += 1
            }
        }
        #expect(unchanged == rowCount)
    }

    @Test("loading keeps rows in key order whatever order the store returns them in, and refuses a duplicate anywhere")
    func loadingOrderAndDuplicates() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Note", attributes: [AttributeDescription(name: "text", type: .string)])
        ])
        func contents(_ keys: [Int64]) -> StoreContents {
            var contents = StoreContents(
                metadata: StoreMetadata(storeIdentifier: UUID(), versionHash: model.versionHash),
                schema: model.entities,
                rows: [:])
            contents.rows["Note"] = keys.map { StoredRow(primaryKey: $0, values: [.string("n\($0)")]) }
            contents.metadata.nextPrimaryKeys["Note"] = 100
            return contents
        }
        var generator = SeededGenerator(seed: 9)
        for round in 0..<200 {
            var keys = Array(
                Set(
                    (0..<Int.random(in: 0...40, using: &generator)).map { _ in
                        Int64.random(in: 1...99, using: &generator)
                    })
            ).sorted()
            if round % 2 == 1 {
                keys.shuffle(using: &generator)
            }
            let tables = try StoreCoordinator.loadTables(contents(keys), model: model)
            var loaded: [Int64] = []
            tables[0].snapshot.forEachLiveRow { loaded.append($0.primaryKey) }
            #expect(loaded == keys.sorted())
            // The same rows as a journal hands them to the coordinator (decoded into one flat
            // array, a row below the highest key kept aside), and one of them not a string.
            var packed = contents([])
            var rows = JournalRows(columns: 1)
            for key in keys {
                rows.append([.string("n\(key)")], forKey: key)
            }
            packed.packedRows = ["Note": rows]
            let packedTables = try StoreCoordinator.loadTables(packed, model: model)
            var packedRows: [CommittedRow] = []
            packedTables[0].snapshot.forEachLiveRow { packedRows.append($0.committedRow) }
            #expect(packedRows.map(\.primaryKey) == keys.sorted())
            #expect(packedRows.map(\.values) == keys.sorted().map { [.string("n\($0)")] })
            if let wrong = keys.randomElement(using: &generator) {
                rows[wrong] = [.integer(wrong)]
                packed.packedRows = ["Note": rows]
                #expect(throws: StoreError.self) { try StoreCoordinator.loadTables(packed, model: model) }
            }
            guard let duplicate = keys.randomElement(using: &generator) else { continue }
            // A duplicate in order, out of order, adjacent or not, is refused.
            var withDuplicate = keys
            withDuplicate.insert(duplicate, at: Int.random(in: 0...keys.count, using: &generator))
            #expect(throws: StoreError.self) { try StoreCoordinator.loadTables(contents(withDuplicate), model: model) }
        }
    }
}
