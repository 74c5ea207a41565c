import CareModel
import Foundation

/// One recorded number: the time of the event it belongs to (as CareKit's charts place outcome values:
/// by their event), its value and unit, when it was recorded, and the task occurrence.
public struct Reading: Sendable, Hashable, Codable {
    public let time: Date
    /// The value's `createdDate`, when it has one.
    public let recorded: Date?
    public let value: Double
    public let unit: String?
    public let taskID: String
    public let occurrence: Int
}

/// A band of values a measurement should stay within (either side may be open).
public struct TargetBand: Sendable, Hashable, Codable {
    public let low: Double?
    public let high: Double?

    public init(low: Double?, high: Double?) {
        self.low = low
        self.high = high
    }
}

/// The readings of one kind of value (a LOINC code such as `http://loinc.org|8480-6`, a survey score)
/// in one unit over a period, oldest first, with its target band.
public struct MeasurementSeries: Sendable, Hashable, Codable {
    /// The outcome values' `kind` (or `task:<id>` for values recorded without one).
    public let kind: String
    public let title: String
    public let unit: String?
    public let target: TargetBand?
    public let readings: [Reading]

    /// The series of `events`' outcome values that are numbers, by kind and unit, titled and banded by
    /// `definitions` (a definition's band wins over the tasks' target values), sorted by title.
    ///
    /// A value's time is its event's start (an 08:04 reading filed on the 08:00 occurrence is the 08:00
    /// reading; a value recorded late still belongs to its day). At most `maximumReadings` readings
    /// are kept per series (the latest).
    public static func collect(
        from events: [Event], definitions: [MeasurementDefinition], maximumReadings: Int = 10_000
    ) -> [MeasurementSeries] {
        struct Key: Hashable { let kind: String; let unit: String? }
        var readings: [Key: [Reading]] = [:]
        var titles: [Key: String] = [:]
        var targets: [Key: [Double]] = [:]
        for event in events {
            guard let outcome = event.outcome else { continue }
            for value in outcome.values {
                guard let number = Self.number(value.value) else { continue }
                let key = Key(kind: value.kind ?? "task:\(event.task.id)", unit: value.units)
                readings[key, default: []].append(Reading(
                    time: event.scheduleEvent.start, recorded: value.createdDate, value: number, unit: value.units,
                    taskID: event.task.id, occurrence: event.scheduleEvent.occurrence))
                if titles[key] == nil { titles[key] = value.kind == nil ? (event.task.title ?? event.task.id) : nil }
                for target in event.scheduleEvent.element.targetValues where (target.kind ?? key.kind) == key.kind {
                    if let goal = Self.number(target.value) { targets[key, default: []].append(goal) }
                }
            }
        }
        return readings.map { key, values -> MeasurementSeries in
            let definition = definitions.first { $0.kind == key.kind && ($0.unit == nil || $0.unit == key.unit) }
            let sorted = values.sorted { ($0.time, $0.taskID, $0.occurrence) < ($1.time, $1.taskID, $1.occurrence) }
            let band = definition?.target ?? targets[key].flatMap { goals in
                goals.isEmpty ? nil : TargetBand(low: goals.min(), high: nil)
            }
            return MeasurementSeries(
                kind: key.kind, title: definition?.title ?? titles[key] ?? key.kind, unit: key.unit, target: band,
                readings: Array(sorted.suffix(max(1, maximumReadings))))
        }.sorted { ($0.title, $0.kind, $0.unit ?? "") < ($1.title, $1.kind, $1.unit ?? "") }
    }

    /// A value as a finite number (integers and doubles; nothing else is a measurement).
    static func number(_ value: OutcomeValue.Value) -> Double? {
        switch value {
        case .integer(let number): return Double(number)
        case .double(let number): return number.isFinite ? number : nil
        case .boolean, .text, .binary, .date: return nil
        }
    }

    /// The mean reading of each day of `dayStarts` (a reading belongs to the last day start at or before
    /// it; the day after the last start ends one day later), nil for a day without readings. Finite
    /// readings give finite means (``mean(_:)``).
    public func dailyMeans(dayStarts: [Date], calendar: Calendar) -> [Double?] {
        guard let first = dayStarts.first, let lastStart = dayStarts.last else { return [] }
        let end = calendar.date(byAdding: .day, value: 1, to: lastStart) ?? lastStart
        var days = Array(repeating: [Double](), count: dayStarts.count)
        for reading in readings where reading.time >= first && reading.time < end {
            guard let index = dayStarts.lastIndex(where: { $0 <= reading.time }) else { continue }
            days[index].append(reading.value)
        }
        return days.map(Self.mean)
    }

    /// The mean of `values` (nil for none), finite whenever every value is.
    ///
    /// The plain sum over the count when that sum is finite (the usual case, exact as before); otherwise
    /// (values near the largest double: 1e308 + 1e308 is infinity) the sum of each value divided by the
    /// count twice over, doubled: each term is at most half the largest double over the count, so the sum
    /// stays within half the largest double. The mean of values lies between the least and the greatest of
    /// them, so the result is clamped there (rounding cannot carry it past them, nor to infinity).
    public static func mean(_ values: [Double]) -> Double? {
        guard let least = values.min(), let greatest = values.max() else { return nil }
        let count = Double(values.count)
        let sum = values.reduce(0, +)
        let mean = sum.isFinite ? sum / count : values.reduce(0) { $0 + $1 / count / 2 } * 2
        return min(max(mean, least), greatest)
    }
}
