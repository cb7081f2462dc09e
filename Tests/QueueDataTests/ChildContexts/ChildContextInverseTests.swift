import Dispatch
import Foundation
import QueueData
import Testing

/// The non-error policies a child's push resolves a conflict with.
private let resolvingPolicies: [MergePolicy] = [
    .mergeByPropertyObjectTrump, .mergeByPropertyStoreTrump, .overwrite, .rollback,
]

/// Every link of the undo model in `context` whose two sides disagree, described by `uid`s
/// (call on the context's queue). Empty when the graph is consistent.
func undoModelLinkProblems(_ context: ManagedObjectContext) throws -> [String] {
    var problems: [String] = []
    let sketches = try context.fetch(FetchRequest<Sketch>())
    let layers = try context.fetch(FetchRequest<Layer>())
    let albums = try context.fetch(FetchRequest<Album>())
    let marks = try context.fetch(FetchRequest<Mark>())
    for sketch in sketches {
        let members = sketch.layers
        if Set(members.map(\.objectID)).count != members.count {
            problems.append("\(sketch.uid).layers repeats a layer")
        }
        for layer in members where layer.sketch?.objectID != sketch.objectID {
            problems.append("\(sketch.uid).layers has \(layer.uid), whose sketch is \(layer.sketch?.uid ?? "nil")")
        }
        if let album = sketch.album, !album.sketches.contains(where: { $0.objectID == sketch.objectID }) {
            problems.append("\(sketch.uid).album is \(album.uid), whose sketches lack it")
        }
        for mark in sketch.labels where !mark.sketches.contains(where: { $0.objectID == sketch.objectID }) {
            problems.append("\(sketch.uid).labels has \(mark.uid), whose sketches lack it")
        }
    }
    for layer in layers {
        if let sketch = layer.sketch, !sketch.layers.contains(where: { $0.objectID == layer.objectID }) {
            problems.append("\(layer.uid).sketch is \(sketch.uid), whose layers lack it")
        }
    }
    for album in albums {
        for sketch in album.sketches where sketch.album?.objectID != album.objectID {
            problems.append("\(album.uid).sketches has \(sketch.uid), whose album is \(sketch.album?.uid ?? "nil")")
        }
    }
    for mark in marks {
        for sketch in mark.sketches where !sketch.labels.contains(where: { $0.objectID == mark.objectID }) {
            problems.append("\(mark.uid).sketches has \(sketch.uid), whose labels lack it")
        }
    }
    return problems
}

/// The `uid`s of the layers of the sketch `uid` in `context`, sorted (call on its queue).
private func layerUIDs(of uid: String, in context: ManagedObjectContext) throws -> [String] {
    let sketch = try context.fetch(FetchRequest<Sketch>()).first { $0.uid == uid }
    return (sketch?.layers.map(\.uid) ?? []).sorted()
}

/// The `uid` of the sketch of the layer `uid` in `context` (call on its queue).
private func sketchUID(ofLayer uid: String, in context: ManagedObjectContext) throws -> String? {
    try context.fetch(FetchRequest<Layer>()).first { $0.uid == uid }?.sketch?.uid
}

@Suite("Child contexts: a push keeps both sides of every relationship in the parent agreeing")
struct ChildContextInverseTests {
    /// A manager of the undo model, its parent context seeded (sketch "s1" with layers "l0",
    /// "l1"), and a child that read the sketch and its layers.
    private func setUp(_ label: String) throws -> (
        ContextManager, ManagedObjectContext, ManagedObjectContext, ObjectID
    ) {
        let manager = undoModelManager(.memory, TemporaryDirectory(label))
        let parent = try makeContext(manager, "parent").retainingRegisteredObjects()
        let (_, sketchID) = try UndoTests.seed(parent)
        let child = parent.performAndWait { parent.newChildContext() }.retainingRegisteredObjects()
        try child.performAndWait { () throws -> Void in
            let sketch = try child.existingObject(with: sketchID, as: Sketch.self)
            #expect(sketch.layers.map(\.uid) == ["l0", "l1"])
        }
        return (manager, parent, child, sketchID)
    }

    /// Checks `check` and the links in the parent, then again in a fresh context after the
    /// parent saved.
    private func expectInParentAndStore(
        _ manager: ContextManager,
        _ parent: ManagedObjectContext,
        _ policy: MergePolicy,
        _ check: (ManagedObjectContext) throws -> Void
    ) throws {
        try parent.performAndWait { () throws -> Void in
            #expect(try undoModelLinkProblems(parent) == [], "\(policy): in the parent")
            try check(parent)
            try parent.save()
        }
        let reader = try makeContext(manager, "reader")
        try reader.performAndWait { () throws -> Void in
            #expect(try undoModelLinkProblems(reader) == [], "\(policy): in the store")
            try check(reader)
        }
    }

