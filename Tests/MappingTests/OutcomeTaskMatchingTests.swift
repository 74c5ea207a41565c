import CareModel
import FHIR
import Foundation
@testable import Mapping
import XCTest

/// The rules that find the task an Observation belongs to, on their own: a catalog in memory, no mapping.
final class OutcomeTaskMatchingTests: XCTestCase {
    private let utc = TimeZone(identifier: "UTC")!
    /// 2025-03-01 00:00 UTC.
    private let day0 = Date(timeIntervalSince1970: 1_740_787_200)
    private let observation = ResourceKey(type: "Observation", id: "o1")
    private let plan = ResourceKey(type: "CarePlan", id: "cp1")

    /// Tasks by the resource they were made from, by patient and code, and by the Observations their
    /// activities name.
    private struct Catalog: TaskCatalog {
        var madeFrom: [ResourceKey: [CareTask]] = [:]
        var byPatient: [String: [CareTask]] = [:]
        var outcomeOf: [ResourceKey: CareTask] = [:]
        var earlier: [String: [CareTask]] = [:]

        func earlierVersions(of id: String) -> [CareTask] { earlier[id] ?? [] }
        func task(id: String) -> CareTask? {
            (Array(madeFrom.values.joined()) + Array(byPatient.values.joined()) + Array(outcomeOf.values)).first { $0.id == id }
        }
        func tasks(madeFrom key: ResourceKey) -> [CareTask] { madeFrom[key] ?? [] }
        func tasks(ofPatient patientID: String, withAnyCode codes: [String]) -> [CareTask] {
            (byPatient[patientID] ?? []).filter { !Set(OutcomeTaskMatching.codes(of: $0)).isDisjoint(with: codes) }
        }
        func taskForOutcome(_ key: ResourceKey) -> String? { outcomeOf[key]?.id }
    }

    /// A task daily at `hour`:00 from day 0 (until `days` later, when given), carrying `codes`.
    private func task(_ id: String, codes: [String] = [], hour: Int = 8, days: Int? = nil) throws -> CareTask {
        let schedule = try Schedule.dailyAtTime(
            hour: hour, minutes: 0, start: day0, end: days.map { day0.addingTimeInterval(Double($0) * 86_400) }, text: nil,
            duration: .minutes(30), timeZone: utc)
        var task = CareTask(id: id, title: "Task \(id)", schedule: schedule, metadata: EntityMetadata(effectiveDate: day0, timezone: utc))
        task.metadata.linkage.codes = codes
        return task
    }

    private func candidates(
        _ catalog: Catalog, codes: [String], basedOn: [ResourceKey]? = nil, conceptText: String? = nil, asked: inout Int
    ) throws -> [String] {
        var count = 0
        defer { asked = count }
        return try OutcomeTaskMatching(catalog: catalog).candidates(
            for: observation, patientID: "p1", codes: codes, basedOn: basedOn
        ) { () throws(MappingFailure) -> String? in
            count += 1
            return conceptText
        }.map(\.id)
    }

    func testThePlanItIsBasedOnGivesItsTaskWithTheSameCode() throws {
        let catalog = Catalog(madeFrom: [plan: [try task("bp", codes: ["loinc|85354-9"]), try task("weight", codes: ["loinc|29463-7"])]])
        var asked = 0
        XCTAssertEqual(try candidates(catalog, codes: ["loinc|29463-7"], basedOn: [plan], asked: &asked), ["weight"])
        XCTAssertEqual(asked, 0, "the concept text is read only when codes decide nothing")
    }

    func testWhenCodesDecideNothingTheConceptTextNamesTheTask() throws {
        let catalog = Catalog(madeFrom: [plan: [try task("bp"), try task("weight")]])
        var asked = 0
        XCTAssertEqual(try candidates(catalog, codes: [], basedOn: [plan], conceptText: "Task weight", asked: &asked), ["weight"])
        XCTAssertEqual(asked, 1)
        XCTAssertEqual(try candidates(catalog, codes: [], basedOn: [plan], conceptText: "Something else", asked: &asked), [])
    }

    func testThePlansOnlyTaskIsTakenWhateverItsCodes() throws {
        let catalog = Catalog(madeFrom: [plan: [try task("walk", codes: ["sct|1"])]])
        var asked = 0
        XCTAssertEqual(try candidates(catalog, codes: ["sct|2"], basedOn: [plan], asked: &asked), ["walk"])
    }

