import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// A survey task's outcomes (issue 44, items 3 and 4 wired): checked against the Questionnaire version the
/// task asks when recorded (`caregate outcomes import`), exported as a QuestionnaireResponse with its
/// Provenance, and waiting in the outbox while the Questionnaire is not kept.
final class SurveyExportTests: XCTestCase {
    /// A store with patient p1's plan asking `canonical`, and the gcs Questionnaire from the corpus when `withGCS`.
    private func store(asking canonical: String, withGCS: Bool) throws -> (SQLiteStore, Gateway, CareTask) {
        let folder = try makeScratchFolder("survey-export")
        let plan = #"""
            {"resourceType": "CarePlan", "id": "cp1", "status": "active", "intent": "plan", "subject": {"reference": "Patient/p1"},
             "period": {"start": "2026-01-05"},
             "activity": [{"detail": {"status": "scheduled", "description": "Coma scale", "instantiatesCanonical": ["\#(canonical)"],
                                      "scheduledTiming": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}}}}]}
            """#
        var paths = [try folder.writeFile("input.json", SurveyImportTests.bundle([SurveyImportTests.patient, plan]))]
        if withGCS { paths.append(try Corpus.folder("fhir-r4-examples").appendingPathComponent("Questionnaire-gcs.json").path) }
        let store = try makeStore()
        let report = try importFiles(paths, into: store)
        XCTAssertTrue(report.failures.isEmpty, describe(report.failures))
        let gateway = Gateway(store: store, mappings: try MappingSet.defaults(overriddenBy: nil), options: Gateway.Options(timeZone: TimeZone(identifier: "UTC")!))
        let task = try XCTUnwrap(try store.tasks(.current).first { $0.metadata.tags?.contains("survey") ?? false })
        return (store, gateway, task)
    }

    private func outcome(_ task: CareTask, _ values: [(String, String)]) -> Outcome {
        let day = ISO8601DateFormatter().date(from: "2026-01-06T10:00:00Z")!
        return Outcome(
            taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 1, values: values.map { OutcomeValue(.text($1), kind: $0, createdDate: day) },
            metadata: EntityMetadata(effectiveDate: day, createdDate: day, updatedDate: day, timezone: .gmt))
    }

    static let gcsAnswers = [("1.1", "http://loinc.org|LA6560-2"), ("1.2", "http://loinc.org|LA6566-9"), ("1.3", "http://loinc.org|LA6556-0")]

    func testASurveyOutcomeExportsAsAQuestionnaireResponseWithProvenance() throws {
        let (_, gateway, task) = try store(asking: "http://hl7.org/fhir/Questionnaire/gcs", withGCS: true)
        XCTAssertTrue(task.metadata.userInfo?["questionnaire"]?.hasPrefix("http://hl7.org/fhir/Questionnaire/gcs|sha256:") ?? false)
        try gateway.recordOutcomes([outcome(task, Self.gcsAnswers)], file: "app.json")
        let folder = try makeScratchFolder("survey-export-out")
        let path = folder.appendingPathComponent("out.json").path
        let report = try gateway.export(to: .file(path))
        XCTAssertEqual(report.refused.map(\.reason), [])
        XCTAssertEqual(report.observations, 1)
        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: path)))
        let resources = bundle.children(named: "entry").compactMap { $0.child(named: "resource") }
        XCTAssertEqual(resources.map { $0.resourceType ?? "" }, ["QuestionnaireResponse", "Provenance"])
        let response = resources[0]
        XCTAssertEqual(response.childValue("status"), "completed")
        XCTAssertEqual(response.childValue("questionnaire"), "http://hl7.org/fhir/Questionnaire/gcs")
        XCTAssertEqual(response.child(named: "subject")?.childValue("reference"), "Patient/p1")
        XCTAssertEqual(response.child(named: "basedOn")?.childValue("reference"), "CarePlan/cp1")
        XCTAssertEqual(response.child(named: "identifier")?.childValue("value"), outcome(task, []).id)
        XCTAssertEqual(response.children(named: "item").compactMap { $0.childValue("linkId") }, ["1.1", "1.2", "1.3"])
        let coding = response.children(named: "item").first?.child(named: "answer")?.child(named: "valueCoding")
        XCTAssertEqual(coding?.childValue("code"), "LA6560-2")
        XCTAssertNotNil(coding?.childValue("display"), "the full Coding from the answer option")
        let requests = bundle.children(named: "entry").compactMap { $0.child(named: "request")?.childValue("url") }
        XCTAssertEqual(requests.first, "QuestionnaireResponse/\(OutcomeExporter.observationID(of: outcome(task, []).id))")
        XCTAssertEqual(resources[1].child(named: "target")?.childValue("reference"), requests.first)
        // Nothing goes twice.
        XCTAssertEqual(try gateway.export(to: .file(path)).observations, 0)
    }

    /// SDC's PHQ-9 marked for extraction: the response carries the total score, and the extracted
    /// Observation (LOINC 44261-6) goes in the same Bundle, by its own id, derivedFrom the response.
    func testExtractedObservationsGoOutWithTheResponse() throws {
        let canonical = "http://hl7.org/fhir/uv/sdc/Questionnaire/questionnaire-sdc-profile-example-PHQ9|0.0.1"
        var questionnaire = try FHIRJSON.read(Data(contentsOf: Corpus.projectRoot.appendingPathComponent("Fixtures/surveys/questionnaire-sdc-profile-example-PHQ9.json")))
        questionnaire.children.append(Element(name: "extension", children: [
            Element(name: "url", value: "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-observationExtract"),
            Element(name: "valueBoolean", value: "true", valueKind: .boolean),
        ]))
        let folder = try makeScratchFolder("survey-extract")
        let path = try folder.writeFile("phq9.json", String(decoding: FHIRJSON.write(questionnaire), as: UTF8.self))
        let (store, gateway, _) = try self.store(asking: canonical, withGCS: false)
        XCTAssertTrue(try importFiles([path], into: store).failures.isEmpty)
        // The task names the version it asks, which the store now keeps.
        let task = try XCTUnwrap(try store.tasks(.current).first { $0.metadata.tags?.contains("survey") ?? false })
        XCTAssertEqual(task.metadata.userInfo?["questionnaire"], canonical)
        let answers = ["Not-at-all", "Several-days", "More than half the days", "Nearly every day", "Several-days",
                       "Not at all", "Several days", "http://hl7.org/fhir/uv/sdc/CodeSystem/CSPHQ9|Nearly every day", "Not-at-all"]
        try gateway.recordOutcomes([outcome(task, answers.enumerated().map { ("H1/T1/Q\($0 + 1)", $1) })], file: "app.json")
        let out = folder.appendingPathComponent("out.json").path
        let report = try gateway.export(to: .file(out))
        XCTAssertEqual(report.refused.map(\.reason), [])
        let bundle = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: out)))
        let entries = bundle.children(named: "entry")
        let types = entries.compactMap { $0.child(named: "resource")?.resourceType }
        // The response, its extracted Observations, then the Provenance.
        XCTAssertEqual(types.first, "QuestionnaireResponse")
        XCTAssertEqual(types.last, "Provenance")
        XCTAssertEqual(Set(types.dropFirst().dropLast()), ["Observation"])
        let responseURL = entries.first?.child(named: "request")?.childValue("url") ?? ""
        let total = try XCTUnwrap(entries.compactMap { $0.child(named: "resource") }.first { resource in
            resource.resourceType == "Observation"
                && (resource.child(named: "code")?.children(named: "coding").contains { $0.childValue("code") == "44261-6" } ?? false)
        })
        XCTAssertEqual(total.child(named: "valueQuantity")?.childValue("value"), "11")
        XCTAssertEqual(total.child(named: "derivedFrom")?.childValue("reference"), responseURL)
        let id = try XCTUnwrap(total.childValue("id"))
        XCTAssertTrue(entries.contains { $0.child(named: "request")?.childValue("url") == "Observation/\(id)" })

        // Conditional writes: the response by its identifier, the Observation by its own, naming the
        // response by its entry's fullUrl (the server gives the ids).
        try gateway.recordOutcomes([outcome(task, answers.enumerated().map { ("H1/T1/Q\($0 + 1)", $1 == "Not-at-all" ? "Several-days" : $1) })], file: "app.json")
        let conditional = folder.appendingPathComponent("conditional.json").path
        XCTAssertEqual(try gateway.exporter { $0.request = .conditional }.run(to: .file(conditional)).refused.map(\.reason), [])
        let second = try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: conditional))).children(named: "entry")
        let responseEntry = try XCTUnwrap(second.first)
        XCTAssertEqual(responseEntry.child(named: "request")?.childValue("method"), "PUT")
        XCTAssertTrue(responseEntry.child(named: "request")?.childValue("url")?.hasPrefix("QuestionnaireResponse?identifier=urn:caregate:outcome|") ?? false)
        XCTAssertEqual(responseEntry.child(named: "resource")?.childValue("status"), "amended")
        let extracted = try XCTUnwrap(second.first { $0.child(named: "resource")?.resourceType == "Observation" })
        XCTAssertTrue(extracted.child(named: "request")?.childValue("url")?.hasPrefix("Observation?identifier=urn:caregate:outcome|") ?? false)
        XCTAssertNil(extracted.child(named: "resource")?.childValue("id"))
        XCTAssertEqual(extracted.child(named: "resource")?.child(named: "derivedFrom")?.childValue("reference"), responseEntry.childValue("fullUrl"))
    }

    /// A later version extracting fewer Observations, then a deletion: what an earlier version sent and
    /// this one does not goes again as entered-in-error (code, subject and identifier kept), in the same
    /// Bundle as the response.
    func testObservationsAnEarlierVersionExtractedAreWithdrawnWhenALaterOneDoesNotGiveThem() throws {
        let canonical = "http://example.org/Questionnaire/vitals|1"
        let questionnaire = #"""
            {"resourceType": "Questionnaire", "id": "vitals", "url": "http://example.org/Questionnaire/vitals", "version": "1", "status": "active",
             "extension": [{"url": "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-observationExtract", "valueBoolean": true}],
             "item": [
               {"linkId": "weight", "type": "decimal", "code": [{"system": "http://loinc.org", "code": "29463-7", "display": "Body weight"}]},
               {"linkId": "pain", "type": "integer", "code": [{"system": "http://loinc.org", "code": "72514-3", "display": "Pain severity"}]}
             ]}
            """#
        let folder = try makeScratchFolder("survey-withdraw")
        let (store, gateway, _) = try self.store(asking: canonical, withGCS: false)
        XCTAssertTrue(try importFiles([try folder.writeFile("q.json", questionnaire)], into: store).failures.isEmpty)
        let task = try XCTUnwrap(try store.tasks(.current).first { $0.metadata.tags?.contains("survey") ?? false })
        let day = ISO8601DateFormatter().date(from: "2026-01-06T10:00:00Z")!
        func answered(_ values: [OutcomeValue]) -> Outcome {
            Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 1, values: values,
                    metadata: EntityMetadata(effectiveDate: day, createdDate: day, updatedDate: day, timezone: .gmt))
        }
        let out = folder.appendingPathComponent("out.json").path
        func exported() throws -> [Element] {
            let report = try gateway.export(to: .file(out))
            XCTAssertEqual(report.refused.map(\.reason), [])
            return try FHIRJSON.read(Data(contentsOf: URL(fileURLWithPath: out))).children(named: "entry").compactMap { $0.child(named: "resource") }
        }
        func observations(_ resources: [Element]) -> [String: String] {
            Dictionary(uniqueKeysWithValues: resources.filter { $0.resourceType == "Observation" }.map { ($0.childValue("id") ?? "", $0.childValue("status") ?? "") })
        }
        try gateway.recordOutcomes([answered([OutcomeValue(.double(71.5), kind: "weight", createdDate: day), OutcomeValue(.integer(3), kind: "pain", createdDate: day)])], file: "app.json")
        let first = try exported()
        let id = try XCTUnwrap(first.first?.childValue("id"))
        XCTAssertEqual(observations(first), ["\(id)-o0": "final", "\(id)-o1": "final"])

        // The pain answer taken back: its Observation is withdrawn with the amended response.
        try gateway.recordOutcomes([answered([OutcomeValue(.double(71.0), kind: "weight", createdDate: day)])], file: "app.json")
        let second = try exported()
        XCTAssertEqual(second.first?.childValue("status"), "amended")
        XCTAssertEqual(observations(second), ["\(id)-o0": "final", "\(id)-o1": "entered-in-error"])
        let withdrawn = try XCTUnwrap(second.first { $0.childValue("id") == "\(id)-o1" })
        XCTAssertEqual(withdrawn.child(named: "code")?.child(named: "coding")?.childValue("code"), "72514-3")
        XCTAssertEqual(withdrawn.child(named: "subject")?.childValue("reference"), "Patient/p1")
        XCTAssertTrue(withdrawn.child(named: "identifier")?.childValue("value")?.hasSuffix("/o1") ?? false)

        // The outcome deleted: the response and every Observation sent before are entered-in-error.
        let current = try XCTUnwrap(try store.outcomes(.current).first { $0.taskID == task.id })
        var metadata = EntityMetadata(effectiveDate: current.metadata.effectiveDate, timezone: .gmt)
        metadata.uuid = UUID()
        metadata.previousVersionUUIDs = [current.metadata.uuid]
        metadata.deletedDate = day
        var deletion = StoreBatch()
        deletion.appendVersion(keepingUUIDOf: Outcome(taskUUID: current.taskUUID, taskID: current.taskID, taskOccurrenceIndex: current.taskOccurrenceIndex,
                                                      values: current.values, metadata: metadata))
        _ = try store.apply(deletion)
        let third = try exported()
        XCTAssertEqual(third.first?.childValue("status"), "entered-in-error")
        XCTAssertEqual(observations(third), ["\(id)-o0": "entered-in-error", "\(id)-o1": "entered-in-error"])
    }

    func testOutcomesThatDoNotFitTheQuestionnaireAreRefusedWithTheLinkId() throws {
        let (store, gateway, task) = try store(asking: "http://hl7.org/fhir/Questionnaire/gcs", withGCS: true)
        let cases: [([(String, String)], String)] = [
            (Self.gcsAnswers + [("9.9", "x")], "9.9"),  // an unknown linkId
            (Array(Self.gcsAnswers.dropLast()) + [("1.3", "http://loinc.org|LA0000-0")], "1.3"),  // not an option
        ]
        for (values, linkId) in cases {
            XCTAssertThrowsError(try gateway.recordOutcomes([outcome(task, values)], file: "app.json")) { error in
                XCTAssertTrue("\(error)".contains(linkId), "\(error)")
                XCTAssertTrue("\(error)".contains("nothing was imported"), "\(error)")
            }
        }
        XCTAssertEqual(try store.outcomes(.current).count, 0, "nothing stored")
    }

    func testAnOutcomeWaitsInTheOutboxUntilItsQuestionnaireArrives() throws {
        let (store, gateway, task) = try store(asking: "http://example.org/Questionnaire/absent|1", withGCS: false)
        try gateway.recordOutcomes([outcome(task, [("q1", "anything")])], file: "app.json")
        let folder = try makeScratchFolder("survey-export-wait")
        let report = try gateway.export(to: .file(folder.appendingPathComponent("out.json").path))
        XCTAssertEqual(report.refused.count, 0, "no dead letter")
        XCTAssertEqual(report.notTaken.map(\.retry), [true])
        XCTAssertTrue(report.notTaken.first?.reason.contains("http://example.org/Questionnaire/absent|1") ?? false)
        XCTAssertEqual(try store.deadLetters(limit: 10).count, 0)
        let waiting = try store.outboxEntries(in: .failed, limit: 10)
        XCTAssertEqual(waiting.count, 1)
        XCTAssertNotNil(waiting.first?.nextAttemptDate)
    }
}
