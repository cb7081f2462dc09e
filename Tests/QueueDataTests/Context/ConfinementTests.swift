import Dispatch
import Foundation
import QueueData
import Testing

/// Every programmer error traps, in a child process, with a message saying what to do.
@Suite("Confinement traps")
struct ConfinementTests {
    @Test("a context used off its queue traps, naming the context and the queue")
    func contextOffQueue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let context = try manager.createContext(for: DispatchQueue(label: "confined-queue"))
            _ = context.hasChanges
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("used off its queue"))
        #expect(message.contains("'confined-queue'"))
        #expect(message.contains("perform"))
    }

    @Test("an object's attribute read off its queue traps")
    func objectReadOffQueue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let context = try manager.createContext(for: DispatchQueue(label: "owner"))
            let box = ObjectBox()
            context.performAndWait { box.object = context.insert(Destination.self) }
            DispatchQueue(label: "intruder").sync {
                _ = (box.object as! Destination).name
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("a Destination object was used off its queue"))
        #expect(message.contains("'owner'"))
    }

    @Test("an object's attribute written from a concurrent global queue traps")
    func objectWriteFromGlobalQueue() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let context = try manager.createContext(for: DispatchQueue(label: "owner"))
            let box = ObjectBox()
            context.performAndWait { box.object = context.insert(Destination.self) }
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                (box.object as! Destination).rating = 3
            }
            group.wait()
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("a Destination object was used off its queue"))
        #expect(message.contains("'owner'"))
    }

    @Test("an object used after its context was deallocated traps")
    func useAfterContextDeallocated() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let queue = DispatchQueue(label: "gone")
            let box = ObjectBox()
            do {
                let context = try manager.createContext(for: queue)
                context.performAndWait { box.object = context.insert(Destination.self) }
            }
            queue.sync {
                _ = (box.object as! Destination).name
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("after its context 'gone' was deallocated"))
    }

    @Test("a context used after its manager closed traps")
    func useAfterClose() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let context = try manager.createContext(for: DispatchQueue(label: "closed"))
            manager.close()
            try context.performAndWait {
                _ = try context.fetch(FetchRequest<Destination>())
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("after its ContextManager was closed"))
    }

    @Test("deleting an object of another context traps")
    func deleteForeignObject() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let queue = DispatchQueue(label: "both")
            let first = try manager.createContext(for: queue)
            let other = try ContextManager(delegate: TestStoreDelegate()).createContext(for: queue)
            first.performAndWait {
                let object = first.insert(Destination.self)
                other.delete(object)
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("of another context"))
    }

    @Test("inserting a class that is not in the model traps")
    func insertUnknownEntity() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate(model: ManagedObjectModel([Item.self])))
            let context = try manager.createContext(for: DispatchQueue(label: "model"))
            context.performAndWait { _ = context.insert(Destination.self) }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("Destination is not an entity of this context's model"))
    }

    @Test("setting an attribute of a deleted object traps")
    func writeToDeletedObject() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let context = try manager.createContext(for: DispatchQueue(label: "deleted"))
            try context.performAndWait {
                let object = context.insert(Destination.self)
                try context.save()
                context.delete(object)
                object.rating = 1
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("was set on a deleted object"))
        #expect(message.contains("rollback()") && message.contains("undo()"))
    }

    @Test("a key that is not an attribute traps")
    func unknownKey() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let context = try manager.createContext(for: DispatchQueue(label: "kv"))
            context.performAndWait {
                context.insert(Destination.self).setValue(.integer(1), forKey: "nope")
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("entity 'Destination' has no attribute 'nope'"))
    }

    @Test("a value that does not fit the attribute's type traps")
    func wrongTypeByKey() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let context = try manager.createContext(for: DispatchQueue(label: "kv"))
            context.performAndWait {
                context.insert(Destination.self).setValue(.string("five"), forKey: "rating")
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("does not fit Destination.rating, of type integer64"))
    }

    @Test("the main context used from another queue traps, naming the main queue")
    func mainContextConfinement() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let main = try manager.mainContext
            DispatchQueue(label: "not-main").sync {
                _ = main.hasChanges
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("ManagedObjectContext '\(DispatchQueue.main.label)' was used off its queue"))
        #expect(message.contains("on queue '\(DispatchQueue.main.label)'"))
    }

    @Test(
        "relationship accessors used off the queue trap, naming the object and the queue",
        arguments: ["to-one get", "to-one set", "to-many get", "to-many set", "by key get", "by key set"])
    func relationshipOffQueue(access: String) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [access] in
            let manager = ContextManager(delegate: TestStoreDelegate(model: graphModel))
            let context = try manager.createContext(for: DispatchQueue(label: "graph-owner"))
            let box = ObjectBox()
            context.performAndWait {
                let expedition = context.insert(Expedition.self)
                expedition.leader = context.insert(Explorer.self)
                expedition.tags = [context.insert(Tag.self)]
                box.object = expedition
            }
            DispatchQueue(label: "intruder").sync {
                let expedition = box.object as! Expedition
                switch access {
                case "to-one get": _ = expedition.leader
                case "to-one set": expedition.leader = nil
                case "to-many get": _ = expedition.tags
                case "to-many set": expedition.tags = []
                case "by key get": _ = expedition.relatedObjects(forKey: "waypoints")
                case "by key set": expedition.setRelatedObjects([], forKey: "waypoints")
                default: break
                }
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("a Expedition object was used off its queue"), "\(access)")
        #expect(message.contains("'graph-owner'"), "\(access)")
    }

    @Test(
        "save() off the context's queue traps, naming the context and the queue",
        arguments: ["another thread", "another context's queue"])
    func saveOffQueue(caller: String) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [caller] in
            let manager = ContextManager(delegate: TestStoreDelegate())
            let context = try manager.createContext(for: DispatchQueue(label: "saver"))
            context.performAndWait { _ = context.insert(Destination.self) }
            if caller == "another thread" {
                try context.save()
            } else {
                let other = try manager.createContext(for: DispatchQueue(label: "bystander"))
                try other.performAndWait { try context.save() }
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("ManagedObjectContext 'saver' was used off its queue"), "\(caller)")
        #expect(message.contains("on queue 'saver'"), "\(caller)")
    }
}
