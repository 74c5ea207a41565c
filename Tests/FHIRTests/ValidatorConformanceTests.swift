import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// Agreement with the reference (Java) validator on ../shared/corpus/validator-r4: for each case, do we
/// and it agree on "has errors" vs "has none"? Disagreements are explained in
/// Docs/validator-disagreements.md.
final class ValidatorConformanceTests: XCTestCase {
    /// The cases where the reference finds errors and CareGate, structural and terminology-free by
    /// design, finds none; each is explained in Docs/validator-disagreements.md. Any other disagreement
    /// fails the test, and so does one of these once it agrees (remove it here and in the doc).
    static let knownDisagreements: Set<String> = [
        "patient-extension-complex-bad2", "pat-dob-ext",
        "pat-example-extensions", "bundle-id-5", "uk-msg",
    ]

    func testAgreementWithReferenceValidator() throws {
        let folder = try Corpus.folder("validator-r4")
        let manifestData = try Data(contentsOf: folder.appendingPathComponent("manifest.json"))
        let manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: manifestData) as? [String: Any])
        let cases = try XCTUnwrap(manifest["test-cases"] as? [[String: Any]])

        var compared = 0, agreed = 0
        var skipped: [String] = [], disagreements: [String] = [], disagreeingCases: Set<String> = []
        for testCase in cases {
            let name = testCase["name"] as? String ?? "?"
            guard let file = testCase["file"] as? String, let expected = try expectedErrorCount(testCase, folder: folder) else {
                skipped.append(name)
                continue
            }
            let data = try Data(contentsOf: folder.appendingPathComponent(file))
            var options = ValidationOptions()
            if testCase["noHtmlInMarkdown"] as? Bool == true { options.allowHTMLInMarkdown = false }
            if testCase["validateContains"] as? String == "IGNORE" { options.validateContained = false }
            let issues = Self.validate(data, options: options)
            let ours = issues.filter(\.severity.isError)
            compared += 1
            if ours.isEmpty == (expected == 0) {
                agreed += 1
            } else {
                let detail = ours.prefix(3).map(\.description).joined(separator: " | ")
                disagreeingCases.insert(name)
                disagreements.append("\(name) (\(file)): reference \(expected) error(s), ours \(ours.count) \(detail)")
            }
        }
        let agreement = compared == 0 ? 0 : Double(agreed) / Double(compared)
        print("validator-r4: agreement \(agreed)/\(compared) (\(Int((agreement * 100).rounded()))%), \(skipped.count) skipped without an expected outcome: \(skipped.joined(separator: ", "))")
        for line in disagreements { print("  disagreement: \(line)") }
        XCTAssertEqual(disagreeingCases.subtracting(Self.knownDisagreements).sorted(), [], "new disagreements")
        XCTAssertEqual(Self.knownDisagreements.subtracting(disagreeingCases).sorted(), [], "known disagreements that now agree")
    }

    /// The case's expected number of errors: `errorCount`, or the error and fatal issues of its Java
    /// OperationOutcome; `nil` when the case names an outcome the corpus does not hold.
    private func expectedErrorCount(_ testCase: [String: Any], folder: URL) throws -> Int? {
        if let count = testCase["errorCount"] as? Int { return count }
        guard let outcomePath = testCase["java"] as? String else { return nil }
        let url = folder.appendingPathComponent("outcomes").appendingPathComponent(outcomePath)
        guard let data = try? Data(contentsOf: url) else { return nil }
        let outcome = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let issues = outcome["issue"] as? [[String: Any]] ?? []
        return issues.filter { ["error", "fatal"].contains($0["severity"] as? String) }.count
    }

    private static func validate(_ data: Data, options: ValidationOptions) -> [ValidationIssue] {
        let document = FHIRDocument.read(data)
        var options = options
        options.checkJSONValueKinds = document.format != .xml
        options.checkJSONArrayShape = document.format != .xml
        let validator = StructureValidator(options: options)
        return document.entries.flatMap { entry -> [ValidationIssue] in
            switch entry.result {
            case .success(let resource):
                return validator.validate(resource).issues
            case .failure(let error):
                return [ValidationIssue(severity: .fatal, code: .structure, diagnostics: error.description, expression: "")]
            }
        }
    }
}
