// The seed corpora, from stores QueueData itself writes (`fuzz-seeds <corpus directory>`, which
// `Fuzz/run` runs when a corpus is missing).
//
// Version 1 of the fuzz model (every attribute type, optionals, a transformable, every kind
// of relationship) is saved several times — inserts, updates, deletes — to a journal store and
// a JSON store; each is also compacted, and migrated to version 2 (which then saves again).
// Each store's file lands in `<corpus>/journal`, `journal-payload` and `open` (journals) or
// `json` and `open` (JSON documents); `open` inputs start with the byte of options
// `Targets.open(_:)` reads.

import Foundation
@_spi(Fuzzing) import QueueData

struct SeedDelegate: ContextManagerDelegate {
    var directory: URL
    var type: StoreType
    var model: ManagedObjectModel
    var steps: [MigrationStep] = []
    var tracksHistory = false

    var managedObjectModel: ManagedObjectModel { model }
    var tracksPersistentHistory: Bool { tracksHistory }
    var persistentStoreName: String { "Seed" }
    var persistentStoreType: StoreType { type }
    var storeDirectory: URL { directory }
    var migrationSteps: [MigrationStep] { steps }
}

/// Version 1's rows, over four saves.
func writeVersion1(_ manager: ContextManager) throws {
    let context = try manager.createContext()
    try context.performAndWait {
        let ada = context.insert(OwnerV1.self)
        ada.name = "Ada"
        let red = context.insert(LabelV1.self)
        red.name = "red"
        let blue = context.insert(LabelV1.self)
        blue.name = "blue"
        let first = context.insert(SampleV1.self)
        first.code = "S-1"
        first.flag = true
        first.int = -42
        first.int16 = .min
        first.int32 = .max
        first.int64 = 1 << 40
        first.double = -0.5
        first.float = 3.25
        first.string = "héllo, \"world\"\n\t\u{1F600}"
        first.date = Date(timeIntervalSince1970: 1_700_000_000.25)
        first.data = Data([0, 1, 2, 0xFF])
        first.uuid = UUID(uuidString: "12345678-9ABC-DEF0-1234-56789ABCDEF0")!
        first.url = URL(string: "https://example.org/a?b=c#d")!
        first.decimal = Decimal(string: "12345.6789")!
        first.dimensions = Dimensions(width: 1.5, height: 2, label: "box", tags: ["a": 1, "b": 2])
        first.optionalFlag = false
        first.optionalInt = 7
        first.optionalInt16 = -7
        first.optionalInt32 = 70_000
        first.optionalInt64 = -(1 << 50)
        first.optionalDouble = 1e300
        first.optionalFloat = -1.5
        first.optionalString = ""
        first.optionalDate = Date(timeIntervalSince1970: -1)
        first.optionalData = Data()
        first.optionalUUID = UUID(uuidString: "00000000-0000-0000-0000-000000000001")!
        first.optionalURL = URL(string: "file:///tmp/x")!
        first.optionalDecimal = Decimal(string: "-0.001")!
        first.optionalDimensions = Dimensions(width: 0, height: -1, label: "", tags: [:])
        first.owner = ada
        first.labels = [red, blue]
        let detail = context.insert(DetailV1.self)
        detail.notes = "one-to-one"
        first.detail = detail
        let second = context.insert(SampleV1.self)
        second.code = "S-2"
        second.string = "second"
        second.owner = ada
        second.labels = [red]
        try context.save()

        let grace = context.insert(OwnerV1.self)
        grace.name = "Grace"
        let third = context.insert(SampleV1.self)
        third.code = "S-3"
        third.int16 = 300
        third.int64 = -5
        third.owner = grace
        let doomed = context.insert(SampleV1.self)
        doomed.code = "S-4"
        doomed.owner = grace
        try context.save()

        first.string = "changed"
        first.optionalInt = nil
        ada.samples = [second, first]
        third.labels = [blue]
        try context.save()

        context.delete(doomed)
        red.samples = []
        try context.save()
    }
}

/// One more save with version 2, after the migration.
func writeVersion2(_ manager: ContextManager) throws {
    let context = try manager.createContext()
    try context.performAndWait {
        let note = context.insert(NoteV2.self)
        note.text = "after migration"
        let samples = try context.fetch(FetchRequest<SampleV2>(sortBy: [SortDescriptor(\.code)]))
        if let first = samples.first {
            first.rating = 4.5
            first.text = "version 2"
        }
        try context.save()
    }
}

