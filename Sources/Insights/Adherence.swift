import CareModel
import Foundation
import Mapping

/// A day's adherence, as CareKit reports it (`OCKAdherence`): the day has no task that counts towards
/// adherence, has such tasks but none of their events fall on it, or has events whose mean progress is
/// the fraction given (0...1).
public enum Adherence: Sendable, Hashable {
    case noTasks
    case noEvents
    case progress(Double)

    /// The fraction completed, when the day had events.
    public var fraction: Double? {
        if case .progress(let value) = self { return value }
        return nil
    }
}

extension Adherence: Codable {
    private enum CodingKeys: String, CodingKey { case state, fraction }

    /// `{"state": "noTasks" | "noEvents" | "progress", "fraction": 0.5}` (the fraction only for progress).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .noTasks: try container.encode("noTasks", forKey: .state)
        case .noEvents: try container.encode("noEvents", forKey: .state)
        case .progress(let value):
            try container.encode("progress", forKey: .state)
            try container.encode(value, forKey: .fraction)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .state) {
        case "noTasks": self = .noTasks
        case "noEvents": self = .noEvents
        case "progress":
            let value = try container.decode(Double.self, forKey: .fraction)
            guard value.isFinite, (0...1).contains(value) else {
                throw DecodingError.dataCorruptedError(forKey: .fraction, in: container, debugDescription: "a fraction is between 0 and 1")
            }
            self = .progress(value)
        default:
            throw DecodingError.dataCorruptedError(forKey: .state, in: container, debugDescription: "state is noTasks, noEvents or progress")
        }
    }
}

/// How one event's progress is computed (CareKit's `CareTaskProgressStrategy`).
public enum ProgressStrategy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Complete when the event has an outcome, whatever its values (CareKit's default,
    /// `checkingOutcomeExists`: `BinaryCareTaskProgress`).
    case checkingOutcomeExists = "outcome-exists"
    /// The outcome's values summed over the event's target values, at most 1 (`summingOutcomeValues`:
    /// `LinearCareTaskProgress`). Numbers count as themselves, every other value (text, a date, a flag,
    /// bytes) as 1. Without target values, any sum above zero is complete; a target that sums to zero or
    /// less is always complete.
    case summingOutcomeValues = "summing"
}

/// Which ``ProgressStrategy`` the events of each task take: CareKit computes each event's progress with
/// the closure its adherence query is given (`OCKAdherenceQuery.computeProgress`), so one task (a dose)
/// can count when done and another (steps, minutes) by the sum of its values. The first rule that
/// matches a task decides; a task no rule matches takes ``standard`` (CareKit's default,
/// ``ProgressStrategy/checkingOutcomeExists``, unless the caller chose otherwise).
public struct ProgressStrategies: Sendable, Hashable {
    public var standard: ProgressStrategy
    public var rules: [ProgressRule]

    public init(standard: ProgressStrategy = .checkingOutcomeExists, rules: [ProgressRule] = []) {
        self.standard = standard
        self.rules = rules
    }

    /// The strategy of `task`'s events.
    public func strategy(for task: CareTask) -> ProgressStrategy {
        guard !rules.isEmpty else { return standard }
        let codes = task.metadata.linkage.codes
        return rules.first { $0.matches(taskID: task.id, codes: codes) }?.strategy ?? standard
    }
}

/// A rule of insights.yaml's `progress:` list: the events of the tasks it matches (by task id, or by a
/// FHIR code the task carries, `system|code`) take its strategy.
public struct ProgressRule: Sendable, Hashable {
    public enum Match: Sendable, Hashable {
        /// The task of this id (the store's, e.g. `CarePlan/cp-1#activity-55423-8`).
        case task(String)
        /// The tasks carrying this code (`system|code`, as the import keeps a task's codes).
        case code(String)
    }

    public let match: Match
    public let strategy: ProgressStrategy
    public let location: MappingLocation?

    public init(match: Match, strategy: ProgressStrategy, location: MappingLocation? = nil) {
        self.match = match
        self.strategy = strategy
        self.location = location
    }

    func matches(taskID: String, codes: [String]) -> Bool {
        switch match {
        case .task(let id): return id == taskID
        case .code(let code): return codes.contains { $0 == code }
        }
    }
}

/// One event's progress: what was done (`value`), what was asked (`goal`, nil when the strategy sets
/// none) and the fraction completed, 0...1.
public struct EventProgress: Sendable, Hashable {
    public let value: Double
    public let goal: Double?
    public let fractionCompleted: Double

