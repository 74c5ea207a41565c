import Foundation
import TestSupport
import XCTest

/// `caregate mappings validate` on a user's active-task mapping (issue 43 item 3): the shipped one is
/// sound; a broken one is refused, each mistake at its file:line:column.
final class ActiveTaskMappingsCLITests: XCTestCase {
    func testTheShippedActiveTaskMappingIsSound() throws {
        let result = try CLIRunner.run(["mappings", "validate", "Mappings"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
    }

    func testABrokenActiveTaskMappingIsRefusedWithFileLineColumn() throws {
        let folder = try makeScratchFolder("active-task-mapping")
        try folder.writeFile("ActiveTaskExport.yaml", """
            export: active-task
            tasks:
              - name: walk
                codes: [http://loinc.org|64098-7]
                observations:
                  - code: http://loinc.org|64098-7
                    value: {kind: walked distance, unit: meters}
                    components:
                      - {kind: duration, unit: s}

            """)
        let result = try CLIRunner.run(["mappings", "validate", folder.path, "--format", "json"])
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout)
        let problems = try XCTUnwrap(report["problems"] as? [[String: Any]])
        let found = problems.map { "\($0["line"] as? Int ?? 0):\($0["column"] as? Int ?? 0) \($0["message"] as? String ?? "")" }
        let file = folder.appendingPathComponent("ActiveTaskExport.yaml").path
        XCTAssertTrue(problems.allSatisfy { $0["file"] as? String == file && $0["severity"] as? String == "error" }, "\(problems)")
        XCTAssertEqual(found.count, 3, "\(found)")
        XCTAssertTrue(found.contains { $0.hasPrefix("7:23 'walked distance' is not a kind") }, "\(found)")
        XCTAssertTrue(found.contains { $0.hasPrefix("7:46 'meters' is not a UCUM unit") }, "\(found)")
        XCTAssertTrue(found.contains { $0.hasPrefix("9:13 the component 'duration' needs `code:`") }, "\(found)")

        // The text form: file:line:column, as every mapping problem.
        let text = try CLIRunner.run(["mappings", "validate", folder.path])
        XCTAssertEqual(text.status, 1)
        XCTAssertTrue((text.stdout + text.stderr).contains("\(file):7:23: error: 'walked distance' is not a kind"), text.stdout + text.stderr)
    }

    /// A user's active-task mapping replaces the default one, and the sync job's export uses it.
    func testAUserMappingReplacesTheDefault() throws {
        let folder = try makeScratchFolder("active-task-override")
        try folder.writeFile("ActiveTaskExport.yaml", """
            export: active-task
            tasks:
              - name: grip
                codes: [urn:example:tests|grip-strength]
                observations:
                  - {code: "http://loinc.org|83174-0", value: {kind: strength, unit: kg}}

            """)
        let result = try CLIRunner.run(["mappings", "validate", folder.path])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
    }
}
