import Foundation
import QueueData

// A model with every kind of change an undo manager records: attributes (a transient one
// too), a to-one with a to-many inverse, an ordered to-many that cascades, a many-to-many.
// Every object carries a `uid` set once, so that states compare by content across saves.

final class Album: ManagedObject {
    @Attribute var uid: String = ""
    @Attribute var name: String = ""
    @Relationship(inverse: "album", deleteRule: .cascade) var sketches: Set<Sketch>
}

final class Sketch: ManagedObject {
    @Attribute var uid: String = ""
    @Attribute var title: String = ""
    @Attribute var strokes: Int = 0
    @Attribute var finished: Date? = nil
    @Attribute(.transient) var isSelected: Bool = false
    @Relationship(inverse: "sketches") var album: Album?
    @Relationship(inverse: "sketch", deleteRule: .cascade) var layers: [Layer]
    @Relationship(inverse: "sketches") var labels: Set<Mark>
}

final class Layer: ManagedObject {
    @Attribute var uid: String = ""
    @Attribute var depth: Int = 0
    @Relationship(inverse: "layers") var sketch: Sketch?
}

final class Mark: ManagedObject {
    @Attribute var uid: String = ""
    @Attribute var text: String = ""
    @Relationship(inverse: "labels") var sketches: Set<Sketch>
}

let undoModel = ManagedObjectModel([Album.self, Sketch.self, Layer.self, Mark.self])

/// A manager of the undo model on a store of `kind`.
func undoModelManager(_ store: LifecycleStore, _ directory: TemporaryDirectory) -> ContextManager {
    store.manager(directory, model: undoModel)
}
