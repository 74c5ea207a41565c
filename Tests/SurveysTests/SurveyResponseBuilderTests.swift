import CareModel
import FHIR
import Foundation
import Surveys
import XCTest

/// QuestionnaireResponses (and Observations) built from checked outcomes: nesting, typing, "I don't
/// know", scores, extraction, and validity by the project's validator.
final class SurveyResponseBuilderTests: XCTestCase {
    private let authored = Date(timeIntervalSince1970: 1_700_000_000)

    private func context(amended: Bool = false) -> SurveyResponseContext {
        SurveyResponseContext(patient: "Patient/p1", basedOn: ["CarePlan/cp1"], authored: authored, isAmendment: amended,
                              id: "r1", responseReference: "QuestionnaireResponse/r1")
    }

    private func build(_ json: String, _ values: [OutcomeValue], amended: Bool = false) throws -> SurveyResponse {
        let questionnaire = try SurveyTestQuestionnaires.questionnaire(json)
        let result = SurveyAnswerChecker(questionnaire).check(values)
        XCTAssertEqual(result.problems, [])
        return try SurveyResponseBuilder(questionnaire).build(checking: result, context: context(amended: amended))
    }

    private func json(_ element: Element) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: FHIRJSON.write(element)) as? [String: Any])
    }

    private func assertValid(_ element: Element, file: StaticString = #filePath, line: UInt = #line) {
        let report = StructureValidator().validate(element)
        XCTAssertFalse(report.hasErrors, report.textReport(), file: file, line: line)
    }

    func testNestingTypingAndContext() throws {
        let built = try build(SurveyTestQuestionnaires.symptoms, [
            .init(.boolean(true), kind: "pain"), .init(.text("knee"), kind: "where"), .init(.integer(4), kind: "level"),
            .init(.text("low"), kind: "mood"), .init(.text("aspirin"), kind: "meds[0]/med"), .init(.double(0.5), kind: "meds[0]/dose"),
            .init(.text("ibuprofen"), kind: "meds[1]/med"), .init(.text("2024-03-01"), kind: "when"),
        ])
        assertValid(built.response)
        let response = try json(built.response)
        XCTAssertEqual(response["questionnaire"] as? String, "http://example.org/Questionnaire/symptoms|2")
        XCTAssertEqual(response["status"] as? String, "completed")
        XCTAssertEqual((response["subject"] as? [String: Any])?["reference"] as? String, "Patient/p1")
        XCTAssertEqual((response["author"] as? [String: Any])?["reference"] as? String, "Patient/p1")
        XCTAssertEqual((response["source"] as? [String: Any])?["reference"] as? String, "Patient/p1")
        XCTAssertEqual(((response["basedOn"] as? [[String: Any]])?.first)?["reference"] as? String, "CarePlan/cp1")
        let items = try XCTUnwrap(response["item"] as? [[String: Any]])
        XCTAssertEqual(items.map { $0["linkId"] as? String }, ["pain", "level", "mood", "meds", "meds", "when"])
        let pain = items[0]["answer"] as? [[String: Any]]
        XCTAssertEqual(pain?.first?["valueBoolean"] as? Bool, true)
        XCTAssertEqual(((pain?.first?["item"] as? [[String: Any]])?.first)?["linkId"] as? String, "where")
        let mood = (items[2]["answer"] as? [[String: Any]])?.first?["valueCoding"] as? [String: Any]
        XCTAssertEqual(mood?["system"] as? String, "http://example.org/mood")
        XCTAssertEqual(mood?["display"] as? String, "Low")
        let secondMeds = items[4]["item"] as? [[String: Any]]
        XCTAssertEqual(secondMeds?.map { $0["linkId"] as? String }, ["med"])
        XCTAssertEqual((items[5]["answer"] as? [[String: Any]])?.first?["valueDate"] as? String, "2024-03-01")
    }

    func testAmendedAndAskedUnknownAndDisabledItemsLeftOut() throws {
        let built = try build(SurveyTestQuestionnaires.symptoms, [.init(.text("asked-unknown"), kind: "pain")], amended: true)
        assertValid(built.response)
        let response = try json(built.response)
        XCTAssertEqual(response["status"] as? String, "amended")
        let items = try XCTUnwrap(response["item"] as? [[String: Any]])
        XCTAssertEqual(items.count, 1)
        XCTAssertNil(items[0]["answer"])
        let reason = (items[0]["extension"] as? [[String: Any]])?.first
        XCTAssertEqual(reason?["url"] as? String, "http://hl7.org/fhir/StructureDefinition/data-absent-reason")
        XCTAssertEqual(reason?["valueCode"] as? String, "asked-unknown")
    }

    /// SDC's PHQ-9 example answered as an app would: the calculatedExpression
    /// (`%resource.answers().value.ordinal().sum()`) gives the total score, and marked for extraction,
    /// the total gives an Observation with LOINC 44261-6.
    func testSDCPHQ9TotalScoreAndExtraction() throws {
        var element = try FHIRJSON.read(Data(contentsOf: SurveyFixtures.sdcPHQ9))
        element.children.append(Element(name: "extension", children: [
            Element(name: "url", value: "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-observationExtract"),
            Element(name: "valueBoolean", value: "true", valueKind: .boolean),
        ]))
        let questionnaire = try Questionnaire(element)
        let answers = ["Not-at-all", "Several-days", "More than half the days", "Nearly every day", "Several-days",
                       "Not at all", "Several days", "http://hl7.org/fhir/uv/sdc/CodeSystem/CSPHQ9|Nearly every day", "Not-at-all"]
        let values = answers.enumerated().map { OutcomeValue(.text($1), kind: "H1/T1/Q\($0 + 1)") }
        let result = SurveyAnswerChecker(questionnaire).check(values)
        XCTAssertEqual(result.problems, [])
        let built = try SurveyResponseBuilder(questionnaire).build(checking: result, context: context())
        XCTAssertEqual(built.calculated["H1/TS"], .quantity(SurveyQuantity(value: 11)), built.notes.joined(separator: "\n"))
        assertValid(built.response)
        let total = built.observations.first { observation in
            observation.child(named: "code")?.children(named: "coding").contains { $0.childValue("code") == "44261-6" } ?? false
        }
        let observation = try json(XCTUnwrap(total))
        XCTAssertEqual((observation["valueQuantity"] as? [String: Any])?["value"] as? Double, 11)
        XCTAssertEqual(observation["status"] as? String, "final")
        XCTAssertEqual(observation["effectiveDateTime"] as? String, observation["issued"] as? String)
        XCTAssertEqual(((observation["derivedFrom"] as? [[String: Any]])?.first)?["reference"] as? String, "QuestionnaireResponse/r1")
        let category = ((observation["category"] as? [[String: Any]])?.first?["coding"] as? [[String: Any]])?.first
        XCTAssertEqual(category?["code"] as? String, "survey")
        for extracted in built.observations { assertValid(extracted) }
    }

    /// The R4 gcs response given as app outcome values builds back to its items and answers.
    func testGCSResponseFromOutcomeValuesMatchesTheExample() throws {
        let questionnaire = try Questionnaire(SurveyTestQuestionnaires.corpus("Questionnaire-gcs.json"))
        let example = try json(SurveyTestQuestionnaires.corpus("QuestionnaireResponse-gcs.json"))
        let exampleItems = try XCTUnwrap(example["item"] as? [[String: Any]])
        let values = exampleItems.map { item -> OutcomeValue in
            let coding = ((item["answer"] as? [[String: Any]])?.first?["valueCoding"] as? [String: Any]) ?? [:]
            return OutcomeValue(.text("\(coding["system"] ?? "")|\(coding["code"] ?? "")"), kind: item["linkId"] as? String)
        }
        let result = SurveyAnswerChecker(questionnaire).check(values)
        XCTAssertEqual(result.problems, [])
        let built = try SurveyResponseBuilder(questionnaire).build(checking: result, context: context())
        assertValid(built.response)
        let items = try XCTUnwrap(try json(built.response)["item"] as? [[String: Any]])
        func shape(_ items: [[String: Any]]) -> [String] {
            items.map { item in
                let coding = ((item["answer"] as? [[String: Any]])?.first?["valueCoding"] as? [String: Any]) ?? [:]
                return "\(item["linkId"] ?? "") \(coding["system"] ?? "") \(coding["code"] ?? "") \(coding["display"] ?? "")"
            }
        }
        XCTAssertEqual(shape(items), shape(exampleItems))
    }
}
