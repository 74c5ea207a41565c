import CareModel
import Foundation
import XCTest

@testable import Insights

/// Threshold rules: the file format (every problem at file:line:column) and what fires.
final class ThresholdRuleTests: XCTestCase {
    let zone = TimeZone(identifier: "UTC")!
    let start = Date(timeIntervalSince1970: 1_793_577_600)  // 2026-11-02T00:00:00Z

    static let rulesText = """
        insights: 1
        measurements:
          - kind: http://loinc.org|8480-6
            title: Systolic blood pressure
            unit: mm[Hg]
            target: {low: 90, high: 140}
        rules:
          - name: systolic-high
            kind: http://loinc.org|8480-6
            unit: mm[Hg]
            above: 140
            in-a-row: 3
            severity: alert
            message: Systolic over {threshold} {unit} on {count} readings in a row (latest {value})
          - name: phq9
            kind: http://loinc.org|44261-6
            at-least: 15
            message: PHQ-9 total of {value}
          - name: adherence-low
            adherence-below: 0.8
            days: 7
            message: Adherence {mean} over {days} days
        """

    func testARuleThatFiresAndOneThatDoesNot() throws {
        let rules = try InsightsRules.parse(Self.rulesText, file: "insights.yaml")
        // Systolic: 150, 138 (breaks the run), 142, 145, 151 (three in a row), 120.
        let systolic = [150.0, 138, 142, 145, 151, 120]
        let phq = [9.0, 12]
        var events: [Event] = []
        for (index, value) in systolic.enumerated() {
            events.append(try reading(value, kind: "http://loinc.org|8480-6", unit: "mm[Hg]", task: "bp", day: index))
        }
        for (index, value) in phq.enumerated() {
            events.append(try reading(value, kind: "http://loinc.org|44261-6", unit: "{score}", task: "phq", day: index * 7))
        }
        // A reading in another unit is not compared.
        events.append(try reading(20, kind: "http://loinc.org|8480-6", unit: "kPa", task: "bp-kpa", day: 6))
        let series = MeasurementSeries.collect(from: events, definitions: rules.measurements)
        let findings = ThresholdEvaluator.evaluate(rules.rules, series: series, days: [])
        let systolicFinding = try XCTUnwrap(findings.first { $0.rule == "systolic-high" })
        XCTAssertTrue(systolicFinding.fired)
        XCTAssertEqual(systolicFinding.message, "Systolic over 140 mm[Hg] on 3 readings in a row (latest 151)")
        XCTAssertEqual(systolicFinding.readings.map(\.value), [142, 145, 151])
        XCTAssertEqual(systolicFinding.severity, .alert)
        XCTAssertEqual(systolicFinding.readingsInOtherUnits, 1)
        let phqFinding = try XCTUnwrap(findings.first { $0.rule == "phq9" })
        XCTAssertFalse(phqFinding.fired)
        XCTAssertEqual(phqFinding.readings.map(\.value), [9, 12])
        XCTAssertTrue(phqFinding.message.hasPrefix("not met: a reading at least 15 {score} never occurred in 2 reading(s)"), phqFinding.message)
        let adherence = try XCTUnwrap(findings.first { $0.rule == "adherence-low" })
        XCTAssertFalse(adherence.fired)
        XCTAssertTrue(adherence.message.contains("fewer than the rule's 7"), adherence.message)
        // The band comes from the definition; the series in kPa is a series of its own.
        XCTAssertEqual(series.first { $0.unit == "mm[Hg]" }?.target, TargetBand(low: 90, high: 140))
        XCTAssertEqual(series.first { $0.unit == "mm[Hg]" }?.title, "Systolic blood pressure")
        XCTAssertEqual(series.count, 3)
    }

    func testTwoReadingsOverAreNotThree() throws {
        let rules = try InsightsRules.parse(Self.rulesText, file: "insights.yaml")
        let events = try [150.0, 150, 130, 150, 150].enumerated().map { try reading($1, kind: "http://loinc.org|8480-6", unit: "mm[Hg]", task: "bp", day: $0) }
        let finding = ThresholdEvaluator.evaluate(rules.rules, series: MeasurementSeries.collect(from: events, definitions: []), days: [])[0]
        XCTAssertFalse(finding.fired)
        XCTAssertTrue(finding.message.contains("3 readings in a row over 140 mm[Hg] never occurred in 5 reading(s)"), finding.message)
    }

