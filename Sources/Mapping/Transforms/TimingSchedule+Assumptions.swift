import CareModel
import FHIR
import Foundation

/// The parts of a schedule the Timing leaves open: an end after a count of occurrences, the start or
/// the schedule assumed when the data does not say (each reported), and a Duration added to a date.
extension TimingSchedule {
    /// The instant just after the `count`-th occurrence of all the specs together, in time order.
    func endAfter(_ count: Int, specs: [(start: Date, interval: DateComponents, allDay: Bool)], duration: ScheduleElement.Duration?) -> Date? {
        var schedules: [ScheduleElement] = []
        for spec in specs {
            if let element = try? ScheduleElement(
                start: spec.start, end: nil, interval: spec.interval, duration: spec.allDay ? .allDay : .hours(1), timeZone: timeZone) {
                schedules.append(element)
            }
        }
        guard let schedule = try? Schedule(composing: schedules), let start = schedule.eventStart(occurrence: count - 1) else { return nil }
        return start.addingTimeInterval(1)
    }

    func element(
        start: Date, end: Date?, interval: DateComponents, duration: ScheduleElement.Duration, text: String?, targets: [OutcomeValue], path: String
    ) throws(MappingFailure) -> ScheduleElement {
        do {
            return try ScheduleElement(
                start: start, end: end, interval: interval, text: text, targetValues: targets, duration: duration, timeZone: timeZone)
        } catch {
            throw MappingFailure(at: path, "cannot make a schedule: \(error)")
        }
    }

    /// `start`, or, when nothing gives one, the start every such schedule is given (a warning at `path`
    /// says `missing` and the day assumed).
    mutating func knownStart(_ start: Date?, at path: String, missing: String) -> Date {
        if let start { return start }
        let assumed = Self.unknownStart(in: timeZone)
        notes.append(MappingNote(.warning, at: path, "\(missing): assumed to start \(Self.isoDay(assumed, timeZone))"))
        return assumed
    }

    /// The schedule assumed when the data does not say (reported as such).
    mutating func assumed(
        _ rule: DefaultRule, start: Date?, end: Date?, targets: [OutcomeValue], text: String?, path: String, reason: String
    ) throws(MappingFailure) -> Schedule? {
        if rule == .none { return nil }
        let startDate = knownStart(start, at: path, missing: "no start date")
        let element: ScheduleElement
        switch rule {
        case .dailyAllDay:
            element = try self.element(start: startDate, end: end, interval: DateComponents(day: 1), duration: .allDay, text: text, targets: targets, path: path)
        case .daily:
            let day = calendar.startOfDay(for: startDate)
            let first = calendar.date(bySettingHour: wakingHours.startMinutes / 60, minute: wakingHours.startMinutes % 60, second: 0, of: day) ?? day
            element = try self.element(start: first, end: end, interval: DateComponents(day: 1), duration: .hours(1), text: text, targets: targets, path: path)
        case .once, .none:
            // One occurrence: over start..end when the mapping gives an end after the start (a Task's
            // restriction.period), else all day on the start's day.
            let duration: ScheduleElement.Duration = end.map { $0 > startDate ? .seconds($0.timeIntervalSince(startDate)) : .allDay } ?? .allDay
            element = try self.element(start: startDate, end: startDate.addingTimeInterval(1), interval: DateComponents(day: 1), duration: duration, text: text, targets: targets, path: path)
        }
        notes.append(MappingNote(.info, at: path, "\(reason): assumed \(rule.description)"))
        do {
            return try Schedule(composing: [element])
        } catch {
            throw MappingFailure(at: path, "cannot make a schedule: \(error)")
        }
    }

    /// The start assumed when neither the timing nor the mapping's `start` gives one: 2000-01-01 in the
    /// import's zone, fixed so that re-imports agree.
    static func unknownStart(in zone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar.date(from: DateComponents(year: 2000, month: 1, day: 1)) ?? Date(timeIntervalSince1970: 946_684_800)
    }

    func add(quantity: Element, to date: Date, path: String) throws(MappingFailure) -> Date {
        guard let text = quantity.childValue("value"), let value = Double(text), value > 0 else {
            throw MappingFailure(at: "\(path).value", "a bound needs a positive value")
        }
        let unit = quantity.childValue("code") ?? quantity.childValue("unit") ?? ""
        guard let seconds = Self.seconds(per: unit) else { throw MappingFailure(at: "\(path).code", "unknown time unit '\(unit)'") }
        if let components = Self.components(value, unit: unit, minimumUnit: "s"), let end = calendar.date(byAdding: components, to: date) {
            return end
        }
        guard value * seconds <= Self.maximumSpan else {
            throw MappingFailure(at: "\(path).value", "a bound of \(Self.describe(value, unit)) is longer than the \(Self.maximumSpanText) a schedule spans")
        }
        return date.addingTimeInterval(value * seconds)
    }
}
