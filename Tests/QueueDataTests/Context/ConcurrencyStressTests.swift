import Dispatch
import Foundation
import QueueData
import Testing

final class Shared: ManagedObject {
    @Attribute var x: Int = 0
    @Attribute var y: String = ""
    @Attribute var z: Double = 0
}

let stressModel = ManagedObjectModel([Shared.self, Item.self, Counter.self])

/// Multiplies the stress tests' sizes (`QUEUEDATA_STRESS_SCALE=10` for a long run).
let stressScale = Int(ProcessInfo.processInfo.environment["QUEUEDATA_STRESS_SCALE"] ?? "") ?? 1

@Suite("Concurrency under load")
struct ConcurrencyStressTests {
    @Test(
        "8 queues × 2,000 random operations with a trump policy: every context converges to the store, which equals a serial replay of the commits",
        arguments: [MergePolicy.mergeByPropertyObjectTrump, .mergeByPropertyStoreTrump])
    func randomOperationsConverge(_ policy: MergePolicy) throws {
        let queues = 8
        let operations = 2_000 * stressScale
        let store = FailingStore()
        let manager = makeManager(model: stressModel, storeType: .custom { _ in store })
        let setup = try manager.createContext()
        let sharedIDs: [ObjectID] = try setup.performAndWait {
            let objects = (0..<40).map { index in
                let object = setup.insert(Shared.self)
                object.x = index
                return object
            }
            try setup.save()
            return objects.map(\.objectID)
        }
        let contexts = try (0..<queues).map { try makeContext(manager, "stress-\($0)") }
        for context in contexts {
            context.performAndWait { context.mergePolicy = policy }
        }

        DispatchQueue.concurrentPerform(iterations: queues) { worker in
            let context = contexts[worker]
            var generator = SeededGenerator(seed: UInt64(worker + 1))
            for step in 0..<operations {
                let choice = Int.random(in: 0..<100, using: &generator)
                let target = sharedIDs[Int.random(in: 0..<sharedIDs.count, using: &generator)]
                let value = Int.random(in: 0..<1_000, using: &generator)
                context.performAndWait {
                    do {
                        switch choice {
                        case 0..<40:
                            guard let object = context.object(with: target) as? Shared, !object.isDeleted else {
                                return
                            }
                            switch value % 3 {
                            case 0: object.x = value
                            case 1: object.y = "w\(worker)-\(step)"
                            default: object.z = Double(value) / 8
                            }
                        case 40..<55:
                            let item = context.insert(Item.self)
                            item.owner = worker
                            item.sequence = step
                        case 55..<62:
                            if let object = context.object(with: target), !object.isDeleted {
                                context.delete(object)
                            }
                        case 62..<67:
                            let items = try context.fetch(
                                FetchRequest<Item>(predicate: #Predicate { $0.owner == worker }))
                            if let item = items.randomElement(using: &generator) {
                                context.delete(item)
                            }
                        case 67..<80:
                            _ = try context.fetch(FetchRequest<Shared>(predicate: #Predicate { $0.x > 500 }))
                        default:
                            try context.save()
                        }
                    } catch {
                        Issue.record("worker \(worker) step \(step): \(error)")
                    }
                }
            }
            do {
                try context.performAndWait { try context.save() }
            } catch {
                Issue.record("final save of worker \(worker): \(error)")
            }
        }
        // Every merge of every save was queued before the save returned.
        for context in contexts {
            context.performAndWait {}
        }

        // The store equals a serial replay of the commits, in commit order.
        var replay: [String: [Int64: [StoredValue]]] = [:]
        for changes in store.commits {
            for entity in changes.entities {
                for row in entity.inserted { replay[entity.entityName, default: [:]][row.primaryKey] = row.values }
                for update in entity.updated {
                    replay[entity.entityName, default: [:]][update.primaryKey] = update.values
                }
                for key in entity.deleted { replay[entity.entityName]?[key] = nil }
            }
        }
        let reader = try manager.createContext()
        let stored: [String: [Int64: [StoredValue]]] = try reader.performAndWait {
            var result: [String: [Int64: [StoredValue]]] = [:]
            for object in try reader.fetch(FetchRequest<ManagedObject>(entityName: "Shared"))
                + reader.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            {
                result[object.entity.name, default: [:]][object.objectID.primaryKey!] =
                    object.entity.attributes.map { object.value(forKey: $0.name) }
            }
            return result
        }
        #expect(stored["Shared", default: [:]] == replay["Shared", default: [:]])
        #expect(stored["Item", default: [:]] == replay["Item", default: [:]])
        #expect(store.commits.count > queues)

        // Every context converged: no pending changes, and every object it still holds has
        // the committed values.
        for context in contexts {
            context.performAndWait {
                #expect(!context.hasChanges, "\(context.name)")
                for object in context.registeredObjects {
                    let committed = stored[object.entity.name]?[object.objectID.primaryKey!]
                    let values = object.entity.attributes.map { object.value(forKey: $0.name) }
                    #expect(values == committed, "\(context.name): \(object.objectID)")
                }
            }
        }
    }

    @Test("with the error policy and retry on conflict, 8 queues × 500 increments of one counter end at exactly 4,000")
    func counterWithRetries() throws {
        let queues = 8
        let increments = 500 * stressScale
        let store = FailingStore()
        let manager = makeManager(model: stressModel, storeType: .custom { _ in store })
        let setup = try manager.createContext()
        let counterID = try setup.performAndWait {
            let counter = setup.insert(Counter.self)
            try setup.save()
            return counter.objectID
        }
        let contexts = try (0..<queues).map { try makeContext(manager, "counter-\($0)") }
        let conflicts = AtomicCounter()
        /// Saves `context`; after a conflict, refreshes the counter, increments it again and retries.
        @Sendable func saveRetrying(_ context: ManagedObjectContext, _ counter: Counter) {
            while true {
                do {
                    try context.save()
                    return
                } catch is MergeConflictError {
                    conflicts.increment()
                    context.refresh(counter, mergeChanges: false)
                    counter.value += 1
                } catch {
                    Issue.record("\(error)")
                    return
                }
            }
        }
        // Each queue's first increment is made before any of them saves: all are based on the
        // same version, so every save after the first conflicts once, whatever the scheduling.
        // (Merging is off meanwhile: a merge taking the newer version under the unsaved
        // increment would rebase it, and its save would not conflict.)
        for context in contexts {
            context.performAndWait {
                context.automaticallyMergesChangesFromOtherContexts = false
                (context.object(with: counterID) as! Counter).value += 1
            }
        }
        for context in contexts {
            context.performAndWait {
                saveRetrying(context, context.object(with: counterID) as! Counter)
                context.automaticallyMergesChangesFromOtherContexts = true
            }
        }
        #expect(conflicts.value == queues - 1)
        DispatchQueue.concurrentPerform(iterations: queues) { worker in
            let context = contexts[worker]
            for _ in 1..<increments {
                context.performAndWait {
                    let counter = context.object(with: counterID) as! Counter
                    counter.value += 1
                    saveRetrying(context, counter)
                }
            }
        }
        let reader = try manager.createContext()
        let value = try reader.performAndWait { try reader.existingObject(with: counterID, as: Counter.self).value }
        #expect(value == queues * increments)
        for context in contexts {
            let seen = context.performAndWait { (context.object(with: counterID) as! Counter).value }
            #expect(seen == queues * increments)
        }
        // How many more conflicts occur depends on how the workers overlap (with the CPUs busy
        // they may run one after the other); either way, a save that conflicted committed
        // nothing: the store received the insert and one commit per increment.
        #expect(conflicts.value >= queues - 1)
        #expect(store.commits.count == 1 + queues * increments)
    }

    @Test("a context on a concurrent queue traps, saying the queue is not serial")
    func concurrentQueueIsMisuse() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let manager = ContextManager(delegate: TestStoreDelegate())
            let queue = DispatchQueue(label: "parallel", attributes: .concurrent)
            let context = try manager.createContext(for: queue)
            let inside = DispatchSemaphore(value: 0)
            let never = DispatchSemaphore(value: 0)
            queue.async {
                context.performAndWait {
                    inside.signal()
                    never.wait()
                }
            }
            inside.wait()
            queue.sync {
                context.performAndWait {}
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("entered by two threads at once"))
        #expect(message.contains("'parallel' is not serial"))
    }
}