    func testTheActivityNamingItAsItsOutcomeComesAfterThePlansTasks() throws {
        let catalog = Catalog(
            madeFrom: [plan: [try task("bp", codes: ["loinc|85354-9"])]], outcomeOf: [observation: try task("named")])
        var asked = 0
        XCTAssertEqual(try candidates(catalog, codes: ["loinc|85354-9"], basedOn: [plan], asked: &asked), ["bp", "named"])
        XCTAssertEqual(try candidates(catalog, codes: ["loinc|85354-9"], asked: &asked), ["named"])
    }

    func testAPatientsTaskWithTheCodeOnlyWhenNothingElseMatches() throws {
        let coded = try task("coded", codes: ["loinc|85354-9"])
        let catalog = Catalog(byPatient: ["p1": [coded, try task("other", codes: ["loinc|1"])]])
        var asked = 0
        XCTAssertEqual(try candidates(catalog, codes: ["loinc|85354-9"], asked: &asked), ["coded"])
        XCTAssertEqual(try candidates(catalog, codes: [], asked: &asked), [], "an uncoded Observation matches no patient task")
        let named = Catalog(byPatient: ["p1": [coded]], outcomeOf: [observation: try task("named")])
        XCTAssertEqual(try candidates(named, codes: ["loinc|85354-9"], asked: &asked), ["named"])
    }

    func testAPatientsLogIsNoCandidate() throws {
        // A log value goes on the log version that owns its day, which the importer picks: the catalog
        // knows only the current one.
        var log = try task("p1#log-loinc-29463-7", codes: ["loinc|29463-7"])
        log.metadata.tags = [CareTask.observationLogTag]
        let catalog = Catalog(byPatient: ["p1": [log, try task("weigh", codes: ["loinc|29463-7"])]])
        var asked = 0
        XCTAssertEqual(try candidates(catalog, codes: ["loinc|29463-7"], asked: &asked), ["weigh"])
        XCTAssertEqual(try candidates(Catalog(byPatient: ["p1": [log]]), codes: ["loinc|29463-7"], asked: &asked), [])
    }

    func testTheFirstCandidateWhoseScheduleHoldsTheTimeTakesTheValue() throws {
        let ended = try task("ended", days: 2)
        let morning = try task("morning", hour: 8)
        // Day 5, 08:10: the ended task has no occurrence then; the morning task's sixth (index 5) holds it.
        let time = day0.addingTimeInterval(5 * 86_400 + 8 * 3_600 + 600)
        let matching = OutcomeTaskMatching(catalog: nil)
        let found = matching.firstOccurrence(among: [ended, morning], at: time)
        XCTAssertEqual(found?.task.id, "morning")
        XCTAssertEqual(found?.occurrence, 5)
        XCTAssertEqual(found?.isCurrent, true)
        XCTAssertNil(matching.firstOccurrence(among: [ended], at: time))
        XCTAssertNil(matching.firstOccurrence(among: [morning], at: day0.addingTimeInterval(-86_400)))
    }

    func testATimeBeforeTheCurrentVersionTakesEffectGoesOnTheEarlierVersionInEffectThen() throws {
        // A long-running task given a version starting on day 10 (Docs/measurement-history.md): day 5's
        // value keeps its place on the version before, with that version's index.
        let original = try task("med")
        var recent = original
        recent.uuid = UUID()
        recent.metadata.effectiveDate = day0.addingTimeInterval(10 * 86_400)
        recent.metadata.previousVersionUUIDs = [original.uuid]
        recent.schedule = try Schedule(composing: [XCTUnwrap(original.schedule.elements.first?.continued(from: recent.metadata.effectiveDate))])
        let matching = OutcomeTaskMatching(catalog: Catalog(earlier: ["med": [original]]))
        let old = matching.firstOccurrence(among: [recent], at: day0.addingTimeInterval(5 * 86_400 + 8 * 3_600 + 600))
        XCTAssertEqual(old?.task.uuid, original.uuid)
        XCTAssertEqual(old?.occurrence, 5)
        XCTAssertEqual(old?.isCurrent, false)
        let new = matching.firstOccurrence(among: [recent], at: day0.addingTimeInterval(12 * 86_400 + 8 * 3_600 + 600))
        XCTAssertEqual(new?.task.uuid, recent.uuid)
        XCTAssertEqual(new?.occurrence, 2, "counted from the recent start")
        XCTAssertEqual(new?.isCurrent, true)
        XCTAssertNil(OutcomeTaskMatching(catalog: nil).firstOccurrence(among: [recent], at: day0.addingTimeInterval(5 * 86_400 + 8 * 3_600 + 600)),
                     "without the earlier version, no occurrence")
    }
}
