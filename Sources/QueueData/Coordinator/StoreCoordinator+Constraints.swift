/// Uniqueness constraints: the indexes of the committed rows, built at open and following every
/// commit (the commit's checks are the planner's, CommitPlanner+Constraints.swift).
extension StoreCoordinator {
    /// The uniqueness indexes of `model`, filled with `tables`' rows.
    ///
    /// - Throws: ``StoreError/Code/incompatibleModel`` when two committed rows share the values
    ///   of a constraint (the constraint is newer than the rows): nothing is opened.
    static func uniquenessIndexes(of tables: [EntityTable], model: ManagedObjectModel) throws -> [UniquenessIndex] {
        var indexes = UniquenessIndex.indexes(for: model)
        for position in indexes.indices {
            indexes[position].rows.reserveCapacity(
                indexes[position].columns.keys.reduce(0) { $0 + tables[$1].liveCount })
            for entityIndex in indexes[position].columns.keys.sorted() {
                try tables[entityIndex].snapshot.forEachLiveRow { row in
                    guard let values = indexes[position].values(of: row, entityIndex: entityIndex) else {
                        return
                    }
                    let key = RowKey(entityIndex: entityIndex, primaryKey: row.primaryKey)
                    if let other = indexes[position].rows.updateValue(key, forKey: values) {
                        let index = indexes[position]
                        throw StoreError(
                            .incompatibleModel,
                            "\(model.entities[other.entityIndex].name) \(other.primaryKey) and "
                                + "\(model.entities[entityIndex].name) \(row.primaryKey) share "
                                + describe(index.attributeNames, values.array)
                                + ", which the model declares unique in '"
                                + index.entityName + "'. Remove the duplicates (a MigrationStep can) or the constraint."
                        )
                    }
                }
            }
        }
        return indexes
    }

    private static func describe(_ names: [String], _ values: [StoredValue]) -> String {
        zip(names, values).map { "\($0) = \($1)" }.joined(separator: ", ")
    }

    /// Takes a commit's changes into the uniqueness indexes.
    ///
    /// - Parameters:
    ///   - before: The tables before the commit.
    ///   - written: Every row the commit inserted, restored or updated.
    ///   - deleted: Every row it deleted.
    func updateUniquenessIndexes(
        before: [EntityTable],
        written: [(entityIndex: Int, row: CommittedRow)],
        deleted: [RowKey]
    ) {
        guard !uniquenessIndexes.isEmpty else { return }
        // Removals first: a save may move values from one object to another.
        let removed = written.map { RowKey(entityIndex: $0.entityIndex, primaryKey: $0.row.primaryKey) } + deleted
        for position in uniquenessIndexes.indices {
            uniquenessIndexes[position].rows.reserveCapacity(uniquenessIndexes[position].rows.count + written.count)
            for key in removed {
                guard uniquenessIndexes[position].columns[key.entityIndex] != nil,
                    let old = before[key.entityIndex].row(for: key.primaryKey),
                    let values = uniquenessIndexes[position].values(of: old.values, entityIndex: key.entityIndex),
                    uniquenessIndexes[position].rows[values] == key
                else { continue }
                uniquenessIndexes[position].rows[values] = nil
            }
            for (entityIndex, row) in written {
                guard let values = uniquenessIndexes[position].values(of: row.values, entityIndex: entityIndex) else {
                    continue
                }
                uniquenessIndexes[position].rows[values] = RowKey(entityIndex: entityIndex, primaryKey: row.primaryKey)
            }
        }
    }
}

extension MergePolicy {
    /// Whether the policy settles an inserted object's constraint conflict by upserting it
    /// into the object holding its values (the four built-in trump and rollback policies).
    var upsertsOnConstraintConflicts: Bool {
        resolvesOnRows
    }
}
