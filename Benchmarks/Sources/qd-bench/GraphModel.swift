import Foundation
import QueueData

/// A parent of the object-graph workloads: deleting it deletes its children.
final class GraphParent: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var rank: Int = 0
    @Relationship(inverse: "parent", deleteRule: .cascade) var children: Set<GraphChild>
}

/// A child of the object-graph workloads, with the attributes of the benchmark record.
final class GraphChild: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Relationship(inverse: "children") var parent: GraphParent?
}

/// A journal store (the default store type) of the graph model in `directory`.
struct GraphStore: ContextManagerDelegate {
    let directory: URL
    var managedObjectModel: ManagedObjectModel { ManagedObjectModel([GraphParent.self, GraphChild.self]) }
    var persistentStoreName: String { "Graph" }
    var storeDirectory: URL { directory }
}

/// The values of a graph: `parents`, and `childrenPerParent` children for each, child `i`
/// belonging to parent `i / childrenPerParent`. Identical in every run.
struct GraphValues: Sendable {
    var parents: [RecordValue]
    var children: [RecordValue]
    var childrenPerParent: Int

    init(parentCount: Int, childrenPerParent: Int) {
        let values = makeRecords(parentCount * (1 + childrenPerParent))
        parents = Array(values.prefix(parentCount))
        // The children get their own ids, from 1 (their table's primary key in SQLite).
        children = values.dropFirst(parentCount).enumerated().map { index, value in
            var child = value
            child.id = Int64(index + 1)
            return child
        }
        self.childrenPerParent = childrenPerParent
    }

    var objectCount: Int { parents.count + children.count }

    /// The sum of every child's age: what touching every child adds up to.
    var childAgeSum: Int { children.reduce(0) { $0 + $1.age } }
}

/// How `insertGraph` connects the children to their parents.
enum GraphLinking {
    /// `child.parent = parent` for each child.
    case toOne
    /// `parent.children = [its children]` once per parent.
    case toMany
    /// Not at all: the same objects, flat.
    case none
}

/// Inserts `graph`, linked as `linking` says, and saves once.
///
/// - Important: Call on the context's queue.
func insertGraph(_ graph: GraphValues, into context: ManagedObjectContext, linking: GraphLinking) throws {
    var childValues = graph.children.makeIterator()
    for value in graph.parents {
        let parent = context.insert(GraphParent.self)
        parent.name = value.name
        parent.rank = value.age
        var children: Set<GraphChild> = []
        for _ in 0..<graph.childrenPerParent {
            let value = childValues.next()!
            let child = context.insert(GraphChild.self)
            child.name = value.name
            child.age = value.age
            child.score = value.score
            switch linking {
            case .toOne: child.parent = parent
            case .toMany: children.insert(child)
            case .none: break
            }
        }
        if linking == .toMany {
            parent.children = children
        }
    }
    try context.save()
}
