import FHIR
import Foundation
import Surveys
import TestSupport
import XCTest

/// The Questionnaire model read from the seven official R4 examples: every item read, every item's
/// handling reported, the unsupported parts said with their reasons.
final class QuestionnaireModelTests: XCTestCase {
    static func corpusQuestionnaire(_ name: String) throws -> Questionnaire {
        let folder = try Corpus.folder("fhir-r4-examples")
        let data = try Data(contentsOf: folder.appendingPathComponent("Questionnaire-\(name).json"))
        return try Questionnaire(FHIRJSON.read(data))
    }

    func testEveryOfficialExampleReadsWithAReportLinePerItem() throws {
        for name in ["3141", "bb", "f201", "gcs", "phq-9-questionnaire", "qs1", "zika-virus-exposure-assessment"] {
            let questionnaire = try Self.corpusQuestionnaire(name)
            XCTAssertFalse(questionnaire.items.isEmpty, name)
            let itemLines = questionnaire.supportReport.filter { $0.path != "Questionnaire" }
            XCTAssertEqual(itemLines.count, questionnaire.allItems.count, name)
        }
    }

    func testR4PHQ9ReportsItsExternalValueSetAndCQLTotalScore() throws {
        let questionnaire = try Self.corpusQuestionnaire("phq-9-questionnaire")
        let first = try XCTUnwrap(questionnaire.item(linkId: "LittleInterest"))
        XCTAssertEqual(first.support.level, .partly)
        XCTAssertTrue(first.support.problems.contains { $0.feature.hasPrefix("answerValueSet http://loinc.org/vs/LL358-3") })
        let total = try XCTUnwrap(questionnaire.item(linkId: "TotalScore"))
        XCTAssertEqual(total.support.level, .notSupported)
        XCTAssertTrue(total.support.problems.contains { $0.feature == "cqf-expression" && ($0.reason ?? "").contains("text/cql") })
        XCTAssertTrue(total.support.problems.contains { $0.feature == "total score" })
        XCTAssertTrue(questionnaire.rootSupport.notes.contains { $0.feature == "http://hl7.org/fhir/StructureDefinition/cqf-library" })
    }

    func testContainedValueSetsResolveByHash() throws {
        let questionnaire = try Self.corpusQuestionnaire("gcs")
        let motor = try XCTUnwrap(questionnaire.item(linkId: "1.2"))
        guard case .valueSet(let valueSet) = questionnaire.answerConstraint(for: motor) else {
            return XCTFail("expected the contained ValueSet")
        }
        XCTAssertEqual(valueSet.concepts.count, 6)
        XCTAssertEqual(motor.support.level, .supported)
    }

    func testItemsWithoutLinkIdAreReportedNotSupported() throws {
        let questionnaire = try Self.corpusQuestionnaire("qs1")
        XCTAssertTrue(questionnaire.allItems.contains { $0.linkId.isEmpty && $0.support.level == .notSupported })
    }

    func testEnableWhenAndNestingAreRead() throws {
        let questionnaire = try Self.corpusQuestionnaire("bb")
        let doses = try XCTUnwrap(questionnaire.item(linkId: "vitaminKgivenDoses"))
        XCTAssertEqual(doses.enableWhen, [EnableWhen(question: "vitaminKgiven", operator: .exists, answer: .boolean(true))])
        XCTAssertEqual(questionnaire.parent(of: "vitaminKgivenDoses")?.linkId, "vitaminKgiven")
        XCTAssertEqual(questionnaire.item(linkId: "sex")?.answerOptions.count, 2)
    }

    func testNotAQuestionnaireIsRefused() {
        XCTAssertThrowsError(try Questionnaire(Element.resource("Patient")))
    }
}