/// Writes a store of `type` (files ending in `fileExtension`) in several forms, and returns
/// each form's file contents, by name.
func stores(_ type: StoreType, fileExtension: String, in directory: URL) throws -> [(String, [UInt8])] {
    var files: [(String, [UInt8])] = []
    let fileURL = directory.appendingPathComponent("Seed.\(fileExtension)")
    func keep(_ name: String) throws {
        files.append((name, Array(try Data(contentsOf: fileURL))))
    }
    func manager(_ model: ManagedObjectModel, steps: [MigrationStep] = [], history: Bool = false) -> ContextManager {
        ContextManager(
            delegate: SeedDelegate(
                directory: directory, type: type, model: model, steps: steps, tracksHistory: history))
    }

    let empty = manager(modelV1)
    try empty.loadPersistentStore()
    empty.close()
    try keep("empty")
    try FileManager.default.removeItem(at: fileURL)

    let version1 = manager(modelV1)
    try writeVersion1(version1)
    version1.close()
    try keep("saves")

    let compacting = manager(modelV1)
    try compacting.loadPersistentStore()
    try compacting.compactPersistentStore()
    compacting.close()
    try keep("compacted")

    let migrating = manager(modelV2, steps: migrationStepsV2)
    try migrating.loadPersistentStore()
    migrating.close()
    try keep("migrated")

    let version2 = manager(modelV2, steps: migrationStepsV2)
    try writeVersion2(version2)
    version2.close()
    try keep("migrated-saves")

    if fileExtension == "journal" {
        // Format 4: the save that starts the history compacts (a history section), the next is
        // a record with a transaction trailer; then a purge.
        let tracking = manager(modelV2, steps: migrationStepsV2, history: true)
        try writeVersion2(tracking)
        try writeVersion2(tracking)
        try keep("history")
        let context = try tracking.createContext()
        try context.performAndWait { try context.purgeHistory(before: try context.currentHistoryToken()) }
        try writeVersion2(tracking)
        tracking.close()
        try keep("history-purged")
    }
    return files
}

/// Writes every seed into `corpus` (a directory per target, created if needed); returns how
/// many.
public func writeSeeds(to corpus: URL) throws -> Int {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("queuedata-fuzz-seeds-\(UUID())")
    defer { try? FileManager.default.removeItem(at: scratch) }
    let journals = try stores(.journal, fileExtension: "journal", in: scratch.appendingPathComponent("journal"))
    let documents = try stores(.jsonFile, fileExtension: "json", in: scratch.appendingPathComponent("json"))
    // Option bytes for `fuzz-open`: each model, and everything at once.
    let openOptions: [Targets.OpenOptions] = [
        [.fixFraming], [.fixFraming, .evolvedModel], [.fixFraming, .evolvedModel, .deleteAndSave, .planFirst],
    ]
    var count = 0
    func seed(_ bytes: [UInt8], _ target: String, _ name: String) throws {
        let directory = corpus.appendingPathComponent(target, isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(bytes).write(to: directory.appendingPathComponent(name))
        count += 1
    }
    for (name, bytes) in journals {
        _ = try StoreDecoding.decodeJournal(bytes)  // every seed reads
        try seed(bytes, "journal", "\(name).journal")
        try seed(bytes, "journal-payload", "\(name).journal")
        for options in openOptions {
            try seed([options.rawValue] + bytes, "open", "\(name)-\(options.rawValue).journal")
        }
    }
    for (name, bytes) in documents {
        let contents = try StoreDecoding.decodeJSONDocument(bytes)
        try seed(bytes, "json", "\(name).json")
        // The same contents as a one-snapshot journal, as a compaction writes them.
        let journal = StoreDecoding.encodeJournal(contents)
        try seed(journal, "journal", "\(name)-from-json.journal")
        try seed(journal, "journal-payload", "\(name)-from-json.journal")
        for options in openOptions {
            try seed([options.rawValue] + bytes, "open", "\(name)-\(options.rawValue).json")
        }
    }
    return count
}
