import Foundation
@_spi(Fuzzing) import QueueData

/// What each fuzz target does with one input. A return is a pass; anything else — a trap, an
/// untyped error, a sanitizer report, a leak, running out of memory or time — is a finding.
public enum Targets {
    /// The journal's magic: the first 8 bytes of every journal file.
    static let journalMagic: [UInt8] = [0x89, 0x51, 0x44, 0x4A, 0x0D, 0x0A, 0x1A, 0x0A]

    /// A valid header (version 1, base sequence 1) for inputs too short to hold one.
    static let headerTemplate: [UInt8] = {
        let empty = StoreContents(
            metadata: StoreMetadata(storeIdentifier: UUID(), versionHash: ""), schema: [], rows: [:])
        return Array(StoreDecoding.encodeJournal(empty).prefix(64))
    }()

    /// `fuzz-journal`: the bytes as a journal file, framing and all.
    public static func journal(_ bytes: [UInt8]) {
        guard let contents = Oracle.expectingStoreErrors("decodeJournal", { try StoreDecoding.decodeJournal(bytes) })
        else { return }
        Oracle.checkRoundTrip(of: contents)
    }

    /// `fuzz-journal-payload`: the bytes as a journal file whose magic, checksums, epochs and
    /// sequence numbers are made right first, so that inputs reach the payload decoders. An
    /// input shorter than a header is read as records after a valid header.
    public static func journalPayload(_ bytes: [UInt8]) {
        journal(framed(bytes))
    }

    /// `bytes` with a valid journal framing.
    public static func framed(_ bytes: [UInt8]) -> [UInt8] {
        var file: [UInt8]
        if bytes.count < headerTemplate.count {
            file = headerTemplate + bytes
        } else {
            file = bytes
            file.replaceSubrange(0..<journalMagic.count, with: journalMagic)
        }
        return StoreDecoding.fixingJournalFraming(file)
    }

    /// `fuzz-json`: the bytes as a JSON store document.
    public static func json(_ bytes: [UInt8]) {
        guard
            let contents = Oracle.expectingStoreErrors(
                "decodeJSONDocument", { try StoreDecoding.decodeJSONDocument(bytes) })
        else { return }
        Oracle.checkRoundTrip(of: contents)
    }

    /// What the first byte of a `fuzz-open` input selects.
    public struct OpenOptions: OptionSet, Sendable {
        /// The input's first byte.
        public let rawValue: UInt8
        /// The options of the first byte `rawValue`.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Open with version 2 of the model (migrating a version 1 store), not version 1.
        public static let evolvedModel = OpenOptions(rawValue: 1)
        /// Fix a journal's framing first (``framed(_:)``).
        public static let fixFraming = OpenOptions(rawValue: 2)
        /// After reading everything, delete the first object of every entity and save.
        public static let deleteAndSave = OpenOptions(rawValue: 4)
        /// Ask for the migration plan (a dry run) before loading.
        public static let planFirst = OpenOptions(rawValue: 8)
    }

    /// `fuzz-open`: the first byte selects ``OpenOptions``, the rest is a journal (if it starts
    /// with the journal's magic) or a JSON document. Whatever decodes is opened through the
    /// public API by a ``ContextManager`` with a custom store, with a model that differs from
    /// the written one (so that migration runs) or the same one; every object is fetched and
    /// every attribute and relationship read.
    public static func open(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let options = OpenOptions(rawValue: first)
        var file = Array(input.dropFirst())
        let isJournal = file.starts(with: journalMagic)
        if isJournal && options.contains(.fixFraming) {
            file = framed(file)
        }
        guard
            let contents = Oracle.expectingStoreErrors(
                "decoding",
                { isJournal ? try StoreDecoding.decodeJournal(file) : try StoreDecoding.decodeJSONDocument(file) })
        else { return }
        open(contents, options: options)
    }

    /// Opens `contents` as ``open(_:)`` describes.
    public static func open(_ contents: StoreContents, options: OpenOptions) {
        let evolved = options.contains(.evolvedModel)
        let model = evolved ? modelV2 : modelV1
        let manager = ContextManager(
            delegate: ContentsDelegate(contents: contents, model: model, steps: evolved ? migrationStepsV2 : []))
        defer { manager.close() }
        if options.contains(.planFirst) {
            guard Oracle.expectingStoreErrors("migrationPlan", { try manager.migrationPlan() }) != nil else { return }
        }
        guard let context = Oracle.expectingStoreErrors("loading", { try manager.createContext() }) else { return }
        expectingQueueDataErrors("reading") {
            try context.performAndWait {
                var firstObjects: [ManagedObject] = []
                for entity in model.entities {
                    let objects = try context.fetch(FetchRequest<ManagedObject>(entityName: entity.name))
                    for object in objects {
                        for attribute in entity.attributes {
                            _ = object.value(forKey: attribute.name)
                        }
                        for relationship in entity.relationships {
                            for related in object.relatedObjects(forKey: relationship.name) {
                                _ = related.objectID
                            }
                        }
                        readAll(object)
                    }
                    firstObjects += objects.prefix(1)
                }
                if options.contains(.deleteAndSave) {
                    for object in firstObjects {
                        context.delete(object)
                    }
                    try context.save()
                }
            }
        }
    }

    /// Runs `body`, which may throw only QueueData's typed errors.
    static func expectingQueueDataErrors(_ what: String, _ body: () throws -> Void) {
        do {
            try body()
        } catch is StoreError {
        } catch is ValidationError {
        } catch is MergeConflictError {
        } catch is ContextError {
        } catch {
            fatalError("\(what) threw an error that is not one of QueueData's: \(type(of: error)): \(error)")
        }
    }
}

/// Configures a manager for ``Targets/open(_:)``: a ``ContentsStore`` holding the contents.
struct ContentsDelegate: ContextManagerDelegate {
    let contents: StoreContents
    let model: ManagedObjectModel
    let steps: [MigrationStep]

    var managedObjectModel: ManagedObjectModel { model }
    var persistentStoreName: String { "Fuzz" }
    var storeDirectory: URL { URL(fileURLWithPath: "/nonexistent/queuedata-fuzz", isDirectory: true) }
    var persistentStoreType: StoreType {
        let contents = contents
        return .custom { _ in ContentsStore(contents) }
    }
    var migrationSteps: [MigrationStep] { steps }
}
