import CareModel
import FHIR
import Foundation
import Mapping
@testable import Pipeline
import Store
import XCTest

/// Outcome planning on its own: Observations' contributions against what the store holds (given in
/// memory), without mapping, writing or a database.
final class OutcomePlanningTests: XCTestCase {
    private let utc = TimeZone(identifier: "UTC")!
    /// 2025-03-01 00:00 UTC.
    private let day0 = Date(timeIntervalSince1970: 1_740_787_200)

    /// What the store holds, in memory.
    private struct Reads: OutcomePlanningReads {
        var tasks: [CareTask] = []
        var outcomes: [Outcome] = []
        var links: [ResourceLink] = []

        func tasks(ids: [String]) throws -> [CareTask] { tasks.filter { ids.contains($0.id) } }
        func outcomes(ids: [String]) throws -> [Outcome] { outcomes.filter { ids.contains($0.id) } }
        func links(ofResources resources: [(type: String, id: String)]) throws -> [ResourceLink] {
            links.filter { link in resources.contains { $0.type == link.resourceType && $0.id == link.resourceID } }
        }
    }

    private func task(_ id: String = "t1") throws -> CareTask {
        let schedule = try Schedule.dailyAtTime(hour: 8, minutes: 0, start: day0, end: nil, text: nil, duration: .minutes(30), timeZone: utc)
        return CareTask(id: id, title: "Measure blood pressure", schedule: schedule, metadata: EntityMetadata(effectiveDate: day0, timezone: utc))
    }

    private func key(_ id: String) -> ResourceKey { ResourceKey(type: "Observation", id: id) }

    private func provenance(_ id: String) -> Provenance {
        Provenance(sourceSystem: MappingOptions.defaultSourceSystem, fhirType: "Observation", fhirID: id)
    }

    private func observation(_ id: String, task: CareTask, occurrence: Int, value: Double, logTask: CareTask? = nil) -> MappedInput {
        let contribution = OutcomeContribution(
            taskID: task.id, occurrence: occurrence, values: [OutcomeValue(.double(value), units: "mmHg")], source: key(id), logTask: logTask,
            provenance: provenance(id))
        return MappedInput(
            mapped: MappedResource(key: key(id), result: .mapped(entities: [], outcomes: [contribution])), origin: ImportOrigin(file: "test.json"),
            raw: Element.resource("Observation"),
            source: SourceResource(sourceSystem: MappingOptions.defaultSourceSystem, resourceType: "Observation", resourceID: id, body: Data("{}".utf8)))
    }

