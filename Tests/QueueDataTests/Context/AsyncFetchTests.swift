import Dispatch
import Foundation
import Testing

@testable import QueueData

@Suite("Asynchronous fetch")
struct AsyncFetchTests {
    @Test(
        "without pending changes, every fetch form reads related objects committed, as the asynchronous ones do",
        arguments: [false, true])
    func relationshipsWithoutPendingChanges(inChildOnSameQueue: Bool) async throws {
        let manager = graphManager("memory", TemporaryDirectory("async-relationships"))
        let root = try makeContext(manager, "async-relationships")
        let request = FetchRequest<Expedition>(
            predicate: #Predicate { $0.leader?.name == "Ada" }, sortBy: [SortDescriptor(\.title)],
            includesPendingChanges: false)
        let ids = try root.performAndWait {
            let ada = root.insert(Explorer.self)
            ada.name = "Ada"
            let expeditions = ["Nile", "Andes", "Gobi"].map { title in
                let expedition = root.insert(Expedition.self)
                expedition.title = title
                expedition.leader = ada
                return expedition
            }
            try root.save()
            return expeditions.sorted { $0.title < $1.title }.map(\.objectID)
        }
        // A child on the parent's own queue: its committed view is the parent's, read inline.
        let context = inChildOnSameQueue ? root.performAndWait { root.newChildContext(for: root.queue) } : root
        try context.performAndWait {
            let ada = try context.first(Explorer.self, where: #Predicate { $0.name == "Ada" })
            ada.name = "Grace"  // unsaved: the committed graph still says "Ada"
            let gobi = try context.existingObject(with: ids[1], as: Expedition.self)
            context.delete(gobi)  // a pending deletion: still committed
            context.insert(Expedition.self).leader = ada  // a pending insert: not committed
        }
        try context.performAndWait {
            #expect(try context.fetch(request).map(\.objectID) == ids)
            #expect(try context.fetchObjectIDs(request) == ids)
            #expect(try context.count(for: request) == 3)
            #expect(
                try context.fetchValues(request, properties: ["title"]).map { $0["title"] } == [
                    .string("Andes"), .string("Gobi"), .string("Nile"),
                ])
            var enumerated: [ObjectID] = []
            try context.enumerate(request, batchSize: 2) { enumerated.append($0.objectID) }
            #expect(enumerated == ids)
            var paged = request
            paged.fetchOffset = 1
            paged.fetchLimit = 1
            #expect(try context.fetch(paged).map(\.objectID) == [ids[1]])
            #expect(try context.count(for: paged) == 1)
            // With pending changes, the leader's new name counts.
            var current = request
            current.includesPendingChanges = true
            #expect(try context.fetch(current).isEmpty)
        }
        // The asynchronous forms agree (the objects delivered leave out the context's pending
        // deletion, as documented for them).
        #expect(try await context.fetchObjectIDs(request) == ids)
        #expect(try await context.fetch(request) { $0.map(\.objectID) } == [ids[0], ids[2]])
    }

    @Test("enumerating without pending changes through relationships lets each batch go, as any enumeration")
    func committedEnumerationLetsBatchesGo() throws {
        let manager = graphManager("memory", TemporaryDirectory("committed-enumeration"))
        let context = try makeContext(manager, "committed-enumeration")
        let request = FetchRequest<Expedition>(
            predicate: #Predicate { $0.leader?.name == "Ada" }, sortBy: [SortDescriptor(\.title)],
            includesPendingChanges: false)
        try context.performAndWait {
            let ada = context.insert(Explorer.self)
            ada.name = "Ada"
            for index in 0..<40 {
                let expedition = context.insert(Expedition.self)
                expedition.title = "E\(100 + index)"
                expedition.leader = ada
            }
            try context.save()
            context.reset()
            // A pending change, so that the request runs on the committed graph.
            let leader = try context.first(Explorer.self, where: #Predicate { $0.name == "Ada" })
            leader.name = "Grace"
            let before = context.registeredObjects.count
            var most = 0
            var kept: [Expedition] = []
            var titles: [String] = []
            try context.enumerate(request, batchSize: 5) { expedition in
                titles.append(expedition.title)
                most = max(most, context.registeredObjects.count)
                if expedition.title == "E110" {
                    kept.append(expedition)  // referenced: stays
                } else if expedition.title == "E120" {
                    expedition.title = "E120 changed"  // changed: stays
                }
            }
            #expect(titles == (0..<40).map { "E\(100 + $0)" })
            #expect(most <= before + 2 + 5, "\(most) registered at most, \(before) before")  // the two kept, a batch
            #expect(
                Set(context.registeredObjects.compactMap { ($0 as? Expedition)?.title }) == ["E110", "E120 changed"])
            #expect(context.registeredObjects.count == before + 2)
            #expect(kept.count == 1)
        }
    }