    func testAdherenceRuleOverAWeek() throws {
        let rules = try InsightsRules.parse(Self.rulesText, file: "insights.yaml")
        let fractions: [Adherence] = [.progress(1), .progress(1), .progress(0.5), .noEvents, .progress(0.5), .progress(1), .progress(0.5), .progress(1), .progress(1)]
        let days = fractions.enumerated().map { index, adherence in
            DayAdherence(date: "2026-11-\(String(format: "%02d", index + 2))", start: start.addingTimeInterval(Double(index) * 86_400), adherence: adherence, events: 2, eventsWithOutcome: 1)
        }
        let finding = ThresholdEvaluator.evaluate(rules.rules, series: [], days: days).first { $0.rule == "adherence-low" }!
        // Days 0-6: mean of 1, 1, .5, .5, 1, .5 = 0.75 < 0.8; later windows are 0.75 and 0.75... the latest that fires is shown.
        XCTAssertTrue(finding.fired)
        XCTAssertEqual(finding.message, "Adherence 75% over 7 days")
        XCTAssertEqual(finding.days.count, 7)
        let strict = try InsightsRules.parse(Self.rulesText.replacingOccurrences(of: "adherence-below: 0.8", with: "adherence-below: 0.7"), file: "x.yaml")
        XCTAssertFalse(ThresholdEvaluator.evaluate(strict.rules, series: [], days: days).first { $0.rule == "adherence-low" }!.fired)
    }

    func testProblemsAtTheirLineAndColumn() {
        let text = """
            insights: 1
            measurements:
              - kind: x
                titel: Typo
            rules:
              - name: a
                kind: http://loinc.org|8480-6
                above: 1e400
                message: hi
              - name: b
                kind: k
                above: 1
                below: 2
                message: two comparisons
              - name: c
                adherence-below: 1.5
                days: 0
                message: Adherence {value}
              - name: d
                kind: k
                at-most: 3
                in-a-row: 99999
                message: x {nope}
            """
        var parser = InsightsRulesParser(file: "bad.yaml")
        XCTAssertNil(parser.parse(text))
        let lines = parser.problems.map(\.description)
        XCTAssertEqual(lines, [
            "bad.yaml:4:5: error: unknown key 'titel' in a measurement (did you mean 'title'?)",
            "bad.yaml:3:5: error: missing `title:` (the title drawn above its chart)",
            "bad.yaml:8:12: error: `above:` is a number between -1000000000 and 1000000000",
            "bad.yaml:13:12: error: a measurement rule gives exactly one of `above:`, `at-least:`, `below:`, `at-most:`",
            "bad.yaml:16:22: error: `adherence-below:` is a fraction from 0 to 1 (0.8 for 80%)",
            "bad.yaml:17:11: error: `days:` is a whole number from 1 to 366",
            "bad.yaml:22:15: error: `in-a-row:` is a whole number from 1 to 1000",
        ], lines.joined(separator: "\n"))
    }

    func testPlaceholdersAndSyntax() {
        var parser = InsightsRulesParser(file: "p.yaml")
        XCTAssertNil(parser.parse("insights: 1\nrules:\n  - name: a\n    adherence-below: 0.5\n    message: Adherence {value}\n"))
        XCTAssertEqual(parser.problems.map(\.description), ["p.yaml:5:14: error: '{value}' is not filled in by this rule (it fills {days}, {mean}, {threshold})"])
        var syntax = InsightsRulesParser(file: "s.yaml")
        XCTAssertNil(syntax.parse("insights: 1\nrules: [\n"))
        XCTAssertEqual(syntax.problems.count, 1)
        XCTAssertTrue(syntax.problems[0].description.hasPrefix("s.yaml:"), syntax.problems[0].description)
        var version = InsightsRulesParser(file: "v.yaml")
        XCTAssertNil(version.parse("insights: 2\n"))
        XCTAssertEqual(version.problems.map(\.description), ["v.yaml:1:11: error: `insights:` takes the format version 1"])
        XCTAssertTrue(InsightsRulesParser.isRulesFile(Self.rulesText))
        XCTAssertFalse(InsightsRulesParser.isRulesFile("resource: Patient\nentities: []\n"))
    }