    /// The outcome an earlier import stored for Observation `id`.
    private func stored(_ id: String, task: CareTask, occurrence: Int, value: Double) -> Outcome {
        Outcome(
            taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.double(value), units: "mmHg")],
            metadata: EntityMetadata(effectiveDate: task.schedule.eventStart(occurrence: occurrence)!, timezone: utc, provenance: provenance(id)))
    }

    private func planner(_ reads: Reads) -> OutcomePlanner {
        OutcomePlanner(reads: reads, options: ImportOptions(mapping: MappingOptions(timeZone: utc)), writeBackSystem: nil)
    }

    /// The report the plan's reporting makes, on a ledger of its own.
    private func report(of plan: OutcomePlan) throws -> ImportReport {
        let ledger = ImportLedger(store: try SQLiteStore.inMemory(), options: ImportOptions(mapping: MappingOptions(timeZone: utc)))
        for entry in plan.reporting { entry(ledger) }
        return ledger.finish(coverage: nil, seconds: 0)
    }

    private func outcomes(of changes: [StoreChange]) -> [(added: Bool, outcome: Outcome)] {
        changes.compactMap { change in
            switch change {
            case .add(.outcome(let outcome)): return (true, outcome)
            case .upsert(.outcome(let outcome), _): return (false, outcome)
            default: return nil
            }
        }
    }

    private func recordsSource(_ changes: [StoreChange]) -> Bool {
        changes.contains { if case .recordSource = $0 { true } else { false } }
    }

    func testANewObservationAddsTheOutcomeOfItsOccurrenceAndRecordsItsSource() throws {
        let task = try task()
        let plan = try planner(Reads(tasks: [task])).planOutcomes(
            [observation("o1", task: task, occurrence: 2, value: 120)], removals: [], catalog: ImportTaskCatalog(), after: nil)
        XCTAssertEqual(plan.groups.count, 1)
        let written = outcomes(of: plan.groups[0].changes)
        XCTAssertEqual(written.count, 1)
        XCTAssertTrue(written[0].added, "an outcome neither stored nor in flight is an add")
        XCTAssertEqual(written[0].outcome.id, Outcome.id(taskUUID: task.uuid, occurrence: 2))
        XCTAssertEqual(written[0].outcome.metadata.effectiveDate, task.schedule.eventStart(occurrence: 2))
        XCTAssertEqual(written[0].outcome.values.map(\.value), [.double(120)])
        XCTAssertNil(written[0].outcome.metadata.userInfo, "every value came from the resource of its provenance")
        XCTAssertTrue(recordsSource(plan.groups[0].changes))
        XCTAssertEqual(plan.statuses[key("o1")], .created)
        XCTAssertEqual(plan.outcomeOfSource[key("o1")], written[0].outcome.id)
        XCTAssertEqual(try report(of: plan).outcomeValues, 1)
    }

    func testTheSameValuesAgainWriteNothing() throws {
        let task = try task()
        let reads = Reads(tasks: [task], outcomes: [stored("o1", task: task, occurrence: 2, value: 120)])
        let plan = try planner(reads).planOutcomes(
            [observation("o1", task: task, occurrence: 2, value: 120)], removals: [], catalog: ImportTaskCatalog(), after: nil)
        XCTAssertTrue(plan.groups.isEmpty)
        XCTAssertEqual(plan.statuses[key("o1")], .unchanged)
    }

    func testAChangedValueIsANewVersionOfTheStoredOutcome() throws {
        let task = try task()
        let reads = Reads(tasks: [task], outcomes: [stored("o1", task: task, occurrence: 2, value: 120)])
        let plan = try planner(reads).planOutcomes(
            [observation("o1", task: task, occurrence: 2, value: 135)], removals: [], catalog: ImportTaskCatalog(), after: nil)
        XCTAssertEqual(plan.groups.count, 1)
        let written = outcomes(of: plan.groups[0].changes)
        XCTAssertEqual(written.map(\.added), [false], "a stored outcome is upserted")
        XCTAssertEqual(written.first?.outcome.values.map(\.value), [.double(135)])
        XCTAssertEqual(plan.statuses[key("o1")], .updated)
        XCTAssertTrue(recordsSource(plan.groups[0].changes))
    }

    func testObservationsOfOneOccurrenceMakeOneOutcomeThatNamesWhereEachValueCameFrom() throws {
        let task = try task()
        let plan = try planner(Reads(tasks: [task])).planOutcomes(
            [observation("b", task: task, occurrence: 1, value: 80), observation("a", task: task, occurrence: 1, value: 120)],
            removals: [], catalog: ImportTaskCatalog(), after: nil)
        XCTAssertEqual(plan.groups.count, 1)
        let outcome = try XCTUnwrap(outcomes(of: plan.groups[0].changes).first?.outcome)
        // Values in (created date, source) order, each given its position.
        XCTAssertEqual(outcome.values.map(\.value), [.double(120), .double(80)])
        XCTAssertEqual(outcome.values.map(\.index), [0, 1])
        XCTAssertEqual(outcome.metadata.provenance?.fhirID, "b", "the provenance of the first Observation in input order")
        XCTAssertEqual(outcome.metadata.linkage.valueSources, [ResourceKey(type: "Observation", id: "a"), ResourceKey(type: "Observation", id: "b")])
        XCTAssertEqual(outcome.metadata.userInfo?["fhir.valueSources"], "Observation/a\nObservation/b", "the stored shape")
        // The store links the resource of the provenance; the other is linked by the plan.
        let links = plan.groups[0].changes.compactMap { change -> String? in
            if case .link(let link) = change { return link.resourceID }
            return nil
        }
        XCTAssertEqual(links, ["a"])
        XCTAssertEqual(try report(of: plan).outcomeValues, 2)
    }

    func testTheSameObservationTwiceInABatchCountsTheLastOne() throws {
        let task = try task()
        let plan = try planner(Reads(tasks: [task])).planOutcomes(
            [observation("o1", task: task, occurrence: 1, value: 80), observation("o1", task: task, occurrence: 1, value: 90)],
            removals: [], catalog: ImportTaskCatalog(), after: nil)
        let outcome = try XCTUnwrap(outcomes(of: plan.groups[0].changes).first?.outcome)
        XCTAssertEqual(outcome.values.map(\.value), [.double(90)])
        XCTAssertEqual(try report(of: plan).byType["Observation"]?.unchanged, 1, "the earlier one is counted as mapped once")
    }

    func testADeletedObservationTakesItsValueAndAnEmptyOutcomeIsDeleted() throws {
        let task = try task()
        let outcome = stored("o1", task: task, occurrence: 2, value: 120)
        let reads = Reads(
            tasks: [task], outcomes: [outcome],
            links: [ResourceLink(
                sourceSystem: MappingOptions.defaultSourceSystem, resourceType: "Observation", resourceID: "o1", entityKind: .outcome,
                entityID: outcome.id)])
        let plan = try planner(reads).planOutcomes([], removals: [(key("o1"), ImportOrigin(file: "test.json"))], catalog: ImportTaskCatalog(), after: nil)
        XCTAssertEqual(plan.groups.count, 1)
        guard case .delete(.outcome, let id, nil, _) = plan.groups[0].changes.first else {
            return XCTFail("expected the outcome's deletion, got \(plan.groups[0].changes)")
        }
        XCTAssertEqual(id, outcome.id)
        XCTAssertEqual(plan.deleted, [outcome.id])
        XCTAssertEqual(try report(of: plan).byType["Observation"]?.deleted, 1)
    }

    func testADeletionOfWhatTheStoreDoesNotHaveIsSkipped() throws {
        let plan = try planner(Reads()).planOutcomes([], removals: [(key("o9"), ImportOrigin(file: "test.json"))], catalog: ImportTaskCatalog(), after: nil)
        XCTAssertTrue(plan.groups.isEmpty)
        let report = try report(of: plan)
        XCTAssertEqual(report.byType["Observation"]?.skipped, 1)
        XCTAssertEqual(report.notes.map(\.message), ["marked for deletion, and nothing of it is in the store"])
    }

    func testAnObservationWhoseTaskTheStoreDoesNotHaveFails() throws {
        let task = try task()
        let plan = try planner(Reads()).planOutcomes(
            [observation("o1", task: task, occurrence: 2, value: 120)], removals: [], catalog: ImportTaskCatalog(), after: nil)
        XCTAssertTrue(plan.groups.isEmpty)
        XCTAssertEqual(try report(of: plan).failures.map(\.message), ["its task t1 is not in the store"])
    }

    func testALogTaskIsPlannedOnceAndNotAgainOnceAdopted() throws {
        let log = try task("p1#log-code")
        let planner = planner(Reads())
        // Its days, as the index pass noted them: the second batch's day is one of them.
        planner.logDays = [log.id: [0, 1, 2]]
        let first = try planner.planOutcomes(
            [observation("o1", task: log, occurrence: 0, value: 1, logTask: log), observation("o2", task: log, occurrence: 1, value: 2, logTask: log)],
            removals: [], catalog: ImportTaskCatalog(), after: nil)
        XCTAssertEqual(Array(first.logTasks.keys), [log.id])
        XCTAssertEqual(first.logBatch.changes.count, 1)
        XCTAssertEqual(first.groups.count, 2, "one outcome per day of the log")
        planner.adopt(first)
        let second = try planner.planOutcomes(
            [observation("o3", task: log, occurrence: 2, value: 3, logTask: log)], removals: [], catalog: ImportTaskCatalog(), after: first)
        XCTAssertTrue(second.logTasks.isEmpty)
        XCTAssertTrue(second.logBatch.isEmpty)
        XCTAssertEqual(second.groups.count, 1)
    }

    func testANewLogsScheduleIsItsReadingDaysAndItsOccurrencesCountThem() throws {
        // As the mapping proposes it: starting on the epoch, its values numbered by day from the epoch.
        let options = MappingOptions(timeZone: utc)
        let schedule = try Schedule(composing: [ScheduleElement(
            start: options.epoch, end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: utc)])
        var log = CareTask(id: "p1#log-code", title: "Weight", impactsAdherence: false, schedule: schedule,
                           metadata: EntityMetadata(effectiveDate: options.epoch, timezone: utc))
        log.metadata.linkage.patientID = "p1"
        let firstDay = try XCTUnwrap(options.dayNumber(of: day0))
        let planner = planner(Reads())
        // The log's first reading is in another batch: the index pass noted days 0, 2 and 3 of it.
        planner.logDays = [log.id: [firstDay, firstDay + 2, firstDay + 3]]
        let plan = try planner.planOutcomes(
            [observation("o3", task: log, occurrence: firstDay + 3, value: 1, logTask: log),
             observation("o2", task: log, occurrence: firstDay + 2, value: 2, logTask: log)],
            removals: [], catalog: ImportTaskCatalog(), after: nil)
        let made = try XCTUnwrap(plan.logTasks[log.id]?.task)
        let days = [0, 2, 3].map { day0.addingTimeInterval(Double($0) * 86_400) }
        XCTAssertEqual(made.schedule.elements.map(\.start), days, "one element per reading day")
        XCTAssertEqual(made.schedule.elements.map(\.end), days.map { $0.addingTimeInterval(86_400) }, "each ending at the next day's start")
        XCTAssertEqual(made.schedule.events(from: day0, to: day0.addingTimeInterval(5 * 86_400)).map(\.start), days, "no event on a day without a reading")
        XCTAssertEqual(made.metadata.effectiveDate, day0)
        XCTAssertEqual(made.uuid, log.uuid)
        let written = plan.groups.flatMap { outcomes(of: $0.changes) }.map(\.outcome)
        XCTAssertEqual(written.map(\.taskOccurrenceIndex), [2, 1], "the number of the log's reading days before each")
        XCTAssertEqual(written.map(\.metadata.effectiveDate), [days[2], days[1]])
        // A value on a day that is not one of the log's is refused, naming the log and its days.
        planner.adopt(plan)
        let late = try planner.planOutcomes(
            [observation("o1", task: log, occurrence: firstDay + 1, value: 3, logTask: log)], removals: [], catalog: ImportTaskCatalog(), after: plan)
        XCTAssertTrue(late.groups.isEmpty)
        XCTAssertEqual(try report(of: late).failures.map(\.message), [
            "its day 2025-03-02 is not a reading day of the version of log task p1#log-code that owns it (days 2025-03-01 to 2025-03-04): "
                + "a log version's days are fixed when it is written, since its outcomes' indexes count them, and a new version cannot take effect earlier"])
    }

    func testThePlanInFlightCountsAsStored() throws {
        let task = try task()
        let planner = planner(Reads(tasks: [task]))
        let first = try planner.planOutcomes(
            [observation("o1", task: task, occurrence: 2, value: 120)], removals: [], catalog: ImportTaskCatalog(), after: nil)
        // The same Observation again, planned while the first plan is written: nothing new.
        let again = try planner.planOutcomes(
            [observation("o1", task: task, occurrence: 2, value: 120)], removals: [], catalog: ImportTaskCatalog(), after: first)
        XCTAssertTrue(again.groups.isEmpty)
        XCTAssertEqual(again.statuses[key("o1")], .unchanged)
        // Moved to another occurrence: the first outcome loses its value (deleted), the new one is added.
        let moved = try planner.planOutcomes(
            [observation("o1", task: task, occurrence: 3, value: 120)], removals: [], catalog: ImportTaskCatalog(), after: first)
        XCTAssertEqual(moved.statuses[key("o1")], .updated)
        XCTAssertEqual(moved.deleted, [Outcome.id(taskUUID: task.uuid, occurrence: 2)])
        XCTAssertEqual(moved.written.keys.sorted(), [Outcome.id(taskUUID: task.uuid, occurrence: 3)])
    }
}
