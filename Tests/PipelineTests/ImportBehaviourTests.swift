import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// The import's behaviour on the project's fixtures and on bad input: what lands, what fails, where,
/// and that nothing already stored changes.
final class ImportBehaviourTests: XCTestCase {
    private var fixtures: String { Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path }

    func testFixturesMakeThePatientsDay() throws {
        let store = try makeStore()
        let report = try importFiles([fixtures], into: store, zone: "America/Chicago")
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(report.byType["CarePlan"]?.created, 1)
        XCTAssertEqual(report.byType["Observation"]?.created, 2)
        let tasks = try store.tasks(.current).map(\.id).sorted()
        // Blood pressure is two HealthKit tasks (Mappings/healthkit.yaml); the panel's values go to the first.
        XCTAssertTrue(tasks.contains("CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic"), "\(tasks)")
        XCTAssertTrue(tasks.contains("MedicationRequest/medreq-1"), "\(tasks)")
        XCTAssertEqual(try store.tasks(EntityQuery(ids: ["MedicationRequest/medreq-1"])).first?.carePlanID, "CarePlan/cp-1",
                       "the medication task is on the plan whose activity references it")
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "America/Chicago")!
        let day = calendar.date(from: DateComponents(year: 2026, month: 11, day: 2))!
        let events = try store.events(patientID: "Patient/pat-1", in: DateInterval(start: day, duration: 86_400))
        let bloodPressure = events.filter { $0.task.id == "CarePlan/cp-1#activity-85354-9.healthkit-BloodPressureSystolic" }
        XCTAssertEqual(bloodPressure.count, 2)
        XCTAssertEqual(bloodPressure.first?.outcome?.values.count, 2, "the 08:04 panel fills the 08:00 occurrence")
        // The same input again changes nothing.
        let again = try importFiles([fixtures], into: store, zone: "America/Chicago")
        XCTAssertEqual(again.totals.created + again.totals.updated, 0)
    }

    func testChangedActivityMakesANewVersionOfOnlyThatTaskAndARemovedOneIsTombstoned() throws {
        let folder = try makeScratchFolder("plan")
        func plan(_ activities: String) -> String {
            #"{"resourceType":"CarePlan","id":"cp","status":"active","intent":"plan","subject":{"reference":"Patient/p"},"period":{"start":"2025-01-01"},"activity":[\#(activities)]}"#
        }
        let walk = #"{"detail":{"status":"scheduled","code":{"text":"Walk"},"scheduledTiming":{"repeat":{"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["09:00:00"]}}}}"#
        let read = #"{"detail":{"status":"scheduled","code":{"text":"Read"},"scheduledTiming":{"repeat":{"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["20:00:00"]}}}}"#
        let readLater = read.replacingOccurrences(of: "20:00:00", with: "21:00:00")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        let path = try folder.writeFile("cp.json", plan(walk + "," + read))
        let store = try makeStore()
        _ = try importFiles([folder.path], into: store)
        try folder.writeFile("cp.json", plan(walk + "," + readLater))
        let changed = try importFiles([path], into: store)
        XCTAssertEqual(changed.byType["CarePlan"]?.updated, 1)
        XCTAssertEqual(changed.entitiesUpdated, 1, "only the Read task gets a new version")
        XCTAssertEqual(try store.history(.task, id: "CarePlan/cp#activity-Walk").count, 1)
        XCTAssertEqual(try store.history(.task, id: "CarePlan/cp#activity-Read").count, 2)
        try folder.writeFile("cp.json", plan(walk))
        let dropped = try importFiles([path], into: store)
        XCTAssertEqual(dropped.entitiesDeleted, 1)
        XCTAssertEqual(try store.tasks(.current).map(\.id), ["CarePlan/cp#activity-Walk"])
    }

    func testEnteredInErrorTombstonesWhatTheResourceMade() throws {
        let folder = try makeScratchFolder("error")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        let plan = #"{"resourceType":"CarePlan","id":"cp","status":"active","intent":"plan","subject":{"reference":"Patient/p"},"period":{"start":"2025-01-01"}}"#
        let path = try folder.writeFile("cp.json", plan)
        let store = try makeStore()
        _ = try importFiles([folder.path], into: store)
        XCTAssertEqual(try store.carePlans(.current).count, 1)
        try folder.writeFile("cp.json", plan.replacingOccurrences(of: #""active""#, with: #""entered-in-error""#))
        let report = try importFiles([path], into: store)
        XCTAssertEqual(report.byType["CarePlan"]?.deleted, 1)
        XCTAssertEqual(try store.carePlans(.current).count, 0)
        XCTAssertEqual(try store.history(.carePlan, id: "CarePlan/cp").count, 2, "a tombstone, nothing removed")
    }

    func testAPlanSentAgainAfterEnteredInErrorStaysDeletedWithAWarningNotAFailure() throws {
        let folder = try makeScratchFolder("revived")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        let plan = #"{"resourceType":"CarePlan","id":"cp","status":"active","intent":"plan","subject":{"reference":"Patient/p"},"period":{"start":"2025-01-01"}}"#
        let path = try folder.writeFile("cp.json", plan)
        let store = try makeStore()
        _ = try importFiles([folder.path], into: store)
        try folder.writeFile("cp.json", plan.replacingOccurrences(of: #""active""#, with: #""entered-in-error""#))
        _ = try importFiles([path], into: store)
        try folder.writeFile("cp.json", plan)
        let report = try importFiles([path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(report.byType["CarePlan"]?.skipped, 1)
        XCTAssertTrue(report.notes.contains { $0.severity == "warning" && $0.message.contains("was deleted earlier") }, "\(report.notes)")
        XCTAssertEqual(try store.carePlans(.current).count, 0, "CareKit's rule: a deleted id stays deleted")
        XCTAssertEqual(try store.deadLetters(limit: 10).count, 0)
    }

    func testAnOccurrenceWhoseOutcomeWasDeletedTakesANewValueAgain() throws {
        let folder = try makeScratchFolder("relog")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        func weight(_ id: String, _ kg: String, status: String = "final") -> String {
            #"{"resourceType":"Observation","id":"\#(id)","status":"\#(status)","code":{"coding":[{"system":"http://loinc.org","code":"29463-7"}]},"subject":{"reference":"Patient/p"},"effectiveDateTime":"2025-03-02T08:00:00Z","valueQuantity":{"value":\#(kg),"unit":"kg","system":"http://unitsofmeasure.org","code":"kg"}}"#
        }
        let path = try folder.writeFile("w1.json", weight("w1", "70.5"))
        let store = try makeStore()
        _ = try importFiles([folder.path], into: store)
        XCTAssertEqual(try store.outcomes(.current).count, 1)
        try folder.writeFile("w1.json", weight("w1", "70.5", status: "entered-in-error"))
        let removed = try importFiles([path], into: store)
        XCTAssertEqual(removed.byType["Observation"]?.deleted, 1)
        XCTAssertEqual(try store.outcomes(.current).count, 0, "the day's log outcome had no other value: it is tombstoned")
        // Another weight the same day is logged on the same occurrence, after the tombstone.
        let second = try folder.writeFile("w2.json", weight("w2", "71.5"))
        let report = try importFiles([second], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(report.byType["Observation"]?.created, 1)
        let outcome = try XCTUnwrap(store.outcomes(.current).first)
        XCTAssertEqual(outcome.values.map(\.value), [.double(71.5)])
        XCTAssertEqual(try store.history(.outcome, id: outcome.id).count, 3, "first version, tombstone, the new value")
    }

    func testOutcomesWrittenWhileTheNextBatchIsPlannedComeOutAsInOneBatch() throws {
        // Batches of one Observation and more: each is planned while the one before is written, and a day's
        // log outcome is filled across batches. A second import removes a value and adds others.
        let folder = try makeScratchFolder("pipelined")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        func weight(_ id: String, _ kg: String, at time: String, status: String = "final") -> String {
            #"{"resourceType":"Observation","id":"\#(id)","status":"\#(status)","code":{"coding":[{"system":"http://loinc.org","code":"29463-7"}]},"subject":{"reference":"Patient/p"},"effectiveDateTime":"\#(time)","valueQuantity":{"value":\#(kg),"unit":"kg","system":"http://unitsofmeasure.org","code":"kg"}}"#
        }
        try folder.writeFile("first.ndjson", [
            weight("w1", "70.5", at: "2025-03-02T08:00:00Z"), weight("w2", "70.7", at: "2025-03-02T12:00:00Z"),
            weight("w3", "70.1", at: "2025-03-03T08:00:00Z"), weight("w4", "70.9", at: "2025-03-02T20:00:00Z"),
        ].joined(separator: "\n"))
        let later = try makeScratchFolder("pipelined-later")
        let second = try later.writeFile("second.ndjson", [
            weight("w5", "70.2", at: "2025-03-03T20:00:00Z"), weight("w2", "70.7", at: "2025-03-02T12:00:00Z", status: "entered-in-error"),
            weight("w6", "70.4", at: "2025-03-02T21:00:00Z"), weight("w7", "70.3", at: "2025-03-04T08:00:00Z"),
        ].joined(separator: "\n"))
        func run(batch: Int) throws -> (reports: [ImportReport], outcomes: [[OutcomeValue.Value]]) {
            let store = try makeStore()
            let reports = [
                try importFiles([folder.path], into: store, outcomeBatchSize: batch),
                try importFiles([second], into: store, outcomeBatchSize: batch),
                try importFiles([second], into: store, outcomeBatchSize: batch),
            ]
            // By day: a later day's log value may be on a newer log version, counted from 0 (LogTaskStart).
            let outcomes = try store.outcomes(.current).sorted { $0.metadata.effectiveDate < $1.metadata.effectiveDate }
            return (reports, outcomes.map { $0.values.map(\.value) })
        }
        let whole = try run(batch: 1000)
        for report in whole.reports { XCTAssertEqual(report.failures, [], describe(report.failures)) }
        XCTAssertEqual(whole.outcomes, [[.double(70.5), .double(70.9), .double(70.4)], [.double(70.1), .double(70.2)], [.double(70.3)]])
        XCTAssertEqual(whole.reports[1].byType["Observation"]?.deleted, 1)
        XCTAssertEqual(whole.reports[2].totals.created + whole.reports[2].totals.updated, 0, "the same input again changes nothing")
        for batch in [1, 2, 3] {
            let pipelined = try run(batch: batch)
            XCTAssertEqual(pipelined.outcomes, whole.outcomes, "batches of \(batch)")
            for (report, expected) in zip(pipelined.reports, whole.reports) {
                XCTAssertEqual(report.failures, [], "batches of \(batch): " + describe(report.failures))
                XCTAssertEqual(report.byType["Observation"], expected.byType["Observation"], "batches of \(batch)")
                XCTAssertEqual(report.outcomeValues, expected.outcomeValues, "batches of \(batch)")
            }
        }
    }

    func testAnOutcomeAnotherWriterMadeAfterPlanningIsWrittenAsItsNextVersion() throws {
        // Planned as new, the outcomes are added in one run; another writer makes one of them first.
        let folder = try makeScratchFolder("interleaved")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        let days = ["2025-03-02", "2025-03-03", "2025-03-04"]
        try folder.writeFile("weights.ndjson", days.enumerated().map { number, day in
            #"{"resourceType":"Observation","id":"w\#(number)","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"29463-7"}]},"subject":{"reference":"Patient/p"},"effectiveDateTime":"\#(day)T08:00:00Z","valueQuantity":{"value":7\#(number),"unit":"kg","system":"http://unitsofmeasure.org","code":"kg"}}"#
        }.joined(separator: "\n"))
        let real = try makeStore()
        let store = InterleavingStore(real)
        var taken: String?
        store.beforeApply = { batch in
            guard let first = batch.changes.lazy.compactMap({ change -> Outcome? in
                if case .add(.outcome(let outcome)) = change { return outcome }
                return nil
            }).first else { return false }
            // Another writer records a value for the same occurrence, through the same store file.
            let task = try XCTUnwrap(real.tasks(EntityQuery(ids: [try XCTUnwrap(first.taskID)])).first)
            let start = try XCTUnwrap(task.schedule.eventStart(occurrence: first.taskOccurrenceIndex))
            var other = StoreBatch()
            other.upsert(Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: first.taskOccurrenceIndex,
                                 values: [OutcomeValue(.text("entered by hand"))], metadata: EntityMetadata(effectiveDate: start, timezone: .gmt)))
            try real.apply(other)
            taken = Outcome.id(taskUUID: task.uuid, occurrence: first.taskOccurrenceIndex)
            return true
        }
        let report = try importFiles([folder.path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(report.outcomeValues, 3)
        let id = try XCTUnwrap(taken, "the other writer ran")
        let versions = try real.history(.outcome, id: id).compactMap { entity -> [OutcomeValue.Value]? in
            if case .outcome(let outcome) = entity { return outcome.values.map(\.value) }
            return nil
        }
        XCTAssertEqual(versions, [[.text("entered by hand")], [.integer(70)]], "the import's value follows the other writer's")
        XCTAssertEqual(try real.outcomes(.current).count, 3)
    }

    func testABatchPlannedWhileTheStoreRefusedThePreviousOneIsPlannedAgain() throws {
        // Two heart rates of one day share a log outcome and come in batches of one. The store refuses
        // every write holding the first value; the second batch, planned while the first was being
        // written, took that value as stored and must be planned again without it.
        let folder = try makeScratchFolder("refused")
        try folder.writeFile("a.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("b.json", heartRate("o1", at: "2025-03-01T08:00:00Z", value: 70))
        try folder.writeFile("c.json", heartRate("o2", at: "2025-03-01T09:00:00Z", value: 80))
        struct Refused: Error {}
        let real = try makeStore()
        let store = InterleavingStore(real)
        store.beforeApply = { batch in
            for case .add(.outcome(let outcome)) in batch.changes where outcome.values.contains(where: { $0.value == .integer(70) }) { throw Refused() }
            for case .upsert(.outcome(let outcome), _) in batch.changes where outcome.values.contains(where: { $0.value == .integer(70) }) { throw Refused() }
            return false
        }
        let report = try importFiles([folder.path], into: store, outcomeBatchSize: 1)
        XCTAssertEqual(report.failures.map(\.resource), ["Observation/o1"], describe(report.failures))
        XCTAssertEqual(report.byType["Observation"]?.created, 1)
        XCTAssertEqual(try real.outcomes(.current).map { $0.values.map(\.value) }, [[.integer(80)]])
    }

    func testStreamedInputInSmallChunksImportsAsHeldInputDoes() throws {
        // Held: one read, trees, one chunk. Streamed: read twice, the index kept as JSON, entities written
        // two resources at a time, so that the plan waits for its patient (whose file comes after it).
        var files = [fixtures]
        files += try Corpus.files(in: "synthea-r4", suffix: ".json").prefix(2).map(\.path)
        func run(chunk: Int?, hold: Int?) throws -> (ImportReport, [String]) {
            let store = try makeStore()
            let report = try importFiles(files, into: store, zone: "America/Chicago", entityChunkSize: chunk, holdInputUpTo: hold)
            var entities: [String] = []
            entities += try store.patients(.current).map { "patient \($0.id) \($0.metadata.provenance?.contentHash ?? "")" }
            entities += try store.carePlans(.current).map { "plan \($0.id) \($0.patientID ?? "-") \($0.metadata.provenance?.contentHash ?? "")" }
            entities += try store.tasks(.current).map { "task \($0.id) \($0.carePlanID ?? "-") \($0.metadata.provenance?.contentHash ?? "")" }
            entities += try store.contacts(.current).map { "contact \($0.id) \($0.carePlanID ?? "-")" }
            entities += try store.outcomes(.current).map { "outcome \($0.taskID ?? "-") \($0.taskOccurrenceIndex) \($0.values.map(\.value))" }
            return (report, entities.sorted())
        }
        let (held, expected) = try run(chunk: nil, hold: nil)
        XCTAssertEqual(held.failures, [], describe(held.failures))
        XCTAssertTrue(expected.contains { $0.hasPrefix("plan CarePlan/cp-1 Patient/pat-1 ") }, "\(expected.filter { $0.hasPrefix("plan") })")
        let (streamed, found) = try run(chunk: 2, hold: 0)
        XCTAssertEqual(streamed.failures, [], describe(streamed.failures))
        XCTAssertEqual(found.count, expected.count)
        XCTAssertEqual(Set(found).symmetricDifference(expected).sorted(), [])
        XCTAssertEqual(streamed.byType, held.byType)
        XCTAssertFalse(streamed.notes.contains { $0.message.contains("kept unlinked") }, "nothing waited in vain")
    }

    func testStreamedNDJSONIsIndexedByPlaceAndImportsAsHeldInputDoes() throws {
        // Streamed, the index keeps each NDJSON line as its place in the file and reads it again there.
        // Bulk Data names each file by its resource type; the export's log is no FHIR.
        let files = try Corpus.files(in: "bulk-ndjson", suffix: ".ndjson")
            .filter { FHIRMetadata.r4.isResourceType(String($0.lastPathComponent.prefix { $0 != "." })) }.map(\.path)
        func run(hold: Int?) throws -> (ImportReport, [String]) {
            let store = try makeStore()
            let report = try importFiles(files, into: store, entityChunkSize: 300, holdInputUpTo: hold)
            var entities: [String] = []
            entities += try store.patients(.current).map { "patient \($0.id) \($0.metadata.provenance?.contentHash ?? "")" }
            entities += try store.tasks(.current).map { "task \($0.id) \($0.carePlanID ?? "-") \($0.metadata.provenance?.contentHash ?? "")" }
            entities += try store.contacts(.current).map { "contact \($0.id) \($0.metadata.provenance?.contentHash ?? "")" }
            return (report, entities.sorted())
        }
        let (held, expected) = try run(hold: nil)
        XCTAssertEqual(held.failures, [], describe(held.failures))
        XCTAssertTrue(expected.contains { $0.hasPrefix("task ") } && expected.contains { $0.hasPrefix("contact ") })
        let (streamed, found) = try run(hold: 0)
        XCTAssertEqual(streamed.failures, [], describe(streamed.failures))
        XCTAssertEqual(Set(found).symmetricDifference(expected).sorted(), [])
        XCTAssertEqual(streamed.byType, held.byType)
    }

    func testAnActivitysOutcomeReferenceFindsItsObservationInALaterImport() throws {
        let folder = try makeScratchFolder("outcome-reference")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("cp.json", #"{"resourceType":"CarePlan","id":"cp","status":"active","intent":"plan","subject":{"reference":"Patient/p"},"period":{"start":"2025-03-01"},"activity":[{"outcomeReference":[{"reference":"Observation/steps-1"}],"detail":{"status":"scheduled","code":{"text":"Walk"},"scheduledTiming":{"repeat":{"frequency":1,"period":1,"periodUnit":"d","timeOfDay":["09:00:00"]}}}}]}"#)
        let store = try makeStore()
        _ = try importFiles([folder.path], into: store)
        // The Observation comes later, coded differently from the activity: only the reference ties them.
        let later = try makeScratchFolder("outcome-reference-later")
        let observation = try later.writeFile("o.json", #"{"resourceType":"Observation","id":"steps-1","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"55423-8"}]},"subject":{"reference":"Patient/p"},"effectiveDateTime":"2025-03-03T09:40:00Z","valueQuantity":{"value":5200,"unit":"steps"}}"#)
        let report = try importFiles([observation], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        let outcome = try XCTUnwrap(store.outcomes(.current).first)
        XCTAssertEqual(outcome.taskID, "CarePlan/cp#activity-Walk", "not a log task")
        XCTAssertEqual(outcome.taskOccurrenceIndex, 2)
    }

    func testBadInputFailsAloneWithItsLocationAndChangesNothingStored() throws {
        let store = try makeStore()
        _ = try importFiles([fixtures], into: store, zone: "America/Chicago")
        let before = try store.statistics()
        let folder = try makeScratchFolder("bad")
        try folder.writeFile("not-fhir.json", #"{"hello": "world"}"#)
        try folder.writeFile("nonsense.json", #"{"resourceType":"Nonsense","id":"x"}"#)
        try folder.writeFile("dangling.json", #"""
            {"resourceType":"Bundle","type":"transaction","entry":[
              {"fullUrl":"urn:uuid:8c5a2a49-3c5a-4a7e-9a0e-0d2b7b7f3a11","resource":{"resourceType":"CarePlan","id":"cp-x","status":"active","intent":"plan",
                "subject":{"reference":"urn:uuid:00000000-0000-0000-0000-000000000000"}},"request":{"method":"POST","url":"CarePlan"}}]}
            """#)
        try folder.writeFile("period0.json", #"{"resourceType":"MedicationRequest","id":"mr-0","status":"active","intent":"order","subject":{"reference":"Patient/pat-1"},"authoredOn":"2026-11-01","medicationCodeableConcept":{"text":"X"},"dosageInstruction":[{"timing":{"repeat":{"frequency":1,"period":0,"periodUnit":"d"}}}]}"#)
        try folder.writeFile("count.json", #"{"resourceType":"MedicationRequest","id":"mr-1","status":"active","intent":"order","subject":{"reference":"Patient/pat-1"},"authoredOn":"2026-11-01","medicationCodeableConcept":{"text":"X"},"dosageInstruction":[{"timing":{"repeat":{"count":-1,"frequency":1,"period":1,"periodUnit":"d"}}}]}"#)
        try folder.writeFile("good.json", #"{"resourceType":"Patient","id":"new-one"}"#)
        let report = try importFiles([folder.path], into: store)
        let bySource = Dictionary(grouping: report.failures) { URL(fileURLWithPath: $0.source.components(separatedBy: ":")[0]).lastPathComponent }
        XCTAssertTrue(bySource["not-fhir.json"]?.first?.message.contains("resourceType") ?? false, describe(report.failures))
        XCTAssertTrue(bySource["nonsense.json"]?.first?.message.contains("not an R4 resource type") ?? false, describe(report.failures))
        XCTAssertEqual(bySource["dangling.json"]?.first?.entry, 0)
        XCTAssertTrue(bySource["dangling.json"]?.first?.message.contains("resolves nowhere") ?? false, describe(report.failures))
        XCTAssertEqual(bySource["period0.json"]?.first?.path, "MedicationRequest.dosageInstruction[0].timing.repeat.period")
        XCTAssertEqual(bySource["count.json"]?.first?.path, "MedicationRequest.dosageInstruction[0].timing.repeat.count")
        XCTAssertEqual(report.byType["Patient"]?.created, 1, "the good resource imports")
        let after = try store.statistics()
        XCTAssertEqual(after.entities[.carePlan], before.entities[.carePlan])
        XCTAssertEqual(after.entities[.task], before.entities[.task])
        XCTAssertEqual(after.deadLetters, before.deadLetters + report.failures.count, "each failure is a dead letter")
    }

    /// FHIR's id rule (`[A-Za-z0-9\-\.]{1,64}`): a resource whose id breaks it, or a deletion of one, is a
    /// failure at `Type.id` with the reason, held or streamed; nothing of it is stored, the rest imports.
    func testAResourceIDOutsideFHIRsRuleIsRefusedHeldOrStreamed() throws {
        let folder = try makeScratchFolder("bad-ids")
        let longest = String(repeating: "a", count: 64)
        try folder.writeFile("ids.json", #"""
            {"resourceType":"Bundle","type":"transaction","entry":[
              {"resource":{"resourceType":"Patient","id":"pat/1"},"request":{"method":"PUT","url":"Patient/x"}},
              {"resource":{"resourceType":"Patient","id":"pat 2"},"request":{"method":"PUT","url":"Patient/x"}},
              {"resource":{"resourceType":"Patient","id":"pát"},"request":{"method":"PUT","url":"Patient/x"}},
              {"resource":{"resourceType":"Patient","id":"\#(longest)b"},"request":{"method":"PUT","url":"Patient/x"}},
              {"resource":{"resourceType":"Patient","id":""},"request":{"method":"PUT","url":"Patient/x"}},
              {"resource":{"resourceType":"Patient","id":"\#(longest)"},"request":{"method":"PUT","url":"Patient/x"}},
              {"resource":{"resourceType":"Patient","id":"Pat-3.v2"},"request":{"method":"PUT","url":"Patient/x"}},
              {"request":{"method":"DELETE","url":"Patient/pat%204"}}]}
            """#)
        for hold in [nil, 0] {
            let store = try makeStore()
            let report = try importFiles([folder.path], into: store, holdInputUpTo: hold)
            let label = hold == nil ? "held" : "streamed"
            XCTAssertEqual(report.failures.map(\.entry), [0, 1, 2, 3, 4, 7], "\(label): \(describe(report.failures))")
            XCTAssertEqual(report.failures.prefix(5).map(\.path), Array(repeating: "Patient.id", count: 5), label)
            XCTAssertTrue(report.failures.prefix(5).allSatisfy { $0.message.hasPrefix("invalid resource id: ") }, describe(report.failures))
            XCTAssertTrue(report.failures[3].message.contains("at most 64 characters"), report.failures[3].message)
            XCTAssertEqual(report.failures.last?.path, "Bundle.entry[7].request.url")
            XCTAssertTrue(report.failures.last?.message.contains("invalid resource id") ?? false, describe(report.failures))
            XCTAssertEqual(report.byType["Patient"]?.created, 2, label)
            XCTAssertEqual(try store.patients(.current).map(\.id).sorted(), ["Patient/Pat-3.v2", "Patient/\(longest)"], label)
        }
    }

    /// An Observation of patient p, heart rate, at `time`.
    private func heartRate(_ id: String, at time: String, value: Int) -> String {
        #"{"resourceType":"Observation","id":"\#(id)","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"8867-4"}],"text":"Heart rate"},"subject":{"reference":"Patient/p"},"effectiveDateTime":"\#(time)","valueQuantity":{"value":\#(value),"unit":"/min"}}"#
    }

    /// The current outcomes of `store` as "occurrence: values", in occurrence order.
    private func outcomeDays(_ store: any Store) throws -> [String] {
        try store.outcomes(.current).sorted { $0.taskOccurrenceIndex < $1.taskOccurrenceIndex }
            .map { "\($0.taskOccurrenceIndex): \($0.values.map(\.value))" }
    }

    func testAnObservationWhoseTimeChangedMovesItsValueToItsNewOutcome() throws {
        let folder = try makeScratchFolder("moved")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("o1.json", heartRate("o1", at: "2025-03-01T08:00:00Z", value: 70))
        try folder.writeFile("o2.json", heartRate("o2", at: "2025-03-01T20:00:00Z", value: 80))
        let store = try makeStore()
        _ = try importFiles([folder.path], into: store)
        let before = try outcomeDays(store)
        XCTAssertEqual(before.count, 1, "one log outcome for the day, with both values")
        // o1 is re-sent four days later: its value leaves the first day's outcome, o2's stays there.
        try folder.writeFile("o1.json", heartRate("o1", at: "2025-03-05T08:00:00Z", value: 70))
        let report = try importFiles([folder.path], into: store)
        XCTAssertEqual(report.failures, [], describe(report.failures))
        XCTAssertEqual(report.byType["Observation"]?.updated, 1)
        XCTAssertEqual(report.byType["Observation"]?.unchanged, 1)
        XCTAssertEqual(report.byType["Observation"]?.created, 0)
        let after = try store.outcomes(.current).sorted { $0.metadata.effectiveDate < $1.metadata.effectiveDate }
        XCTAssertEqual(after.map { $0.values.map(\.value) }, [[.integer(80)], [.integer(70)]])
        // The new day is after the log's last one: a new log version holds it, as its first day.
        XCTAssertEqual(after[1].metadata.effectiveDate.timeIntervalSince(after[0].metadata.effectiveDate), 4 * 86_400)
        XCTAssertNotEqual(after[1].taskUUID, after[0].taskUUID)
        XCTAssertEqual(after.map(\.taskOccurrenceIndex), [0, 0])
        // Moved again, away from a day it had to itself: that outcome is deleted.
        try folder.writeFile("o1.json", heartRate("o1", at: "2025-03-01T09:00:00Z", value: 70))
        _ = try importFiles([folder.path], into: store)
        XCTAssertEqual(try outcomeDays(store).count, 1)
        XCTAssertEqual(try store.outcomes(.current).first?.values.count, 2)
        // And the same input again changes nothing.
        let again = try importFiles([folder.path], into: store)
        XCTAssertEqual(again.totals.created + again.totals.updated, 0)
    }

    func testTheSameObservationTwiceInOneInputLandsOnceWhereverTheBatchesEnd() throws {
        let folder = try makeScratchFolder("twice")
        try folder.writeFile("a.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("b.json", heartRate("o1", at: "2025-03-01T08:00:00Z", value: 70))
        try folder.writeFile("c.json", heartRate("o1", at: "2025-03-03T08:00:00Z", value: 75))
        try folder.writeFile("d.json", heartRate("o2", at: "2025-03-03T09:00:00Z", value: 90))
        try folder.writeFile("e.json", heartRate("o2", at: "2025-03-03T09:00:00Z", value: 90))
        var results: [[String]] = []
        for batch in [1, 2, 1_000] {
            let store = try makeStore()
            let report = try importFiles([folder.path], into: store, outcomeBatchSize: batch)
            XCTAssertEqual(report.failures, [], describe(report.failures))
            let observations = try XCTUnwrap(report.byType["Observation"])
            XCTAssertEqual(observations.created + observations.updated + observations.unchanged, 4, "every resource read is counted")
            results.append(try outcomeDays(store))
        }
        XCTAssertEqual(results[0].count, 1, "\(results[0])")
        XCTAssertTrue(results[0].first?.hasSuffix(": [CareModel.OutcomeValue.Value.integer(75), CareModel.OutcomeValue.Value.integer(90)]") ?? false,
                      "the later o1 replaced the earlier, and o2 is there once: \(results[0])")
        XCTAssertEqual(results[1], results[0])
        XCTAssertEqual(results[2], results[0])
    }

    func testALargeBundleFoundUnreadableAfterItsFirstEntriesImportsNothingOfItself() throws {
        // A Bundle this large is used a run of entries at a time as it is read; its error comes only
        // after its first thousands of Patients were indexed.
        let store = try makeStore()
        let before = try store.statistics()
        let folder = try makeScratchFolder("large-broken")
        try folder.writeFile("a-nonsense.json", #"{"resourceType":"Nonsense","id":"x"}"#)
        let padding = String(repeating: "x", count: 500)
        var entries = (0..<9_000).map { index in
            #"{"fullUrl":"urn:uuid:00000000-0000-4000-8000-\#(String(format: "%012d", index))","resource":{"resourceType":"Patient","id":"big-\#(index)","name":[{"text":"\#(padding)"}]},"request":{"method":"PUT","url":"Patient/big-\#(index)"}}"#
        }
        entries[8_500] = entries[8_500].replacingOccurrences(of: #""id":"big-8500","#, with: #""id":"big-8500","multipleBirthInteger":01,"#)
        let largeText = #"{"resourceType":"Bundle","type":"transaction","entry":["# + entries.joined(separator: ",\n") + "]}"
        try folder.writeFile("b-large.json", largeText)
        var expected: FHIRSyntaxError?
        XCTAssertThrowsError(try FHIRJSON.read(Data(largeText.utf8))) { expected = $0 as? FHIRSyntaxError }
        try folder.writeFile("c-good.json", #"{"resourceType":"Patient","id":"good"}"#)
        let report = try importFiles([folder.path], into: store)
        XCTAssertEqual(report.failures.count, 2, describe(report.failures))
        let large = try XCTUnwrap(report.failures.first { $0.source.contains("b-large.json") })
        XCTAssertEqual(expected?.line, 8_501)
        XCTAssertTrue(large.source.hasSuffix("b-large.json:\(expected?.line ?? 0):\(expected?.column ?? 0)"), large.source)
        XCTAssertTrue(large.message.contains("syntax error"), large.message)
        XCTAssertEqual(report.resourcesRead, 1, "only the good file's Patient was read")
        XCTAssertEqual(report.byType["Patient"]?.created, 1)
        XCTAssertEqual(try store.patients(.current).map(\.id), ["Patient/good"])
        XCTAssertEqual(try store.statistics().deadLetters, before.deadLetters + 2, "each failure is one dead letter, pass 1 run twice or not")
    }

    func testAMappingExpressionOfTheWrongTypeIsAReportedFailure() throws {
        // Caught statically: `mappings validate` and the import refuse the file, naming the place.
        let broken = try makeScratchFolder("mappings")
        try broken.writeFile("CarePlan.yaml", "resource: CarePlan\nentities:\n  - entity: carePlan\n    fields:\n      title: \"%resource.category\"\n      patient: subject\n")
        let folder = try makeScratchFolder("in")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("cp.json", #"{"resourceType":"CarePlan","id":"cp","status":"active","intent":"plan","subject":{"reference":"Patient/p"},"category":[{"text":"a"}]}"#)
        let store = try makeStore()
        XCTAssertThrowsError(try importFiles([folder.path], into: store, mappings: broken.path)) { error in
            XCTAssertTrue("\(error)".contains("CarePlan.yaml:5:14"), "\(error)")
        }
        // Known only at run time (resolve() can return anything): the resource fails, with both places.
        let dynamic = try makeScratchFolder("mappings2")
        try dynamic.writeFile("CarePlan.yaml", "resource: CarePlan\nentities:\n  - entity: carePlan\n    fields:\n      title: subject.resolve()\n      patient: subject\n")
        let report = try importFiles([folder.path], into: store, mappings: dynamic.path)
        XCTAssertEqual(report.byType["CarePlan"]?.failed, 1)
        XCTAssertEqual(report.byType["Patient"]?.created, 1)
        let failure = try XCTUnwrap(report.failures.first)
        XCTAssertTrue(failure.message.contains("CarePlan.yaml:5:14") && failure.message.contains("gives a Patient, not text"), failure.message)
    }

    func testUserOverrideCarriesAnEHRExtensionIntoTaskNotes() throws {
        let mappings = try makeScratchFolder("mappings")
        try mappings.writeFile("CarePlan.yaml", MappingOverrides.activityNoteExtension)
        let folder = try makeScratchFolder("in")
        try folder.writeFile("p.json", #"{"resourceType":"Patient","id":"p"}"#)
        try folder.writeFile("cp.json", #"""
            {"resourceType":"CarePlan","id":"cp","status":"active","intent":"plan","subject":{"reference":"Patient/p"},"period":{"start":"2025-01-01"},
             "activity":[{"extension":[{"url":"http://ehr.example.org/fhir/activity-note","valueString":"Bring the diary"}],
               "detail":{"status":"scheduled","code":{"text":"Walk"}}}]}
            """#)
        let plain = try makeStore()
        _ = try importFiles([folder.path], into: plain)
        XCTAssertNil(try plain.tasks(.current).first?.metadata.notes)
        let overridden = try makeStore()
        let report = try importFiles([folder.path], into: overridden, mappings: mappings.path)
        XCTAssertEqual(report.failures, [])
        XCTAssertEqual(try overridden.tasks(.current).first?.metadata.notes?.first?.content, "Bring the diary")
    }

    func testDryRunWritesNothing() throws {
        let store = try makeStore()
        let gateway = Gateway(store: store, options: Gateway.Options(timeZone: TimeZone(identifier: "UTC")!))
        let report = try gateway.importFHIR(FHIRInput.sources(for: [fixtures]), dryRun: true)
        XCTAssertEqual(report.byType["CarePlan"]?.created, 1)
        XCTAssertEqual(try store.statistics().entities[.carePlan]?.versions ?? 0, 0)
    }
}

/// `--coverage`: the elements the input holds that no mapping reads.
final class ImportCoverageTests: XCTestCase {
    func testCoverageListsWhatNoMappingReads() throws {
        let folder = try makeScratchFolder("coverage")
        try folder.writeFile("p.json", #"""
            {"resourceType":"Patient","id":"p","gender":"female","birthDate":"1970-01-01",
             "name":[{"family":"Doe","given":["Jane"]}],"maritalStatus":{"text":"Married"},"telecom":[{"system":"phone","value":"1"}]}
            """#)
        let gateway = Gateway(store: try makeStore(), options: Gateway.Options(timeZone: TimeZone(identifier: "UTC")!))
        let report = try gateway.importer(dryRun: true, coverage: CoverageCollector()).run(FHIRInput.sources(for: [folder.path]))
        let unread = try XCTUnwrap(report.coverage?["Patient"])
        XCTAssertEqual(unread["Patient.maritalStatus"], 1)
        XCTAssertEqual(unread["Patient.telecom"], 1)
        XCTAssertNil(unread["Patient.maritalStatus.text"], "reported once, at the topmost unread element")
        XCTAssertNil(unread["Patient.name"], "read by the humanName transform")
        XCTAssertNil(unread["Patient.name.given"], "read whole by the transform")
        XCTAssertNil(unread["Patient.gender"])
        XCTAssertNil(unread["Patient.id"])
    }

    /// The care-team rules (Mappings/Patient.yaml `members:`) read the references they follow, in the
    /// Patient and in the resources they reach by reverse rules.
    func testTheCareTeamRulesReadTheReferencesTheyFollow() throws {
        let folder = try makeScratchFolder("coverage-care-team")
        try folder.writeFile("b.json", #"""
            {"resourceType":"Bundle","type":"collection","entry":[
             {"resource":{"resourceType":"Patient","id":"p","name":[{"family":"Doe"}],
               "generalPractitioner":[{"reference":"Practitioner/gp","display":"Dr GP"}]}},
             {"resource":{"resourceType":"Practitioner","id":"gp","name":[{"family":"Gee"}]}},
             {"resource":{"resourceType":"Practitioner","id":"rx","name":[{"family":"Arex"}]}},
             {"resource":{"resourceType":"MedicationRequest","id":"m","status":"active","intent":"order",
               "medicationCodeableConcept":{"text":"Lisinopril"},"subject":{"reference":"Patient/p"},
               "requester":{"reference":"Practitioner/rx"},"authoredOn":"2026-11-01"}}]}
            """#)
        let gateway = Gateway(store: try makeStore(), options: Gateway.Options(timeZone: TimeZone(identifier: "UTC")!))
        let report = try gateway.importer(dryRun: true, coverage: CoverageCollector()).run(FHIRInput.sources(for: [folder.path]))
        let coverage = report.coverage ?? [:]
        for path in ["Patient.generalPractitioner", "Patient.generalPractitioner.reference", "Patient.generalPractitioner.display"] {
            XCTAssertNil(coverage["Patient"]?[path], "\(path) is read by the care-team rules: \(coverage)")
        }
        XCTAssertNil(coverage["MedicationRequest"]?["MedicationRequest.requester"], "read by a reverse rule: \(coverage)")
    }
}
