import Foundation

/// An occurrence of a task joined to its outcome, if any (CareKit `OCKEvent`). Events are computed from
/// the task version's schedule, never stored.
/// (CareKit's `OCKEvent` and `OCKScheduleEvent` are not `Codable`; these are, with synthesized keys, for
/// CareGate's own JSON output.)
public struct Event: Sendable, Hashable, Codable {
    /// The task version that owns this occurrence.
    public var task: CareTask
    /// The outcome recorded for this occurrence, if the patient did it.
    public var outcome: Outcome?
    /// When the occurrence happens and its index.
    public var scheduleEvent: ScheduleEvent

    public init(task: CareTask, outcome: Outcome?, scheduleEvent: ScheduleEvent) {
        self.task = task
        self.outcome = outcome
        self.scheduleEvent = scheduleEvent
    }
}
