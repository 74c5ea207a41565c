import CareModel
import FHIR
import Foundation
import Surveys
import XCTest

/// An app's outcome values checked against a Questionnaire: each rule refused with its linkId.
final class SurveyAnswerCheckerTests: XCTestCase {
    private func check(_ values: [OutcomeValue]) throws -> SurveyCheckResult {
        SurveyAnswerChecker(try SurveyTestQuestionnaires.questionnaire(SurveyTestQuestionnaires.symptoms)).check(values)
    }

    private func kinds(_ result: SurveyCheckResult) -> [String] {
        result.problems.map { "\($0.kind.rawValue) \($0.linkId)" }
    }

    func testAFittingOutcomeIsAccepted() throws {
        let result = try check([
            .init(.boolean(true), kind: "pain"), .init(.text("knee"), kind: "where"), .init(.integer(4), kind: "level"),
            .init(.text("low"), kind: "mood"), .init(.text("aspirin"), kind: "meds[0]/med"), .init(.double(0.5), kind: "meds[0]/dose"),
            .init(.text("ibuprofen"), kind: "meds[1]/med"), .init(.text("2024-03-01"), kind: "when"),
        ])
        XCTAssertEqual(kinds(result), [])
        XCTAssertEqual(result.answers.values(.init(linkId: "med", repetitions: [1])), [.string("ibuprofen")])
        let mood = result.answers.values(.init(linkId: "mood")).first
        guard case .coding(let coding)? = mood else { return XCTFail("expected a Coding") }
        XCTAssertEqual(coding.weight, 2)
    }

    func testCodedAnswersByCodeSystemBarCodeOrDisplay() throws {
        for text in ["low", "http://example.org/mood|low", "Low"] {
            let result = try check([.init(.boolean(false), kind: "pain"), .init(.text(text), kind: "mood")])
            XCTAssertEqual(kinds(result), [], text)
        }
    }

    func testEachRuleIsRefusedWithItsLinkId() throws {
        XCTAssertEqual(kinds(try check([.init(.text("yes"), kind: "pain")])), ["wrong-type pain", "missing-required pain"])
        XCTAssertEqual(kinds(try check([.init(.boolean(true), kind: "pain")])), ["missing-required level"])
        XCTAssertEqual(kinds(try check([.init(.boolean(false), kind: "pain"), .init(.integer(3), kind: "level")])), ["not-enabled level"])
        XCTAssertEqual(kinds(try check([.init(.boolean(false), kind: "pain"), .init(.text("great"), kind: "mood")])), ["not-an-option mood"])
        XCTAssertEqual(kinds(try check([.init(.boolean(false), kind: "pain"), .init(.text("x"), kind: "nope")])), ["unknown-linkId nope"])
        XCTAssertEqual(kinds(try check([.init(.boolean(true), kind: "pain"), .init(.integer(11), kind: "level")])), ["max-value level"])
        XCTAssertEqual(kinds(try check([.init(.boolean(true), kind: "pain"), .init(.integer(-1), kind: "level")])), ["min-value level"])
        XCTAssertEqual(kinds(try check([.init(.boolean(false), kind: "pain"), .init(.boolean(false), kind: "pain")])), ["repeats pain"])
        XCTAssertEqual(kinds(try check([.init(.boolean(true), kind: "pain"), .init(.integer(1), kind: "level"), .init(.text("left shoulder"), kind: "where")])),
                       ["max-length where"])
        XCTAssertEqual(kinds(try check([.init(.boolean(false), kind: "pain"), .init(.double(1), kind: "meds[0]/dose")])), ["missing-required med"])
        XCTAssertEqual(kinds(try check([.init(.boolean(false), kind: "pain"), .init(.text("hi"), kind: "intro")])), ["not-a-question intro"])
        XCTAssertEqual(kinds(try check([.init(.boolean(false), kind: "pain"), .init(.text("a"), kind: "when[1]/med")])), ["malformed-kind med"])
        XCTAssertEqual(kinds(try check([.init(.boolean(false), kind: "pain"), .init(.text("a"), kind: nil)])), ["malformed-kind "])
    }

    func testAskedUnknownSatisfiesARequiredItem() throws {
        let result = try check([.init(.text("asked-unknown"), kind: "pain")])
        XCTAssertEqual(kinds(result), [])
        XCTAssertEqual(result.answers.answers[.init(linkId: "pain")], [.askedUnknown])
    }

    func testValueIndexNamesTheOffendingValue() throws {
        let result = try check([.init(.boolean(false), kind: "pain"), .init(.text("great"), kind: "mood")])
        XCTAssertEqual(result.problems.first?.valueIndex, 1)
    }

    func testSDCLinkIdsWithSlashesAreOneLinkId() throws {
        let questionnaire = try Questionnaire(FHIRJSON.read(Data(contentsOf: SurveyFixtures.sdcPHQ9)))
        let result = SurveyAnswerChecker(questionnaire).check([.init(.text("Several-days"), kind: "H1/T1/Q1")])
        XCTAssertEqual(result.problems, [])
    }
}
