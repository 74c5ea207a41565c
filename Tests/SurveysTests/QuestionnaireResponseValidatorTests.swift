import FHIR
import Foundation
import Surveys
import XCTest

/// The official R4 QuestionnaireResponses against their Questionnaires (the acceptance of issue 44,
/// item 6), and each rule on a response written for the test.
final class QuestionnaireResponseValidatorTests: XCTestCase {
    private func issues(_ name: String, fallback: String? = nil) throws -> [String] {
        let questionnaire = try Questionnaire(SurveyTestQuestionnaires.corpus("Questionnaire-\(name).json"))
        let response = try SurveyTestQuestionnaires.corpus("QuestionnaireResponse-\(name).json")
        let validator = QuestionnaireResponseValidator(catalog: QuestionnaireCatalog([questionnaire]))
        let found = try XCTUnwrap(validator.validate(response, fallback: fallback ?? questionnaire.url))
        return found.map { "\($0.expression) \($0.diagnostics)" }
    }

    /// 3141 answers 1.1.1.3, which its Questionnaire does not have. By R4's enableWhen rules it also
    /// answers the group 1.1.1, which is enabled only by the answer v2-0136 `Y` to 1.1, while the
    /// response answers 1.1 with another system's code `1`: that is reported too.
    func test3141() throws {
        XCTAssertEqual(try issues("3141"), [
            "QuestionnaireResponse.item[0].item[0].answer[0].item[0] linkId 1.1.1: the item is answered, but it is not enabled by the answers it depends on (enableWhen)",
            "QuestionnaireResponse.item[0].item[0].answer[0].item[0].item[2] linkId 1.1.1.3: the Questionnaire has no item with this linkId",
        ])
    }

    /// bb answers vitaminKDose1/2 where the Questionnaire has vitaminiKDose1/2. Its answer `f` to sex is
    /// also not among the options `F` and `M` (codes are case-sensitive).
    func testBB() throws {
        XCTAssertEqual(try issues("bb"), [
            "QuestionnaireResponse.item[0].item[0].item[1].answer[0].valueCoding linkId sex: the answer f is not among the item's answerOptions",
            "QuestionnaireResponse.item[0].item[1].item[2].answer[0].item[0].item[0] linkId vitaminKDose1: the Questionnaire has no item with this linkId",
            "QuestionnaireResponse.item[0].item[1].item[2].answer[0].item[0].item[1] linkId vitaminKDose2: the Questionnaire has no item with this linkId",
        ])
    }

    func testF201() throws {
        XCTAssertEqual(try issues("f201"), [
            "QuestionnaireResponse.item[0].item[0] linkId 1.1: the Questionnaire has no item with this linkId",
            "QuestionnaireResponse.item[2].item[0].answer[0].valueString linkId 3.1: a boolean item is answered with valueString; it takes valueBoolean",
            "QuestionnaireResponse.item[2].item[1].answer[0].valueString linkId 3.2: a boolean item is answered with valueString; it takes valueBoolean",
        ])
    }

    /// gcs names its Questionnaire as `Questionnaire/gcs`, found by id, and is accepted.
    func testGCSIsAccepted() throws {
        let questionnaire = try Questionnaire(SurveyTestQuestionnaires.corpus("Questionnaire-gcs.json"))
        let response = try SurveyTestQuestionnaires.corpus("QuestionnaireResponse-gcs.json")
        let validator = QuestionnaireResponseValidator(catalog: QuestionnaireCatalog([questionnaire]))
        XCTAssertEqual(try XCTUnwrap(validator.validate(response)), [])
    }

    func testEachRuleOnAWrittenResponse() throws {
        let questionnaire = try SurveyTestQuestionnaires.questionnaire(SurveyTestQuestionnaires.symptoms)
        let response = try FHIRJSON.read(Data("""
        {"resourceType": "QuestionnaireResponse", "status": "completed",
         "questionnaire": "http://example.org/Questionnaire/symptoms|2",
         "item": [
          {"linkId": "pain", "answer": [{"valueBoolean": false}, {"valueBoolean": true}]},
          {"linkId": "level", "answer": [{"valueInteger": 12}]},
          {"linkId": "mood", "answer": [{"valueCoding": {"system": "http://example.org/mood", "code": "great"}}]},
          {"linkId": "meds", "item": [{"linkId": "dose", "answer": [{"valueDecimal": 1}]}]},
          {"linkId": "where", "answer": [{"valueString": "x"}]}
         ]}
        """.utf8))
        let validator = QuestionnaireResponseValidator(catalog: QuestionnaireCatalog([questionnaire]))
        let found = try XCTUnwrap(validator.validate(response)).map { "\($0.code.rawValue) \($0.diagnostics.prefix(while: { $0 != ":" }))" }
        XCTAssertEqual(found, [
            "structure linkId pain", "value linkId level", "code-invalid linkId mood", "required linkId med", "structure linkId where",
        ])
    }

    func testAResponseNamingAnUnknownQuestionnaireIsNotChecked() throws {
        let response = Element.resource("QuestionnaireResponse", children: [Element(name: "questionnaire", value: "http://example.org/none")])
        XCTAssertNil(QuestionnaireResponseValidator(catalog: QuestionnaireCatalog()).validate(response))
    }
}
