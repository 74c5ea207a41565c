import Foundation

/// One computed occurrence of a schedule (CareKit `OCKScheduleEvent`): when it starts and ends, which
/// element produced it, and its occurrence index counted across all elements of the schedule.
public struct ScheduleEvent: Sendable, Hashable, Codable {
    public var start: Date
    public var end: Date
    public var element: ScheduleElement
    /// The occurrence index across the whole schedule (what an outcome's `taskOccurrenceIndex` names).
    public var occurrence: Int

    public init(start: Date, end: Date, element: ScheduleElement, occurrence: Int) {
        self.start = start
        self.end = end
        self.element = element
        self.occurrence = occurrence
    }
}
