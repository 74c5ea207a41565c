import Foundation
import TestSupport
import XCTest

/// `caregate fhirpath` and `caregate conformance fhirpath`, run as a user would.
final class FHIRPathCLITests: XCTestCase {
    private func input(_ name: String) throws -> String {
        try Corpus.folder("fhirpath").appendingPathComponent(name).path
    }

    func testEvaluatePrintsTypedItems() throws {
        let result = try CLIRunner.run(["fhirpath", "Patient.name.where(use = 'official').given", try input("patient-example.xml")])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "string\tPeter\nstring\tJames\n")

        let quantity = try CLIRunner.run(["fhirpath", "Observation.value", try input("observation-example.xml")])
        XCTAssertEqual(quantity.stdout, "Quantity\t185 '[lb_av]'\n")
    }

    func testVariablesAndEmptyResults() throws {
        let result = try CLIRunner.run(["fhirpath", "name.where(use = %use).family", try input("patient-example.xml"), "--var", "use=maiden"])
        XCTAssertEqual(result.stdout, "string\tWindsor\n")
        let empty = try CLIRunner.run(["fhirpath", "name.where(use = 'nickname')", try input("patient-example.xml")])
        XCTAssertEqual(empty.status, 0)
        XCTAssertEqual(empty.stdout, "")
        XCTAssertTrue(empty.stderr.contains("empty"))
    }

    func testErrorsHaveColumnsAndExitOne() throws {
        let syntax = try CLIRunner.run(["fhirpath", "name.given = 'Peter", try input("patient-example.xml")])
        XCTAssertEqual(syntax.status, 1)
        XCTAssertTrue(syntax.stderr.contains("1:14: syntax error: unterminated string"), syntax.stderr)

        let unknown = try CLIRunner.run(["fhirpath", "name.nope()", try input("patient-example.xml")])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("semantic error: unknown function 'nope'"), unknown.stderr)

        let execution = try CLIRunner.run(["fhirpath", "name.single()", try input("patient-example.xml")])
        XCTAssertEqual(execution.status, 1)
        XCTAssertTrue(execution.stderr.contains("execution error: expected a single item, got 3"), execution.stderr)
    }

    func testCheckWithoutData() throws {
        let good = try CLIRunner.run(["fhirpath", "--check", "activity.detail.scheduled.ofType(Timing)", "--type", "CarePlan"])
        XCTAssertEqual(good.status, 0, good.stderr)
        XCTAssertEqual(good.stdout, "result type: Timing*\n")

        let bad = try CLIRunner.run(["fhirpath", "--check", "activity.detial.code", "--type", "CarePlan"])
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.stderr.contains("1:10: semantic error:"), bad.stderr)
        XCTAssertTrue(bad.stderr.contains("no element 'detial'"), bad.stderr)
    }

    func testUsageErrors() throws {
        let noType = try CLIRunner.run(["fhirpath", "--check", "name"])
        XCTAssertEqual(noType.status, 2)
        XCTAssertTrue(noType.stderr.contains("--type"), noType.stderr)
        let noFile = try CLIRunner.run(["fhirpath", "name"])
        XCTAssertEqual(noFile.status, 2)
        let badVar = try CLIRunner.run(["fhirpath", "name", try input("patient-example.xml"), "--var", "novalue"])
        XCTAssertEqual(badVar.status, 2)
        let help = try CLIRunner.run(["fhirpath", "--help"])
        XCTAssertTrue(help.stdout.contains("--check") && help.stdout.contains("--var"), help.stdout)
    }

    func testConformanceRunnerPrintsGroupsAndTotals() throws {
        let suite = try input("tests-fhir-r4.xml")
        let result = try CLIRunner.run(["conformance", "fhirpath", suite])
        let lines = result.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 101, "99 groups, the totals and the known failures")
        XCTAssertTrue(lines.contains("pass  testQuantity: 11/11"), result.stdout)
        let totals = lines[99]
        XCTAssertTrue(totals.hasSuffix(" failed") && totals.contains(" passed, "), String(totals))
        print("conformance fhirpath: \(totals)")
        // Only the documented failures: the run passes, and says why they fail.
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(lines[100].hasPrefix("all 2 failures are known ones: "), String(lines[100]))
        let failures = try CLIRunner.run(["conformance", "fhirpath", suite, "--failures", "--group", "Boundary"])
        XCTAssertTrue(failures.stdout.contains("LowBoundaryDecimal15"), failures.stdout)
    }

    func testConformanceOnAFileThatIsNotTheSuiteSaysSoPlainly() throws {
        let folder = try makeScratchFolder("conformance")
        for (name, content) in [("notes.xml", "{}"), ("other.xml", "<tests><nothing/></tests>")] {
            let file = try folder.writeFile(name, content)
            let result = try CLIRunner.run(["conformance", "fhirpath", file])
            XCTAssertEqual(result.status, 1, name)
            XCTAssertFalse(result.stderr.contains("parser error"), "libxml2's own output: \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("is not the FHIRPath test suite") || result.stderr.contains("is not a well-formed test suite"), result.stderr)
        }
    }
}
