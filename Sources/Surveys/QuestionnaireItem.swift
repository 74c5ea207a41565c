import FHIRCore
import Foundation

/// One `Questionnaire.item`, read into a typed model with its children, and how CareGate handles it.
public struct QuestionnaireItem: Sendable {
    /// The item's `linkId`; empty when the source had none (reported as not supported).
    public var linkId: String
    /// The item's type; nil when missing or not an R4 item type (reported).
    public var type: QuestionnaireItemType?
    /// The type as written, for messages about an unknown type.
    public var typeText: String?
    public var text: String?
    public var prefix: String?
    public var code: [SurveyCoding]
    public var required: Bool
    public var repeats: Bool
    public var readOnly: Bool
    public var maxLength: Int?
    public var initial: [AnswerValue]
    public var answerOptions: [AnswerOption]
    /// The `answerValueSet` canonical as written (`#id` for a contained one).
    public var answerValueSet: String?
    public var enableWhen: [EnableWhen]
    /// `enableBehavior`; R4 requires it with more than one condition (que-12), `all` is assumed otherwise.
    public var enableBehavior: EnableBehavior?
    /// SDC/R4 `minValue` and `maxValue`.
    public var minValue: AnswerValue?
    public var maxValue: AnswerValue?
    /// SDC `calculatedExpression` (FHIRPath text) when its language is FHIRPath.
    public var calculatedExpression: String?
    /// SDC `enableWhenExpression` (FHIRPath text).
    public var enableWhenExpression: String?
    /// SDC `observationExtract` on this item itself (inherited values are resolved by
    /// ``Questionnaire/extractsObservation(_:)``).
    public var observationExtract: Bool?
    /// SDC `observation-extract-category` on this item.
    public var observationExtractCategories: [SurveyCoding]
    /// `questionnaire-itemControl` codes, reported only (a rendering hint for the app).
    public var itemControl: [String]
    public var items: [QuestionnaireItem]
    /// FHIRPath-style location in the Questionnaire (`Questionnaire.item[0].item[2]`).
    public var path: String
    /// The item's element as read, with every extension (what the app receives).
    public var element: Element
    /// How CareGate handles this item.
    public var support: ItemSupport

    /// True when the item takes answers (not a group or display item).
    public var isQuestion: Bool { type?.takesAnswers ?? false }

    /// Every item below this one, depth first.
    public var descendants: [QuestionnaireItem] { items.flatMap { [$0] + $0.descendants } }

    /// True when the item is coded as a total score: a numeric item whose code names a total score
    /// (a display containing "total score", as LOINC's names for such codes do).
    public var isCodedTotalScore: Bool {
        guard type == .integer || type == .decimal || type == .quantity else { return false }
        return code.contains { ($0.display ?? "").range(of: "total score", options: .caseInsensitive) != nil }
            || (text ?? "").range(of: "total score", options: .caseInsensitive) != nil && !code.isEmpty
    }
}

extension QuestionnaireItem {
    /// True when CareGate answers the item itself when it builds the response: a FHIRPath
    /// `calculatedExpression`, or a total score it can sum from weights. An app need not send it.
    public var isCalculatedByCareGate: Bool {
        calculatedExpression != nil || support.notes.contains { $0.feature == "total score" && $0.level == .supported }
    }
}
