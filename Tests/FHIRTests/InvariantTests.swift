import Foundation
import TestSupport
import XCTest
@testable import FHIRCore
@testable import FHIRPath
@testable import FHIRValidation
import FHIR

/// The R4 invariants (ElementDefinition.constraint) evaluated by structural validation with the
/// project's FHIRPath engine: a violation is reported at the element, with the constraint's severity.
final class InvariantTests: XCTestCase {
    private func read(_ json: String) throws -> Element { try FHIRJSON.read(Data(json.utf8)) }

    private func invariantIssues(_ json: String) throws -> [ValidationIssue] {
        StructureValidator().validate(try read(json)).issues.filter { $0.code == .invariant }
    }

    func testCatalogCountsAndSkips() {
        let catalog = InvariantCatalog.r4
        print("invariants: \(catalog.evaluated.count) evaluated, \(catalog.skipped.count) skipped")
        for skipped in catalog.skipped {
            print("  skipped \(skipped.invariant.key) (\(skipped.invariant.path)): \(skipped.reason)")
        }
        XCTAssertTrue(catalog.evaluated.contains { $0.key == "ras-2" })
        XCTAssertTrue(catalog.evaluated.contains { $0.key == "pat-1" })
        XCTAssertGreaterThan(catalog.evaluated.count, 150)
        // Unsupported constraints are skipped with a reason, never evaluated.
        XCTAssertEqual(catalog.skipped.first { $0.invariant.key == "ele-1" }?.reason.contains("structural"), true)
        XCTAssertFalse(catalog.evaluated.contains { $0.expression.contains("memberOf(") || $0.expression.contains("conformsTo(") })
        XCTAssertEqual(FHIRMetadata.r4.invariants(at: "RiskAssessment.prediction").map(\.key), ["ras-2"])
        XCTAssertEqual(catalog.skipped.first { $0.invariant.key == "que-7" }?.reason.contains("Questionnaire-bb"), true)
    }

    func testRiskAssessmentProbabilityOver100() throws {
        let issues = try invariantIssues("""
            {"resourceType":"RiskAssessment","status":"final","subject":{"reference":"Patient/1"},
             "prediction":[{"probabilityDecimal":50},{"probabilityDecimal":150}]}
            """)
        XCTAssertEqual(issues.count, 1, "\(issues)")
        XCTAssertEqual(issues.first?.severity, .error)
        XCTAssertEqual(issues.first?.expression, "RiskAssessment.prediction[1]")
        XCTAssertEqual(issues.first?.diagnostics, "ras-2: Must be <= 100")
    }

    func testPatientContactWithoutDetails() throws {
        let issues = try invariantIssues("""
            {"resourceType":"Patient","contact":[{"name":{"family":"Doe"}},{"gender":"female"}]}
            """)
        XCTAssertEqual(issues.map(\.expression), ["Patient.contact[1]"])
        XCTAssertEqual(issues.first?.diagnostics.hasPrefix("pat-1: "), true)
    }

    func testValidResourcesPass() throws {
        XCTAssertEqual(try invariantIssues("""
            {"resourceType":"RiskAssessment","status":"final","subject":{"reference":"Patient/1"},
             "prediction":[{"probabilityDecimal":100},{"probabilityRange":{
               "low":{"value":1,"code":"%","system":"http://unitsofmeasure.org"},
               "high":{"value":2,"code":"%","system":"http://unitsofmeasure.org"}}}]}
            """), [])
        // ras-1 without units: not percentages, so not met (the comparison with a missing code is empty).
        XCTAssertEqual(try invariantIssues("""
            {"resourceType":"RiskAssessment","status":"final","subject":{"reference":"Patient/1"},
             "prediction":[{"probabilityRange":{"low":{"value":1},"high":{"value":2}}}]}
            """).map { String($0.diagnostics.prefix(5)) }, ["ras-1"])
        XCTAssertEqual(try invariantIssues("""
            {"resourceType":"Patient","contact":[{"telecom":[{"system":"phone","value":"123"}]}]}
            """), [])
    }

