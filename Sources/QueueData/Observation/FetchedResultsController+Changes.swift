import Foundation

// Following the context's changes: each batch is applied where it lands and reported.
extension FetchedResultsController {
    /// Applies one batch of the context's changes and reports it to the delegate.
    func apply(_ changes: ObjectsDidChange) {
        do {
            if changes.invalidatedAllObjects {
                try refetchAndReport()
            } else {
                try update(with: changes, extra: [], reports: true)
            }
        } catch {
            // A predicate that throws on a changed object: the controller cannot know where the
            // object belongs, so it starts over from a fetch (which throws the same way when
            // the user fetches).
            try? refetchAndReport()
        }
    }

    /// Fetches again and reports the difference (after a reset: every object left).
    private func refetchAndReport() throws {
        let old = storage ?? []
        let new = try fetchSections()
        storage = new
        var ids: [ObjectID] = []
        var seen = Set<ObjectID>()
        for section in old + new {
            ids += section.entries.map(\.id).filter { seen.insert($0).inserted }
        }
        report(
            oldNames: old.map(\.name), old: delegate == nil ? nil : makeSnapshot(old), new: new, ids: ids,
            oldEntries: index(old), newEntries: index(new), renamed: [:])
    }

    /// Every entry of `sections` by ID, with its section's name and its place.
    private func index(_ sections: [ControllerSection]) -> [ObjectID: Placed] {
        var placed: [ObjectID: Placed] = [:]
        for (sectionIndex, section) in sections.enumerated() {
            for (position, entry) in section.entries.enumerated() {
                placed[entry.id] = Placed(entry: entry, sectionName: section.name, path: [sectionIndex, position])
            }
        }
        return placed
    }

    /// An entry with its section's name and its place.
    struct Placed {
        var entry: ControllerEntry
        var sectionName: String
        var path: IndexPath
    }

    /// Re-evaluates every object `changes` names (and `extra`), moves their entries where they
    /// now belong, and reports the difference when `reports`.
    func update(with changes: ObjectsDidChange, extra: [ObjectID], reports: Bool) throws {
        guard var sections = storage else { return }
        let context = managedObjectContext
        let renamed = Dictionary(changes.reidentified, uniquingKeysWith: { _, last in last })
        var gone = Set(changes.deleted)
        var candidates = changes.inserted + changes.updated + changes.deleted + changes.refreshed + extra
        candidates += changes.reidentified.map(\.0)
        if let save = changes.mergedSave {
            candidates += save.updated.map(\.0)
            candidates += save.deleted
            gone.formUnion(save.deleted)
        }
        var seen = Set<ObjectID>()
        let ids = candidates.filter { id in
            guard let entityIndex = context.entityIndex(of: id), entityPositions[entityIndex] != nil else {
                return false
            }
            return seen.insert(id).inserted
        }
        guard !ids.isEmpty else { return }

        // Where each was (old index paths), found by scanning the IDs once.
        var old: [ObjectID: Placed] = [:]
        if ids.count <= 8 {
            for id in ids {
                if let path = locate(id, in: sections) {
                    let section = sections[path[0]]
                    old[id] = Placed(entry: section.entries[path[1]], sectionName: section.name, path: path)
                }
            }
        } else {
            let wanted = Set(ids)
            for (sectionIndex, section) in sections.enumerated() {
                for (position, entry) in section.entries.enumerated() where wanted.contains(entry.id) {
                    old[entry.id] = Placed(entry: entry, sectionName: section.name, path: [sectionIndex, position])
                }
            }
        }

        // Where each belongs now.
        var incoming: [ObjectID: (entry: ControllerEntry, sectionName: String)] = [:]
        for id in ids {
            let current = renamed[id] ?? id
            guard !gone.contains(current), !gone.contains(id),
                let object = context.registeredObject(current) ?? context.object(with: current),
                try belongs(object)
            else { continue }
            incoming[id] = try entry(for: object, id: current)
        }

        // What the report needs of the old state, before the entries change in place: the
        // section names, and the old snapshot only for a delegate (it is as long as the list).
        let oldNames = sections.map(\.name)
        let oldSnapshot = reports && delegate != nil ? makeSnapshot(sections) : nil
        // The controller lets go of its sections while they change, so that they change in
        // place: a copy of every entry would make a one-object change cost the whole list.
        storage = nil
        // Out with the old places.
        var removals: [Int: [Int]] = [:]
        for placed in old.values {
            removals[placed.path[0], default: []].append(placed.path[1])
        }
        for (sectionIndex, positions) in removals {
            remove(at: positions, from: &sections[sectionIndex].entries)
        }
        // Emptied sections go before new ones find their places: an empty section has no first
        // entry to order it by.
        if sectionName != nil {
            sections.removeAll { $0.entries.isEmpty }
        }
        // In at the new places: sorted, then merged into their sections.
        let arriving = incoming.values.sorted { precedes($0.entry, $1.entry) }
        var bySection: [String: [ControllerEntry]] = [:]
        for (entry, name) in arriving {
            bySection[name, default: []].append(entry)
        }
        for (name, entries) in bySection {
            if let sectionIndex = sections.firstIndex(where: { $0.name == name }) {
                merge(entries, into: &sections[sectionIndex].entries)
            } else {
                let section = ControllerSection(name: name, entries: entries)
                let position = sections.firstIndex { sectionPrecedes(section, $0) } ?? sections.count
                sections.insert(section, at: position)
            }
        }
        storage = sections
        guard reports else { return }

        var new: [ObjectID: Placed] = [:]
        let sectionIndexes = Dictionary(uniqueKeysWithValues: sections.enumerated().map { ($1.name, $0) })
        for (id, arrival) in incoming {
            let sectionIndex = sectionIndexes[arrival.sectionName]!
            let position = position(of: arrival.entry, in: sections[sectionIndex].entries)
            new[id] = Placed(entry: arrival.entry, sectionName: arrival.sectionName, path: [sectionIndex, position])
        }
        report(
            oldNames: oldNames, old: oldSnapshot, new: sections, ids: ids, oldEntries: old, newEntries: new,
            renamed: renamed)
    }

