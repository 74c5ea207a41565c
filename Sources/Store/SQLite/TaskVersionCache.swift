import CareModel
import Foundation

/// Decoded task versions by uuid, shared by the batches and queries of one store.
///
/// A version's content never changes once stored (only its links to later versions do, and those are
/// read from the row each time), so a decoded task stays valid for the life of the store. Decoding a
/// task's schedule is the dearest step of both attaching outcomes and computing events; this keeps it
/// to once per version.
final class TaskVersionCache: @unchecked Sendable {
    private let lock = NSLock()
    private var tasks: [UUID: CareTask] = [:]
    private let limit: Int

    init(limit: Int = 200_000) {
        self.limit = limit
    }

    func task(_ uuid: UUID) -> CareTask? {
        lock.lock()
        defer { lock.unlock() }
        return tasks[uuid]
    }

    func insert(_ task: CareTask) {
        lock.lock()
        defer { lock.unlock() }
        if tasks.count >= limit { tasks.removeAll(keepingCapacity: true) }
        tasks[task.uuid] = task
    }
}
