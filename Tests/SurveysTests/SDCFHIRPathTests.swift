import CareModel
import FHIR
import Foundation
import Surveys
import XCTest

/// SDC's FHIRPath supplements in CareGate's engine: `weight()`, `ordinal()`, `answers()`, `%questionnaire`,
/// `%qitem`, `%resource`, with expressions taken from SDC's examples
/// (questionnaire-sdc-profile-example-item-weight, -PHQ9) and enableWhenExpression.
final class SDCFHIRPathTests: XCTestCase {
    /// A PHQ-4-like Questionnaire: a group of choices on a contained ValueSet whose concepts carry
    /// itemWeight, and SDC's item-weight example's total-score expression.
    static func scored(expression: String, totalType: String = "integer", extra: String = "") -> String {
        """
        {"resourceType": "Questionnaire", "url": "http://example.org/Questionnaire/scored", "status": "active",
         "contained": [{"resourceType": "ValueSet", "id": "freq", "status": "active",
           "compose": {"include": [{"system": "http://loinc.org", "concept": [
             {"code": "LA6568-5", "display": "Not at all", "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/itemWeight", "valueDecimal": 0}]},
             {"code": "LA6569-3", "display": "Several days", "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/itemWeight", "valueDecimal": 1}]},
             {"code": "LA6570-1", "display": "More than half the days", "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/itemWeight", "valueDecimal": 2}]},
             {"code": "LA6571-9", "display": "Nearly every day", "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/itemWeight", "valueDecimal": 3}]}]}]}}],
         "item": [
          {"linkId": "1.0", "type": "group", "item": [
            {"linkId": "1.1", "type": "choice", "answerValueSet": "#freq"},
            {"linkId": "1.2", "type": "choice", "answerValueSet": "#freq"},
            {"linkId": "1.3", "type": "choice",
             "answerOption": [{"valueCoding": {"system": "http://example.org/x", "code": "no"},
                               "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/ordinalValue", "valueDecimal": 0}]},
                              {"valueCoding": {"system": "http://example.org/x", "code": "yes"},
                               "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/ordinalValue", "valueDecimal": 5}]}]}]},
          {"linkId": "6", "type": "\(totalType)", "text": "Total Score:",
           "extension": [{"url": "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-calculatedExpression",
                          "valueExpression": {"language": "text/fhirpath", "expression": "\(expression)"}}]}\(extra)
         ]}
        """
    }

    private func calculated(_ json: String, _ values: [OutcomeValue]) throws -> SurveyResponse {
        let questionnaire = try SurveyTestQuestionnaires.questionnaire(json)
        let result = SurveyAnswerChecker(questionnaire).check(values)
        XCTAssertEqual(result.problems, [])
        return try SurveyResponseBuilder(questionnaire).build(
            checking: result, context: SurveyResponseContext(patient: "Patient/p", authored: Date(timeIntervalSince1970: 0)))
    }

    private let answers: [OutcomeValue] = [
        OutcomeValue(.text("LA6570-1"), kind: "1.1"), OutcomeValue(.text("Nearly every day"), kind: "1.2"), OutcomeValue(.text("yes"), kind: "1.3"),
    ]

    func testSDCItemWeightExampleExpression() throws {
        let built = try calculated(Self.scored(expression: "%resource.repeat(item).where(linkId='1.0').item.answer.value.weight().aggregate($this + $total, 0)"), answers)
        XCTAssertEqual(built.calculated["6"], .integer(10), built.notes.joined(separator: "; "))
    }

    func testOrdinalIsWeightAndAnswersReachesNestedItems() throws {
        let built = try calculated(Self.scored(expression: "%resource.answers().value.ordinal().sum()", totalType: "decimal"), answers)
        XCTAssertEqual(built.calculated["6"], .decimal(10), built.notes.joined(separator: "; "))
    }

    func testQItemAndQuestionnaireVariables() throws {
        let built = try calculated(Self.scored(expression: "%qitem.text & ' ' & %questionnaire.url", totalType: "string"), answers)
        XCTAssertEqual(built.calculated["6"], .string("Total Score: http://example.org/Questionnaire/scored"))
    }

    func testWeightOfACodingCarryingItsOwnWeightAndWithoutAQuestionnaire() throws {
        let coding = try FHIRJSON.read(Data("""
        {"resourceType": "Observation", "status": "final", "code": {"text": "x"},
         "valueCodeableConcept": {"coding": [{"system": "http://loinc.org", "code": "LA6560-2",
           "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/itemWeight", "valueDecimal": 4}]}]}}
        """.utf8))
        let weight = try FHIRPathExpression("Observation.value.coding.weight()").evaluate(on: coding)
        XCTAssertEqual(weight.map(\.description), ["4"])
        let plain = try FHIRJSON.read(Data("""
        {"resourceType": "Observation", "status": "final", "code": {"coding": [{"system": "http://loinc.org", "code": "1-8"}]}}
        """.utf8))
        XCTAssertThrowsError(try FHIRPathExpression("Observation.code.coding.weight()").evaluate(on: plain))
    }

    func testEnableWhenExpressionDisablesAnItem() throws {
        let extra = """
        , {"linkId": "7", "type": "string", "text": "Tell us more",
           "extension": [{"url": "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-enableWhenExpression",
                          "valueExpression": {"language": "text/fhirpath", "expression": "%resource.answers().value.weight().sum() >= 10"}}]}
        """
        let questionnaire = try SurveyTestQuestionnaires.questionnaire(Self.scored(expression: "0", extra: extra))
        XCTAssertEqual(questionnaire.item(linkId: "7")?.support.level, .supported)
        let low = [OutcomeValue(.text("LA6568-5"), kind: "1.1"), OutcomeValue(.text("more"), kind: "7")]
        XCTAssertEqual(SurveyAnswerChecker(questionnaire).check(low).problems.map(\.kind), [.notEnabled])
        XCTAssertEqual(SurveyAnswerChecker(questionnaire).check(answers + [OutcomeValue(.text("more"), kind: "7")]).problems, [])
    }
}