    func testDatatypeAndContainedInvariants() throws {
        // per-1 on a Period inside a contained resource; dom-4 on the container.
        let issues = try invariantIssues("""
            {"resourceType":"Patient","contained":[{"resourceType":"Organization","id":"o","meta":{"versionId":"1"},
              "name":"x","contact":[{"name":{"text":"a","period":{"start":"2020-02-01","end":"2020-01-01"}}}]}],
             "managingOrganization":{"reference":"#o"}}
            """)
        XCTAssertEqual(Set(issues.map { String($0.diagnostics.prefix(5)) }), ["per-1", "dom-4"], "\(issues)")
        XCTAssertTrue(issues.contains { $0.expression == "Patient.contained[0].contact[0].name.period" })
        XCTAssertTrue(issues.contains { $0.expression == "Patient" && $0.diagnostics.hasPrefix("dom-4") })
    }

    func testWarningSeverity() throws {
        // sdf-0 (a warning): the name should be usable as an identifier.
        let issues = try invariantIssues("""
            {"resourceType":"StructureDefinition","url":"http://example.org/sd","name":"not an identifier",
             "status":"draft","kind":"logical","abstract":false,"type":"Thing"}
            """)
        let sdf0 = issues.filter { $0.diagnostics.hasPrefix("sdf-0: ") }
        XCTAssertEqual(sdf0.map(\.severity), [.warning], "\(issues)")
        XCTAssertEqual(sdf0.first?.expression, "StructureDefinition")
    }

    func testLocalReferenceNeedsAContainedResource() throws {
        let issues = try invariantIssues("""
            {"resourceType":"Patient","contained":[{"resourceType":"Organization","id":"o","name":"x"}],
             "managingOrganization":{"reference":"#o"},"generalPractitioner":[{"reference":"#missing"}]}
            """)
        XCTAssertEqual(issues.map(\.expression), ["Patient.generalPractitioner[0]"], "\(issues)")
        XCTAssertEqual(issues.first?.diagnostics.hasPrefix("ref-1: "), true)
        // A Reference validated on its own has no resource to look in: ref-1 is not judged.
        let alone = Element(name: "reference", children: [Element(name: "reference", value: "#p1")])
        XCTAssertFalse(StructureValidator().validate(alone, asType: "Reference").hasErrors)
    }

    /// FHIR: a constraint is met when its expression is true. A comparison FHIRPath cannot decide (a
    /// date against a dateTime of the same day: different precision) is empty, which does not meet per-1.
    func testUndecidedComparisonDoesNotMeetAnInvariant() throws {
        func per1(_ start: String, _ end: String) throws -> [String] {
            try invariantIssues("""
                {"resourceType":"Encounter","status":"finished","class":{"code":"AMB"},
                 "period":{"start":"\(start)","end":"\(end)"}}
                """).map { String($0.diagnostics.prefix(6)) + " " + $0.expression }
        }
        XCTAssertEqual(try per1("2023-06-21", "2023-06-21T06:20:00Z"), ["per-1: Encounter.period"])
        XCTAssertEqual(try per1("2023-06", "2023-06-21"), ["per-1: Encounter.period"])
        // Decidable at the shorter precision: no issue when start is before end, an issue when after.
        XCTAssertEqual(try per1("2023-06-20", "2023-06-21T06:20:00Z"), [])
        XCTAssertEqual(try per1("2023-05", "2023-06-21"), [])
        XCTAssertEqual(try per1("2023-06-22", "2023-06-21T06:20:00Z"), ["per-1: Encounter.period"])
    }

