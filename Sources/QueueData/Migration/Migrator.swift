import Foundation

/// Migrates what a store holds to the current model: infers a mapping from the stored schema
/// (added, removed, renamed and converted attributes and entities), converts every row, then
/// runs the custom steps the store has not recorded.
///
/// Works on ``StoreContents`` in memory and writes nothing: the coordinator loads the result
/// and hands it to the store to replace the original.
struct Migrator {
    let model: ManagedObjectModel
    /// Whether a different stored schema may be migrated (the delegate's
    /// `shouldUseAutomaticLightweightMigration`).
    let allowsInferredMigration: Bool
    let steps: [MigrationStep]
    let progress: (@Sendable (MigrationProgress) -> Void)?

    init(
        model: ManagedObjectModel,
        allowsInferredMigration: Bool = true,
        steps: [MigrationStep] = [],
        progress: (@Sendable (MigrationProgress) -> Void)? = nil
    ) {
        self.model = model
        self.allowsInferredMigration = allowsInferredMigration
        self.steps = steps
        self.progress = progress
    }

    /// Where one column of the model gets its values from.
    enum Source {
        /// The stored attribute at this column, converted if needed.
        case stored(Int, AttributeConversion?)
        /// The stored relationship at this column, re-encoded for this relationship when its
        /// cardinality or order changed.
        case relationship(Int, RelationshipDescription?)
        /// The column's default: it is new.
        case defaultValue
    }

    /// How the rows of one model entity are made.
    struct EntityMapping {
        /// The stored entity its rows come from; `nil` for a new entity.
        var stored: EntityDescription?
        /// One source per attribute of the model entity.
        var sources: [Source]
        /// Whether stored rows are already in the model's shape.
        var isIdentity: Bool
    }

    /// The mapping from a stored schema to the model, with every change and every reason it
    /// cannot be used.
    struct Inference {
        var mappings: [EntityMapping] = []
        var changes: [MigrationPlan.Change] = []
        var problems: [String] = []
    }

    // MARK: Deciding

    /// Whether opening `contents` needs a migration: another schema, or steps to run.
    func isNeeded(for contents: StoreContents) -> Bool {
        contents.metadata.versionHash != model.versionHash || !pendingSteps(contents.metadata).isEmpty
    }

    /// The steps `metadata` has not recorded, in order.
    func pendingSteps(_ metadata: StoreMetadata) -> [MigrationStep] {
        let applied = Set(metadata.appliedMigrationSteps)
        return steps.filter { !applied.contains($0.name) }
    }

