import Dispatch
import Foundation
import Testing

@testable import QueueData

@Suite("Child contexts: the parent keeps its saved temporary keys only while a child lives")
struct ChildContextKeysTests {
    @Test("the keys are recorded while a child lives and dropped at the first save after it is gone")
    func keysLiveWithChildren() throws {
        let manager = makeManager()
        let parent = try makeContext(manager, "parent")
        do {
            let child = parent.performAndWait { parent.newChildContext() }
            try child.performAndWait {
                child.insert(Destination.self).name = "a"
                try child.save()
            }
            try parent.performAndWait {
                try parent.save()
                #expect(parent.permanentKeysForChildren?.count == 1)
            }
        }
        try parent.performAndWait {
            parent.insert(Destination.self).name = "b"
            try parent.save()
            #expect(parent.permanentKeysForChildren == nil)
            #expect(parent.children.isEmpty)
        }
    }
}
