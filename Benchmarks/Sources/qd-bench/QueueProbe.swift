import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Measures how responsive a serial queue is: from a thread of its own, submits an empty
/// block to the queue about every `interval`, without waiting for the previous one, and
/// records how long each waited between submission and execution.
///
/// A queue blocked for `t` makes the probes submitted meanwhile wait up to `t`.
///
/// `@unchecked Sendable`: the probing thread, the probed queue and the caller share the
/// state only under `lock`.
final class QueueProbe: @unchecked Sendable {
    private let queue: DispatchQueue
    private let lock = NSLock()
    private var latencies: [Double] = []
    private var isProbing = true
    private let stopped = DispatchSemaphore(value: 0)

    /// Starts probing `queue` every `interval` seconds.
    init(_ queue: DispatchQueue, interval: Double = 0.001) {
        self.queue = queue
        let microseconds = useconds_t(interval * 1e6)
        // A thread, not a Dispatch queue: the probes must keep coming when every worker
        // thread of the 2 cores is busy.
        Thread.detachNewThread { [self] in
            while lock.withLock({ isProbing }) {
                let submitted = DispatchTime.now().uptimeNanoseconds
                queue.async {
                    let latency = Double(DispatchTime.now().uptimeNanoseconds - submitted) / 1e9
                    self.lock.withLock { self.latencies.append(latency) }
                }
                usleep(microseconds)
            }
            stopped.signal()
        }
    }

    /// Stops probing, waits for the probes already submitted to run, and returns their
    /// latencies in seconds, sorted.
    func stop() -> [Double] {
        lock.withLock { isProbing = false }
        stopped.wait()
        // The queue is serial: once this runs, every probe submitted before it has.
        queue.sync {}
        return lock.withLock { latencies.sorted() }
    }
}
