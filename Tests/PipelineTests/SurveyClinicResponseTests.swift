import CareModel
import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import TestSupport
import XCTest

/// Answers given in clinic (issue 44, item 5): a provider's QuestionnaireResponse imports as the outcome
/// of its survey task's occurrence, else into the patient's log for its Questionnaire; one CareGate wrote
/// itself changes nothing when it comes back.
final class SurveyClinicResponseTests: XCTestCase {
    static let request = #"""
        {"resourceType": "ServiceRequest", "id": "sr1", "status": "active", "intent": "order", "subject": {"reference": "Patient/p1"},
         "extension": [{"url": "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-servicerequest-questionnaire", "valueCanonical": "http://example.org/q/mood|2"}],
         "occurrenceTiming": {"repeat": {"boundsPeriod": {"start": "2026-03-01", "end": "2026-03-08"}, "frequency": 1, "period": 1, "periodUnit": "d"}}}
        """#

    static func response(id: String, basedOn: Bool, answer: Int, identifier: String? = nil, authored: String = "2026-03-03T10:00:00Z") -> String {
        #"""
        {"resourceType": "QuestionnaireResponse", "id": "\#(id)", "status": "completed", "questionnaire": "http://example.org/q/mood|2",
         \#(identifier.map { #""identifier": {"system": "urn:caregate:outcome", "value": "\#($0)"},"# } ?? "")
         \#(basedOn ? #""basedOn": [{"reference": "ServiceRequest/sr1"}],"# : "")
         "subject": {"reference": "Patient/p1"}, "authored": "\#(authored)",
         "item": [{"linkId": "q1", "answer": [{"valueInteger": \#(answer)}]}]}
        """#
    }

    private func importing(_ resources: [String], into store: SQLiteStore) throws -> ImportReport {
        let folder = try makeScratchFolder("survey-clinic")
        let report = try importFiles([try folder.writeFile("input.json", SurveyImportTests.bundle(resources))], into: store)
        XCTAssertTrue(report.failures.isEmpty, describe(report.failures))
        return report
    }

    func testAClinicResponseIsTheOutcomeOfItsSurveyOccurrence() throws {
        let store = try makeStore()
        _ = try importing([SurveyImportTests.patient, Self.request, SurveyImportTests.questionnaire(id: "mood", url: "http://example.org/q/mood", version: "2")], into: store)
        _ = try importing([Self.response(id: "qr1", basedOn: true, answer: 4)], into: store)
        let task = try XCTUnwrap(try store.tasks(.current).first { $0.id == "ServiceRequest/sr1" })
        let outcomes = try store.outcomes(.current)
        XCTAssertEqual(outcomes.count, 1)
        XCTAssertEqual(outcomes.first?.taskUUID, task.uuid)
        XCTAssertEqual(outcomes.first?.taskOccurrenceIndex, 2, "2026-03-03, the third day")
        XCTAssertEqual(outcomes.first?.values.map(\.kind), ["q1"])
        XCTAssertEqual(outcomes.first?.values.first?.value, .integer(4))
        XCTAssertEqual(outcomes.first?.metadata.provenance?.fhirType, "QuestionnaireResponse", "the provider's: never exported back")
    }

    func testAResponseWithoutBasedOnLandsOnTheOccurrenceHoldingItsTime() throws {
        let store = try makeStore()
        _ = try importing([SurveyImportTests.patient, Self.request, SurveyImportTests.questionnaire(id: "mood", url: "http://example.org/q/mood", version: "2")], into: store)
        _ = try importing([Self.response(id: "qr3", basedOn: false, answer: 5, authored: "2026-03-05T18:30:00Z")], into: store)
        let task = try XCTUnwrap(try store.tasks(.current).first { $0.id == "ServiceRequest/sr1" })
        let outcome = try XCTUnwrap(try store.outcomes(.current).first)
        XCTAssertEqual(outcome.taskUUID, task.uuid, "the patient's survey task asking mood|2, not a log")
        XCTAssertEqual(outcome.taskOccurrenceIndex, 4, "2026-03-05, the fifth day")
        XCTAssertEqual(outcome.values.first?.value, .integer(5))
    }

    func testBasedOnNarrowsTheChoiceAmongSurveyTasksAskingTheSameQuestionnaire() throws {
        let store = try makeStore()
        let second = Self.request.replacingOccurrences(of: #""id": "sr1""#, with: #""id": "sr2""#)
        let basedOnSecond = Self.response(id: "qr7", basedOn: true, answer: 2).replacingOccurrences(of: "ServiceRequest/sr1", with: "ServiceRequest/sr2")
        _ = try importing([SurveyImportTests.patient, Self.request, second], into: store)
        _ = try importing([basedOnSecond, Self.response(id: "qr8", basedOn: false, answer: 7, authored: "2026-03-04T10:00:00Z")], into: store)
        let outcomes = try store.outcomes(.current).sorted { $0.taskOccurrenceIndex < $1.taskOccurrenceIndex }
        XCTAssertEqual(outcomes.map(\.taskID), ["ServiceRequest/sr2", "ServiceRequest/sr1"], "basedOn picks sr2; without it, the first by id")
    }

    func testAResponseNamingTheUrlAloneMatchesTheTaskOfThatUrl() throws {
        let store = try makeStore()
        let unversioned = Self.response(id: "qr4", basedOn: false, answer: 1).replacingOccurrences(of: "mood|2", with: "mood")
        _ = try importing([SurveyImportTests.patient, Self.request, unversioned], into: store)
        let outcome = try XCTUnwrap(try store.outcomes(.current).first)
        XCTAssertEqual(outcome.taskID, "ServiceRequest/sr1")
    }

    func testAResponseOfAnotherVersionOrAnotherPatientIsNotMatched() throws {
        let store = try makeStore()
        let otherVersion = Self.response(id: "qr5", basedOn: false, answer: 1).replacingOccurrences(of: "mood|2", with: "mood|1")
        let otherPatient = Self.response(id: "qr6", basedOn: false, answer: 2).replacingOccurrences(of: "Patient/p1", with: "Patient/p2")
        let patient2 = SurveyImportTests.patient.replacingOccurrences(of: #""p1""#, with: #""p2""#)
        _ = try importing([SurveyImportTests.patient, patient2, Self.request, otherVersion, otherPatient], into: store)
        let outcomes = try store.outcomes(.current)
        XCTAssertEqual(outcomes.count, 2)
        for outcome in outcomes { XCTAssertNotEqual(outcome.taskID, "ServiceRequest/sr1") }
    }

    func testAResponseOutsideEveryOccurrenceGoesToThePatientsLogForItsQuestionnaire() throws {
        let store = try makeStore()
        _ = try importing([SurveyImportTests.patient, Self.request, Self.response(id: "qr2", basedOn: false, answer: 6, authored: "2026-04-20T10:00:00Z")], into: store)
        let outcome = try XCTUnwrap(try store.outcomes(.current).first)
        let log = try XCTUnwrap(try store.tasks(.current).first { $0.uuid == outcome.taskUUID })
        XCTAssertTrue(log.id.hasPrefix("Patient/p1#log-"), log.id)
        XCTAssertEqual(outcome.values.first?.value, .integer(6))
    }

    func testAnswersInARepeatingGroupTakeTheKindsOfTheQuestionnaireTheTaskAsks() throws {
        let questionnaire = #"""
            {"resourceType": "Questionnaire", "id": "meds", "url": "http://example.org/q/meds", "version": "1", "status": "active",
             "item": [
               {"linkId": "med", "type": "group", "repeats": true, "item": [{"linkId": "name", "type": "string"}, {"linkId": "dose", "type": "decimal"}]},
               {"linkId": "about", "type": "group", "item": [{"linkId": "note", "type": "string"}]}
             ]}
            """#
        let request = Self.request.replacingOccurrences(of: "http://example.org/q/mood|2", with: "http://example.org/q/meds|1")
        func response(_ id: String, groups: String) -> String {
            #"""
            {"resourceType": "QuestionnaireResponse", "id": "\#(id)", "status": "completed", "questionnaire": "http://example.org/q/meds|1",
             "subject": {"reference": "Patient/p1"}, "authored": "2026-03-0\#(id.suffix(1))T10:00:00Z", "item": [\#(groups)]}
            """#
        }
        let once = #"{"linkId": "med", "item": [{"linkId": "name", "answer": [{"valueString": "aspirin"}]}, {"linkId": "dose", "answer": [{"valueDecimal": 100}]}]}"#
        let twice = once + ", " + #"{"linkId": "med", "item": [{"linkId": "name", "answer": [{"valueString": "statin"}]}]}"#
        let about = #"{"linkId": "about", "item": [{"linkId": "note", "answer": [{"valueString": "fine"}]}]}"#
        let store = try makeStore()
        _ = try importing([SurveyImportTests.patient, request, questionnaire], into: store)
        _ = try importing([response("r2", groups: once + ", " + about), response("r3", groups: twice)], into: store)
        let outcomes = try store.outcomes(.current).sorted { $0.taskOccurrenceIndex < $1.taskOccurrenceIndex }
        XCTAssertEqual(outcomes.map(\.taskID), ["ServiceRequest/sr1", "ServiceRequest/sr1"])
        XCTAssertEqual(outcomes.first?.values.map(\.kind), ["med[0]/name", "med[0]/dose", "note"],
                       "a repeating group answered once is repetition 0; a group that does not repeat has no step")
        XCTAssertEqual(outcomes.last?.values.map(\.kind), ["med[0]/name", "med[0]/dose", "med[1]/name"])
    }

    func testAResponseCareGateWroteChangesNothingWhenItComesBack() throws {
        let store = try makeStore()
        _ = try importing([SurveyImportTests.patient, Self.request, SurveyImportTests.questionnaire(id: "mood", url: "http://example.org/q/mood", version: "2")], into: store)
        let task = try XCTUnwrap(try store.tasks(.current).first { $0.id == "ServiceRequest/sr1" })
        let day = ISO8601DateFormatter().date(from: "2026-03-03T10:00:00Z")!
        let recorded = Outcome(taskUUID: task.uuid, taskID: task.id, taskOccurrenceIndex: 2, values: [OutcomeValue(.integer(3), kind: "q1", createdDate: day)],
                               metadata: EntityMetadata(effectiveDate: day, createdDate: day, updatedDate: day, timezone: .gmt))
        let gateway = Gateway(store: store, mappings: try MappingSet.defaults(overriddenBy: nil), options: Gateway.Options(timeZone: TimeZone(identifier: "UTC")!))
        try gateway.recordOutcomes([recorded], file: "app.json")
        let before = try store.outcomes(.current)
        let report = try importing([Self.response(id: "echo", basedOn: true, answer: 3, identifier: recorded.id)], into: store)
        XCTAssertEqual(report.byType["QuestionnaireResponse"]?.unchanged, 1)
        let after = try store.outcomes(.current)
        XCTAssertEqual(after.map(\.metadata.uuid), before.map(\.metadata.uuid), "no new version")
        XCTAssertEqual(after.first?.values.count, 1, "the answer is not added a second time")
    }
}
