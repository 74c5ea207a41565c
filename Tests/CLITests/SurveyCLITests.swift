import Foundation
import TestSupport
import XCTest

/// Survey tasks on the command line (issue 44, items 1, 2, 8): `mappings validate` checks the survey
/// rules, and `convert --to carekit` and `store dump` after `import` show the same survey task, tagged
/// `survey` and naming the exact Questionnaire version it asks.
final class SurveyCLITests: XCTestCase {
    private func input() throws -> String {
        let folder = try makeScratchFolder("survey-cli")
        let bundle = #"""
            {"resourceType": "Bundle", "type": "collection", "entry": [
              {"resource": {"resourceType": "Patient", "id": "p1"}},
              {"resource": {"resourceType": "Questionnaire", "id": "mood", "url": "http://example.org/q/mood", "version": "2", "status": "active",
                            "item": [{"linkId": "score", "type": "integer"}]}},
              {"resource": {"resourceType": "CarePlan", "id": "cp1", "status": "active", "intent": "plan", "subject": {"reference": "Patient/p1"},
                            "period": {"start": "2026-01-05"},
                            "activity": [{"detail": {"status": "scheduled", "description": "Mood", "instantiatesCanonical": ["http://example.org/q/mood"]}}]}}
            ]}
            """#
        return try folder.writeFile("input.json", bundle)
    }

    /// The survey tasks of CareKit JSON text, as `tags` and `userInfo.questionnaire`.
    private func surveys(in text: String) -> [String] {
        text.split(separator: "\n").flatMap { line -> [String] in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) else { return [] }
            var found: [String] = []
            func walk(_ value: Any) {
                if let dictionary = value as? [String: Any] {
                    if let tags = dictionary["tags"] as? [String], tags.contains("survey"),
                       let questionnaire = (dictionary["userInfo"] as? [String: String])?["questionnaire"] {
                        found.append(questionnaire)
                    }
                    dictionary.values.forEach(walk)
                } else if let array = value as? [Any] {
                    array.forEach(walk)
                }
            }
            walk(object)
            return found
        }
    }

    func testConvertAndStoreDumpShowTheSameSurveyTask() throws {
        let path = try input()
        let converted = try CLIRunner.run(["convert", path, "--to", "carekit", "--time-zone", "UTC"])
        XCTAssertEqual(converted.status, 0, converted.stderr)
        let pretty = (try? JSONSerialization.jsonObject(with: Data(converted.stdout.utf8))).flatMap { try? JSONSerialization.data(withJSONObject: $0) }
        XCTAssertEqual(surveys(in: pretty.map { String(decoding: $0, as: UTF8.self) } ?? converted.stdout), ["http://example.org/q/mood|2"])

        let store = try makeScratchFolder("survey-cli-store").appendingPathComponent("store.sqlite").path
        let imported = try CLIRunner.run(["import", path, "--store", store, "--time-zone", "UTC"])
        XCTAssertEqual(imported.status, 0, imported.stdout + imported.stderr)
        let dump = try CLIRunner.run(["store", "dump", "--store", store, "--format", "carekit-json"])
        XCTAssertEqual(dump.status, 0, dump.stderr)
        XCTAssertEqual(surveys(in: dump.stdout), ["http://example.org/q/mood|2"])
    }

    func testTheSurveyMappingsValidate() throws {
        let result = try CLIRunner.run(["mappings", "validate", "Mappings"], in: Corpus.projectRoot)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
    }
}
