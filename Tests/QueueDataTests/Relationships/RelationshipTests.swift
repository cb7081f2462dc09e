import Foundation
import Testing

@testable import QueueData

@Suite("Relationships")
struct RelationshipTests {
    // MARK: Model

    @Test(
        "refresh without merging changes puts an object moved out of an ordered relationship back at its committed place",
        arguments: ["to-one", "to-many"])
    func refreshRestoresOrderedPlace(side: String) throws {
        let manager = graphManager("memory", TemporaryDirectory("refresh-ordered-\(side)"))
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "refresh-ordered-\(side)")
        try context.performAndWait {
            let first = context.insert(Expedition.self)
            let second = context.insert(Expedition.self)
            let points = ["a", "b", "c"].map { name in
                let point = context.insert(Waypoint.self)
                point.name = name
                return point
            }
            first.waypoints = points
            try context.save()
            switch side {
            case "to-one":
                points[1].expedition = second
                context.refresh(points[1], mergeChanges: false)
            default:
                second.waypoints = [points[1]]
                context.refresh(second, mergeChanges: false)
            }
            #expect(first.waypoints.map(\.name) == ["a", "b", "c"])
            #expect(second.waypoints.isEmpty)
            #expect(!context.hasChanges, "left updated: \(context.updatedObjects.count)")
        }
    }

    @Test(
        "refresh without merging changes takes a relationship change back on both sides: nothing is left to save, and the store keeps the committed graph",
        arguments: ["to-one", "to-many", "one-to-one"])
    func refreshRevertsInverses(side: String) throws {
        let manager = graphManager("memory", TemporaryDirectory("refresh-inverse-\(side)"))
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "refresh-inverse-\(side)")
        try context.performAndWait {
            let ada = context.insert(Explorer.self)
            let bob = context.insert(Explorer.self)
            let expedition = context.insert(Expedition.self)
            let passport = context.insert(Passport.self)
            expedition.leader = ada
            passport.holder = ada
            try context.save()
            switch side {
            case "to-one":
                expedition.leader = bob
                context.refresh(expedition, mergeChanges: false)
            case "to-many":
                bob.expeditions.insert(expedition)
                context.refresh(bob, mergeChanges: false)
            default:
                passport.holder = bob
                context.refresh(passport, mergeChanges: false)
            }
            #expect(expedition.leader === ada)
            #expect(ada.expeditions == [expedition])
            #expect(bob.expeditions.isEmpty)
            #expect(passport.holder === ada)
            #expect(ada.passport === passport)
            #expect(bob.passport == nil)
            #expect(!context.hasChanges, "left updated: \(context.updatedObjects.count)")
            try context.save()
        }
        let reader = try makeContext(manager, "refresh-inverse-reader-\(side)")
        try reader.performAndWait {
            let expedition = try #require(try reader.fetch(FetchRequest<Expedition>()).first)
            let passport = try #require(try reader.fetch(FetchRequest<Passport>()).first)
            #expect(expedition.leader != nil && expedition.leader === passport.holder)
            #expect(expedition.leader?.expeditions == [expedition])
            let explorers = try reader.fetch(FetchRequest<Explorer>())
            #expect(explorers.filter { !$0.expeditions.isEmpty }.count == 1)
            #expect(explorers.filter { $0.passport != nil }.count == 1)
        }
    }

    @Test(
        "after refresh without merging changes took a relationship change back, the same block's next change to those objects registers and saves",
        arguments: ["expedition", "ada", "bob"])
    func changeAfterRefreshRegisters(changed: String) throws {
        let manager = graphManager("memory", TemporaryDirectory("refresh-then-change-\(changed)"))
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "refresh-then-change-\(changed)")
        let expeditionID = try context.performAndWait {
            let ada = context.insert(Explorer.self)
            ada.name = "ada"
            let bob = context.insert(Explorer.self)
            bob.name = "bob"
            let expedition = context.insert(Expedition.self)
            expedition.leader = ada
            try context.save()
            expedition.leader = bob
            context.refresh(expedition, mergeChanges: false)
            #expect(!context.hasChanges)
            // The refresh listed the objects it moved back; a change to one of them, before the
            // block ends, was written without registering it: not updated, never saved, and
            // not taken back by rollback().
            switch changed {
            case "expedition": expedition.leader = bob
            case "ada": ada.name = "ada 2"
            default: bob.expeditions.insert(expedition)
            }
            #expect(context.hasChanges)
            #expect(changed == "ada" ? ada.isUpdated : expedition.isUpdated && bob.isUpdated && ada.isUpdated)
            try context.save()
            return expedition.objectID
        }
        let reader = try makeContext(manager, "refresh-then-change-reader-\(changed)")
        try reader.performAndWait {
            let expedition = try reader.existingObject(with: expeditionID, as: Expedition.self)
            #expect(expedition.leader?.name == (changed == "ada" ? "ada 2" : "bob"))
            #expect(expedition.leader?.expeditions == [expedition])
        }
    }

    @Test(
        "refresh without merging changes of a pending deletion takes its relationship change back and keeps the deletion"
    )
    func refreshPendingDeletionWithRelationshipChange() throws {
        let manager = graphManager("memory", TemporaryDirectory("refresh-deleted"))
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "refresh-deleted")
        try context.performAndWait {
            let ada = context.insert(Explorer.self)
            let bob = context.insert(Explorer.self)
            let expedition = context.insert(Expedition.self)
            expedition.leader = ada
            try context.save()
            expedition.leader = bob
            context.delete(expedition)
            // Trapped: "Expedition.leader was set on a deleted object".
            context.refresh(expedition, mergeChanges: false)
            #expect(expedition.isDeleted)
            #expect(expedition.leader === ada)
            #expect(bob.expeditions.isEmpty)
            #expect(ada.expeditions == [expedition])
            try context.save()
            #expect(try context.count(for: FetchRequest<Expedition>()) == 0)
            #expect(ada.expeditions.isEmpty && bob.expeditions.isEmpty)
        }
    }

    @Test("changedValues and committedValues(forKeys:) cover relationships, in their stored form")
    func changedAndCommittedRelationships() throws {
        let manager = graphManager("memory", TemporaryDirectory("relationship-values"))
        defer { manager.close() }
        let context = try makeRetainingContext(manager, "relationship-values")
        try context.performAndWait {
            let ada = context.insert(Explorer.self)
            let bob = context.insert(Explorer.self)
            let expedition = context.insert(Expedition.self)
            expedition.leader = ada
            try context.save()
            #expect(expedition.changedValues().isEmpty)
            expedition.leader = bob
            let changed = expedition.changedValues()
            #expect(Set(changed.keys) == ["leader"])
            #expect(changed["leader"] == .integer(bob.objectID.rawValue))
            #expect(
                expedition.committedValues(forKeys: ["leader", "title"])["leader"] == .integer(ada.objectID.rawValue))
            // The other sides changed too.
            #expect(ada.changedValues().keys.contains("expeditions"))
            #expect(bob.changedValues().keys.contains("expeditions"))
        }
    }

    @Test("relationships are discovered with their destination, inverse, rule and cardinality")
    func discovery() throws {
        let expedition = try #require(graphModel.entity(for: Expedition.self))
        #expect(expedition.relationships.map(\.name) == ["leader", "waypoints", "tags"])
        let waypoints = try #require(expedition.relationship(named: "waypoints"))
        #expect(waypoints.destinationEntityName == "Waypoint")
        #expect(waypoints.inverseName == "expedition")
        #expect(waypoints.isToMany && waypoints.isOrdered)
        #expect(waypoints.deleteRule == .cascade)
        let leader = try #require(expedition.relationship(named: "leader"))
        #expect(!leader.isToMany && leader.deleteRule == .nullify)
        #expect(try #require(expedition.relationship(named: "tags")).isToMany)
    }

    @Test("the model refuses relationships whose destination or inverse is missing or does not point back")
    func invalidRelationships() throws {
        func model(_ relationships: [String: [RelationshipDescription]]) throws -> ManagedObjectModel {
            try ManagedObjectModel(
                entities: relationships.keys.sorted().map {
                    try EntityDescription(name: $0, attributes: [], relationships: relationships[$0]!)
                })
        }
        let valid = try model([
            "A": [RelationshipDescription(name: "b", destination: "B", inverse: "a")],
            "B": [RelationshipDescription(name: "a", destination: "A", inverse: "b", isToMany: true)],
        ])
        #expect(valid.entities.count == 2)
        // Counts no save could satisfy.
        for (minCount, maxCount, reason) in [
            (2, 1, "below its minCount"), (0, -1, "negative maxCount"),
        ] as [(Int, Int?, String)] {
            #expect {
                try model([
                    "A": [RelationshipDescription(name: "b", destination: "B", inverse: "a")],
                    "B": [
                        RelationshipDescription(
                            name: "a", destination: "A", inverse: "b", isToMany: true, minCount: minCount,
                            maxCount: maxCount)
                    ],
                ])
            } throws: { ($0 as? ModelError)?.code == .invalidRelationship && "\($0)".contains(reason) }
        }
        #expect(
            try model([
                "A": [RelationshipDescription(name: "b", destination: "B", inverse: "a")],
                "B": [
                    RelationshipDescription(
                        name: "a", destination: "A", inverse: "b", isToMany: true, minCount: 2, maxCount: 2)
                ],
            ]).entities.count == 2)
        #expect {
            try model(["A": [RelationshipDescription(name: "b", destination: "B", inverse: "a")]])
        } throws: {
            ($0 as? ModelError)?.code == .invalidRelationship && "\($0)".contains("'B', which is not in the model")
        }
        #expect {
            try model([
                "A": [RelationshipDescription(name: "b", destination: "B", inverse: "missing")],
                "B": [RelationshipDescription(name: "a", destination: "A", inverse: "b")],
            ])
        } throws: { ($0 as? ModelError)?.code == .invalidRelationship && "\($0)".contains("does not declare") }
        #expect {
            try model([
                "A": [
                    RelationshipDescription(name: "b", destination: "B", inverse: "a"),
                    RelationshipDescription(name: "other", destination: "B", inverse: "a"),
                ],
                "B": [RelationshipDescription(name: "a", destination: "A", inverse: "b")],
            ])
        } throws: { ($0 as? ModelError)?.code == .invalidRelationship && "\($0)".contains("instead of back to it") }
        #expect {
            try EntityDescription(
                name: "A", attributes: [AttributeDescription(name: "x", type: .string)],
                relationships: [RelationshipDescription(name: "x", destination: "A", inverse: "x")])
        } throws: { ($0 as? ModelError)?.code == .duplicateAttribute }
    }

    @Test("relationships are part of the version hash; delete rules and inverse names are not")
    func versionHash() throws {
        func hash(_ rule: DeleteRule, toMany: Bool) throws -> String {
            try ManagedObjectModel(entities: [
                EntityDescription(
                    name: "A", attributes: [],
                    relationships: [
                        RelationshipDescription(name: "b", destination: "B", inverse: "a", deleteRule: rule)
                    ]),
                EntityDescription(
                    name: "B", attributes: [],
                    relationships: [
                        RelationshipDescription(name: "a", destination: "A", inverse: "b", isToMany: toMany)
                    ]),
            ]).versionHash
        }
        #expect(try hash(.nullify, toMany: true) == hash(.cascade, toMany: true))
        #expect(try hash(.nullify, toMany: true) != hash(.nullify, toMany: false))
        let plain = try ManagedObjectModel(entities: [EntityDescription(name: "A", attributes: [])]).versionHash
        #expect(plain == (try ManagedObjectModel(entities: [EntityDescription(name: "A", attributes: [])]).versionHash))
    }

    // MARK: Inverses in one context

    @Test("setting a to-one side updates the to-many inverse: add, move, clear")
    func toOneMaintainsInverse() throws {
        let manager = graphManager("memory", TemporaryDirectory("rel-to-one"))
        let context = try manager.createContext()
        context.performAndWait {
            let alice = context.insert(Explorer.self)
            let bob = context.insert(Explorer.self)
            let expedition = context.insert(Expedition.self)
            expedition.leader = alice
            #expect(alice.expeditions == [expedition])
            expedition.leader = bob
            #expect(alice.expeditions.isEmpty)
            #expect(bob.expeditions == [expedition])
            expedition.leader = nil
            #expect(bob.expeditions.isEmpty)
        }
    }

    @Test("setting a to-many side updates each object's to-one inverse, taking it from its previous owner")
    func toManyMaintainsInverse() throws {
        let manager = graphManager("memory", TemporaryDirectory("rel-to-many"))
        let context = try manager.createContext()
        context.performAndWait {
            let alice = context.insert(Explorer.self)
            let bob = context.insert(Explorer.self)
            let first = context.insert(Expedition.self)
            let second = context.insert(Expedition.self)
            alice.expeditions = [first, second]
            #expect(first.leader === alice && second.leader === alice)
            bob.expeditions.insert(first)
            #expect(first.leader === bob)
            #expect(alice.expeditions == [second])
            alice.expeditions = []
            #expect(second.leader == nil)
            #expect(bob.expeditions == [first])
        }
    }

    @Test("ordered to-many keeps the order it was given; many-to-many and one-to-one stay symmetric")
    func orderedManyToManyOneToOne() throws {
        let manager = graphManager("memory", TemporaryDirectory("rel-kinds"))
        let context = try manager.createContext()
        context.performAndWait {
            let expedition = context.insert(Expedition.self)
            let points = (0..<4).map { index in
                let point = context.insert(Waypoint.self)
                point.name = "P\(index)"
                return point
            }
            expedition.waypoints = [points[2], points[0], points[3]]
            #expect(expedition.waypoints.map(\.name) == ["P2", "P0", "P3"])
            points[1].expedition = expedition
            #expect(expedition.waypoints.map(\.name) == ["P2", "P0", "P3", "P1"])
            expedition.waypoints.removeFirst()
            #expect(points[2].expedition == nil)

            let hiking = context.insert(Tag.self)
            let winter = context.insert(Tag.self)
            let other = context.insert(Expedition.self)
            expedition.tags = [hiking, winter]
            other.tags = [hiking]
            #expect(hiking.expeditions == [expedition, other])
            #expect(winter.expeditions == [expedition])
            hiking.expeditions.remove(expedition)
            #expect(expedition.tags == [winter])

            let alice = context.insert(Explorer.self)
            let bob = context.insert(Explorer.self)
            let passport = context.insert(Passport.self)
            alice.passport = passport
            #expect(passport.holder === alice)
            bob.passport = passport
            #expect(alice.passport == nil)
            #expect(passport.holder === bob)
        }
    }

    @Test("setting the same objects again is not a change")
    func unchangedIsNotAChange() throws {
        let manager = graphManager("memory", TemporaryDirectory("rel-same"))
        let context = try manager.createContext()
        try context.performAndWait {
            let alice = context.insert(Explorer.self)
            let expedition = context.insert(Expedition.self)
            expedition.leader = alice
            try context.save()
            expedition.leader = alice
            alice.expeditions = [expedition]
            #expect(!context.hasChanges)
        }
    }

    // MARK: Saving and loading

    @Test(
        "a graph saved with temporary IDs reloads with permanent keys on every store",
        arguments: ["memory", "journal", "json"])
    func roundTrip(kind: String) throws {
        let directory = TemporaryDirectory("rel-round-trip-\(kind)")
        let store = InMemoryStore()
        let writer = graphManager(kind, directory, store: store)
        let context = try writer.createContext()
        try context.performAndWait {
            let alice = context.insert(Explorer.self)
            alice.name = "Alice"
            alice.passport = context.insert(Passport.self)
            alice.passport?.number = "P-1"
            let tag = context.insert(Tag.self)
            tag.label = "winter"
            for index in 0..<3 {
                let expedition = context.insert(Expedition.self)
                expedition.title = "E\(index)"
                expedition.leader = alice
                expedition.tags = [tag]
                expedition.waypoints = (0..<3).map { point in
                    let waypoint = context.insert(Waypoint.self)
                    waypoint.name = "E\(index)-\(2 - point)"
                    return waypoint
                }
            }
            try context.save()
            #expect(alice.expeditions.count == 3)
            #expect(alice.expeditions.allSatisfy { !$0.objectID.isTemporaryID && $0.leader === alice })
        }
        writer.close()

        let reader = graphManager(kind, directory, store: store)
        let again = try reader.createContext()
        try again.performAndWait {
            let alice = try again.first(Explorer.self, where: #Predicate { $0.name == "Alice" })
            #expect(again.registeredObjects.count == 1, "related objects were loaded before being touched")
            #expect(alice.passport?.number == "P-1")
            #expect(alice.passport?.holder === alice)
            let titles = alice.expeditions.map(\.title).sorted()
            #expect(titles == ["E0", "E1", "E2"])
            for expedition in alice.expeditions {
                #expect(
                    expedition.waypoints.map(\.name) == [
                        "\(expedition.title)-2", "\(expedition.title)-1", "\(expedition.title)-0",
                    ])
                #expect(expedition.waypoints.allSatisfy { $0.expedition === expedition })
                #expect(expedition.tags.map(\.label) == ["winter"])
            }
            let tag = try again.first(Tag.self, where: #Predicate { $0.label == "winter" })
            #expect(tag.expeditions.count == 3)
        }
    }

    @Test(
        "a graph of more than 10,000 objects saved and reloaded equals itself",
        arguments: ["memory", "journal", "json"])
    func largeGraphRoundTrip(kind: String) throws {
        let directory = TemporaryDirectory("rel-large-\(kind)")
        let store = InMemoryStore()
        let writer = graphManager(kind, directory, store: store)
        let context = try writer.createContext()
        var generator = SeededGenerator(seed: 42)
        let written = try context.performAndWait {
            let tags = (0..<100).map { index in
                let tag = context.insert(Tag.self)
                tag.label = "tag \(index)"
                return tag
            }
            for explorerIndex in 0..<500 {
                let explorer = context.insert(Explorer.self)
                explorer.name = "explorer \(explorerIndex)"
                if explorerIndex.isMultiple(of: 2) {
                    explorer.passport = context.insert(Passport.self)
                    explorer.passport?.number = "P\(explorerIndex)"
                }
                for expeditionIndex in 0..<4 {
                    let expedition = context.insert(Expedition.self)
                    expedition.title = "expedition \(explorerIndex).\(expeditionIndex)"
                    expedition.leader = explorer
                    expedition.tags = Set((0..<2).map { _ in tags[Int(generator.next() % 100)] })
                    expedition.waypoints = (0..<4).map { point in
                        let waypoint = context.insert(Waypoint.self)
                        waypoint.name = "waypoint \(explorerIndex).\(expeditionIndex).\(point)"
                        return waypoint
                    }
                    expedition.waypoints.reverse()
                }
            }
            #expect(context.insertedObjects.count > 10_000)
            try context.save()
            return try Self.describeGraph(context)
        }
        writer.close()

        let reader = graphManager(kind, directory, store: store)
        let again = try reader.createContext()
        let read = try again.performAndWait { try Self.describeGraph(again) }
        #expect(read.count == written.count)
        #expect(read == written)
    }

    /// Every object of the graph model as a line: its attributes and its related objects' names.
    private static func describeGraph(_ context: ManagedObjectContext) throws -> [String] {
        func names<Object: ManagedObject>(_ objects: some Sequence<Object>, _ name: (Object) -> String) -> String {
            objects.map(name).sorted().joined(separator: ",")
        }
        var lines: [String] = []
        for explorer in try context.fetch(FetchRequest<Explorer>()) {
            lines.append(
                "E \(explorer.name) passport=\(explorer.passport?.number ?? "-") "
                    + names(explorer.expeditions, \.title))
        }
        for expedition in try context.fetch(FetchRequest<Expedition>()) {
            lines.append(
                "X \(expedition.title) leader=\(expedition.leader?.name ?? "-") tags=\(names(expedition.tags, \.label)) "
                    + expedition.waypoints.map(\.name).joined(separator: ","))
        }
        for waypoint in try context.fetch(FetchRequest<Waypoint>()) {
            lines.append("W \(waypoint.name) \(waypoint.expedition?.title ?? "-")")
        }
        for tag in try context.fetch(FetchRequest<Tag>()) {
            lines.append("T \(tag.label) \(names(tag.expeditions, \.title))")
        }
        for passport in try context.fetch(FetchRequest<Passport>()) {
            lines.append("P \(passport.number) \(passport.holder?.name ?? "-")")
        }
        return lines.sorted()
    }

    // MARK: Between contexts

    @Test("other contexts merge relationship changes, and unsaved additions survive a merge")
    func merges() throws {
        let manager = graphManager("memory", TemporaryDirectory("rel-merge"))
        let writer = try makeContext(manager, "rel-writer")
        let reader = try makeContext(manager, "rel-reader")
        let (aliceID, firstID) = try writer.performAndWait {
            let alice = writer.insert(Explorer.self)
            alice.name = "Alice"
            let first = writer.insert(Expedition.self)
            first.title = "first"
            first.leader = alice
            try writer.save()
            return (alice.objectID, first.objectID)
        }
        flush(reader)
        try reader.performAndWait {
            let alice = try reader.existingObject(with: aliceID, as: Explorer.self)
            #expect(alice.expeditions.map(\.title) == ["first"])
            // An unsaved addition here...
            let local = reader.insert(Expedition.self)
            local.title = "local"
            local.leader = alice
        }
        try writer.performAndWait {
            let alice = try writer.existingObject(with: aliceID, as: Explorer.self)
            let second = writer.insert(Expedition.self)
            second.title = "second"
            second.leader = alice
            try writer.existingObject(with: firstID, as: Expedition.self).leader = nil
            try writer.save()
        }
        flush(reader)
        try reader.performAndWait {
            // ...survives the merge of the writer's addition and removal.
            let alice = try reader.existingObject(with: aliceID, as: Explorer.self)
            #expect(alice.expeditions.map(\.title).sorted() == ["local", "second"])
            try reader.save()
        }
        let fresh = try makeContext(manager, "rel-fresh")
        let titles = try fresh.performAndWait {
            try fresh.existingObject(with: aliceID, as: Explorer.self).expeditions.map(\.title).sorted()
        }
        #expect(titles == ["local", "second"])
    }

    @Test("additions to one to-many from two contexts are both kept, with the default error policy")
    func concurrentAdditions() throws {
        let manager = graphManager("memory", TemporaryDirectory("rel-concurrent"))
        let setup = try makeContext(manager, "rel-setup")
        let tagID = try setup.performAndWait {
            let tag = setup.insert(Tag.self)
            try setup.save()
            return tag.objectID
        }
        let contexts = try (0..<2).map { try makeContext(manager, "rel-adder-\($0)") }
        // Both load the tag (version 1) before either saves.
        for context in contexts {
            try context.performAndWait { _ = try context.existingObject(with: tagID, as: Tag.self).expeditions }
        }
        for (index, context) in contexts.enumerated() {
            try context.performAndWait {
                let expedition = context.insert(Expedition.self)
                expedition.title = "from \(index)"
                try context.existingObject(with: tagID, as: Tag.self).expeditions.insert(expedition)
                try context.save()
            }
        }
        let fresh = try makeContext(manager, "rel-check")
        let titles = try fresh.performAndWait {
            try fresh.existingObject(with: tagID, as: Tag.self).expeditions.map(\.title).sorted()
        }
        #expect(titles == ["from 0", "from 1"])
    }

    @Test("conflicting moves of one object from two contexts leave the store consistent", arguments: 0..<10)
    func conflictingMoves(round: Int) throws {
        let manager = graphManager("memory", TemporaryDirectory("rel-moves"))
        let setup = try makeContext(manager, "rel-moves-setup")
        let (pointID, expeditionIDs) = try setup.performAndWait {
            let expeditions = (0..<3).map { _ in setup.insert(Expedition.self) }
            let point = setup.insert(Waypoint.self)
            point.expedition = expeditions[0]
            try setup.save()
            return (point.objectID, expeditions.map(\.objectID))
        }
        let movers = try (0..<2).map { try makeContext(manager, "rel-mover-\($0)") }
        for (index, context) in movers.enumerated() {
            try context.performAndWait {
                context.mergePolicy = .mergeByPropertyObjectTrump
                let point = try context.existingObject(with: pointID, as: Waypoint.self)
                point.expedition = try context.existingObject(with: expeditionIDs[1 + index], as: Expedition.self)
            }
        }
        for context in round % 2 == 0 ? movers : movers.reversed() {
            try context.performAndWait { try context.save() }
        }
        let fresh = try makeContext(manager, "rel-moves-check")
        try fresh.performAndWait {
            let point = try fresh.existingObject(with: pointID, as: Waypoint.self)
            let owners = try expeditionIDs.map { try fresh.existingObject(with: $0, as: Expedition.self) }
                .filter { $0.waypoints.contains(point) }
            #expect(owners.count == 1)
            #expect(owners.first === point.expedition)
        }
    }

    // MARK: Damaged stores

    @Test("a hand-edited store whose relationship refers to a missing row, or does not point back, is refused")
    func danglingReferences() throws {
        let directory = TemporaryDirectory("rel-dangling")
        let writer = graphManager("json", directory)
        let context = try writer.createContext()
        try context.performAndWait {
            let alice = context.insert(Explorer.self)
            context.insert(Expedition.self).leader = alice
            try context.save()
        }
        writer.close()
        let valid = String(decoding: try directory.bytes(of: "Store.json"), as: UTF8.self)
        #expect(valid.contains(#""leader": 1"#))
        for (label, edited, expected) in [
            ("missing row", valid.replacingOccurrences(of: #""leader": 1"#, with: #""leader": 7"#), "does not exist"),
            (
                "one-sided", valid.replacingOccurrences(of: #""expeditions": [1]"#, with: #""expeditions": []"#),
                "does not refer back"
            ),
        ] {
            #expect(edited != valid, "\(label)")
            try directory.write(Array(edited.utf8), to: "Store.json")
            #expect("\(label)") {
                try graphManager("json", directory).loadPersistentStore()
            } throws: { error in
                (error as? StoreError)?.code == .corrupted && "\(error)".contains(expected)
            }
            #expect(String(decoding: try directory.bytes(of: "Store.json"), as: UTF8.self) == edited)
        }
    }

    // MARK: Programmer errors

    @Test("assigning an object of another context traps with a message")
    func otherContextTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: graphModel))
            let first = try manager.createContext()
            let second = try manager.createContext()
            let box = ObjectBox()
            first.performAndWait { box.object = first.insert(Explorer.self) }
            second.performAndWait {
                second.insert(Expedition.self).leader = (box.object as! Explorer)
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("Expedition.leader was set to an object of another context"))
    }
}
