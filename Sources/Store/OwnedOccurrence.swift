import CareModel
import Foundation

/// The rule every store's writer applies to an outcome: it names an occurrence of its task version's
/// schedule that lies in the time that version owns (from its effective date to the next version's).
public enum OwnedOccurrence {
    /// The start of `outcome`'s occurrence in `task`, the version its `taskUUID` names (in effect from
    /// `effectiveDate` until `nextEffectiveDate`, a tombstone when `deleted`); the store's refusal when the
    /// outcome names another task, a deleted one, an occurrence the schedule lacks, or one outside the version.
    public static func eventStart(
        of outcome: Outcome, in task: CareTask, effectiveDate: Date, nextEffectiveDate: Date?, deleted: Bool
    ) throws -> Date {
        let taskID = task.id
        if let named = outcome.taskID, named != taskID {
            throw StoreError.invalidEntity(
                kind: .outcome, id: outcome.id,
                reason: "taskUUID \(outcome.taskUUID.uuidString) is a version of task '\(taskID)', not of '\(named)'")
        }
        if deleted { throw StoreError.entityDeleted(kind: .task, id: taskID) }
        let index = outcome.taskOccurrenceIndex
        guard let eventStart = task.schedule.eventStart(occurrence: index) else {
            throw StoreError.occurrenceNotFound(taskID: taskID, taskUUID: outcome.taskUUID, occurrenceIndex: index)
        }
        let outsideBefore = eventStart < effectiveDate
        let outsideAfter = nextEffectiveDate.map { eventStart >= $0 } ?? false
        if outsideBefore || outsideAfter {
            throw StoreError.occurrenceOutsideVersion(
                taskID: taskID, taskUUID: outcome.taskUUID, occurrenceIndex: index, eventStart: eventStart,
                versionStart: effectiveDate, versionEnd: nextEffectiveDate)
        }
        return eventStart
    }
}
