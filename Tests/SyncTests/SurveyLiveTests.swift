import AppClient
import CareModel
import FHIR
import Foundation
import Pipeline
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// Surveys against a real FHIR server (sekmet-fhir): the Questionnaire a pulled CarePlan's activity names
/// by url alone is searched on the server once, kept, and the survey task pinned to its version.
final class SurveyLiveTests: XCTestCase {
    static let questionnaire = #"""
        {"resourceType": "Questionnaire", "id": "mood", "url": "http://example.org/Questionnaire/mood", "version": "3", "status": "active",
         "title": "Mood check", "item": [{"linkId": "score", "text": "How do you feel (0-10)?", "type": "integer", "required": true}]}
        """#

    static func provider(startingOn day: String) -> String {
        #"""
        {"resourceType": "Bundle", "type": "collection", "entry": [
          {"resource": {"resourceType": "Patient", "id": "sp1", "name": [{"family": "Survey", "given": ["Sam"]}]}},
          {"resource": {"resourceType": "CarePlan", "id": "scp1", "status": "active", "intent": "plan", "subject": {"reference": "Patient/sp1"},
            "period": {"start": "\#(day)"},
            "activity": [{"detail": {"status": "scheduled", "description": "Daily mood",
              "instantiatesCanonical": ["http://example.org/Questionnaire/mood"],
              "scheduledTiming": {"repeat": {"frequency": 1, "period": 1, "periodUnit": "d"}}}}]}}
        ]}
        """#
    }

    /// A folder as the server: the Questionnaire is found in the configuration's `questionnaires:` folder.
    func testSyncFindsTheQuestionnaireInTheConfiguredFolder() throws {
        try forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("survey-folder")
            let provider = folder.appendingPathComponent("provider")
            let forms = folder.appendingPathComponent("forms")
            let out = folder.appendingPathComponent("out")
            for made in [provider, forms, out] { try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true) }
            try provider.writeFile("provider.json", Self.provider(startingOn: "2026-01-05"))
            try forms.writeFile("mood.json", Self.questionnaire)
            let config = folder.appendingPathComponent("sync.yaml")
            try Data("server: provider\npush-to: out\nquestionnaires: forms\ntime-zone: UTC\n".utf8).write(to: config)
            let store = try XCTUnwrap(tested.location)
            let run = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
            let reader = try tested.reopen()
            let survey = try XCTUnwrap(try reader.tasks(.current).first { $0.metadata.tags?.contains("survey") ?? false })
            XCTAssertEqual(survey.metadata.userInfo?["questionnaire"], "http://example.org/Questionnaire/mood|3")

            try Data("server: provider\npush-to: out\nquestionnaires: nowhere\n".utf8).write(to: config)
            let wrong = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertNotEqual(wrong.status, 0)
            XCTAssertTrue(wrong.stderr.contains("questionnaires"), wrong.stderr)
        }
    }

    func testSyncFetchesTheQuestionnaireOnceAndPinsTheTask() throws {
        let fhir = try FHIRServerProcess.start()
        defer { fhir.stop() }
        let folder = try makeScratchFolder("survey-live")
        let today = ISO8601DateFormatter.string(from: Date(), timeZone: .gmt, formatOptions: [.withFullDate])
        try loadKeepingIDs([try folder.writeFile("provider.json", Self.provider(startingOn: today)), try folder.writeFile("q.json", Self.questionnaire)], into: fhir.base)
        let config = folder.appendingPathComponent("sync.yaml")
        try forEachStore(sqliteFile: true) { tested in
            try Data("server: \(fhir.base.absoluteString)\ntime-zone: UTC\nresources: [Patient, CarePlan]\n".utf8).write(to: config)
            let store = try XCTUnwrap(tested.location)
            let pulled = try CLIRunner.run(["sync", "--once", "--config", config.path, "--store", store])
            XCTAssertEqual(pulled.status, 0, pulled.stdout + pulled.stderr)
            let reader = try tested.reopen()
            let survey = try XCTUnwrap(try reader.tasks(.current).first { $0.metadata.tags?.contains("survey") ?? false })
            XCTAssertEqual(survey.metadata.userInfo?["questionnaire"], "http://example.org/Questionnaire/mood|3")
            XCTAssertNotNil(try reader.questionnaire(url: "http://example.org/Questionnaire/mood", version: "3"), "\(tested.kind): kept from the server")
        }
    }
}
