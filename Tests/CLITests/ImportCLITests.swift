import Foundation
import TestSupport
import XCTest

/// `caregate import` and `caregate mappings validate`, as a user runs them.
final class ImportCLITests: XCTestCase {
    private var folder: URL!
    private var storePath: String { folder.appendingPathComponent("care.sqlite").path }

    override func setUpWithError() throws {
        folder = try makeScratchFolder("import-cli")
    }

    func testImportFixturesThenShowTheDay() throws {
        let result = try CLIRunner.run(["import", "Fixtures/provider", "--store", storePath, "--time-zone", "America/Chicago"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("8 resources read"), result.stdout)
        XCTAssertTrue(result.stdout.contains("CarePlan                     1"), result.stdout)
        let day = try CLIRunner.run(["patients", "events", "--store", storePath, "--patient", "Patient/pat-1", "--from", "2026-11-02", "--time-zone", "America/Chicago"])
        XCTAssertEqual(day.status, 0, day.stderr)
        XCTAssertTrue(day.stdout.contains("Measure blood pressure"), day.stdout)
        XCTAssertTrue(day.stdout.contains("done: 138 mm[Hg], 88 mm[Hg]"), day.stdout)
        XCTAssertTrue(day.stdout.contains("lisinopril 10 MG Oral Tablet"), day.stdout)
        let json = try CLIRunner.run(["import", "Fixtures/provider", "--store", storePath, "--time-zone", "America/Chicago", "--format", "json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(report["entitiesAdded"] as? Int, 0, "a second import adds nothing")
    }

    func testAFailureExitsOneAndNamesTheFile() throws {
        let bad = try folder.writeFile("bad.json", "{\n  \"resourceType\": \"Patient\",\n  \"id\": \n}")
        let result = try CLIRunner.run(["import", bad, "--store", storePath])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("failed: \(bad):4:1: JSON syntax error"), result.stdout)
    }

    func testUsageErrors() throws {
        let zone = try CLIRunner.run(["import", "Fixtures/provider", "--time-zone", "Mars/Olympus"])
        XCTAssertEqual(zone.status, 2)
        XCTAssertTrue(zone.stderr.contains("unknown time zone"), zone.stderr)
        let mappings = try CLIRunner.run(["import", "Fixtures/provider", "--mappings", folder.appendingPathComponent("none").path])
        XCTAssertEqual(mappings.status, 2)
    }

    func testMappingsValidate() throws {
        let defaults = try CLIRunner.run(["mappings", "validate"])
        XCTAssertEqual(defaults.status, 0, defaults.stdout)
        // The care team is the Patient mapping's (Practitioner.yaml and PractitionerRole.yaml are no more).
        XCTAssertTrue(defaults.stdout.contains("11 mapping file(s) checked: 0 error(s)"), defaults.stdout)
        let shipped = try CLIRunner.run(["mappings", "validate", "Mappings"])
        XCTAssertEqual(shipped.status, 0, shipped.stdout)
        try folder.writeFile("Patient.yaml", "resource: Patient\nentities:\n  - entity: patient\n    fields:\n      birthday: name\n")
        let broken = try CLIRunner.run(["mappings", "validate", folder.path])
        XCTAssertEqual(broken.status, 1)
        XCTAssertTrue(broken.stdout.contains("Patient.yaml:5:17: error: 'birthday' takes a date"), broken.stdout)
        // JSON is for editors and CI (MappingsValidateCLITests); XML stays an OperationOutcome.
        let outcome = try CLIRunner.run(["mappings", "validate", folder.path, "--format", "xml"])
        XCTAssertTrue(outcome.stdout.contains("<OperationOutcome") && outcome.stdout.contains("Patient.yaml:5:17"), outcome.stdout)
    }
}

/// `caregate mappings test` and `caregate convert --to carekit`.
final class MappingGoldenCLITests: XCTestCase {
    func testTheShippedGoldenCasesPass() throws {
        let result = try CLIRunner.run(["mappings", "test"])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        let cases = try FileManager.default.contentsOfDirectory(atPath: Corpus.projectRoot.appendingPathComponent("Fixtures/mapping-tests").path)
            .filter { !$0.hasPrefix(".") }
        XCTAssertTrue(result.stdout.contains("\(cases.count) passed, 0 failed"), result.stdout)
    }

    func testAFailingCaseShowsADiff() throws {
        let cases = try makeScratchFolder("golden")
        let one = cases.appendingPathComponent("one")
        try FileManager.default.createDirectory(at: one, withIntermediateDirectories: true)
        try one.writeFile("p.json", #"{"resourceType":"Patient","id":"p","gender":"female"}"#)
        var result = try CLIRunner.run(["mappings", "test", "--cases", cases.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("no expected.json"), result.stdout)
        result = try CLIRunner.run(["mappings", "test", "--cases", cases.path, "--update"])
        XCTAssertEqual(result.status, 0, result.stdout)
        try one.writeFile("p.json", #"{"resourceType":"Patient","id":"p","gender":"male"}"#)
        result = try CLIRunner.run(["mappings", "test", "--cases", cases.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stdout.contains("\"sex\" : \"female\"") && result.stdout.contains("\"sex\" : \"male\""), result.stdout)
        XCTAssertTrue(result.stdout.contains("FAIL  one"), result.stdout)
    }

    func testConvertToCareKit() throws {
        let result = try CLIRunner.run(["convert", "Fixtures/provider", "--to", "carekit", "--time-zone", "America/Chicago"])
        XCTAssertEqual(result.status, 0, result.stderr)
        // One object per patient (the log task, which has no care plan, goes with its patient, as does
        // the care team's contact); nothing is left that belongs to no patient.
        let objects = try result.stdout.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: [[String: Any]]])
        }
        XCTAssertEqual(objects.count, 1, result.stdout)
        let patient = try XCTUnwrap(objects.first)
        XCTAssertEqual(Set(patient.keys), ["patients", "carePlans", "contacts", "tasks", "outcomes"])
        XCTAssertEqual(patient["patients"]?.map { $0["id"] as? String }, ["Patient/pat-1"])
        XCTAssertEqual(patient["carePlans"]?.count, 1)
        // The blood pressure activity is two HealthKit tasks (systolic, diastolic): Docs/healthkit.md.
        XCTAssertEqual(patient["tasks"]?.count, 5)
        XCTAssertEqual(
            patient["tasks"]?.compactMap { ($0["healthKitLinkage"] as? [String: String])?["quantityIdentifier"] }.sorted(),
            ["HKQuantityTypeIdentifierBloodPressureDiastolic", "HKQuantityTypeIdentifierBloodPressureSystolic"])
        XCTAssertEqual(patient["outcomes"]?.count, 2)
        // The practitioner (general practitioner, plan author, prescriber, through its PractitionerRole)
        // is one contact of the patient, on no care plan: Docs/care-team.md.
        XCTAssertEqual(patient["contacts"]?.map { $0["id"] as? String }, ["Patient/pat-1#careteam-Practitioner-prac-1"])
        XCTAssertEqual(patient["contacts"]?.map { $0["carePlanUUID"] == nil }, [true])
    }
}
