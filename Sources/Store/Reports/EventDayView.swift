import CareModel
import Foundation

/// The events of one patient as a person reads them: one heading per day, one line per event with its
/// time, task, occurrence and what was recorded. Times are shown in `timeZone`.
///
/// ```
/// 2025-03-01 Saturday
///   08:00-08:30  Measure blood pressure  (task t1, occurrence 0)  done: 120 mmHg
///   18:00-18:30  Take medication  (task t2, occurrence 0)  not done
/// ```
public struct EventDayView: Sendable {
    public var timeZone: TimeZone

    public init(timeZone: TimeZone) {
        self.timeZone = timeZone
    }

    /// The lines of `events` (as ``Store/events(patientID:in:)`` returns them, in time order) that follow
    /// earlier ones whose last day was `currentDay`: a day heading only when the day changes, so that
    /// output can be written as it is computed.
    public func render(_ events: [Event], continuing currentDay: inout DateComponents?) -> [String] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        var lines: [String] = []
        for event in events {
            let start = event.scheduleEvent.start
            let day = calendar.dateComponents([.year, .month, .day, .weekday], from: start)
            if day != currentDay {
                currentDay = day
                lines.append("\(dayText(start)) \(calendar.weekdaySymbols[(day.weekday ?? 1) - 1])")
            }
            let time = allDay(event) ? "all day    " : "\(timeText(start))-\(timeText(event.scheduleEvent.end))"
            let title = event.task.title ?? event.task.id
            lines.append("  \(time)  \(title)  (task \(event.task.id), occurrence \(event.scheduleEvent.occurrence))  \(status(event))")
        }
        return lines
    }

    private func allDay(_ event: Event) -> Bool {
        event.scheduleEvent.element.duration == .allDay
    }

    private func status(_ event: Event) -> String {
        guard let outcome = event.outcome else { return "not done" }
        let values = outcome.values.map(Self.text)
        return values.isEmpty ? "done" : "done: " + values.joined(separator: ", ")
    }

    static func text(_ value: OutcomeValue) -> String {
        let number: String
        switch value.value {
        case .integer(let v): number = String(v)
        case .double(let v): number = v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
        case .boolean(let v): number = v ? "yes" : "no"
        case .text(let v): number = "\"\(v)\""
        case .binary(let v): number = "\(v.count) bytes"
        case .date(let v): number = v.formatted(.iso8601)
        }
        return [number, value.units].compactMap { $0 }.joined(separator: " ")
    }

    private func dayText(_ date: Date) -> String {
        var style = Date.ISO8601FormatStyle(timeZone: timeZone)
        style = style.year().month().day()
        return date.formatted(style)
    }

    private func timeText(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }
}