    /// The progress of `event` by `strategy`.
    public init(_ event: Event, by strategy: ProgressStrategy) {
        switch strategy {
        case .checkingOutcomeExists:
            let done = event.outcome != nil
            value = done ? 1 : 0
            goal = 1
            fractionCompleted = done ? 1 : 0
        case .summingOutcomeValues:
            // CareKit asserts (crashes) on a negative sum; a patient's input must not, so sums are kept at
            // zero or more.
            let done = max(0, Self.sum(event.outcome?.values ?? []) ?? 0)
            let targets = event.scheduleEvent.element.targetValues
            let asked = Self.sum(targets).map { max(0, $0) }
            value = done
            goal = asked
            if let asked {
                fractionCompleted = asked > 0 ? min(done / asked, 1) : 1
            } else {
                fractionCompleted = done > 0 ? 1 : 0
            }
        }
    }

    /// The sum of `values` as CareKit accumulates them (numbers as themselves, anything else as 1); nil
    /// when there are none. A number that is not finite counts as nothing, and the sum stays finite.
    static func sum(_ values: [OutcomeValue]) -> Double? {
        guard !values.isEmpty else { return nil }
        var total = 0.0
        for value in values {
            let amount: Double
            switch value.value {
            case .integer(let number): amount = Double(number)
            case .double(let number): amount = number.isFinite ? number : 0
            case .boolean, .text, .binary, .date: amount = 1
            }
            total += amount
        }
        return total.isFinite ? total : (total > 0 ? Double.greatestFiniteMagnitude : -Double.greatestFiniteMagnitude)
    }

    /// The mean of `progress`, each fraction clamped to 0...1; 1 when there is none
    /// (CareKit's `AggregatedCareTaskProgress`).
    public static func aggregate(_ progress: [EventProgress]) -> Double {
        guard !progress.isEmpty else { return 1 }
        let share = 1 / Double(progress.count)
        return progress.reduce(0) { $0 + min(max($1.fractionCompleted, 0), 1) * share }
    }
}

/// A task version and when it was in effect: from its `effectiveDate` to the next version's (or its
/// tombstone's), nil when it is the latest.
public struct TaskVersionSpan: Sendable, Hashable {
    public let task: CareTask
    public let effectiveEnd: Date?

    public init(task: CareTask, effectiveEnd: Date?) {
        self.task = task
        self.effectiveEnd = effectiveEnd
    }

    /// The spans of `versions` (every version of one task, oldest first, tombstones included): each
    /// live version until the next one's effective date. Tombstones end a span and make none.
    public static func spans(of versions: [CareTask]) -> [TaskVersionSpan] {
        let ordered = versions.sorted { $0.metadata.effectiveDate < $1.metadata.effectiveDate }
        var spans: [TaskVersionSpan] = []
        for (index, version) in ordered.enumerated() where version.metadata.deletedDate == nil {
            let next = ordered.index(after: index) < ordered.count ? ordered[index + 1].metadata.effectiveDate : nil
            spans.append(TaskVersionSpan(task: version, effectiveEnd: next))
        }
        return spans
    }

    /// Whether this version, in effect then, schedules anything on the day `[dayStart, dayEnd)`:
    /// CareKit's `OCKSchedule.exists(onDay:)` (its schedule has started by the day's end and not ended
    /// by its start), within the version's own effective time.
    func exists(onDayFrom dayStart: Date, to dayEnd: Date) -> Bool {
        guard task.metadata.effectiveDate < dayEnd else { return false }
        if let effectiveEnd, effectiveEnd <= dayStart { return false }
        guard task.schedule.startDate < dayEnd else { return false }
        if let end = task.schedule.endDate, end <= dayStart { return false }
        return true
    }
}

/// One day of adherence: its date (`YYYY-MM-DD` in the calendar's time zone), when it starts, its
/// adherence, and the number of events and completed events behind it.
public struct DayAdherence: Sendable, Hashable, Codable {
    public let date: String
    public let start: Date
    public let adherence: Adherence
    /// Events of tasks that count towards adherence on that day.
    public let events: Int
    /// Events with an outcome among them.
    public let eventsWithOutcome: Int
}

/// CareKit's `fetchAdherence`, over data read from the store: for each day of a range, the adherence of
/// the tasks that count towards it (`impactsAdherence`).
///
/// The rules (CareKitStore `OCKAnyEventStore.fetchAdherence`, `CareTaskProgressStrategy`,
/// `AggregatedCareTaskProgress`):
/// - the days are the range's start, then one calendar day after another while before its end;
/// - a day on which no counting task version's schedule exists is ``Adherence/noTasks``;
/// - a day with such tasks but none of their events starting on it is ``Adherence/noEvents``;
/// - otherwise the mean of each event's progress (``ProgressStrategy``, chosen per task by
///   ``ProgressStrategies``), each clamped to 0...1.
///
/// One choice differs from CareKit's code: an event counts when the task version that owns it counts
/// (CareKit filters task versions, then fetches the events of their ids, so a version that stopped
/// counting would still count through an older one), and a task version only schedules days while it
/// was in effect.
public struct AdherenceCalculator: Sendable {
    public var calendar: Calendar
    /// How each task's events count (by default every task's: ``ProgressStrategy/checkingOutcomeExists``).
    public var strategies: ProgressStrategies
    /// The strategy of the tasks no rule of ``strategies`` matches.
    public var strategy: ProgressStrategy {
        get { strategies.standard }
        set { strategies.standard = newValue }
    }

