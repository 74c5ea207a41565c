import Dispatch
import Foundation

/// Transforms a stream of work items on worker threads while the calling thread consumes the results
/// in input order: the pattern of parsing ahead while the caller maps and writes what was parsed.
///
/// At most `window` items are in flight (taken from the iterator and not yet consumed), so memory holds
/// that many items and results, never the whole stream. The iterator and `consume` run on the calling
/// thread only; `transform` runs on up to `workers` threads at once and must not touch shared mutable
/// state. With one worker, everything runs inline on the calling thread, in order.
///
/// ```swift
/// try OrderedParallelMap.run(files.makeIterator(), workers: 2, window: 4, transform: parse) { parsed in
///     try write(parsed)
/// }
/// ```
public enum OrderedParallelMap {
    /// The number of workers to use by default: one per active core.
    public static var defaultWorkers: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// Runs `transform` over every item of `items` on up to `workers` threads and hands the results to
    /// `consume` in input order. When `consume` throws, the items in flight finish, their results are
    /// dropped, and the error is rethrown.
    ///
    /// With a `cost` (the bytes of a file, say), items in flight are also bounded by `budget`: many
    /// small ones can be ahead, few large ones (one at least).
    ///
    /// With `priority` ``WorkerPriority/yielding``, the workers run behind the process's other threads,
    /// for work that feeds a slower stage elsewhere.
    public static func run<Items: IteratorProtocol, Output>(
        _ items: Items, workers: Int = defaultWorkers, window: Int? = nil,
        cost: ((Items.Element) -> Int)? = nil, budget: Int = .max, priority: WorkerPriority = .normal,
        transform: @escaping @Sendable (Items.Element) -> Output, consume: (Output) throws -> Void
    ) rethrows {
        var items = items
        guard workers > 1 else {
            while let item = items.next() { try consume(transform(item)) }
            return
        }
        let window = max(workers, window ?? workers * 2)
        let results = ResultSlots<Output>()
        let slots = DispatchSemaphore(value: workers)
        let group = DispatchGroup()
        let ownThreads = priority == .yielding ? YieldingWorkerThreads(count: workers) : nil
        defer {
            group.wait()  // nothing outlives the call, even when `consume` throws
            ownThreads?.finish()
        }
        var submitted = 0
        var consumed = 0
        var costs: [Int: Int] = [:]
        var costInFlight = 0
        while true {
            while submitted - consumed < window, submitted == consumed || costInFlight < budget, let item = items.next() {
                let position = submitted
                if let cost {
                    let itemCost = cost(item)
                    costs[position] = itemCost
                    costInFlight += itemCost
                }
                let box = UncheckedBox(item)
                submitted += 1
                group.enter()
                if let ownThreads {
                    // At most `workers` threads: no slot to take.
                    ownThreads.submit {
                        results.put(transform(box.value), at: position)
                        group.leave()
                    }
                } else {
                    DispatchQueue.global().async {
                        slots.wait()
                        let output = transform(box.value)
                        slots.signal()
                        results.put(output, at: position)
                        group.leave()
                    }
                }
            }
            guard consumed < submitted else { return }
            let output = results.take(consumed)
            costInFlight -= costs.removeValue(forKey: consumed) ?? 0
            consumed += 1
            try consume(output)
        }
    }
}

/// Results by position, each taken once by the consuming thread.
// Unchecked: `ready` is touched only while `condition` is locked; a condition variable (waiting for a
// slot to fill) is what Mutex cannot do.
private final class ResultSlots<Output>: @unchecked Sendable {
    private let condition = NSCondition()
    private var ready: [Int: Output] = [:]

    func put(_ output: Output, at position: Int) {
        condition.lock()
        ready[position] = output
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for the result at `position` and removes it.
    func take(_ position: Int) -> Output {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let output = ready.removeValue(forKey: position) { return output }
            condition.wait()
        }
    }
}
