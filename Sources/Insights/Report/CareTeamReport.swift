import CareModel
import Foundation

/// The care-team report of one patient over a period: what CareKit's Insights scene shows the patient
/// (adherence beside a measurement, a week at a time) and what its document exporter shares with the
/// care team (a header, charts, the threshold messages and a table of the period's events).
///
/// A value: built by ``make(_:)`` from data the caller read from the store, rendered by
/// ``ReportHTML`` (then printed to PDF by ``ChromiumPrinter``) or wrapped in a FHIR DocumentReference.
public struct CareTeamReport: Sendable {
    /// One row of the events table.
    public struct EventRow: Sendable, Hashable {
        public let start: Date
        public let task: String
        public let taskID: String
        public let occurrence: Int
        public let impactsAdherence: Bool
        /// The event's progress (0...1) by its task's strategy.
        public let progress: Double
        public let done: Bool
        /// What was recorded, e.g. `120 mm[Hg], 80 mm[Hg]`.
        public let values: String
    }

    public let patientID: String
    /// The patient's name as the header shows it.
    public let patientName: String
    /// The period, start inclusive, end exclusive.
    public let interval: DateInterval
    public let timeZone: TimeZone
    public let carePlans: [String]
    public let generated: Date
    /// What made it, e.g. `CareGate 0.1.0`.
    public let generator: String
    public let strategy: ProgressStrategy
    /// The report's tasks (titles, sorted) whose events count by another strategy than ``strategy``
    /// (insights.yaml's `progress:` rules).
    public let otherStrategies: [(task: String, strategy: ProgressStrategy)]
    public let adherence: [DayAdherence]
    public let adherenceByTask: [(title: String, taskID: String, days: [DayAdherence])]
    public let adherenceByCarePlan: [(title: String, carePlanID: String, days: [DayAdherence])]
    public let measurements: [MeasurementSeries]
    /// The measurement drawn beside adherence in the Insights chart (nil when none has readings).
    public let chartMeasurement: MeasurementSeries?
    public let findings: [ThresholdFinding]
    public let events: [EventRow]
    /// Events of the period left out of the table past ``maximumEventRows``.
    public let eventsNotShown: Int
    public let insights: InsightsSeries

    /// The most event rows a report lists.
    public static let maximumEventRows = 2000

    /// What a report is made from: the caller's reads of the store.
    public struct Input: Sendable {
        public var patientID: String
        public var patientName: String
        public var carePlanTitles: [String]
        /// Every version of each of the patient's tasks, with its span.
        public var tasks: [TaskVersionSpan]
        /// The patient's events in the period.
        public var events: [Event]
        public var interval: DateInterval
        public var timeZone: TimeZone
        public var rules: InsightsRules
        public var strategy: ProgressStrategy
        public var generated: Date
        public var generator: String
        /// Care plan titles by id, for the per-plan table (a plan without one is shown by id).
        public var carePlanTitlesByID: [String: String] = [:]

        public init(
            patientID: String, patientName: String, carePlanTitles: [String], tasks: [TaskVersionSpan], events: [Event],
            interval: DateInterval, timeZone: TimeZone, rules: InsightsRules, strategy: ProgressStrategy = .checkingOutcomeExists,
            generated: Date, generator: String
        ) {
            self.patientID = patientID
            self.patientName = patientName
            self.carePlanTitles = carePlanTitles
            self.tasks = tasks
            self.events = events
            self.interval = interval
            self.timeZone = timeZone
            self.rules = rules
            self.strategy = strategy
            self.generated = generated
            self.generator = generator
        }
    }

    public static func make(_ input: Input) -> CareTeamReport {
        let calculator = AdherenceCalculator(timeZone: input.timeZone, strategies: ProgressStrategies(standard: input.strategy, rules: input.rules.progress))
        let inPeriod = input.events.filter { $0.scheduleEvent.start >= input.interval.start && $0.scheduleEvent.start < input.interval.end }
            .sorted { ($0.scheduleEvent.start, $0.task.id, $0.scheduleEvent.occurrence) < ($1.scheduleEvent.start, $1.task.id, $1.scheduleEvent.occurrence) }
        let daily = calculator.daily(tasks: input.tasks, events: inPeriod, in: input.interval)
        let byTask = calculator.perTask(tasks: input.tasks, events: inPeriod, in: input.interval).map { entry in
            let title = input.tasks.last { $0.task.id == entry.taskID }?.task.title ?? entry.taskID
            return (title: title, taskID: entry.taskID, days: entry.days)
        }
        let byPlan = calculator.perCarePlan(tasks: input.tasks, events: inPeriod, in: input.interval).map { entry in
            (title: input.carePlanTitlesByID[entry.carePlanID] ?? entry.carePlanID, carePlanID: entry.carePlanID, days: entry.days)
        }
        let series = MeasurementSeries.collect(from: inPeriod, definitions: input.rules.measurements)
        let chart = input.rules.chart.flatMap { kind in series.first { $0.kind == kind } }
            ?? series.max { ($0.readings.count, $1.title) < ($1.readings.count, $0.title) }
        let findings = ThresholdEvaluator.evaluate(input.rules.rules, series: series, days: daily)
        let rows = inPeriod.prefix(maximumEventRows).map { event in
            EventRow(
                start: event.scheduleEvent.start, task: event.task.title ?? event.task.id, taskID: event.task.id,
                occurrence: event.scheduleEvent.occurrence, impactsAdherence: event.task.impactsAdherence,
                progress: calculator.progress(of: event).fractionCompleted, done: event.outcome != nil,
                values: (event.outcome?.values ?? []).map(Self.text).joined(separator: ", "))
        }
        var others: [String: ProgressStrategy] = [:]
        for span in input.tasks where span.task.impactsAdherence {
            let strategy = calculator.strategies.strategy(for: span.task)
            if strategy != input.strategy { others[span.task.title ?? span.task.id] = strategy }
        }
        return CareTeamReport(
            patientID: input.patientID, patientName: input.patientName, interval: input.interval, timeZone: input.timeZone,
            carePlans: input.carePlanTitles, generated: input.generated, generator: input.generator, strategy: input.strategy,
            otherStrategies: others.sorted { $0.key < $1.key }.map { (task: $0.key, strategy: $0.value) },
            adherence: daily, adherenceByTask: byTask, adherenceByCarePlan: byPlan, measurements: series, chartMeasurement: chart, findings: findings,
            events: Array(rows), eventsNotShown: max(0, inPeriod.count - maximumEventRows),
            insights: InsightsSeries.make(adherence: daily, measurements: series, calendar: calculator.calendar, end: input.interval.end))
    }

    /// One value as the table shows it.
    static func text(_ value: OutcomeValue) -> String {
        let shown: String
        switch value.value {
        case .integer(let number): shown = String(number)
        case .double(let number): shown = ThresholdEvaluator.number(number)
        case .boolean(let flag): shown = flag ? "yes" : "no"
        case .text(let text): shown = "“\(text.count > 200 ? String(text.prefix(200)) + "…" : text)”"
        case .binary(let data): shown = "\(data.count) bytes"
        case .date(let date): shown = date.formatted(.iso8601)
        }
        return [shown, value.units].compactMap { $0 }.joined(separator: " ")
    }
}