    /// The longest range, in days: a bound on the work one question asks.
    public static let maximumDays = 3660

    public init(timeZone: TimeZone, strategy: ProgressStrategy = .checkingOutcomeExists) {
        self.init(timeZone: timeZone, strategies: ProgressStrategies(standard: strategy))
    }

    /// Each task's events by the strategy `strategies` gives it.
    public init(timeZone: TimeZone, strategies: ProgressStrategies) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
        self.strategies = strategies
    }

    /// The progress of `event` by its task's strategy.
    public func progress(of event: Event) -> EventProgress {
        EventProgress(event, by: strategies.strategy(for: event.task))
    }

    /// The starts of the days of `interval`: its start, then a calendar day later while before its end
    /// (at most ``maximumDays``).
    public func dayStarts(in interval: DateInterval) -> [Date] {
        var days: [Date] = []
        var day = interval.start
        while day < interval.end, days.count < Self.maximumDays {
            days.append(day)
            guard let next = calendar.date(byAdding: .day, value: 1, to: day), next > day else { break }
            day = next
        }
        return days
    }

    /// Adherence per day of `interval`, from the task versions in `tasks` (every version of each task
    /// with its span; those that do not count are left out here) and `events` (the events of those
    /// tasks in the range, each from the version that owned its time).
    public func daily(tasks: [TaskVersionSpan], events: [Event], in interval: DateInterval) -> [DayAdherence] {
        let counting = tasks.filter { $0.task.impactsAdherence }
        let countingIDs = Set(counting.map(\.task.id))
        let starts = dayStarts(in: interval)
        var byDay: [[Event]] = Array(repeating: [], count: starts.count)
        for event in events where event.task.impactsAdherence && countingIDs.contains(event.task.id) {
            let start = event.scheduleEvent.start
            guard start >= interval.start, start < interval.end else { continue }
            // The last day start at or before the event's start.
            var low = 0, high = starts.count
            while low < high {
                let middle = (low + high) / 2
                if starts[middle] <= start { low = middle + 1 } else { high = middle }
            }
            guard low > 0 else { continue }
            byDay[low - 1].append(event)
        }
        return starts.enumerated().map { index, dayStart in
            let dayEnd = index + 1 < starts.count ? starts[index + 1] : (calendar.date(byAdding: .day, value: 1, to: dayStart) ?? interval.end)
            let dayEvents = byDay[index]
            let adherence: Adherence
            if !counting.contains(where: { $0.exists(onDayFrom: dayStart, to: dayEnd) }) && dayEvents.isEmpty {
                adherence = .noTasks
            } else if dayEvents.isEmpty {
                adherence = .noEvents
            } else {
                adherence = .progress(EventProgress.aggregate(dayEvents.map(progress(of:))))
            }
            return DayAdherence(
                date: dayText(dayStart), start: dayStart, adherence: adherence, events: dayEvents.count,
                eventsWithOutcome: dayEvents.filter { $0.outcome != nil }.count)
        }
    }

    /// Adherence per day of each task (by id, sorted), over the same range.
    public func perTask(tasks: [TaskVersionSpan], events: [Event], in interval: DateInterval) -> [(taskID: String, days: [DayAdherence])] {
        let ids = Set(tasks.filter { $0.task.impactsAdherence }.map(\.task.id)).sorted()
        return ids.map { id in
            (id, daily(tasks: tasks.filter { $0.task.id == id }, events: events.filter { $0.task.id == id }, in: interval))
        }
    }

    /// Adherence per day of each care plan (by the tasks' `carePlanID`, sorted; tasks without one are
    /// left out), over the same range.
    public func perCarePlan(tasks: [TaskVersionSpan], events: [Event], in interval: DateInterval) -> [(carePlanID: String, days: [DayAdherence])] {
        let ids = Set(tasks.filter { $0.task.impactsAdherence }.compactMap(\.task.carePlanID)).sorted()
        return ids.map { id in
            (id, daily(tasks: tasks.filter { $0.task.carePlanID == id }, events: events.filter { $0.task.carePlanID == id }, in: interval))
        }
    }

    /// The mean adherence of `days` that had events (nil when none had).
    public static func mean(_ days: [DayAdherence]) -> Double? {
        let fractions = days.compactMap(\.adherence.fraction)
        guard !fractions.isEmpty else { return nil }
        return fractions.reduce(0, +) / Double(fractions.count)
    }

    /// `YYYY-MM-DD` of `date` in the calendar's time zone.
    public func dayText(_ date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
