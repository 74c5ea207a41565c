import CareModel
import Foundation
import GRDB

/// The task versions outcomes name: found through the store's ``TaskVersionCache`` (task versions
/// decoded once for all batches), this batch's own reads and writes, or the database, and the rule
/// that an outcome names an occurrence its task version owns.
extension BatchWriter {
    /// The task version an outcome names, and the start of its occurrence, which must exist in the
    /// schedule and lie in the time that version owns.
    mutating func ownedOccurrence(of outcome: Outcome) throws -> (TaskVersion, Date) {
        let task = try taskVersion(outcome.taskUUID)
        let eventStart = try OwnedOccurrence.eventStart(
            of: outcome, in: task.task, effectiveDate: task.effectiveDate, nextEffectiveDate: task.nextEffectiveDate, deleted: task.deleted)
        return (task, eventStart)
    }

    mutating func taskVersion(_ uuid: UUID) throws -> TaskVersion {
        // Outcomes of a long run are checked in batch order, but a batch often holds a task's outcomes
        // one after the other: then most lookups ask for the previous one again.
        if let last = lastTaskVersion, last.uuid == uuid { return last.version }
        let version = try readTaskVersion(uuid)
        lastTaskVersion = (uuid, version)
        return version
    }

    mutating func readTaskVersion(_ uuid: UUID) throws -> TaskVersion {
        if let known = taskVersionsRead[uuid] { return known }
        if !taskVersionsChanged.contains(uuid), let cached = taskCache.version(uuid) {
            taskVersionsRead[uuid] = cached
            return cached
        }
        let statement = try db.cachedStatement(sql: "SELECT * FROM task WHERE uuid = ?")
        guard let row = try Row.fetchOne(statement, arguments: [uuid]) else {
            throw StoreError.versionNotFound(kind: .task, uuid: uuid)
        }
        let task = try codec.decode(CareTask.self, row)
        let version = TaskVersion(
            task: task, effectiveDate: task.effectiveDate, nextEffectiveDate: row.date("nextEffectiveDate"),
            deleted: task.deletedDate != nil)
        taskVersionsRead[uuid] = version
        taskVersionsFetched[uuid] = version
        return version
    }

    mutating func forgetTaskVersion(_ uuid: UUID) {
        lastTaskVersion = nil
        taskVersionsRead[uuid] = nil
        taskVersionsFetched[uuid] = nil
        taskVersionsChanged.insert(uuid)
    }

    func with(_ outcome: Outcome, uuid: UUID) -> Outcome {
        var outcome = outcome
        outcome.metadata.uuid = uuid
        return outcome
    }

    func with(_ outcome: Outcome, taskID: String) -> Outcome {
        var outcome = outcome
        outcome.taskID = taskID
        return outcome
    }

    /// `<taskUUID>_<occurrenceIndex>`, CareKit's outcome id, split into its parts.
    static func parseOutcomeID(_ id: String) -> (UUID, Int)? {
        // By bytes: this runs for every outcome id a batch or a query names.
        guard let separator = id.utf8.lastIndex(of: UInt8(ascii: "_")),
              let uuid = UUID(canonical: id[..<separator]),
              let index = Int(id[id.index(after: separator)...])
        else { return nil }
        return (uuid, index)
    }
}