    @Test("results are matched off the queue, then registered and delivered on the context's queue")
    func deliversOnQueue() async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "async-fetch")
        try seedDestinations(context, (0..<50).map { "D\($0)" })
        let request = FetchRequest<Destination>(
            predicate: #Predicate { $0.rating % 2 == 0 }, sortBy: [SortDescriptor(\.rating, order: .reverse)],
            fetchLimit: 5, fetchOffset: 1)
        let delivered: [String] = try await withCheckedThrowingContinuation { continuation in
            context.fetch(request) { result in
                dispatchPrecondition(condition: .onQueue(context.queue))
                continuation.resume(
                    with: result.map { objects in
                        // The delivered objects are the context's registered instances.
                        let again = try! context.fetch(request)
                        precondition(zip(objects, again).allSatisfy { $0 === $1 })
                        return objects.map(\.name)
                    })
            }
        }
        #expect(delivered == ["D46", "D44", "D42", "D40", "D38"])
        #expect(request.fetchLimit == 5 && request.fetchOffset == 1 && !request.sortDescriptors.isEmpty)
    }

    @Test("the async forms: objects handed to a block on the queue, or IDs without using the queue")
    func asyncForms() async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "async-forms")
        try seedDestinations(context, ["A", "B", "C"])
        let names = try await context.fetch(FetchRequest<Destination>(sortBy: [SortDescriptor(\.name)])) { objects in
            dispatchPrecondition(condition: .onQueue(context.queue))
            return objects.map(\.name)
        }
        #expect(names == ["A", "B", "C"])
        let ids = try await context.fetchObjectIDs(FetchRequest<Destination>(predicate: #Predicate { $0.name != "B" }))
        #expect(ids.count == 2)
    }

    @Test(
        "a large result is registered a slice per block: other blocks run on the queue in between",
        arguments: ["completion", "async"])
    func registersInSlices(form: String) async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "async-slices-\(form)")
        let total = ManagedObjectContext.asynchronousRegistrationSlice * 5
        try context.performAndWait {
            for index in 0..<total {
                context.insert(Destination.self).rating = index
            }
            try context.save()
            context.reset()
        }
        // One probe at a time on the context's queue, each recording how many objects were
        // registered when it ran, until the fetch is delivered.
        let finished = AtomicCounter()
        let partial = AtomicCounter()
        let prober = Thread {
            let probed = DispatchSemaphore(value: 0)
            while finished.value == 0 {
                context.queue.async {
                    let registered = context.performAndWait { context.registeredObjects.count }
                    if registered > 0 && registered < total {
                        partial.increment()
                    }
                    probed.signal()
                }
                probed.wait()
            }
        }
        prober.start()
        let count: Int
        if form == "async" {
            count = try await context.fetch(FetchRequest<Destination>()) { $0.count }
        } else {
            count = try await withCheckedThrowingContinuation { continuation in
                context.fetch(FetchRequest<Destination>()) { continuation.resume(with: $0.map(\.count)) }
            }
        }
        finished.increment()
        #expect(count == total)
        #expect(partial.value > 0, "no other block ran while the objects were being registered")
    }

    @Test("committed rows are matched: pending inserts are not delivered, objects deleted meanwhile are left out")
    func committedOnly() async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "async-pending")
        try seedDestinations(context, ["A", "B"])
        try context.performAndWait {
            context.insert(Destination.self).name = "pending"
            context.delete(try context.fetch(FetchRequest<Destination>(predicate: #Predicate { $0.name == "B" }))[0])
        }
        let names = try await context.fetch(FetchRequest<Destination>()) { $0.map(\.name) }
        #expect(names == ["A"])
    }

    @Test("an error of the predicate is delivered, on the context's queue")
    func deliversErrors() async throws {
        let manager = makeManager()
        let context = try makeContext(manager, "async-error")
        try seedDestinations(context, ["never visited"])
        let past = Date.distantPast
        let request = FetchRequest<Destination>(predicate: #Predicate { $0.visited! > past })
        let failure: (any Error)? = await withCheckedContinuation { continuation in
            context.fetch(request) { result in
                dispatchPrecondition(condition: .onQueue(context.queue))
                if case .failure(let error) = result {
                    continuation.resume(returning: error)
                } else {
                    continuation.resume(returning: nil)
                }
            }
        }
        #expect(failure != nil)
        await #expect(throws: (any Error).self) { try await context.fetch(request) { $0.count } }
    }

    @Test("many asynchronous fetches interleaved with saves each deliver a consistent result")
    func concurrentWithSaves() async throws {
        let manager = makeManager()
        let writer = try makeContext(manager, "async-writer")
        let reader = try makeContext(manager, "async-reader")
        try seedDestinations(writer, ["seed"])
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for round in 0..<50 {
                group.addTask {
                    try await writer.performChanges { writer.insert(Destination.self).name = "R\(round)" }
                    return try await reader.fetch(FetchRequest<Destination>()) { $0.count }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(counts.allSatisfy { (2...51).contains($0) })
        #expect(try await reader.fetch(FetchRequest<Destination>()) { $0.count } == 51)
    }
}