    /// `progress:` rules: each problem at its place, with a did-you-mean for a misspelt strategy.
    func testProgressRules() throws {
        let good = try InsightsRules.parse("""
            insights: 1
            progress:
              - code: http://loinc.org|55423-8
                strategy: summing
              - task: CarePlan/cp-1#walk
                strategy: outcome-exists
                description: a walk is done when recorded
            """, file: "p.yaml")
        XCTAssertEqual(good.progress.map(\.match), [.code("http://loinc.org|55423-8"), .task("CarePlan/cp-1#walk")])
        XCTAssertEqual(good.progress.map(\.strategy), [.summingOutcomeValues, .checkingOutcomeExists])
        let text = """
            insights: 1
            progress:
              - code: http://loinc.org|55423-8
                strategy: suming
              - code: 55423-8
                strategy: summing
              - task: a
                code: http://loinc.org|1-8
                strategy: summing
              - strategy: summing
              - code: http://loinc.org|55423-8
              - task: b
                strategy: summing
                strategi: summing
              - task: c
                strategy: summing
              - task: c
                strategy: outcome-exists
            """
        var parser = InsightsRulesParser(file: "bad.yaml")
        XCTAssertNil(parser.parse(text))
        XCTAssertEqual(parser.problems.map(\.description), [
            "bad.yaml:4:15: error: `strategy:` is one of outcome-exists, summing (did you mean 'summing'?)",
            "bad.yaml:5:11: error: `code:` is a FHIR code as system|code (e.g. http://loinc.org|55423-8)",
            "bad.yaml:8:11: error: a progress rule matches by `task:` or by `code:`, not both",
            "bad.yaml:10:5: error: missing `code:` (system|code of the tasks) or `task:` (a task id)",
            "bad.yaml:11:5: error: missing `strategy:` (outcome-exists or summing)",
            "bad.yaml:14:5: error: unknown key 'strategi' in a progress rule (did you mean 'strategy'?)",
            "bad.yaml:17:5: error: two `progress:` rules match the same task 'c'",
        ], parser.problems.map(\.description).joined(separator: "\n"))
    }

    /// The shipped Mappings/insights.yaml is sound.
    func testShippedRules() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Mappings/insights.yaml").path
        let rules = try InsightsRules.load(path: path)
        XCTAssertEqual(Set(rules.rules.map(\.name)), ["systolic-high", "diastolic-high", "phq9-moderately-severe", "adherence-low"])
        XCTAssertTrue(rules.measurements.contains { $0.kind == "http://loinc.org|8480-6" && $0.target == TargetBand(low: 90, high: 140) })
        XCTAssertEqual(rules.progress.map(\.match), [.code("http://loinc.org|55423-8"), .code("http://loinc.org|41950-7")])
        XCTAssertTrue(rules.progress.allSatisfy { $0.strategy == .summingOutcomeValues })
    }

    func reading(_ value: Double, kind: String, unit: String, task id: String, day: Int) throws -> Event {
        let schedule = try Schedule.dailyAtTime(hour: 8, minutes: 0, start: start, end: nil, text: nil, timeZone: zone)
        let task = CareTask(id: id, title: id, impactsAdherence: false, schedule: schedule, metadata: EntityMetadata(effectiveDate: start, timezone: zone))
        let scheduleEvent = try XCTUnwrap(schedule.event(occurrence: day))
        let outcome = Outcome(
            taskUUID: task.metadata.uuid, taskID: id, taskOccurrenceIndex: day,
            values: [OutcomeValue(.double(value), units: unit, kind: kind, createdDate: scheduleEvent.start.addingTimeInterval(300))],
            metadata: EntityMetadata(effectiveDate: scheduleEvent.start))
        return Event(task: task, outcome: outcome, scheduleEvent: scheduleEvent)
    }
}
