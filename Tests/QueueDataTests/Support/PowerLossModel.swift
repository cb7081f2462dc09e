import Foundation

@testable import QueueData

/// What a power loss would leave of the directories a ``PowerLossFileSystem`` used, kept beside
/// the real file system (which holds what a reader sees now). After RocksDB's fault-injection
/// environment, which drops unsynchronized data and undoes renames no directory `fsync` covers.
///
/// - Names: every create, hard link, rename, unlink and mkdir is a change of its directory's
///   entries, durable once that directory is synchronized after it. Until then it may or may not
///   have reached the disk: a power loss leaves the durable entries with any subset of the changes
///   not covered yet applied, in order (all undone, all kept, and everything between).
/// - Bytes: each file has a durable size, raised by a successful sync of the file to the size it
///   had when the sync started, and lowered by a truncation; a power loss keeps that many bytes of
///   the file and loses the rest. The stores append to files or write them once, so a prefix
///   describes what survives (an overwrite inside the durable part would not be modelled).
/// - A file whose last name goes while a power loss could still bring a name of it back keeps its
///   bytes here.
///
/// Files and directories a directory holds when the model first meets it are durable as they
/// are (or as `initialDurableSizes` says).
struct PowerLossModel {
    typealias FileID = Int

    /// What a name refers to.
    enum Entry: Hashable {
        case file(FileID)
        case directory
    }

    /// A change of one directory's entries: an atomic step a power loss keeps whole or undoes.
    enum Change {
        /// A file or directory created, or a hard link made.
        case create(String, Entry)
        case remove(String, Entry)
        /// A rename within one directory (a rename across directories is a remove and a create).
        case rename(String, to: String, Entry)

        var directory: String {
            switch self {
            case .create(let path, _), .remove(let path, _), .rename(let path, to: _, _): parentDirectory(of: path)
            }
        }

        var entry: Entry {
            switch self {
            case .create(_, let entry), .remove(_, let entry), .rename(_, to: _, let entry): entry
            }
        }

        var description: String {
            switch self {
            case .create(let path, .directory): "mkdir \(lastComponent(path))"
            case .create(let path, .file): "create \(lastComponent(path))"
            case .remove(let path, _): "unlink \(lastComponent(path))"
            case .rename(let source, let destination, _):
                "rename \(lastComponent(source)) → \(lastComponent(destination))"
            }
        }

        /// Applies the change to `entries`. Each change carries what it moved, so that it
        /// applies the same with or without the changes before it.
        func apply(to entries: inout [String: Entry]) {
            switch self {
            case .create(let path, let entry):
                entries[path] = entry
            case .remove(let path, let entry):
                if entries[path] == entry {
                    entries[path] = nil
                }
            case .rename(let source, let destination, let entry):
                if entries[source] == entry {
                    entries[source] = nil
                }
                entries[destination] = entry
            }
        }
    }

    private struct File {
        /// How many of its bytes a power loss keeps.
        var durableSize: Int64
        /// Its bytes once it has no name left (`nil` while it has one, or when no power loss can
        /// bring one back).
        var detachedBytes: [UInt8]?
    }

    private let disk = POSIXFileSystem()
    private let initialDurableSizes: [String: Int64]
    private var nextFileID = 0
    private var files: [FileID: File] = [:]
    /// The directories met so far.
    private var knownDirectories: Set<String> = []
    /// What each path of a known directory names now.
    private var entries: [String: Entry] = [:]
    /// What each path named at the last synchronization of its directory.
    private var durableEntries: [String: Entry] = [:]
    /// Changes no synchronization of their directory covers yet, in order, by serial number.
    private var pendingChanges: [(serial: Int, change: Change)] = []
    private var nextSerial = 0

    init(initialDurableSizes: [String: Int64] = [:]) {
        self.initialDurableSizes = initialDurableSizes
    }

    // MARK: Learning what exists

    /// Meets `directory` (if it is new): what it holds is durable as it is.
    mutating func meet(directory: String) {
        guard knownDirectories.insert(directory).inserted else { return }
        for name in (try? disk.contentsOfDirectory(directory)) ?? [] {
            adoptExisting("\(directory)/\(name)")
        }
    }

    /// Meets the directory of `path`, and `path` if it exists and is not known yet: a file
    /// something else created there (a test writing a fixture) is durable as it is.
    mutating func meet(path: String) {
        meet(directory: parentDirectory(of: path))
        if entries[path] == nil && disk.fileExists(path) {
            adoptExisting(path)
        }
    }

