import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// Survey tasks (issue 44, item 1): which resources make them (the mapping files), the Questionnaires
/// kept by url and version, and the exact version each task names.
final class SurveyImportTests: XCTestCase {
    static let patient = #"{"resourceType": "Patient", "id": "p1", "name": [{"family": "Doe", "given": ["Ann"]}]}"#

    static func questionnaire(id: String, url: String?, version: String?, title: String = "Mood") -> String {
        var fields = [#""resourceType": "Questionnaire""#, #""id": "\#(id)""#, #""status": "active""#, #""title": "\#(title)""#]
        if let url { fields.append(#""url": "\#(url)""#) }
        if let version { fields.append(#""version": "\#(version)""#) }
        fields.append(#""item": [{"linkId": "q1", "text": "How are you?", "type": "integer", "required": true}]"#)
        return "{" + fields.joined(separator: ", ") + "}"
    }

    static func bundle(_ resources: [String]) -> String {
        #"{"resourceType": "Bundle", "type": "collection", "entry": ["# + resources.map { #"{"resource": \#($0)}"# }.joined(separator: ", ") + "]}"
    }

    private func surveyTasks(_ store: SQLiteStore) throws -> [CareTask] {
        try store.tasks(.current).filter { $0.metadata.tags?.contains("survey") ?? false }
    }

    func testCarePlanActivityNamingAQuestionnaireOfTheInputIsASurveyPinnedToItsVersion() throws {
        let folder = try makeScratchFolder("survey-careplan")
        let plan = #"""
            {"resourceType": "CarePlan", "id": "cp1", "status": "active", "intent": "plan", "subject": {"reference": "Patient/p1"},
             "period": {"start": "2026-01-05"},
             "activity": [
               {"detail": {"status": "scheduled", "instantiatesCanonical": ["http://example.org/q/mood"], "description": "Weekly mood",
                           "scheduledTiming": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "wk"}}}},
               {"detail": {"status": "scheduled", "code": {"text": "Walk"}, "instantiatesCanonical": ["http://example.org/PlanDefinition/walk"]}}
             ]}
            """#
        let path = try folder.writeFile("input.json", Self.bundle([
            Self.patient, plan, Self.questionnaire(id: "mood", url: "http://example.org/q/mood", version: "2"),
        ]))
        let store = try makeStore()
        let report = try importFiles([path], into: store)
        XCTAssertTrue(report.failures.isEmpty, describe(report.failures))
        XCTAssertEqual(report.byType["Questionnaire"]?.created, 1)
        let surveys = try surveyTasks(store)
        XCTAssertEqual(surveys.count, 1, "only the activity naming a Questionnaire is a survey")
        XCTAssertEqual(surveys.first?.metadata.userInfo?["questionnaire"], "http://example.org/q/mood|2")
        XCTAssertEqual(surveys.first?.title, "Weekly mood")
        let kept = try XCTUnwrap(store.questionnaire(url: "http://example.org/q/mood", version: "2"))
        XCTAssertEqual(try FHIRJSON.read(kept.json).childValue("title"), "Mood")

        // The same input again changes nothing.
        let again = try importFiles([path], into: store)
        XCTAssertEqual(again.byType["Questionnaire"]?.unchanged, 1)
        XCTAssertEqual(again.entitiesAdded + again.entitiesUpdated, 0)
    }

    func testSDCTaskGivesOneOccurrenceOverItsRestrictionPeriod() throws {
        let folder = try makeScratchFolder("survey-task")
        let task = #"""
            {"resourceType": "Task", "id": "t1", "status": "requested", "intent": "order",
             "code": {"coding": [{"system": "http://hl7.org/fhir/uv/sdc/CodeSystem/temp", "code": "complete-questionnaire"}]},
             "for": {"reference": "Patient/p1"}, "authoredOn": "2026-02-01T09:00:00Z",
             "restriction": {"period": {"start": "2026-02-02T00:00:00Z", "end": "2026-02-05T00:00:00Z"}},
             "input": [{"type": {"coding": [{"system": "http://hl7.org/fhir/uv/sdc/CodeSystem/temp", "code": "questionnaire"}]},
                        "valueCanonical": "http://example.org/q/mood|2"}]}
            """#
        let other = #"""
            {"resourceType": "Task", "id": "t2", "status": "requested", "intent": "order", "code": {"text": "Call the patient"},
             "for": {"reference": "Patient/p1"}, "authoredOn": "2026-02-01"}
            """#
        let path = try folder.writeFile("input.json", Self.bundle([
            Self.patient, task, other, Self.questionnaire(id: "mood", url: "http://example.org/q/mood", version: "2"),
        ]))
        let store = try makeStore()
        let report = try importFiles([path], into: store)
        XCTAssertTrue(report.failures.isEmpty, describe(report.failures))
        let surveys = try surveyTasks(store)
        XCTAssertEqual(surveys.count, 1, "a Task that asks no Questionnaire makes nothing")
        let survey = try XCTUnwrap(surveys.first)
        XCTAssertEqual(survey.metadata.userInfo?["questionnaire"], "http://example.org/q/mood|2")
        XCTAssertEqual(survey.title, "Mood", "titled by its Questionnaire")
        XCTAssertEqual(survey.schedule.occurrenceCount, 1)
        let event = try XCTUnwrap(survey.schedule.event(occurrence: 0))
        XCTAssertEqual(event.start, ISO8601DateFormatter().date(from: "2026-02-02T00:00:00Z"))
        XCTAssertEqual(event.end, ISO8601DateFormatter().date(from: "2026-02-05T00:00:00Z"), "the occurrence spans the restriction period")
    }

    func testServiceRequestsWithEitherQuestionnaireExtensionAreSurveysOnTheirTiming() throws {
        let folder = try makeScratchFolder("survey-servicerequest")
        let sdc = #"""
            {"resourceType": "ServiceRequest", "id": "sr1", "status": "active", "intent": "order", "subject": {"reference": "Patient/p1"},
             "extension": [{"url": "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-servicerequest-questionnaire",
                            "valueCanonical": "http://example.org/q/mood"}],
             "occurrenceTiming": {"repeat": {"boundsPeriod": {"start": "2026-03-01", "end": "2026-03-08"}, "frequency": 1, "period": 1, "periodUnit": "d"}}}
            """#
        let core = #"""
            {"resourceType": "ServiceRequest", "id": "sr2", "status": "active", "intent": "order", "subject": {"reference": "Patient/p1"},
             "code": {"text": "Pain diary"}, "authoredOn": "2026-03-01",
             "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/servicerequest-questionnaireRequest",
                            "valueReference": {"reference": "Questionnaire/pain"}}]}
            """#
        let plain = #"""
            {"resourceType": "ServiceRequest", "id": "sr3", "status": "active", "intent": "order", "subject": {"reference": "Patient/p1"},
             "code": {"text": "X-ray"}}
            """#
        let path = try folder.writeFile("input.json", Self.bundle([
            Self.patient, sdc, core, plain,
            Self.questionnaire(id: "mood", url: "http://example.org/q/mood", version: "2"),
            Self.questionnaire(id: "pain", url: nil, version: nil, title: "Pain"),
        ]))
        let store = try makeStore()
        let report = try importFiles([path], into: store)
        XCTAssertTrue(report.failures.isEmpty, describe(report.failures))
        let surveys = try surveyTasks(store).sorted { $0.id < $1.id }
        XCTAssertEqual(surveys.map(\.id), ["ServiceRequest/sr1", "ServiceRequest/sr2"])
        XCTAssertEqual(surveys[0].metadata.userInfo?["questionnaire"], "http://example.org/q/mood|2")
        XCTAssertEqual(surveys[0].schedule.occurrenceCount, 8, "daily over the request's bounds, its end day included")
        // A Questionnaire without url is known by its source system and Questionnaire/<id>, one without
        // version by its content hash.
        let pinned = try XCTUnwrap(surveys[1].metadata.userInfo?["questionnaire"])
        XCTAssertTrue(pinned.hasPrefix("Questionnaire/pain|sha256:"), pinned)
        XCTAssertEqual(surveys[1].schedule.occurrenceCount, 1)
    }

    func testAQuestionnaireFoundNowhereIsReportedAndTheTaskStillMade() throws {
        let folder = try makeScratchFolder("survey-missing")
        let plan = #"""
            {"resourceType": "CarePlan", "id": "cp1", "status": "active", "intent": "plan", "subject": {"reference": "Patient/p1"},
             "period": {"start": "2026-01-05"},
             "activity": [{"detail": {"status": "scheduled", "instantiatesCanonical": ["http://example.org/Questionnaire/gad-7|1.0"]}}]}
            """#
        let path = try folder.writeFile("input.json", Self.bundle([Self.patient, plan]))
        let store = try makeStore()
        let report = try importFiles([path], into: store)
        XCTAssertTrue(report.failures.isEmpty, describe(report.failures))
        XCTAssertEqual(try surveyTasks(store).first?.metadata.userInfo?["questionnaire"], "http://example.org/Questionnaire/gad-7|1.0")
        XCTAssertTrue(
            report.notes.contains { $0.message.contains("http://example.org/Questionnaire/gad-7|1.0") && $0.message.contains("found neither") },
            report.notes.map(\.message).joined(separator: "\n"))
    }

    func testQuestionnaireLookupIsAskedOnceAndWhatItFindsIsKept() throws {
        final class CountingLookup: QuestionnaireLookup, @unchecked Sendable {
            var asked: [String] = []
            func questionnaires(for canonical: QuestionnaireIdentity.Canonical) throws -> [Element] {
                asked.append(canonical.description)
                return [try FHIRJSON.read(Data(SurveyImportTests.questionnaire(id: "gad", url: "http://example.org/Questionnaire/gad-7", version: "3").utf8))]
            }
        }
        let folder = try makeScratchFolder("survey-lookup")
        let plan = #"""
            {"resourceType": "CarePlan", "id": "cp1", "status": "active", "intent": "plan", "subject": {"reference": "Patient/p1"},
             "period": {"start": "2026-01-05"},
             "activity": [{"detail": {"status": "scheduled", "code": {"text": "a"}, "instantiatesCanonical": ["http://example.org/Questionnaire/gad-7"]}},
                          {"detail": {"status": "scheduled", "code": {"text": "b"}, "instantiatesCanonical": ["http://example.org/Questionnaire/gad-7"]}}]}
            """#
        let path = try folder.writeFile("input.json", Self.bundle([Self.patient, plan]))
        let store = try makeStore()
        let lookup = CountingLookup()
        let gateway = Gateway(store: store, mappings: try MappingSet.defaults(overriddenBy: nil), options: Gateway.Options(timeZone: TimeZone(identifier: "UTC")!))
        let report = try gateway.importer { $0.questionnaireLookup = lookup }.run(FHIRInput.sources(for: [path]))
        XCTAssertTrue(report.failures.isEmpty, describe(report.failures))
        XCTAssertEqual(lookup.asked, ["http://example.org/Questionnaire/gad-7"])
        XCTAssertEqual(try surveyTasks(store).map { $0.metadata.userInfo?["questionnaire"] }, Array(repeating: "http://example.org/Questionnaire/gad-7|3", count: 2))
        XCTAssertNotNil(try store.questionnaire(url: "http://example.org/Questionnaire/gad-7", version: "3"))
    }

    func testTheOfficialR4QuestionnairesAreKeptByUrlAndVersion() throws {
        let files = try Corpus.files(in: "fhir-r4-examples", suffix: ".json").filter { $0.lastPathComponent.hasPrefix("Questionnaire-") }
        XCTAssertEqual(files.count, 7)
        let store = try makeStore()
        let report = try importFiles(files.map(\.path), into: store)
        XCTAssertTrue(report.failures.isEmpty, describe(report.failures))
        XCTAssertEqual(report.byType["Questionnaire"]?.created, 7)
        XCTAssertNotNil(try store.latestQuestionnaire(url: "http://hl7.org/fhir/Questionnaire/gcs"))
        // phq-9 has a version but no url; qs1 too; the others a url but no version.
        XCTAssertNotNil(try store.questionnaire(url: "Questionnaire/phq-9-questionnaire", version: "1.0.0"))
        XCTAssertNotNil(try store.questionnaire(url: "Questionnaire/qs1", version: "4.0.1"))
        XCTAssertTrue(try XCTUnwrap(store.latestQuestionnaire(url: "http://hl7.org/fhir/Questionnaire/3141")).version.hasPrefix("sha256:"))
        // Every item's handling is reported, what is not supported with its reason (the R4 PHQ-9's
        // external answerValueSet among them).
        for file in files {
            let questionnaire = try FHIRJSON.read(Data(contentsOf: file))
            let resource = "Questionnaire/\(questionnaire.childValue("id") ?? "")"
            let itemNotes = report.notes.filter { $0.resource == resource && $0.path.contains("item") }
            XCTAssertGreaterThan(itemNotes.count, 0, resource)
        }
        let phq9 = report.notes.filter { $0.resource == "Questionnaire/phq-9-questionnaire" && $0.severity == "warning" }
        XCTAssertTrue(phq9.contains { $0.message.contains("answerValueSet") }, phq9.map(\.message).joined(separator: "\n"))
    }
}

extension SurveyImportTests {
    /// A user's own CarePlan mapping, which reads no Questionnaire, still leaves the input's Questionnaires kept
    /// (the import keeps every Questionnaire, whatever the mappings read).
    func testQuestionnairesAreKeptWhateverTheMappingsRead() throws {
        let folder = try makeScratchFolder("survey-own-mappings")
        let mappings = try makeScratchFolder("survey-mappings")
        try mappings.writeFile("CarePlan.yaml", """
            resource: CarePlan
            entities:
              - entity: carePlan
                fields:
                  title: title
                  patient: subject
            """)
        let path = try folder.writeFile("input.json", Self.bundle([Self.patient, Self.questionnaire(id: "mood", url: "http://example.org/q/mood", version: "2")]))
        let store = try makeStore()
        let report = try importFiles([path], into: store, mappings: mappings.path)
        XCTAssertEqual(report.byType["Questionnaire"]?.created, 1)
        XCTAssertNotNil(try store.questionnaire(url: "http://example.org/q/mood", version: "2"))
    }
}
