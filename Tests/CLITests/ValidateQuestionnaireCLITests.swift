import Foundation
import TestSupport
import XCTest

/// `caregate validate` checking QuestionnaireResponses against their Questionnaires (issue 44, item 6):
/// from the input, from `--questionnaires DIR`, or named with `--questionnaire`.
final class ValidateQuestionnaireCLITests: XCTestCase {
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = try makeScratchFolder("caregate-validate-questionnaire")
    }

    func testF201AgainstItsQuestionnaireFromAFolder() throws {
        let corpus = try Corpus.folder("fhir-r4-examples")
        let folder = scratch.appendingPathComponent("questionnaires")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: corpus.appendingPathComponent("Questionnaire-f201.json"),
                                         to: folder.appendingPathComponent("Questionnaire-f201.json"))
        let result = try CLIRunner.run([
            "validate", corpus.appendingPathComponent("QuestionnaireResponse-f201.json").path,
            "--questionnaires", folder.path, "--questionnaire", "http://hl7.org/fhir/Questionnaire/f201",
        ])
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("error QuestionnaireResponse.item[0].item[0]: linkId 1.1:"), result.stdout)
        XCTAssertTrue(result.stdout.contains("linkId 3.1: a boolean item is answered with valueString"), result.stdout)
    }

    func testGCSInTheInputIsAccepted() throws {
        let corpus = try Corpus.folder("fhir-r4-examples")
        let result = try CLIRunner.run([
            "validate", corpus.appendingPathComponent("Questionnaire-gcs.json").path,
            corpus.appendingPathComponent("QuestionnaireResponse-gcs.json").path, "--format", "json",
        ])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertFalse(result.stdout.contains("linkId"), result.stdout)
    }

    func testAMissingQuestionnaireIsAWarningWhenAsked() throws {
        let response = try scratch.writeFile("r.json", #"{"resourceType":"QuestionnaireResponse","status":"completed","questionnaire":"http://example.org/Questionnaire/none"}"#)
        let folder = scratch.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let result = try CLIRunner.run(["validate", response, "--questionnaires", folder.path])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("warning QuestionnaireResponse.questionnaire: the Questionnaire http://example.org/Questionnaire/none is not in"), result.stdout)
        let notAFolder = try CLIRunner.run(["validate", response, "--questionnaires", response])
        XCTAssertEqual(notAFolder.status, 2, notAFolder.stdout + notAFolder.stderr)
    }
}
