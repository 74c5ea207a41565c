import CareModel
import Foundation

/// What outcome checks and event queries need of a task version, decoded once and shared by the
/// batches and queries of one store.
///
/// A version's content (its schedule) never changes once stored; only its link to a later version does.
/// Entries are published only after the batch that read or changed them has committed, entries of task
/// versions a batch changes are dropped, and everything is dropped when another connection (another
/// process) has committed since (`PRAGMA data_version`), so the cache never shows uncommitted or stale
/// version links.
final class TaskVersionCache: @unchecked Sendable {
    /// A task version as outcome checks see it (a class: it is passed around once per outcome).
    final class Version: @unchecked Sendable {
        let task: CareTask
        let effectiveDate: Date
        let nextEffectiveDate: Date?
        let deleted: Bool

        init(task: CareTask, effectiveDate: Date, nextEffectiveDate: Date?, deleted: Bool) {
            self.task = task
            self.effectiveDate = effectiveDate
            self.nextEffectiveDate = nextEffectiveDate
            self.deleted = deleted
        }
    }

    private let lock = NSLock()
    private var versions: [UUID: Version] = [:]
    /// Decoded task content by version uuid, which stays true for the life of the file.
    private var contents: [UUID: CareTask] = [:]
    private var dataVersion: Int64?
    private let limit: Int

    /// `limit` bounds each of the two tables (a bulk import writes hundreds of thousands of tasks, each a
    /// few kilobytes decoded); a full table is emptied and fills again from the database.
    init(limit: Int = 30_000) {
        self.limit = limit
    }

    func version(_ uuid: UUID) -> Version? {
        lock.lock()
        defer { lock.unlock() }
        return versions[uuid]
    }

    /// The decoded content of task version `uuid` (its version fields as when it was decoded).
    func content(_ uuid: UUID) -> CareTask? {
        lock.lock()
        defer { lock.unlock() }
        return contents[uuid]
    }

    func insertContent(_ task: CareTask) {
        lock.lock()
        defer { lock.unlock() }
        if contents.count >= limit { contents.removeAll(keepingCapacity: true) }
        contents[task.uuid] = task
    }

    /// Drops everything if the database was changed by another connection since the last check.
    func validate(dataVersion current: Int64) {
        lock.lock()
        defer { lock.unlock() }
        if dataVersion != current {
            versions.removeAll(keepingCapacity: true)
            dataVersion = current
        }
    }

    /// After a commit: keeps what the batch read, drops what it changed.
    func publish(_ read: [UUID: Version], changed: Set<UUID>) {
        lock.lock()
        defer { lock.unlock() }
        for uuid in changed { versions[uuid] = nil }
        if versions.count + read.count > limit { versions.removeAll(keepingCapacity: true) }
        if contents.count + read.count > limit { contents.removeAll(keepingCapacity: true) }
        for (uuid, version) in read {
            versions[uuid] = version
            contents[uuid] = version.task
        }
    }
}
