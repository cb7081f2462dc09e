/// The differences between the schema a store was written with and the current model, in
/// words: what ``StoreError/Code/incompatibleModel`` lists.
enum SchemaComparison {
    static func differences(stored: [EntityDescription], current: [EntityDescription]) -> [String] {
        var lines: [String] = []
        let storedByName = Dictionary(stored.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let currentByName = Dictionary(current.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for entity in current where storedByName[entity.name] == nil {
            lines.append("entity '\(entity.name)' was added")
        }
        for entity in stored where currentByName[entity.name] == nil {
            lines.append("entity '\(entity.name)' was removed")
        }
        for entity in current {
            guard let old = storedByName[entity.name] else { continue }
            for attribute in entity.attributes {
                guard let previous = old.attribute(named: attribute.name) else {
                    lines.append("attribute '\(entity.name).\(attribute.name)' was added")
                    continue
                }
                if previous.type != attribute.type {
                    lines.append(
                        "attribute '\(entity.name).\(attribute.name)' changed type from \(previous.type.rawValue) "
                            + "to \(attribute.type.rawValue)")
                }
                if previous.isOptional != attribute.isOptional {
                    lines.append(
                        "attribute '\(entity.name).\(attribute.name)' became \(attribute.isOptional ? "optional" : "non-optional")"
                    )
                }
            }
            for attribute in old.attributes where entity.attribute(named: attribute.name) == nil {
                lines.append("attribute '\(entity.name).\(attribute.name)' was removed")
            }
        }
        return lines
    }

    /// The error for a store written with another model.
    static func incompatibleModelError(
        stored: [EntityDescription],
        storedHash: String,
        model: ManagedObjectModel,
        url: URL?
    ) -> StoreError {
        let differences = differences(stored: stored, current: model.entities)
        let list = differences.isEmpty ? "the schemas differ" : differences.joined(separator: "; ")
        return StoreError(
            .incompatibleModel,
            "The store was written with a different model (version \(storedHash.prefix(12)), current "
                + "\(model.versionHash.prefix(12))): \(list). Nothing was changed.",
            url: url)
    }
}