    /// The R4 expressions that are empty on valid data are evaluated corrected: a Reference with only a
    /// display, a Bundle entry without fullUrl and a canonical resource without a name meet their
    /// constraints; the same constraints still catch what they are about.
    func testCorrectedExpressionsJudgeOnlyPresentElements() throws {
        XCTAssertEqual(try invariantIssues("""
            {"resourceType":"Patient","generalPractitioner":[{"display":"Dr. Who"}],
             "managingOrganization":{"identifier":{"system":"http://example.org","value":"1"}}}
            """), [])
        XCTAssertEqual(try invariantIssues("""
            {"resourceType":"Bundle","type":"collection","entry":[{"resource":{"resourceType":"Basic","code":{"text":"x"}}}]}
            """).map(\.diagnostics), [])
        XCTAssertEqual(try invariantIssues("""
            {"resourceType":"Bundle","type":"collection","entry":[{"fullUrl":"http://example.org/Basic/1/_history/2",
              "resource":{"resourceType":"Basic","id":"1","code":{"text":"x"}}}]}
            """).map { String($0.diagnostics.prefix(5)) }, ["bdl-8"])
        XCTAssertEqual(try invariantIssues(#"{"resourceType":"Library","status":"draft","type":{"text":"x"}}"#), [])
        XCTAssertEqual(try invariantIssues(#"{"resourceType":"Library","name":"not usable","status":"draft","type":{"text":"x"}}"#)
            .map { String($0.diagnostics.prefix(5)) }, ["lib-0"])
        // que-12 counts "more than one" enableWhen (R4 wrote > 2).
        let questionnaire = { (count: Int, behavior: String) in
            let conditions = (0..<count).map { _ in #"{"question":"a","operator":"exists","answerBoolean":true}"# }.joined(separator: ",")
            return #"{"resourceType":"Questionnaire","status":"draft","item":[{"linkId":"a","type":"boolean"},"#
                + #"{"linkId":"b","type":"string"\#(behavior),"enableWhen":[\#(conditions)]}]}"#
        }
        XCTAssertEqual(try invariantIssues(questionnaire(2, "")).map { String($0.diagnostics.prefix(6)) }, ["que-12"])
        XCTAssertEqual(try invariantIssues(questionnaire(2, #","enableBehavior":"any""#)), [])
        XCTAssertEqual(try invariantIssues(questionnaire(1, "")), [])
        let corrected = Set(InvariantCatalog.r4.corrected.map(\.invariant.key))
        XCTAssertTrue(corrected.isSuperset(of: ["que-12", "lib-0", "que-0", "sdf-0"]), "\(corrected)")
        XCTAssertEqual(Set(InvariantCatalog.r4.native.keys), InvariantCatalog.checkedNatively)
    }

    func testInvariantsSwitchedOffReportNoInvariantIssue() throws {
        let resource = try read("""
            {"resourceType":"RiskAssessment","status":"final","subject":{"reference":"Patient/1"},
             "prediction":[{"probabilityDecimal":150}]}
            """)
        let off = StructureValidator(options: ValidationOptions(checkInvariants: false)).validate(resource)
        XCTAssertFalse(off.issues.contains { $0.code == .invariant })
    }

    func testSkippedConstraintIsNotEvaluated() throws {
        // que-7 is skipped (see the catalog): a violation of it is not reported.
        let issues = try invariantIssues("""
            {"resourceType":"Questionnaire","status":"draft","item":[{"linkId":"a","type":"boolean"},
             {"linkId":"b","type":"string","enableWhen":[{"question":"a","operator":"exists","answerString":"x"}]}]}
            """)
        XCTAssertFalse(issues.contains { $0.diagnostics.hasPrefix("que-7") }, "\(issues)")
    }

    // MARK: Corpus

    /// Invariants add no error to the official examples, Synthea or the Bulk Data export, and the engine
    /// evaluates every invariant on them without failing.
    func testCorpusGainsNoErrors() throws {
        var evaluationFailures: [String] = []
        for (folder, suffix) in [("fhir-r4-examples", ".json"), ("synthea-r4", ".json"), ("bulk-ndjson", ".000.ndjson")] {
            var resources = 0, newErrors: [String] = [], warnings: [String: Int] = [:]
            for file in try Corpus.files(in: folder, suffix: suffix) {
                for entry in FHIRDocument.read(try Data(contentsOf: file)).entries {
                    guard case .success(let resource) = entry.result else { continue }
                    resources += 1
                    let options = ValidationOptions(checkJSONArrayShape: true)
                    for issue in StructureValidator(options: options).validate(resource).issues where issue.code == .invariant {
                        let key = String(issue.diagnostics.prefix { $0 != ":" && $0 != " " })
                        switch issue.severity {
                        case .error, .fatal:
                            if key.contains("-"), InvariantCatalog.r4.evaluated.contains(where: { $0.key == key }) {
                                newErrors.append("\(file.lastPathComponent): \(issue)")
                            }
                        case .warning: warnings[key, default: 0] += 1
                        case .information: evaluationFailures.append("\(file.lastPathComponent): \(issue)")
                        }
                    }
                }
            }
            let warningText = warnings.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            print("invariants: \(folder): \(resources) resources, \(newErrors.count) invariant errors, warnings: \(warningText)")
            for error in newErrors { print("  \(error)") }
            XCTAssertEqual(newErrors, [], folder)
        }
        print("invariants: \(evaluationFailures.count) evaluation failures")
        for failure in evaluationFailures.prefix(20) { print("  \(failure)") }
        XCTAssertEqual(evaluationFailures, [])
    }
}