    /// The mapping from `schema` to the model.
    func infer(from schema: [EntityDescription]) -> Inference {
        var inference = Inference()
        let storedByName = Dictionary(schema.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        // Same names first, then renames of stored entities nothing else claimed: one stored
        // entity's rows never go to two entities.
        var sources: [EntityDescription?] = model.entities.map { storedByName[$0.name] }
        var used = Set(sources.compactMap { $0?.name })
        for (index, entity) in model.entities.enumerated() where sources[index] == nil {
            guard let original = entity.originalName,
                let stored = schema.first(where: { Self.isRenaming($0.name, $0.originalName, original) }),
                !used.contains(stored.name)
            else { continue }
            sources[index] = stored
            used.insert(stored.name)
        }
        // The stored entity each model entity's rows come from, for relationship destinations.
        var storedNames: [String: String] = [:]
        for (entity, stored) in zip(model.entities, sources) {
            storedNames[entity.name] = stored?.name
        }
        for (entity, stored) in zip(model.entities, sources) {
            guard let stored else {
                inference.changes.append(.entityAdded(entity.name))
                inference.mappings.append(
                    EntityMapping(
                        stored: nil, sources: Array(repeating: .defaultValue, count: entity.columnCount),
                        isIdentity: false))
                continue
            }
            if stored.name != entity.name {
                inference.changes.append(.entityRenamed(from: stored.name, to: entity.name))
            }
            inference.mappings.append(map(stored, to: entity, storedNames: storedNames, into: &inference))
        }
        for entity in schema where !used.contains(entity.name) {
            inference.changes.append(.entityRemoved(entity.name))
        }
        let duplicates = Dictionary(grouping: steps.map(\.name), by: { $0 }).filter { $0.value.count > 1 }.keys
        for name in duplicates.sorted() {
            inference.problems.append("two migration steps are named '\(name)': step names must be unique")
        }
        return inference
    }

    /// Whether a stored entity or attribute (its name, and the renaming identifier it was
    /// stored with) is what a current one with renaming identifier `original` was called: its
    /// first name, or any later one that kept the same identifier — so a store of any earlier
    /// version is matched, as with Core Data's renaming identifiers.
    private static func isRenaming(_ storedName: String, _ storedOriginal: String?, _ original: String) -> Bool {
        storedName == original || storedOriginal == original
    }

    private func map(
        _ stored: EntityDescription,
        to entity: EntityDescription,
        storedNames: [String: String],
        into inference: inout Inference
    ) -> EntityMapping {
        var sources: [Source] = []
        // As for entities: same names first, then renames of what nothing else claimed.
        var usedAttributes = Set(entity.attributes.compactMap { stored.attribute(named: $0.name)?.name })
        for attribute in entity.attributes {
            var old = stored.attribute(named: attribute.name)
            if old == nil, let original = attribute.originalName,
                let renamed = stored.attributes.first(where: { Self.isRenaming($0.name, $0.originalName, original) }),
                !usedAttributes.contains(renamed.name)
            {
                old = renamed
                usedAttributes.insert(renamed.name)
                inference.changes.append(.attributeRenamed(entity: entity.name, from: renamed.name, to: attribute.name))
            }
            guard let old, let index = stored.index(ofAttribute: old.name) else {
                inference.changes.append(.attributeAdded(entity: entity.name, attribute: attribute.name))
                if !attribute.isOptional && !attribute.hasDeclaredDefault {
                    inference.problems.append(
                        "attribute '\(entity.name).\(attribute.name)' was added as non-optional without a declared "
                            + "default for the existing rows: declare one, or make it optional")
                }
                sources.append(.defaultValue)
                continue
            }
            usedAttributes.insert(old.name)
            if old.type != attribute.type {
                inference.changes.append(
                    .attributeTypeChanged(
                        entity: entity.name, attribute: attribute.name, from: old.type, to: attribute.type))
            }
            if old.isOptional != attribute.isOptional {
                inference.changes.append(
                    attribute.isOptional
                        ? .attributeBecameOptional(entity: entity.name, attribute: attribute.name)
                        : .attributeBecameNonOptional(entity: entity.name, attribute: attribute.name))
            }
            do {
                let conversion = try AttributeConversion.between(
                    old, attribute, entityName: entity.name, transform: entity.attributeTransforms[attribute.name])
                sources.append(.stored(index, conversion))
            } catch {
                inference.problems.append(error.message)
                sources.append(.stored(index, nil))
            }
        }
        for attribute in stored.attributes where !usedAttributes.contains(attribute.name) {
            inference.changes.append(.attributeRemoved(entity: entity.name, attribute: attribute.name))
        }
        sources += mapRelationships(stored, to: entity, storedNames: storedNames, into: &inference)
        let isIdentity =
            stored.columnCount == sources.count
            && sources.enumerated().allSatisfy { position, source in
                switch source {
                case .stored(let index, nil), .relationship(let index, nil): return index == position
                default: return false
                }
            }
        return EntityMapping(stored: stored, sources: sources, isIdentity: isIdentity)
    }

    /// The sources of the model entity's relationships: added ones start empty (or take their
    /// objects from a carried-over inverse, see `fillAddedRelationships`), removed ones
    /// are dropped, renamed ones carried over; a to-one becoming a to-many (or an order
    /// change) re-encodes the keys, a to-many becoming a to-one carries rows with at most one
    /// object and fails on others; a new destination that is not the old one (renamed) cannot
    /// be inferred.
    private func mapRelationships(
        _ stored: EntityDescription,
        to entity: EntityDescription,
        storedNames: [String: String],
        into inference: inout Inference
    ) -> [Source] {
        var sources: [Source] = []
        var used = Set(entity.relationships.compactMap { stored.relationship(named: $0.name)?.name })
        for relationship in entity.relationships {
            var old = stored.relationship(named: relationship.name)
            if old == nil, let original = relationship.originalName,
                let renamed = stored.relationships.first(where: { Self.isRenaming($0.name, $0.originalName, original) }
                ),
                !used.contains(renamed.name)
            {
                old = renamed
                used.insert(renamed.name)
                inference.changes.append(
                    .relationshipRenamed(entity: entity.name, from: renamed.name, to: relationship.name))
            }
            guard let old, let column = stored.column(ofRelationship: old.name) else {
                inference.changes.append(.relationshipAdded(entity: entity.name, relationship: relationship.name))
                sources.append(.defaultValue)
                continue
            }
            used.insert(old.name)
            guard old.destinationEntityName == storedNames[relationship.destinationEntityName] else {
                inference.problems.append(
                    "relationship '\(entity.name).\(relationship.name)' pointed to '\(old.destinationEntityName)' and "
                        + "now points to '\(relationship.destinationEntityName)', which is not that entity renamed: "
                        + "give it a new name, and fill it in a MigrationStep")
                sources.append(.defaultValue)
                continue
            }
            if old.isToMany != relationship.isToMany {
                inference.changes.append(
                    .relationshipCardinalityChanged(
                        entity: entity.name, relationship: relationship.name, isToMany: relationship.isToMany))
            } else if old.isOrdered != relationship.isOrdered {
                inference.changes.append(
                    .relationshipOrderChanged(
                        entity: entity.name, relationship: relationship.name, isOrdered: relationship.isOrdered))
            }
            let reencodes = old.isToMany != relationship.isToMany || old.isOrdered != relationship.isOrdered
            sources.append(.relationship(column, reencodes ? relationship : nil))
        }
        for relationship in stored.relationships where !used.contains(relationship.name) {
            inference.changes.append(.relationshipRemoved(entity: entity.name, relationship: relationship.name))
        }
        return sources
    }

    // MARK: Planning

    /// What opening `contents` would do, converting every row to find the values that cannot
    /// be carried over, but writing nothing and running no custom step.
    func plan(for contents: StoreContents?) -> MigrationPlan {
        guard let contents else {
            return MigrationPlan(
                storedVersionHash: nil, currentVersionHash: model.versionHash, changes: [],
                pendingSteps: steps.map(\.name), problems: infer(from: model.entities).problems, rowCount: 0)
        }
        let rowCount = contents.rows.values.reduce(0) { $0 + $1.count }
        let pending = pendingSteps(contents.metadata).map(\.name)
        let inference = infer(from: contents.schema)
        var problems = inference.problems
        let schemaChanged = contents.metadata.versionHash != model.versionHash
        if schemaChanged && !allowsInferredMigration {
            problems.insert(Self.migrationOffProblem, at: 0)
        }
        if problems.isEmpty && schemaChanged {
            do {
                let converted = try convertRows(contents, inference, reporter: nil)
                if pending.isEmpty {
                    // Without steps (which could remove them), rows that share the values of a
                    // uniqueness constraint, or refer to missing rows, refuse the open: the
                    // migrated rows must load, as `StoreCoordinator` loads them.
                    let migrated = self.contents(contents.metadata, converted)
                    let tables = try StoreCoordinator.loadTables(migrated, model: model)
                    _ = try StoreCoordinator.uniquenessIndexes(of: tables, model: model)
                }
            } catch let error as StoreError {
                problems.append(error.message)
            } catch {
                problems.append("\(error)")
            }
        }
        return MigrationPlan(
            storedVersionHash: contents.metadata.versionHash, currentVersionHash: model.versionHash,
            changes: schemaChanged ? inference.changes : [], pendingSteps: pending, problems: problems,
            rowCount: rowCount)
    }

    private static let migrationOffProblem =
        "automatic lightweight migration is off (the delegate's shouldUseAutomaticLightweightMigration is false)"

    // MARK: Migrating

    /// `contents` migrated to the model, with the pending steps run and recorded.
    ///
    /// - Throws: ``StoreError``: `.incompatibleModel` listing every difference when migration
    ///   is off or cannot be inferred; `.migrationFailed` for a value that cannot be carried
    ///   over or a step that failed; `.corrupted` for rows that do not fit their own schema.
    /// - Returns: The migrated contents, and the reporter to tell when they are written.
    func migrate(_ contents: StoreContents) throws -> (contents: StoreContents, progress: MigrationProgressReporter) {
        let inference = infer(from: contents.schema)
        let schemaChanged = contents.metadata.versionHash != model.versionHash
        var problems = inference.problems
        if schemaChanged && !allowsInferredMigration {
            problems.insert(Self.migrationOffProblem, at: 0)
        }
        guard problems.isEmpty else {
            let reason = "It cannot be migrated: " + problems.joined(separator: "; ") + ". Nothing was changed."
            guard schemaChanged else {
                throw StoreError(.incompatibleModel, "The store's migration steps cannot run. " + reason)
            }
            let differences = inference.changes.map(\.description).joined(separator: "; ")
            throw StoreError(
                .incompatibleModel,
                "The store was written with a different model (version \(contents.metadata.versionHash.prefix(12)), "
                    + "current \(model.versionHash.prefix(12))): \(differences.isEmpty ? "the schemas differ" : differences). "
                    + reason)
        }
        let pending = pendingSteps(contents.metadata)
        let rowCount = contents.rows.values.reduce(0) { $0 + $1.count }
        let reporter = MigrationProgressReporter(rowCount: rowCount, stepCount: pending.count, report: progress)

        var converted = try convertRows(contents, inference, reporter: reporter)
        if !pending.isEmpty {
            var rows = MigrationRows(
                originalSchema: contents.schema, originals: contents.rows, model: model,
                sourceEntityNames: inference.mappings.map { $0.stored?.name },
                current: converted.rows.map { $0.sorted { $0.primaryKey < $1.primaryKey } },
                nextPrimaryKeys: converted.nextPrimaryKeys)
            for step in pending {
                reporter.startStep(step.name)
                do {
                    try step.migrate(&rows)
                } catch {
                    throw StoreError(
                        .migrationFailed,
                        "The migration step '\(step.name)' failed: \(error). Nothing was changed.",
                        underlyingError: error)
                }
                try validate(rows.current, after: step)
                reporter.finishStep()
            }
            converted = (rows.current, rows.nextPrimaryKeys)
        }

        var metadata = contents.metadata
        metadata.appliedMigrationSteps += pending.map(\.name)
        reporter.startWriting()
        return (self.contents(metadata, converted), reporter)
    }

    /// `converted` (every row, by model entity index, and each entity's next key) as contents
    /// written with the model, with `metadata`.
    private func contents(
        _ metadata: StoreMetadata,
        _ converted: (rows: [[StoredRow]], nextPrimaryKeys: [Int64])
    ) -> StoreContents {
        var metadata = metadata
        metadata.versionHash = model.versionHash
        // Removed entities keep their next keys: if one comes back, its keys still never repeat
        // those of the rows it had (whose object IDs may be kept somewhere).
        var rows: [String: [StoredRow]] = [:]
        for (index, entity) in model.entities.enumerated() {
            metadata.nextPrimaryKeys[entity.name] = converted.nextPrimaryKeys[index]
            rows[entity.name] = converted.rows[index]
        }
        return StoreContents(metadata: metadata, schema: model.entities, rows: rows)
    }

    /// Every row in the model's shape, by model entity index, and each entity's next key.
    private func convertRows(
        _ contents: StoreContents,
        _ inference: Inference,
        reporter: MigrationProgressReporter?
    ) throws -> (rows: [[StoredRow]], nextPrimaryKeys: [Int64]) {
        var result: [[StoredRow]] = []
        var nextPrimaryKeys: [Int64] = []
        for (entity, mapping) in zip(model.entities, inference.mappings) {
            // A renamed entity continues after its stored rows' keys and after those of an
            // entity removed earlier under its new name (whose object IDs may be kept).
            var nextKey = max(
                mapping.stored.flatMap { contents.metadata.nextPrimaryKeys[$0.name] } ?? 1,
                contents.metadata.nextPrimaryKeys[entity.name] ?? 1)
            guard let stored = mapping.stored, let rows = contents.rows[stored.name] else {
                result.append([])
                nextPrimaryKeys.append(nextKey)
                continue
            }
            var converted: [StoredRow] = []
            converted.reserveCapacity(rows.count)
            for row in rows {
                guard row.values.count == stored.columnCount else {
                    throw StoreError(
                        .corrupted,
                        "Row \(row.primaryKey) of '\(stored.name)' has \(row.values.count) values for "
                            + "\(stored.columnCount) columns.")
                }
                nextKey = max(nextKey, row.primaryKey &+ 1)
                if mapping.isIdentity {
                    converted.append(row)
                } else {
                    converted.append(
                        StoredRow(primaryKey: row.primaryKey, values: try values(of: row, entity, stored, mapping)))
                }
                reporter?.convertedRow()
            }
            result.append(converted)
            nextPrimaryKeys.append(nextKey)
        }
        try fillAddedRelationships(&result, inference)
        return (result, nextPrimaryKeys)
    }

    /// Fills each added relationship whose inverse was carried over (one side of a pair
    /// renamed without a renaming identifier, or added to a one-sided pair) from that inverse,
    /// so that both sides agree.
    ///
    /// - Throws: ``StoreError/Code/migrationFailed`` when an added to-one relationship would
    ///   refer to several objects.
    private func fillAddedRelationships(_ rows: inout [[StoredRow]], _ inference: Inference) throws {
        for (entityIndex, entity) in model.entities.enumerated() where !entity.relationships.isEmpty {
            for (offset, link) in model.relationshipLinks[entityIndex].enumerated() {
                let column = entity.attributes.count + offset
                guard case .defaultValue = inference.mappings[entityIndex].sources[column],
                    case .relationship = inference.mappings[link.destinationIndex].sources[link.inverseColumn]
                else { continue }
                var positions: [Int64: Int] = [:]
                for (position, row) in rows[entityIndex].enumerated() {
                    positions[row.primaryKey] = position
                }
                var referrers = [[Int64]](repeating: [], count: rows[entityIndex].count)
                for row in rows[link.destinationIndex] {
                    for key in RelationshipKeys.decode(row.values[link.inverseColumn]) {
                        // A reference to a missing row is reported when the rows load.
                        guard let position = positions[key] else { continue }
                        referrers[position].append(row.primaryKey)
                    }
                }
                for (position, keys) in referrers.enumerated() where !keys.isEmpty {
                    guard link.relationship.isToMany || keys.count == 1 else {
                        let destination = model.entities[link.destinationIndex].name
                        throw StoreError(
                            .migrationFailed,
                            "Row \(rows[entityIndex][position].primaryKey) of '\(entity.name)': the new to-one "
                                + "relationship '\(link.relationship.name)' takes its objects from its inverse "
                                + "'\(destination).\(link.inverse.name)', where \(keys.count) objects refer to this "
                                + "row. Nothing was changed.")
                    }
                    rows[entityIndex][position].values[column] = RelationshipKeys.encode(keys, for: link.relationship)
                }
            }
        }
    }

    private func values(
        of row: StoredRow,
        _ entity: EntityDescription,
        _ stored: EntityDescription,
        _ mapping: EntityMapping
    ) throws -> [StoredValue] {
        var values: [StoredValue] = []
        values.reserveCapacity(mapping.sources.count)
        for (column, source) in mapping.sources.enumerated() {
            switch source {
            case .defaultValue:
                values.append(entity.defaultRow[column])
            case .stored(let index, nil), .relationship(let index, nil):
                values.append(row.values[index])
            case .relationship(let index, let relationship?):
                let keys = RelationshipKeys.decode(row.values[index])
                guard relationship.isToMany || keys.count <= 1 else {
                    throw StoreError(
                        .migrationFailed,
                        "Row \(row.primaryKey) of '\(stored.name)': '\(stored.columnName(index))' holds "
                            + "\(keys.count) objects, and '\(entity.name).\(relationship.name)' is now a to-one "
                            + "relationship. Nothing was changed.")
                }
                values.append(RelationshipKeys.encode(keys, for: relationship))
            case .stored(let index, let conversion?):
                let attribute = entity.attributes[column]
                do {
                    values.append(try conversion.convert(row.values[index]))
                } catch let problem as ConversionProblem {
                    throw StoreError(
                        .migrationFailed,
                        "Row \(row.primaryKey) of '\(stored.name)': the value \(row.values[index]) of "
                            + "'\(stored.attributes[index].name)' cannot become '\(entity.name).\(attribute.name)' "
                            + "(\(attribute.type.rawValue)\(attribute.isOptional ? "?" : "")): \(problem.message). "
                            + "Nothing was changed.")
                }
            }
        }
        return values
    }

    /// Checks that a step left values that fit the model.
    private func validate(_ rows: [[StoredRow]], after step: MigrationStep) throws {
        for (entity, entityRows) in zip(model.entities, rows) {
            for row in entityRows {
                for (value, relationship) in zip(row.values[entity.attributes.count...], entity.relationships)
                where !relationship.accepts(value) || RelationshipKeys.decode(value).contains(where: { $0 <= 0 }) {
                    throw StoreError(
                        .migrationFailed,
                        "The migration step '\(step.name)' set '\(entity.name).\(relationship.name)' of row "
                            + "\(row.primaryKey) to \(value), which is not a valid reference. Nothing was changed.")
                }
                for (value, attribute) in zip(row.values, entity.attributes)
                where !value.fits(attribute.type, isOptional: attribute.isOptional) {
                    throw StoreError(
                        .migrationFailed,
                        "The migration step '\(step.name)' set '\(entity.name).\(attribute.name)' of row "
                            + "\(row.primaryKey) to \(value), which does not fit \(attribute.type.rawValue)"
                            + "\(attribute.isOptional ? "?" : ""). Nothing was changed.")
                }
            }
        }
    }
}