    /// Removes the entries at `positions` (distinct, in any order) from `entries`, moving the
    /// others down in place.
    ///
    /// - Complexity: O(*n*) moves, no copies (a copy of an entry retains its keys and object).
    private func remove(at positions: [Int], from entries: inout [ControllerEntry]) {
        if positions.count == 1 {
            entries.remove(at: positions[0])
            return
        }
        let removed = positions.sorted()
        // Swaps in the buffer move entries (an array's swapAt copies them, retaining).
        let kept = entries.withUnsafeMutableBufferPointer { buffer in
            var write = removed[0]
            var next = 0
            for read in removed[0]..<buffer.count {
                if next < removed.count && removed[next] == read {
                    next += 1
                } else {
                    buffer.swapAt(write, read)
                    write += 1
                }
            }
            return write
        }
        entries.removeLast(entries.count - kept)
    }

    /// Merges `arriving` (sorted) into `entries`, in order, in place: from the back, each
    /// arriving entry finds its place by binary search, and the entries after it move up as a
    /// block.
    ///
    /// - Complexity: O(*k* log *n*) comparisons and O(*n* + *k*) moves for *k* arriving entries
    ///   (a move is a memory copy; an element-by-element merge would copy and retain every entry).
    private func merge(_ arriving: [ControllerEntry], into entries: inout [ControllerEntry]) {
        if arriving.count == 1 {
            entries.insert(arriving[0], at: position(of: arriving[0], in: entries))
            return
        }
        let count = entries.count
        entries.append(contentsOf: arriving)
        entries.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            // The gap [end, write) is uninitialized, as wide as the entries left to place.
            (base + count).deinitialize(count: arriving.count)
            var end = count
            var write = buffer.count
            for entry in arriving.reversed() {
                var low = 0
                var high = end
                while low < high {
                    let middle = (low + high) / 2
                    if precedes(base[middle], entry) {
                        low = middle + 1
                    } else {
                        high = middle
                    }
                }
                let following = end - low
                (base + write - following).moveInitialize(from: base + low, count: following)
                write -= following + 1
                (base + write).initialize(to: entry)
                end = low
            }
        }
    }

    /// Tells the delegate (and the snapshot observers) what changed between the sections named
    /// `oldNames` (whose snapshot is `oldSnapshot`, needed only when there is a delegate) and
    /// `newSections`, for the objects `ids`.
    private func report(
        oldNames oldSectionNames: [String],
        old oldSnapshot: FetchedResultsSnapshot?,
        new newSections: [ControllerSection],
        ids: [ObjectID],
        oldEntries: [ObjectID: Placed],
        newEntries: [ObjectID: Placed],
        renamed: [ObjectID: ObjectID]
    ) {
        let oldNames = Set(oldSectionNames)
        let newNames = Set(newSections.map(\.name))
        var sectionChanges: [FetchedResultsDifference.SectionChange] = []
        for (index, name) in oldSectionNames.enumerated().reversed() where !newNames.contains(name) {
            sectionChanges.append(.init(type: .delete, index: index, name: name))
        }
        for (index, section) in newSections.enumerated() where !oldNames.contains(section.name) {
            sectionChanges.append(.init(type: .insert, index: index, name: section.name))
        }
        var deletes: [FetchedResultsDifference.ObjectChange] = []
        var inserts: [FetchedResultsDifference.ObjectChange] = []
        var moves: [FetchedResultsDifference.ObjectChange] = []
        var updates: [FetchedResultsDifference.ObjectChange] = []
        for id in ids {
            switch (oldEntries[id], newEntries[id]) {
            case (let before?, nil):
                deletes.append(.init(type: .delete, objectID: id, oldIndexPath: before.path, newIndexPath: nil))
            case (nil, let after?):
                inserts.append(
                    .init(type: .insert, objectID: after.entry.id, oldIndexPath: nil, newIndexPath: after.path))
            case (let before?, let after?):
                // A sort value that changed moves the object; when the entries do not keep the
                // values (see `keysDiffer`), a changed position does.
                let moved =
                    before.sectionName != after.sectionName
                    || (ordering.keysDiffer(before.entry, after.entry) ?? (before.path != after.path))
                    || (renamed[id] != nil && before.path != after.path)
                let change = FetchedResultsDifference.ObjectChange(
                    type: moved ? .move : .update, objectID: id, oldIndexPath: before.path, newIndexPath: after.path)
                if moved {
                    moves.append(change)
                } else {
                    updates.append(change)
                }
            case (nil, nil):
                continue
            }
        }
        deletes.sort { ($0.oldIndexPath![0], $0.oldIndexPath![1]) > ($1.oldIndexPath![0], $1.oldIndexPath![1]) }
        inserts.sort { ($0.newIndexPath![0], $0.newIndexPath![1]) < ($1.newIndexPath![0], $1.newIndexPath![1]) }
        let objectChanges = deletes + inserts + moves + updates
        guard !sectionChanges.isEmpty || !objectChanges.isEmpty else { return }
        sendSnapshot(makeSnapshot(newSections))
        guard let delegate, let oldSnapshot else { return }

        delegate.controllerWillChangeContent(self)
        for change in sectionChanges {
            let section = change.type == .delete ? nil : newSections[change.index]
            delegate.controller(
                self,
                didChange: FetchedResultsSection(
                    name: change.name, indexTitle: sectionIndexTitle(forSectionName: change.name),
                    numberOfObjects: section?.entries.count ?? 0, controller: self, index: change.index),
                atSectionIndex: change.index, for: change.type)
        }
        for change in objectChanges {
            let entry = (newEntries[change.objectID] ?? oldEntries[change.objectID])?.entry
            let object =
                entry?.object ?? managedObjectContext.registeredObject(renamed[change.objectID] ?? change.objectID)
                ?? placeholder(for: change.objectID)
            delegate.controller(
                self, didChange: unsafeDowncast(object, to: Object.self), at: change.oldIndexPath, for: change.type,
                newIndexPath: change.newIndexPath)
        }
        delegate.controllerDidChangeContent(self)
        delegate.controller(
            self,
            didChangeContentWith: FetchedResultsDifference(
                old: oldSnapshot, new: makeSnapshot(newSections), sectionChanges: sectionChanges,
                objectChanges: objectChanges))
    }
}

extension ManagedObjectContext {
    /// The object registered for `objectID`, if any (never loads one).
    func registeredObject(_ objectID: ObjectID) -> ManagedObject? {
        guard let entityIndex = entityIndex(of: objectID) else { return nil }
        return registry[entityIndex][objectID.rawValue]
    }
}
