import Foundation
import TestSupport
import XCTest

/// `caregate mappings validate DIR --format json`: what an editor or a CI job reads.
final class MappingsValidateCLITests: XCTestCase {
    func testJSONGivesEachProblemsFileLineColumnSeverityAndMessage() throws {
        let folder = try makeScratchFolder("mappings-json")
        // The typos of issue 30 in an override of the default CarePlan mapping, and a `when` that is no boolean.
        try folder.writeFile("CarePlan.yaml", """
            resource: CarePlan
            extends: default
            entities:
              - entity: task
                name: activity
                each: activty
                when: detail.code
                fields:
                  title: detail.code.txt
                  schedule: { transform: timng, from: detail.scheduled }

            """)
        let result = try CLIRunner.run(["mappings", "validate", folder.path, "--format", "json"])
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout)
        XCTAssertEqual(report["files"] as? Int, 1)
        XCTAssertEqual(report["errors"] as? Int, 3)
        XCTAssertEqual(report["warnings"] as? Int, 1)
        let problems = try XCTUnwrap(report["problems"] as? [[String: Any]])
        XCTAssertEqual(problems.count, 4)
        for problem in problems {
            XCTAssertEqual(Set(problem.keys), ["file", "line", "column", "severity", "message"])
            XCTAssertEqual(problem["file"] as? String, folder.appendingPathComponent("CarePlan.yaml").path, "nothing in a file the author did not pass")
        }
        let places = problems.map { "\($0["severity"] as? String ?? "") \($0["line"] as? Int ?? 0):\($0["column"] as? Int ?? 0)" }
        XCTAssertEqual(places.sorted(), ["error 10:30", "error 6:11", "error 9:26", "warning 7:11"])
    }

    func testHelpDescribesTheFormats() throws {
        let help = try CLIRunner.run(["mappings", "validate", "--help"])
        XCTAssertTrue(help.stdout.contains("json") && help.stdout.contains("severity"), help.stdout)
    }

    func testSoundMappingsGiveAnEmptyList() throws {
        let result = try CLIRunner.run(["mappings", "validate", "Mappings", "--format", "json"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout)
        XCTAssertEqual((report["problems"] as? [[String: Any]])?.count, 0)
        XCTAssertEqual(report["files"] as? Int, 11, "the default mapping files in Mappings")
    }
}
