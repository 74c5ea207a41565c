import FHIRCore
import FHIRValidation

/// Checks a QuestionnaireResponse against its Questionnaire (issue 44, item 6), by R4's rules for the
/// two resources: every item's linkId is one the Questionnaire has, at the place it has it (a group's
/// items under the group, a question's under its answers: qrs-1), a question's answers in one item
/// (qrs-2) and several only when it repeats, each answer of its item's type and among its options or
/// ValueSet (when given), `maxLength`, `minValue`/`maxValue`, no answer to an item that is not enabled
/// (`enableWhen` with every operator, `enableBehavior`), and, in a completed or amended response, every
/// required item that is enabled where its parent is present. Each problem is a ``ValidationIssue`` at
/// its FHIRPath-style location, naming the linkId.
public struct QuestionnaireResponseValidator: Sendable {
    public let catalog: QuestionnaireCatalog

    public init(catalog: QuestionnaireCatalog) {
        self.catalog = catalog
    }

    /// The issues of `response` (a QuestionnaireResponse at `path`) against the Questionnaire it names,
    /// or `fallback` when it names none. `nil` when there is no Questionnaire to check against: the
    /// caller decides whether that is worth saying.
    public func validate(_ response: Element, path: String = "QuestionnaireResponse", fallback: String? = nil) -> [ValidationIssue]? {
        guard let canonical = response.childValue("questionnaire") ?? fallback, let questionnaire = catalog.find(canonical) else { return nil }
        return validate(response, against: questionnaire, path: path)
    }

    /// The issues of `response` against `questionnaire`.
    public func validate(_ response: Element, against questionnaire: Questionnaire, path: String = "QuestionnaireResponse") -> [ValidationIssue] {
        let answers = ResponseAnswers.read(response, questionnaire: questionnaire)
        var walk = ResponseWalk(questionnaire: questionnaire, answers: answers,
                                enablement: SurveyEnablement(questionnaire: questionnaire, answers: answers),
                                checksRequired: ["completed", "amended"].contains(response.childValue("status") ?? ""))
        walk.items(response.children(named: "item"), expected: questionnaire.items, path: path, context: [])
        return walk.issues
    }
}

/// The answers of a response, keyed as the checker keys an outcome's (repetitions of repeating groups
/// counted in the order the response gives them), for evaluating enableWhen.
enum ResponseAnswers {
    static func read(_ response: Element, questionnaire: Questionnaire) -> SurveyAnswers {
        var answers = SurveyAnswers()
        func walk(_ items: [Element], context: [Int]) {
            var seen: [String: Int] = [:]
            for item in items {
                guard let linkId = item.childValue("linkId"), let definition = questionnaire.item(linkId: linkId) else { continue }
                var inner = context
                if definition.type == .group, definition.repeats {
                    inner.append(seen[linkId, default: 0])
                    seen[linkId, default: 0] += 1
                }
                let key = SurveyAnswers.Key(linkId: linkId, repetitions: context)
                for answer in item.children(named: "answer") {
                    if let value = AnswerValue.read(from: answer, prefix: "value") { answers.answers[key, default: []].append(.value(value)) }
                    walk(answer.children(named: "item"), context: inner)
                }
                walk(item.children(named: "item"), context: inner)
            }
        }
        walk(response.children(named: "item"), context: [])
        return answers
    }
}
