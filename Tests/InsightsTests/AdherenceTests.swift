import CareModel
import Foundation
import Mapping
import XCTest

@testable import Insights

/// Adherence written from CareKit's rules and its own tests: CareKitStore's
/// `TestStoreProtocolExtensions.testFetchAdherence*`, `TestSummingOutcomeValuesProgressStrategy`,
/// `TestBinaryCareTaskProgress` and `TestAggregatedCareTaskProgress`.
final class AdherenceTests: XCTestCase {
    let zone = TimeZone(identifier: "America/Chicago")!
    var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }
    /// A fixed day's midnight (CareKit's tests use today's).
    var start: Date { calendar.date(from: DateComponents(year: 2026, month: 11, day: 2))! }

    // MARK: fetchAdherence

    /// CareKit's `testFetchAdherenceAggregatesEventsAcrossTasks`: two tasks every other day from today,
    /// one outcome on the first task's first occurrence; from two days before to two days after (less a
    /// second): no tasks, no tasks, half done, no events.
    func testAggregatesEventsAcrossTasks() throws {
        let schedule = try Schedule(composing: [ScheduleElement(start: start, end: nil, interval: DateComponents(day: 2), timeZone: zone)])
        let meditate = task("meditate", schedule)
        let sleep = task("sleep", schedule)
        let interval = DateInterval(start: day(-2), end: calendar.date(byAdding: DateComponents(day: 2, second: -1), to: start)!)
        let events = events(of: meditate, in: interval, outcomes: [0: [OutcomeValue(.double(20), units: "minutes")]])
            + events(of: sleep, in: interval)
        let days = AdherenceCalculator(timeZone: zone).daily(tasks: spans(meditate, sleep), events: events, in: interval)
        XCTAssertEqual(days.map(\.adherence), [.noTasks, .noTasks, .progress(0.5), .noEvents])
        XCTAssertEqual(days.map(\.date), ["2026-10-31", "2026-11-01", "2026-11-02", "2026-11-03"])
    }

    /// CareKit's `testFetchAdherenceWithCustomAggregator`, whose progress is 1 of 2 for every event:
    /// here by summing, each daily event with the value 1 against a target of 2.
    func testSummingHalfOfTheTargetEveryDay() throws {
        let schedule = try Schedule.dailyAtTime(hour: 12, minutes: 0, start: start, end: nil, text: nil, targetValues: [OutcomeValue(.integer(2))], timeZone: zone)
        let meditate = task("meditate", schedule)
        let interval = DateInterval(start: day(-2), end: calendar.date(byAdding: DateComponents(day: 2, second: -1), to: start)!)
        let events = events(of: meditate, in: interval, outcomes: [0: [OutcomeValue(.integer(1))], 1: [OutcomeValue(.integer(1))]])
        XCTAssertEqual(events.count, 2)
        let days = AdherenceCalculator(timeZone: zone, strategy: .summingOutcomeValues).daily(tasks: spans(meditate), events: events, in: interval)
        XCTAssertEqual(days.map(\.adherence), [.noTasks, .noTasks, .progress(0.5), .progress(0.5)])
        // By CareKit's default (an outcome exists), the same events are done.
        let binary = AdherenceCalculator(timeZone: zone).daily(tasks: spans(meditate), events: events, in: interval)
        XCTAssertEqual(binary.map(\.adherence), [.noTasks, .noTasks, .progress(1), .progress(1)])
    }

    func testNoTasks() {
        let interval = DateInterval(start: start, end: day(3))
        let days = AdherenceCalculator(timeZone: zone).daily(tasks: [], events: [], in: interval)
        XCTAssertEqual(days.map(\.adherence), [.noTasks, .noTasks, .noTasks])
    }

    /// Tasks that do not impact adherence are left out, as CareKit filters `impactsAdherence`.
    func testTasksThatDoNotImpactAdherence() throws {
        let log = task("log", try Schedule.dailyAtTime(hour: 9, minutes: 0, start: start, end: nil, text: nil, timeZone: zone), impactsAdherence: false)
        let interval = DateInterval(start: start, end: day(2))
        let days = AdherenceCalculator(timeZone: zone).daily(tasks: spans(log), events: events(of: log, in: interval, outcomes: [0: []]), in: interval)
        XCTAssertEqual(days.map(\.adherence), [.noTasks, .noTasks])
    }

    /// A task whose schedule has started but has no occurrence on a day: that day has tasks but no events.
    func testTasksWithoutEvents() throws {
        let weekly = task("weekly", try Schedule(composing: [ScheduleElement(start: start.addingTimeInterval(9 * 3600), end: nil, interval: DateComponents(weekOfYear: 1), timeZone: zone)]))
        let interval = DateInterval(start: start, end: day(3))
        let days = AdherenceCalculator(timeZone: zone).daily(tasks: spans(weekly), events: events(of: weekly, in: interval), in: interval)
        XCTAssertEqual(days.map(\.adherence), [.progress(0), .noEvents, .noEvents])
    }

    /// A schedule that ended: no tasks after its end (CareKit's `exists(onDay:)`), no tasks before its start.
    func testScheduleBoundsMakeDaysWithoutTasks() throws {
        let element = try ScheduleElement(start: day(1).addingTimeInterval(8 * 3600), end: day(3), interval: DateComponents(day: 1), timeZone: zone)
        let bounded = task("bounded", try Schedule(composing: [element]))
        let interval = DateInterval(start: start, end: day(4))
        let days = AdherenceCalculator(timeZone: zone).daily(tasks: spans(bounded), events: events(of: bounded, in: interval, outcomes: [1: []]), in: interval)
        XCTAssertEqual(days.map(\.adherence), [.noTasks, .progress(0), .progress(1), .noTasks])
    }

    /// A task version changing mid-range: the new version (twice a day, from day 2) owns its days; a
    /// third version that stops counting towards adherence leaves its days without tasks.
    func testTaskVersionChangingMidRange() throws {
        let first = task("pill", try Schedule.dailyAtTime(hour: 8, minutes: 0, start: start, end: nil, text: nil, timeZone: zone), effective: start)
        let twice = try Schedule(composing: [
            ScheduleElement(start: day(2).addingTimeInterval(8 * 3600), end: nil, interval: DateComponents(day: 1), timeZone: zone),
            ScheduleElement(start: day(2).addingTimeInterval(20 * 3600), end: nil, interval: DateComponents(day: 1), timeZone: zone),
        ])
        let second = task("pill", twice, effective: day(2))
        let third = task("pill", try Schedule.dailyAtTime(hour: 8, minutes: 0, start: day(4), end: nil, text: nil, timeZone: zone), effective: day(4), impactsAdherence: false)
        let versions = TaskVersionSpan.spans(of: [third, first, second])
        XCTAssertEqual(versions.map(\.effectiveEnd), [day(2), day(4), nil])
        let interval = DateInterval(start: start, end: day(5))
        // Each version's events in its own span, as the store returns them.
        let events = events(of: first, in: DateInterval(start: start, end: day(2)), outcomes: [0: [], 1: []])
            + events(of: second, in: DateInterval(start: day(2), end: day(4)), outcomes: [0: [], 2: [], 3: []])
            + events(of: third, in: DateInterval(start: day(4), end: day(5)), outcomes: [0: []])
        let days = AdherenceCalculator(timeZone: zone).daily(tasks: versions, events: events, in: interval)
        XCTAssertEqual(days.map(\.adherence), [.progress(1), .progress(1), .progress(0.5), .progress(1), .noTasks])
        XCTAssertEqual(days.map(\.events), [1, 1, 2, 2, 0])
    }

    /// Days follow the calendar of the time zone: a day of 23 hours (DST starts) is one day.
    func testDaysAcrossADaylightSavingChange() throws {
        let march = calendar.date(from: DateComponents(year: 2026, month: 3, day: 7))!
        let pill = task("pill", try Schedule.dailyAtTime(hour: 8, minutes: 0, start: march, end: nil, text: nil, timeZone: zone), effective: march)
        let interval = DateInterval(start: march, end: calendar.date(byAdding: .day, value: 3, to: march)!)
        let days = AdherenceCalculator(timeZone: zone).daily(tasks: spans(pill), events: events(of: pill, in: interval, outcomes: [1: []]), in: interval)
        XCTAssertEqual(days.map(\.date), ["2026-03-07", "2026-03-08", "2026-03-09"])
        XCTAssertEqual(days.map(\.adherence), [.progress(0), .progress(1), .progress(0)])
    }

    func testPerTaskAndMean() throws {
        let schedule = try Schedule.dailyAtTime(hour: 9, minutes: 0, start: start, end: nil, text: nil, timeZone: zone)
        let a = task("a", schedule), b = task("b", schedule)
        let interval = DateInterval(start: start, end: day(2))
        let events = events(of: a, in: interval, outcomes: [0: [], 1: []]) + events(of: b, in: interval, outcomes: [1: []])
        let calculator = AdherenceCalculator(timeZone: zone)
        let perTask = calculator.perTask(tasks: spans(a, b), events: events, in: interval)
        XCTAssertEqual(perTask.map(\.taskID), ["a", "b"])
        XCTAssertEqual(perTask[0].days.map(\.adherence), [.progress(1), .progress(1)])
        XCTAssertEqual(perTask[1].days.map(\.adherence), [.progress(0), .progress(1)])
        let all = calculator.daily(tasks: spans(a, b), events: events, in: interval)
        XCTAssertEqual(all.map(\.adherence), [.progress(0.5), .progress(1)])
        XCTAssertEqual(AdherenceCalculator.mean(all), 0.75)
    }

    /// Per care plan: each plan's tasks and events only.
    func testPerCarePlan() throws {
        let schedule = try Schedule.dailyAtTime(hour: 9, minutes: 0, start: start, end: nil, text: nil, timeZone: zone)
        var a = task("a", schedule), b = task("b", schedule)
        a.carePlanID = "plan-1"
        b.carePlanID = "plan-2"
        let interval = DateInterval(start: start, end: day(2))
        let events = events(of: a, in: interval, outcomes: [0: []]) + events(of: b, in: interval, outcomes: [0: [], 1: []])
        let plans = AdherenceCalculator(timeZone: zone).perCarePlan(tasks: spans(a, b), events: events, in: interval)
        XCTAssertEqual(plans.map(\.carePlanID), ["plan-1", "plan-2"])
        XCTAssertEqual(plans[0].days.map(\.adherence), [.progress(1), .progress(0)])
        XCTAssertEqual(plans[1].days.map(\.adherence), [.progress(1), .progress(1)])
    }

    // MARK: Progress strategies (TestSummingOutcomeValuesProgressStrategy, TestBinaryCareTaskProgress)

    func testSummingNoOutcome() throws {
        let progress = EventProgress(try event(outcome: nil, targets: []), by: .summingOutcomeValues)
        XCTAssertEqual(progress.value, 0)
        XCTAssertNil(progress.goal)
        XCTAssertEqual(progress.fractionCompleted, 0)
    }

    func testSummingNoOutcomeValues() throws {
        let progress = EventProgress(try event(outcome: [], targets: []), by: .summingOutcomeValues)
        XCTAssertEqual(progress.value, 0)
        XCTAssertNil(progress.goal)
        XCTAssertEqual(progress.fractionCompleted, 0)
        // Binary: the outcome exists, so it is complete.
        XCTAssertEqual(EventProgress(try event(outcome: [], targets: []), by: .checkingOutcomeExists).fractionCompleted, 1)
        XCTAssertEqual(EventProgress(try event(outcome: nil, targets: []), by: .checkingOutcomeExists).fractionCompleted, 0)
    }

    func testSummingTargetValuesOfZero() throws {
        let progress = EventProgress(try event(outcome: [], targets: [OutcomeValue(.integer(0)), OutcomeValue(.integer(0))]), by: .summingOutcomeValues)
        XCTAssertEqual(progress.value, 0)
        XCTAssertEqual(progress.goal, 0)
        XCTAssertEqual(progress.fractionCompleted, 1)
    }

    func testSummingNumericValues() throws {
        let progress = EventProgress(
            try event(outcome: [OutcomeValue(.double(0.9)), OutcomeValue(.double(1.1))], targets: [OutcomeValue(.double(0.8)), OutcomeValue(.double(3.2))]),
            by: .summingOutcomeValues)
        XCTAssertEqual(progress.value, 2, accuracy: .ulpOfOne)
        XCTAssertEqual(progress.goal ?? 0, 4, accuracy: .ulpOfOne)
        XCTAssertEqual(progress.fractionCompleted, 0.5, accuracy: .ulpOfOne)
    }

    /// Values that are not numbers count 1 each, outcome and target alike.
    func testSummingValuesThatAreNotNumbers() throws {
        let progress = EventProgress(
            try event(outcome: [OutcomeValue(.date(start)), OutcomeValue(.text(""))], targets: [OutcomeValue(.date(start)), OutcomeValue(.boolean(false))]),
            by: .summingOutcomeValues)
        XCTAssertEqual(progress.value, 2)
        XCTAssertEqual(progress.goal, 2)
        XCTAssertEqual(progress.fractionCompleted, 1)
        let bytes = EventProgress(try event(outcome: [OutcomeValue(.binary(Data([1, 2])))], targets: [OutcomeValue(.integer(4))]), by: .summingOutcomeValues)
        XCTAssertEqual(bytes.fractionCompleted, 0.25)
    }

    /// Summing without targets: complete when anything above zero was recorded; more than the target
    /// is capped at 1.
    func testSummingWithoutTargetsAndOverTheTarget() throws {
        XCTAssertEqual(EventProgress(try event(outcome: [OutcomeValue(.integer(3))], targets: []), by: .summingOutcomeValues).fractionCompleted, 1)
        XCTAssertEqual(EventProgress(try event(outcome: [OutcomeValue(.integer(0))], targets: []), by: .summingOutcomeValues).fractionCompleted, 0)
        XCTAssertEqual(EventProgress(try event(outcome: [OutcomeValue(.integer(30))], targets: [OutcomeValue(.integer(10))]), by: .summingOutcomeValues).fractionCompleted, 1)
    }

    /// CareKit asserts on a negative sum; here a negative or huge value is bounded, never a crash.
    func testSummingBoundsNegativeAndHugeValues() throws {
        let negative = EventProgress(try event(outcome: [OutcomeValue(.integer(-5))], targets: [OutcomeValue(.integer(10))]), by: .summingOutcomeValues)
        XCTAssertEqual(negative.value, 0)
        XCTAssertEqual(negative.fractionCompleted, 0)
        let huge = EventProgress(try event(outcome: [OutcomeValue(.double(.greatestFiniteMagnitude)), OutcomeValue(.double(.greatestFiniteMagnitude))], targets: [OutcomeValue(.integer(1))]), by: .summingOutcomeValues)
        XCTAssertTrue(huge.value.isFinite)
        XCTAssertEqual(huge.fractionCompleted, 1)
        let notANumber = EventProgress(try event(outcome: [OutcomeValue(.double(.nan))], targets: [OutcomeValue(.integer(2))]), by: .summingOutcomeValues)
        XCTAssertEqual(notANumber.fractionCompleted, 0)
    }

    /// TestAggregatedCareTaskProgress: the mean of the parts; nothing to aggregate is complete.
    func testAggregate() throws {
        XCTAssertEqual(EventProgress.aggregate([]), 1)
        let done = EventProgress(try event(outcome: [], targets: []), by: .checkingOutcomeExists)
        let open = EventProgress(try event(outcome: nil, targets: []), by: .checkingOutcomeExists)
        XCTAssertEqual(EventProgress.aggregate([done, open, open, done]), 0.5)
    }

    // MARK: A strategy per task (OCKAdherenceQuery.computeProgress, a closure per event)

    /// One day, a pill taken (an outcome, no values) and 5,000 steps of a 10,000-step target: the pill
    /// is done either way; the steps are done by CareKit's default, half done by summing. With the
    /// steps task summing (by its code, then by its id), the day is (1 + 0.5) / 2.
    func testStrategyChosenPerTask() throws {
        let pill = task("pill", try Schedule.dailyAtTime(hour: 8, minutes: 0, start: start, end: nil, text: nil, timeZone: zone))
        var steps = task("steps", try Schedule.dailyAtTime(hour: 20, minutes: 0, start: start, end: nil, text: nil, targetValues: [OutcomeValue(.integer(10_000))], timeZone: zone))
        steps.metadata.linkage.codes = ["http://snomed.info/sct|129006008", "http://loinc.org|55423-8"]
        let interval = DateInterval(start: start, end: day(1))
        let events = events(of: pill, in: interval, outcomes: [0: []]) + events(of: steps, in: interval, outcomes: [0: [OutcomeValue(.integer(5_000), units: "steps")]])
        let byDefault = AdherenceCalculator(timeZone: zone).daily(tasks: spans(pill, steps), events: events, in: interval)
        XCTAssertEqual(byDefault.map(\.adherence), [.progress(1)])
        for rule in [ProgressRule(match: .code("http://loinc.org|55423-8"), strategy: .summingOutcomeValues), ProgressRule(match: .task("steps"), strategy: .summingOutcomeValues)] {
            let calculator = AdherenceCalculator(timeZone: zone, strategies: ProgressStrategies(rules: [rule]))
            XCTAssertEqual(calculator.daily(tasks: spans(pill, steps), events: events, in: interval).map(\.adherence), [.progress(0.75)], "\(rule.match)")
            XCTAssertEqual(calculator.strategies.strategy(for: pill), .checkingOutcomeExists)
            XCTAssertEqual(calculator.strategies.strategy(for: steps), .summingOutcomeValues)
        }
        // A code the task does not carry, or only a prefix of one, matches nothing.
        for code in ["http://loinc.org|55423", "http://loinc.org|8480-6"] {
            let calculator = AdherenceCalculator(timeZone: zone, strategies: ProgressStrategies(rules: [ProgressRule(match: .code(code), strategy: .summingOutcomeValues)]))
            XCTAssertEqual(calculator.daily(tasks: spans(pill, steps), events: events, in: interval).map(\.adherence), [.progress(1)], code)
        }
    }

    /// The first matching rule decides; the default applies to the tasks no rule matches, and may
    /// itself be summing with a rule sending one task back to CareKit's default.
    func testFirstMatchingRuleAndTheDefault() throws {
        var steps = task("steps", try Schedule.dailyAtTime(hour: 20, minutes: 0, start: start, end: nil, text: nil, targetValues: [OutcomeValue(.integer(4))], timeZone: zone))
        steps.metadata.linkage.codes = ["http://loinc.org|55423-8"]
        let strategies = ProgressStrategies(standard: .summingOutcomeValues, rules: [
            ProgressRule(match: .task("steps"), strategy: .checkingOutcomeExists),
            ProgressRule(match: .code("http://loinc.org|55423-8"), strategy: .summingOutcomeValues),
        ])
        XCTAssertEqual(strategies.strategy(for: steps), .checkingOutcomeExists)
        let other = task("other", steps.schedule)
        XCTAssertEqual(strategies.strategy(for: other), .summingOutcomeValues)
        // Summing by default with no values that are numbers: a text counts 1 of the 4 asked.
        let interval = DateInterval(start: start, end: day(1))
        let days = AdherenceCalculator(timeZone: zone, strategies: strategies)
            .daily(tasks: spans(other), events: events(of: other, in: interval, outcomes: [0: [OutcomeValue(.text("done"))]]), in: interval)
        XCTAssertEqual(days.map(\.adherence), [.progress(0.25)])
    }

    func testAdherenceCodable() throws {
        let values: [Adherence] = [.noTasks, .noEvents, .progress(0.25)]
        let data = try JSONEncoder().encode(values)
        XCTAssertTrue(String(decoding: data, as: UTF8.self).hasPrefix(#"[{"state":"noTasks"},{"state":"noEvents"},{"#), String(decoding: data, as: UTF8.self))
        XCTAssertEqual(try JSONDecoder().decode([Adherence].self, from: data), values)
        XCTAssertThrowsError(try JSONDecoder().decode(Adherence.self, from: Data(#"{"state":"progress","fraction":7}"#.utf8)))
    }

    // MARK: Helpers

    func day(_ offset: Int) -> Date { calendar.date(byAdding: .day, value: offset, to: start)! }

    func task(_ id: String, _ schedule: Schedule, effective: Date? = nil, impactsAdherence: Bool = true) -> CareTask {
        CareTask(id: id, title: id.capitalized, impactsAdherence: impactsAdherence, schedule: schedule, metadata: EntityMetadata(effectiveDate: effective ?? day(-30), timezone: zone))
    }

    func spans(_ tasks: CareTask...) -> [TaskVersionSpan] { tasks.map { TaskVersionSpan(task: $0, effectiveEnd: nil) } }

    /// The events of `task` starting in `interval`, with outcomes (values) on the occurrences given.
    func events(of task: CareTask, in interval: DateInterval, outcomes: [Int: [OutcomeValue]] = [:]) -> [Event] {
        task.schedule.events(from: interval.start, to: interval.end).filter { $0.start >= interval.start }.map { scheduleEvent in
            let outcome = outcomes[scheduleEvent.occurrence].map {
                Outcome(taskUUID: task.metadata.uuid, taskID: task.id, taskOccurrenceIndex: scheduleEvent.occurrence, values: $0, metadata: EntityMetadata(effectiveDate: scheduleEvent.start))
            }
            return Event(task: task, outcome: outcome, scheduleEvent: scheduleEvent)
        }
    }

    func event(outcome values: [OutcomeValue]?, targets: [OutcomeValue]) throws -> Event {
        let schedule = try Schedule.dailyAtTime(hour: 9, minutes: 0, start: start, end: nil, text: nil, targetValues: targets, timeZone: zone)
        let pill = task("pill", schedule)
        return events(of: pill, in: DateInterval(start: start, end: day(1)), outcomes: values.map { [0: $0] } ?? [:])[0]
    }
}
