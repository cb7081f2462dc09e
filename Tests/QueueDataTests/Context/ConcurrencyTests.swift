import Dispatch
import Foundation
import QueueData
import Testing

@Suite("Concurrency")
struct ConcurrencyTests {
    @Test("8 queues × 100 saves: no object is lost and every context converges")
    func manySaversConverge() throws {
        let queues = 8
        let saves = 100
        let manager = makeManager()
        let contexts = try (0..<queues).map { try makeContext(manager, "saver-\($0)") }
        // One counter per queue, registered in every context so that each merge updates it.
        let counterIDs: [ObjectID] = try contexts[0].performAndWait {
            let counters = (0..<queues).map { owner in
                let counter = contexts[0].insert(Counter.self)
                counter.owner = owner
                return counter
            }
            try contexts[0].save()
            return counters.map(\.objectID)
        }
        for context in contexts {
            try context.performAndWait {
                _ = try context.fetch(FetchRequest<Counter>())
            }
        }

        DispatchQueue.concurrentPerform(iterations: queues) { owner in
            let context = contexts[owner]
            for sequence in 1...saves {
                context.performAndWait {
                    let item = context.insert(Item.self)
                    item.owner = owner
                    item.sequence = sequence
                    (context.object(with: counterIDs[owner]) as! Counter).value = sequence
                    do {
                        try context.save()
                    } catch {
                        Issue.record("save \(sequence) of \(owner) failed: \(error)")
                    }
                }
            }
        }

        // Every merge was queued before the save that caused it returned.
        for context in contexts {
            try context.performAndWait {
                #expect(!context.hasChanges)
                let items = try context.fetch(FetchRequest<Item>())
                #expect(items.count == queues * saves)
                let perOwner = Dictionary(grouping: items, by: \.owner).mapValues { Set($0.map(\.sequence)) }
                #expect(perOwner.count == queues)
                #expect(perOwner.values.allSatisfy { $0 == Set(1...saves) })
                let counters = counterIDs.map { (context.object(with: $0) as! Counter).value }
                #expect(counters == Array(repeating: saves, count: queues))
                #expect(counterIDs.allSatisfy { !(context.object(with: $0)!.isUpdated) })
            }
        }
    }

    @Test("performAndWait is re-entrant on the context's queue, also across nested contexts")
    func reentrancy() throws {
        let manager = makeManager()
        let a = try makeContext(manager, "a")
        let b = try makeContext(manager, "b")
        let value = try a.performAndWait {
            let destination = a.insert(Destination.self)
            destination.name = "outer"
            return try a.performAndWait {
                try b.performAndWait {
                    // Still inside a's block: a's objects stay usable here.
                    let nested = a.performAndWait { destination.name }
                    b.insert(Destination.self).name = nested
                    try b.save()
                    return nested
                }
            }
        }
        #expect(value == "outer")
        a.queue.sync {
            // A plain block on the queue, outside perform: the slow confinement path.
            #expect(a.insertedObjects.count == 1)
        }
    }

    @Test("objects are usable in plain blocks on their queue and on a queue that targets it, from many threads")
    func plainBlocksOnTheQueue() throws {
        let manager = makeManager()
        let queue = DispatchQueue(label: "plain-owner")
        let context = try manager.createContext(for: queue)
        let inner = DispatchQueue(label: "plain-inner", target: queue)
        let box = ObjectBox()
        context.performAndWait { box.object = context.insert(Destination.self) }
        let group = DispatchGroup()
        for round in 0..<400 {
            // Some before the queue's first plain block has run, most after; from other threads
            // through sync and async, directly and through the queue that targets it.
            let target = round % 3 == 0 ? inner : queue
            if round % 2 == 0 {
                target.async(group: group) { (box.object as! Destination).rating += 1 }
            } else {
                DispatchQueue.global().async(group: group) {
                    target.sync { (box.object as! Destination).rating += 1 }
                }
            }
        }
        group.wait()
        #expect(queue.sync { (box.object as! Destination).rating } == 400)
        #expect(inner.sync { context.insertedObjects.count } == 1)
    }

    @Test("perform runs blocks in order, and the async form returns values and rethrows errors")
    func performVariants() async throws {
        let context = try makeContext(makeManager(), "perform")
        // In async code Swift picks the async overload; fire-and-forget is called from
        // synchronous code.
        let schedule = {
            for index in 0..<50 {
                context.perform {
                    context.insert(Destination.self).rating = index
                }
            }
        }
        schedule()
        let ratings = try await context.perform {
            try context.fetch(FetchRequest<Destination>()).map(\.rating)
        }
        #expect(ratings == Array(0..<50))
        let plain: Int = await context.perform { 7 }
        #expect(plain == 7)
        await #expect(throws: ValidationError.self) {
            try await context.perform {
                context.insert(Trip.self)
                try context.save()
            }
        }
    }

    @Test("many threads entering one context through perform and performAndWait keep every change")
    func concurrentEntry() async throws {
        let context = try makeContext(makeManager(), "shared")
        DispatchQueue.concurrentPerform(iterations: 200) { index in
            if index.isMultiple(of: 2) {
                context.performAndWait { context.insert(Item.self).sequence = index }
            } else {
                context.perform { context.insert(Item.self).sequence = index }
            }
        }
        let sequences = try await context.perform {
            try context.save()
            return try context.fetch(FetchRequest<Item>()).map(\.sequence)
        }
        #expect(Set(sequences) == Set(0..<200))
    }
}