    private mutating func adoptExisting(_ path: String) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return }
        let entry: Entry
        if isDirectory.boolValue {
            entry = .directory
        } else {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            entry = .file(newFile(durableSize: initialDurableSizes[path] ?? Int64(size)))
        }
        entries[path] = entry
        durableEntries[path] = entry
    }

    private mutating func newFile(durableSize: Int64) -> FileID {
        nextFileID += 1
        files[nextFileID] = File(durableSize: durableSize)
        return nextFileID
    }

    /// What `path` names now.
    func entry(at path: String) -> Entry? {
        entries[path]
    }

    // MARK: Changes of names (call before the real operation, and only if it succeeded)

    /// A new, empty file at `path`.
    mutating func created(file path: String) -> FileID {
        let id = newFile(durableSize: 0)
        record(.create(path, .file(id)))
        return id
    }

    mutating func created(directory path: String) {
        record(.create(path, .directory))
        knownDirectories.insert(path)
    }

    /// `path` was removed; `bytes` reads the file's current bytes if they must be kept.
    mutating func removed(_ path: String, bytes: () -> [UInt8]) {
        guard let entry = entries[path] else { return }
        detachIfLastName(entry, of: path, bytes: bytes)
        record(.remove(path, entry))
    }

    /// `source` was renamed to `destination`; `replacedBytes` reads the bytes of the file
    /// `destination` named before, if they must be kept.
    mutating func renamed(_ source: String, to destination: String, replacedBytes: () -> [UInt8]) {
        guard let entry = entries[source] else { return }
        if let replaced = entries[destination], replaced != entry {
            detachIfLastName(replaced, of: destination, bytes: replacedBytes)
        }
        if parentDirectory(of: source) == parentDirectory(of: destination) {
            record(.rename(source, to: destination, entry))
        } else {
            record(.remove(source, entry))
            record(.create(destination, entry))
        }
    }

    /// `destination` is a new hard link to the file at `source`.
    mutating func linked(_ source: String, to destination: String) {
        guard let entry = entries[source] else { return }
        record(.create(destination, entry))
    }

    private mutating func record(_ change: Change) {
        change.apply(to: &entries)
        nextSerial += 1
        pendingChanges.append((nextSerial, change))
    }

    /// Keeps the bytes of a file losing its last name, if a power loss could bring a name back.
    private mutating func detachIfLastName(_ entry: Entry, of path: String, bytes: () -> [UInt8]) {
        guard case .file(let id) = entry,
            !entries.contains(where: { $0.key != path && $0.value == entry }),
            isReachableAfterPowerLoss(entry)
        else { return }
        files[id]?.detachedBytes = bytes()
    }

    /// Whether some power loss could leave a name for `entry`: a durable one, or a change not
    /// covered yet.
    private func isReachableAfterPowerLoss(_ entry: Entry) -> Bool {
        durableEntries.values.contains(entry) || pendingChanges.contains { $0.change.entry == entry }
    }

    // MARK: Synchronizations

    /// The changes a synchronization of `directory` starting now covers.
    func pendingChanges(of directory: String) -> [Int] {
        pendingChanges.filter { $0.change.directory == directory }.map(\.serial)
    }

    /// A synchronization of a directory succeeded: the changes it covered are durable.
    mutating func synchronizedDirectory(covering serials: [Int]) {
        let covered = Set(serials)
        for (serial, change) in pendingChanges where covered.contains(serial) {
            change.apply(to: &durableEntries)
        }
        pendingChanges.removeAll { covered.contains($0.serial) }
        // Files no power loss can name any more need not keep their bytes.
        for (id, file) in files where file.detachedBytes != nil && !isReachableAfterPowerLoss(.file(id)) {
            files[id]?.detachedBytes = nil
        }
    }

    /// A synchronization of a file that started when it had `size` bytes succeeded.
    mutating func synchronized(_ id: FileID, size: Int64) {
        guard let file = files[id] else { return }
        files[id]?.durableSize = max(file.durableSize, size)
    }

    mutating func truncated(_ id: FileID, to length: Int64) {
        guard var file = files[id] else { return }
        file.durableSize = min(file.durableSize, length)
        if file.detachedBytes != nil {
            file.detachedBytes = Array(file.detachedBytes!.prefix(Int(length)))
        }
        files[id] = file
    }

    /// `bytes` were written at `offset` to a file: kept here if it has no name left.
    mutating func wrote(_ id: FileID, _ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        guard var detached = files[id]?.detachedBytes else { return }
        let end = Int(offset) + bytes.count
        if detached.count < end {
            detached += [UInt8](repeating: 0, count: end - detached.count)
        }
        detached.replaceSubrange(Int(offset)..<end, with: bytes)
        files[id]?.detachedBytes = detached
    }

    func durableSize(of id: FileID) -> Int64 {
        files[id]?.durableSize ?? 0
    }

    // MARK: Power loss

    /// The bytes a power loss now leaves of the file.
    func durableBytes(of id: FileID) -> [UInt8] {
        let size = Int(durableSize(of: id))
        if let detached = files[id]?.detachedBytes {
            return Array(detached.prefix(size))
        }
        guard let path = entries.first(where: { $0.value == .file(id) })?.key,
            let bytes = try? disk.readFile(path)
        else { return [] }
        return Array(bytes.prefix(size))
    }

    /// Every state a power loss now could leave `directory` (and what is below it) in, with
    /// which changes not covered by a synchronization it kept: each subset of them, or — past 8
    /// pending changes — none, each prefix, and each single one.
    func outcomes(of directory: String) -> [PowerLossOutcome] {
        let pending = pendingChanges.map(\.change)
        var subsets: [[Bool]]
        if pending.count <= 8 {
            subsets = (0..<(1 << pending.count)).map { mask in pending.indices.map { mask & (1 << $0) != 0 } }
        } else {
            subsets = (0...pending.count).map { kept in pending.indices.map { $0 < kept } }
            subsets += pending.indices.map { single in pending.indices.map { $0 == single } }
        }
        var outcomes: [PowerLossOutcome] = []
        for kept in subsets {
            var names = durableEntries
            for (index, change) in pending.enumerated() where kept[index] {
                change.apply(to: &names)
            }
            let image = image(of: directory, names: names)
            if !outcomes.contains(where: { $0.image == image }) {
                let keptChanges = pending.indices.filter { kept[$0] }.map { pending[$0].description }
                let undone = pending.indices.filter { !kept[$0] }.map { pending[$0].description }
                let description =
                    "kept: [\(keptChanges.joined(separator: ", "))], undone: [\(undone.joined(separator: ", "))]"
                outcomes.append(PowerLossOutcome(image: image, description: description))
            }
        }
        return outcomes
    }

    /// The files and directories below `directory` that `names` names, with their durable bytes.
    private func image(of directory: String, names: [String: Entry]) -> PowerLossImage {
        var image = PowerLossImage()
        for (path, entry) in names where path.hasPrefix(directory + "/") {
            let relative = String(path.dropFirst(directory.count + 1))
            // Below a directory only if every directory on the way is there.
            var ancestor = directory
            var reachable = true
            for component in relative.split(separator: "/").dropLast() {
                ancestor += "/\(component)"
                if names[ancestor] != .directory {
                    reachable = false
                    break
                }
            }
            guard reachable else { continue }
            switch entry {
            case .directory: image.directories.insert(relative)
            case .file(let id): image.files[relative] = durableBytes(of: id)
            }
        }
        return image
    }
}