    /// Adds a new layer "pl" to the sketch in the parent, unsaved.
    private func parentAddsLayer(_ parent: ManagedObjectContext, _ sketchID: ObjectID) {
        parent.performAndWait {
            let layer = parent.insert(Layer.self)
            layer.uid = "pl"
            (parent.object(with: sketchID) as! Sketch).layers.append(layer)
        }
    }

    @Test(
        "the parent added a layer, the child removed one: both changes hold, on both sides",
        arguments: resolvingPolicies, [false, true])
    func childRemovesParentAdds(_ policy: MergePolicy, _ fromTheSketch: Bool) throws {
        let (manager, parent, child, sketchID) = try setUp("child-inverse-remove")
        parentAddsLayer(parent, sketchID)
        try child.performAndWait {
            let sketch = try child.existingObject(with: sketchID, as: Sketch.self)
            if fromTheSketch {
                sketch.layers.removeAll { $0.uid == "l1" }
            } else {
                sketch.layers.first { $0.uid == "l1" }!.sketch = nil
            }
            child.mergePolicy = policy
            try child.save()
        }
        try expectInParentAndStore(manager, parent, policy) { (context: ManagedObjectContext) throws -> Void in
            #expect(try layerUIDs(of: "s1", in: context) == ["l0", "pl"], "\(policy)")
            #expect(try sketchUID(ofLayer: "l1", in: context) == nil, "\(policy)")
            #expect(try sketchUID(ofLayer: "pl", in: context) == "s1", "\(policy)")
        }
    }

    @Test(
        "the parent and the child each added a layer: both are kept, on both sides",
        arguments: resolvingPolicies, [false, true])
    func bothAdd(_ policy: MergePolicy, _ fromTheSketch: Bool) throws {
        let (manager, parent, child, sketchID) = try setUp("child-inverse-add")
        parentAddsLayer(parent, sketchID)
        try child.performAndWait {
            let sketch = try child.existingObject(with: sketchID, as: Sketch.self)
            let layer = child.insert(Layer.self)
            layer.uid = "cl"
            if fromTheSketch {
                sketch.layers.append(layer)
            } else {
                layer.sketch = sketch
            }
            child.mergePolicy = policy
            try child.save()
        }
        try expectInParentAndStore(manager, parent, policy) { (context: ManagedObjectContext) throws -> Void in
            #expect(try layerUIDs(of: "s1", in: context) == ["cl", "l0", "l1", "pl"], "\(policy)")
            #expect(try sketchUID(ofLayer: "cl", in: context) == "s1", "\(policy)")
            #expect(try sketchUID(ofLayer: "pl", in: context) == "s1", "\(policy)")
        }
    }

    @Test(
        "the parent moved a layer to one sketch, the child to another: the layer ends in one, on both sides",
        arguments: resolvingPolicies, [false, true])
    func bothMoveALayer(_ policy: MergePolicy, _ fromTheSketch: Bool) throws {
        let (manager, parent, child, sketchID) = try setUp("child-inverse-to-one")
        let (parentsID, childsID) = try parent.performAndWait {
            let sketches = ["s2", "s3"].map { uid in
                let sketch = parent.insert(Sketch.self)
                sketch.uid = uid
                return sketch
            }
            try parent.save()
            return (sketches[0].objectID, sketches[1].objectID)
        }
        try parent.performAndWait {
            let layer = try parent.existingObject(with: sketchID, as: Sketch.self).layers[1]
            layer.sketch = try parent.existingObject(with: parentsID, as: Sketch.self)
        }
        try child.performAndWait {
            let layer = try child.existingObject(with: sketchID, as: Sketch.self).layers[1]
            let target = try child.existingObject(with: childsID, as: Sketch.self)
            if fromTheSketch {
                target.layers.append(layer)
            } else {
                layer.sketch = target
            }
            child.mergePolicy = policy
            try child.save()
        }
        try expectInParentAndStore(manager, parent, policy) { (context: ManagedObjectContext) throws -> Void in
            #expect(try layerUIDs(of: "s1", in: context) == ["l0"], "\(policy)")
            let owner = try sketchUID(ofLayer: "l1", in: context)
            #expect(owner == "s2" || owner == "s3", "\(policy)")
            if policy.testKind == .objectTrump || policy.description == "overwrite" {
                #expect(owner == "s3", "\(policy)")
            }
        }
    }
}
