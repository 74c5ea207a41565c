import CareModel
import Foundation
import Synchronization

/// What outcome checks and event queries need of a task version, decoded once and shared by the
/// batches and queries of one store.
///
/// A version's content (its schedule) never changes once stored; only its link to a later version does.
/// Entries are published only after the batch that read or changed them has committed, entries of task
/// versions a batch changes are dropped, and everything is dropped when another connection (another
/// process) has committed since (`PRAGMA data_version`), so the cache never shows uncommitted or stale
/// version links.
final class TaskVersionCache: Sendable {
    /// A task version as outcome checks see it (a class: it is passed around once per outcome).
    final class Version: Sendable {
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

    private struct Tables {
        var versions: [UUID: Version] = [:]
        /// Decoded task content by version uuid, which stays true for the life of the file.
        var contents: [UUID: CareTask] = [:]
        var dataVersion: Int64?
    }

    private let tables = Mutex(Tables())
    private let limit: Int

    /// `limit` bounds each of the two tables (a bulk import writes hundreds of thousands of tasks, each a
    /// few kilobytes decoded); a full table is emptied and fills again from the database.
    init(limit: Int = 30_000) {
        self.limit = limit
    }

    func version(_ uuid: UUID) -> Version? {
        tables.withLock { $0.versions[uuid] }
    }

    /// The decoded content of task version `uuid` (its version fields as when it was decoded).
    func content(_ uuid: UUID) -> CareTask? {
        tables.withLock { $0.contents[uuid] }
    }

    func insertContent(_ task: CareTask) {
        tables.withLock { tables in
            if tables.contents.count >= limit { tables.contents.removeAll(keepingCapacity: true) }
            tables.contents[task.uuid] = task
        }
    }

    /// Drops everything if the database was changed by another connection since the last check.
    func validate(dataVersion current: Int64) {
        tables.withLock { tables in
            if tables.dataVersion != current {
                tables.versions.removeAll(keepingCapacity: true)
                tables.dataVersion = current
            }
        }
    }

    /// After a commit: keeps what the batch read, drops what it changed.
    func publish(_ read: [UUID: Version], changed: Set<UUID>) {
        tables.withLock { tables in
            for uuid in changed { tables.versions[uuid] = nil }
            if tables.versions.count + read.count > limit { tables.versions.removeAll(keepingCapacity: true) }
            if tables.contents.count + read.count > limit { tables.contents.removeAll(keepingCapacity: true) }
            for (uuid, version) in read {
                tables.versions[uuid] = version
                tables.contents[uuid] = version.task
            }
        }
    }
}
