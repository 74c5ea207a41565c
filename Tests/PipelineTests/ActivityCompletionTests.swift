import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// Whether a completed activity's status is patched back depends on whether the activity has a `detail`:
/// recorded by the import beside the CarePlan it kept, or, for a CarePlan kept before stores recorded it,
/// read from the CarePlan as received.
final class ActivityCompletionTests: XCTestCase {
    private let zone = TimeZone(identifier: "America/Chicago")!

    /// A plan of two days with two activities: one with a detail (two occurrences), one that only
    /// references a ServiceRequest (a daily task over the plan's period).
    private static let carePlan = #"""
        {"resourceType":"CarePlan","id":"cp-done","status":"active","intent":"plan","subject":{"reference":"Patient/p-done"},
         "period":{"start":"2026-11-01","end":"2026-11-02"},
         "activity":[
          {"detail":{"kind":"Task","code":{"coding":[{"system":"http://snomed.info/sct","code":"229065009"}],"text":"Exercises"},
           "status":"scheduled","scheduledTiming":{"repeat":{"count":2,"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["09:00:00"]}}}},
          {"reference":{"reference":"ServiceRequest/sr-walk","display":"Walk"}}]}
        """#

    private func importedStore() throws -> SQLiteStore {
        let input = try makeScratchFolder("completion-input")
        try Data(#"{"resourceType":"Patient","id":"p-done","name":[{"family":"Done","given":["Dana"]}]}"#.utf8)
            .write(to: input.appendingPathComponent("patient.json"))
        try Data(Self.carePlan.utf8).write(to: input.appendingPathComponent("careplan.json"))
        let store = try makeStore()
        XCTAssertEqual(try importFiles([input.path], into: store, zone: zone.identifier).failures, [])
        return store
    }

    private func activityTask(_ path: String, in store: any Store) throws -> CareTask {
        try XCTUnwrap(try store.tasks(.current).first { $0.metadata.linkage.elementPath == path }, "no task of \(path)")
    }

    /// Records an outcome for every occurrence of `task`, then exports with `activity-status: true`; the
    /// paths of the activities patched.
    private func completeAndExport(_ task: CareTask, in store: any Store) throws -> [String] {
        let count = try XCTUnwrap(task.schedule.occurrenceCount, "a finite schedule")
        var batch = StoreBatch()
        for occurrence in 0..<count {
            var metadata = EntityMetadata(effectiveDate: task.schedule.eventStart(occurrence: occurrence) ?? Date(), timezone: zone)
            metadata.source = "HeartApp"
            batch.upsert(Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.boolean(true))], metadata: metadata))
        }
        try store.apply(batch)

        let mappings = try makeScratchFolder("completion-mappings")
        let defaults = try String(contentsOf: Corpus.projectRoot.appendingPathComponent("Mappings/ObservationExport.yaml"), encoding: .utf8)
        try Data(defaults.replacingOccurrences(of: "activity-status: false", with: "activity-status: true").utf8)
            .write(to: mappings.appendingPathComponent("ObservationExport.yaml"))
        let gateway = Gateway(store: store, mappings: try MappingSet.defaults(overriddenBy: mappings.path), options: Gateway.Options(timeZone: zone))
        let out = try makeScratchFolder("completion-out")
        let report = try gateway.export(to: .folder(out.path))
        XCTAssertEqual(report.refused.map(\.reason), [])
        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(report.path))))
        return bundle.children(named: "entry").compactMap { $0.child(named: "resource") }.filter { $0.resourceType == "Parameters" }.flatMap { patch in
            (patch.child(named: "parameter")?.children(named: "part") ?? []).filter { $0.childValue("name") == "path" }.compactMap { $0.childValue("valueString") }
        }
    }

    /// Keeps `body` as the CarePlan's latest content the way a store before the record kept it: with no
    /// note of its activities' details.
    private func keepUnrecorded(_ body: String, in store: any Store) throws {
        var batch = StoreBatch()
        batch.record(SourceResource(sourceSystem: "a store before the record", resourceType: "CarePlan", resourceID: "cp-done", body: Data(body.utf8)))
        XCTAssertEqual(try store.apply(batch).sourcesRecorded, 1)
        XCTAssertNil(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "cp-done"))
    }

    func testImportRecordsWhichActivitiesHaveADetailBesideTheCarePlan() throws {
        let store = try importedStore()
        XCTAssertEqual(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "cp-done"), ["CarePlan.activity[0]"])
        XCTAssertEqual(try store.sourceResources(resourceType: "CarePlan", resourceID: "cp-done").map(\.activitiesWithDetail), [["CarePlan.activity[0]"]])
        XCTAssertNil(try store.activitiesWithDetail(resourceType: "Patient", resourceID: "p-done"), "only CarePlans have activities")
        XCTAssertNil(try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: "cp-unknown"))
        XCTAssertNil(try activityTask("CarePlan.activity[0]", in: store).metadata.userInfo?["fhir.elementDetail"], "the task's content does not carry it")
    }

    func testAnActivityWithADetailIsPatched() throws {
        let store = try importedStore()
        // (Each outcome of the run that finds every occurrence done is followed by its patch.)
        XCTAssertEqual(Set(try completeAndExport(activityTask("CarePlan.activity[0]", in: store), in: store)), ["CarePlan.activity[0].detail.status"])
    }

    func testAnActivityWithNoDetailIsNotPatched() throws {
        let store = try importedStore()
        XCTAssertEqual(try completeAndExport(activityTask("CarePlan.activity[1]", in: store), in: store), [])
    }

    /// The export answers from the record, not from the body: a content whose record says the activity
    /// has a detail is patched, whatever its body holds.
    func testTheRecordAnswersWithoutTheBody() throws {
        let store = try importedStore()
        var batch = StoreBatch()
        batch.record(SourceResource(
            sourceSystem: "another", resourceType: "CarePlan", resourceID: "cp-done", body: Data(#"{"resourceType":"CarePlan"}"#.utf8),
            activitiesWithDetail: ["CarePlan.activity[1]"]))
        try store.apply(batch)
        XCTAssertEqual(Set(try completeAndExport(activityTask("CarePlan.activity[1]", in: store), in: store)), ["CarePlan.activity[1].detail.status"])
    }

    /// A CarePlan kept before stores recorded its activities' details: the CarePlan as received answers.
    func testACarePlanKeptBeforeTheRecordIsAnsweredFromItsBody() throws {
        let store = try importedStore()
        try keepUnrecorded(Self.carePlan + " ", in: store)
        XCTAssertEqual(try completeAndExport(activityTask("CarePlan.activity[1]", in: store), in: store), [], "no detail in the CarePlan")
        XCTAssertEqual(Set(try completeAndExport(activityTask("CarePlan.activity[0]", in: store), in: store)), ["CarePlan.activity[0].detail.status"])
    }

    /// It is the latest content kept that answers, as before the record: here one that no longer has the
    /// detail, though the content recorded before it had.
    func testTheLatestContentKeptAnswersEvenWhenItWasNotRecorded() throws {
        let store = try importedStore()
        try keepUnrecorded(#"""
            {"resourceType":"CarePlan","id":"cp-done","status":"active","intent":"plan","subject":{"reference":"Patient/p-done"},
             "activity":[{"reference":{"reference":"ServiceRequest/sr-exercises"}},{"reference":{"reference":"ServiceRequest/sr-walk"}}]}
            """#, in: store)
        XCTAssertEqual(try completeAndExport(activityTask("CarePlan.activity[0]", in: store), in: store), [])
    }
}
