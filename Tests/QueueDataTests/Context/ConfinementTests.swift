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
}
