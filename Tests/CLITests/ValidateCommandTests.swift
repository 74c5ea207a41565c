import Foundation
import TestSupport
import XCTest

/// `caregate validate`, run as a user runs it: exit status, text and OperationOutcome output.
final class ValidateCommandTests: XCTestCase {
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = try makeScratchFolder("caregate-validate")
    }


    private let validPatient = #"{"resourceType":"Patient","id":"p1","gender":"female","birthDate":"1970-01-01"}"#

    func testFixturesAreValid() throws {
        let folder = Corpus.projectRoot.appendingPathComponent("Fixtures/provider")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".json") || $0.hasSuffix(".xml") }.sorted()
            .map { folder.appendingPathComponent($0).path }
        XCTAssertFalse(files.isEmpty)
        let result = try CLIRunner.run(["validate"] + files)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("\(files.count) resources checked, 0 invalid"), result.stdout)
    }

    func testAFolderStandsForTheFHIRFilesUnderIt() throws {
        _ = try scratch.writeFile("a.json", validPatient)
        try FileManager.default.createDirectory(at: scratch.appendingPathComponent("nested"), withIntermediateDirectories: true)
        _ = try scratch.writeFile("nested/b.json", #"{"resourceType":"Patient","birthDate":"1970-02-30"}"#)
        _ = try scratch.writeFile("notes.txt", "not FHIR, not looked at")
        let result = try CLIRunner.run(["validate", scratch.path])
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("2 resources checked, 1 invalid"), result.stdout)
        XCTAssertTrue(result.stdout.contains("nested/b.json"), result.stdout)
    }

    func testMissingFileAndEmptyFolderAreNamedPlainly() throws {
        let empty = scratch.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let result = try CLIRunner.run(["validate", empty.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("a folder with no .json, .ndjson or .xml file in it"), result.stdout)
        // A missing input is a usage error, as for every command.
        let missing = try CLIRunner.run(["validate", empty.path, scratch.appendingPathComponent("missing.json").path])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.stderr.contains("no such file or folder: \(scratch.appendingPathComponent("missing.json").path)"), missing.stderr)
    }

    func testErrorsExitOneWithLocations() throws {
        let file = try scratch.writeFile("bad.json", #"{"resourceType":"Patient","birthDate":"1970-02-30","colour":"blue"}"#)
        let result = try CLIRunner.run(["validate", file])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("\(file): error Patient.birthDate: "), result.stdout)
        XCTAssertTrue(result.stdout.contains("\(file): error Patient.colour: unknown element"), result.stdout)
    }

    func testInvariantsAreChecked() throws {
        let file = try scratch.writeFile("risk.json", """
            {"resourceType":"RiskAssessment","status":"final","subject":{"reference":"Patient/1"},
             "prediction":[{"probabilityDecimal":150}]}
            """)
        let result = try CLIRunner.run(["validate", file])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("\(file): error RiskAssessment.prediction[0]: ras-2: Must be <= 100"), result.stdout)
        let json = try CLIRunner.run(["validate", "--format", "json", file])
        XCTAssertTrue(json.stdout.contains("\"invariant\""), json.stdout)
    }

    func testJSONArrayShapeIsChecked() throws {
        let file = try scratch.writeFile("shape.json", #"{"resourceType":"Patient","name":{"family":"Doe"},"gender":["female"]}"#)
        let result = try CLIRunner.run(["validate", file])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("\(file): error Patient.name: 'name' must be a JSON array"), result.stdout)
        XCTAssertTrue(result.stdout.contains("\(file): error Patient.gender: 'gender' must be a single JSON value"), result.stdout)
        // The same content in XML has no shape to get wrong.
        let xml = try scratch.writeFile("shape.xml", #"<Patient xmlns="http://hl7.org/fhir"><name><family value="Doe"/></name><gender value="female"/></Patient>"#)
        XCTAssertEqual(try CLIRunner.run(["validate", xml]).status, 0)
    }

    func testLenientMakesUnknownElementsWarnings() throws {
        let json = try scratch.writeFile("extra.json", #"{"resourceType":"Patient","colour":"blue"}"#)
        let xml = try scratch.writeFile("extra.xml", #"<Patient xmlns="http://hl7.org/fhir"><colour value="blue"/></Patient>"#)
        for file in [json, xml] {
            XCTAssertEqual(try CLIRunner.run(["validate", file]).status, 1, file)
            let lenient = try CLIRunner.run(["validate", "--lenient", file])
            XCTAssertEqual(lenient.status, 0, file + lenient.stdout)
            XCTAssertTrue(lenient.stdout.contains("warning Patient.colour"), lenient.stdout)
        }
    }

    func testMalformedFileIsReportedWithLineAndColumn() throws {
        let file = try scratch.writeFile("broken.json", "{\n  \"resourceType\": \"Patient\",\n  \"gender\": \n")
        let result = try CLIRunner.run(["validate", file])
        XCTAssertEqual(result.status, 1)
        XCTAssertNotNil(result.stdout.range(of: #"broken\.json:\d+:\d+: fatal: JSON syntax error"#, options: .regularExpression),
                        result.stdout)
    }

    func testNDJSONLinesAndStandardInput() throws {
        let ndjson = validPatient + "\n" + #"{"resourceType":"Patient","gender":"robot"}"# + "\n"
        let result = try CLIRunner.run(["validate", "-"], stdin: Data(ndjson.utf8))
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("<stdin>:2: error Patient.gender"), result.stdout)
        XCTAssertTrue(result.stdout.contains("2 resources checked, 1 invalid"), result.stdout)
    }

    func testOperationOutcomeOutput() throws {
        let file = try scratch.writeFile("bad.json", #"{"resourceType":"Patient","gender":"robot"}"#)
        let json = try CLIRunner.run(["validate", "--format", "json", file])
        XCTAssertEqual(json.status, 1)
        let outcome = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(outcome["resourceType"] as? String, "OperationOutcome")
        let issue = try XCTUnwrap((outcome["issue"] as? [[String: Any]])?.first)
        XCTAssertEqual(issue["severity"] as? String, "error")
        XCTAssertEqual(issue["code"] as? String, "code-invalid")
        XCTAssertEqual(issue["expression"] as? [String], ["Patient.gender"])

        let xml = try CLIRunner.run(["validate", "--format", "xml", file])
        XCTAssertEqual(xml.status, 1)
        XCTAssertTrue(xml.stdout.contains("<OperationOutcome xmlns=\"http://hl7.org/fhir\">"), xml.stdout)
        XCTAssertTrue(xml.stdout.contains("<expression value=\"Patient.gender\"/>"), xml.stdout)

        // The outcome of a clean file is itself valid FHIR, and so is a Bundle of several outcomes.
        let good = try scratch.writeFile("good.json", validPatient)
        let cleanOutcome = try CLIRunner.run(["validate", "--format", "json", good])
        XCTAssertEqual(cleanOutcome.status, 0)
        let outcomeFile = try scratch.writeFile("outcome.json", cleanOutcome.stdout)
        XCTAssertEqual(try CLIRunner.run(["validate", outcomeFile]).status, 0)
        let several = try CLIRunner.run(["validate", "--format", "json", good, file])
        let bundleFile = try scratch.writeFile("outcomes.json", several.stdout)
        let bundleCheck = try CLIRunner.run(["validate", bundleFile])
        XCTAssertEqual(bundleCheck.status, 0, bundleCheck.stdout)
    }

    func testUsageErrorsExitTwo() throws {
        XCTAssertEqual(try CLIRunner.run(["validate"]).status, 2)
        XCTAssertEqual(try CLIRunner.run(["validate", "--format", "yaml", "x.json"]).status, 2)
        XCTAssertEqual(try CLIRunner.run(["validate", "--strict", "--lenient", "x.json"]).status, 2)
        XCTAssertEqual(try CLIRunner.run(["validate", "-", "-"]).status, 2)
        let help = try CLIRunner.run(["validate", "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("Exit status"), help.stdout)
    }
}