/// One state a power loss could leave a directory in.
struct PowerLossOutcome: Sendable {
    var image: PowerLossImage
    /// Which changes of names not yet covered by a synchronization it kept and undid.
    var description: String
}

/// The files (with their bytes) and subdirectories of a directory after a power loss, by path
/// relative to it.
struct PowerLossImage: Hashable, Sendable {
    var files: [String: [UInt8]] = [:]
    var directories: Set<String> = []

    /// Creates the subdirectories and files in `directory`.
    func write(into directory: URL) throws {
        for relative in directories.sorted(by: { $0.count < $1.count }) {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(relative), withIntermediateDirectories: true)
        }
        for (relative, bytes) in files {
            try Data(bytes).write(to: directory.appendingPathComponent(relative))
        }
    }

    /// The names and sizes, for messages.
    var summary: String {
        let listed = files.keys.sorted().map { "\(lastComponent($0)) (\(files[$0]!.count) bytes)" }
        let all = listed + directories.sorted().map { "\($0)/" }
        return all.isEmpty ? "nothing" : all.joined(separator: ", ")
    }
}

/// The directory of `path`.
func parentDirectory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
}

/// The last component of `path`, for messages.
func lastComponent(_ path: String) -> String {
    path.split(separator: "/").last.map(String.init) ?? path
}
