import FHIRCore
import FHIRPath
import Foundation

/// Answers the items CareGate calculates, in Questionnaire order (SDC: depth first, so a later
/// expression sees earlier results):
///
/// - an SDC `calculatedExpression` (FHIRPath), evaluated on the response built so far, with SDC's
///   `%resource` (the response), `%questionnaire`, `%qitem` and `%context` (the response items of the
///   item, else the response), and the engine's `weight()`, `ordinal()` and `answers()`;
/// - else an item coded as a total score: the sum of the weights (`itemWeight`/`ordinalValue`) of the
///   answers in the item's group (the whole Questionnaire for a top-level item).
///
/// A calculated value replaces one the app sent. Items inside repeating groups are not calculated.
struct SurveyScores {
    let questionnaire: Questionnaire
    let builder: SurveyResponseBuilder
    let context: SurveyResponseContext

    func complete(_ answers: SurveyAnswers, notes: inout [String]) -> (SurveyAnswers, [String: AnswerValue]) {
        var current = answers
        var calculated: [String: AnswerValue] = [:]
        for item in questionnaire.allItems where item.isCalculatedByCareGate && item.isQuestion {
            let enablement = SurveyEnablement(questionnaire: questionnaire, answers: current)
            guard enablement.repeatingGroupsAbove(item.linkId).isEmpty else {
                notes.append("\(item.linkId): not calculated, as it sits in a repeating group")
                continue
            }
            let key = SurveyAnswers.Key(linkId: item.linkId)
            guard enablement.isEnabled(key) else { continue }
            let value: AnswerValue?
            if let expression = item.calculatedExpression {
                value = evaluate(expression, for: item, answers: current, notes: &notes)
            } else {
                value = totalScore(item, answers: current, notes: &notes)
            }
            guard let value else { continue }
            current.answers[key] = [.value(value)]
            calculated[item.linkId] = value
        }
        return (current, calculated)
    }

    private func evaluate(_ text: String, for item: QuestionnaireItem, answers: SurveyAnswers, notes: inout [String]) -> AnswerValue? {
        let draft = builder.responseElement(answers, context: context)
        var focus: [FHIRPathValue] = []
        Self.responseItems(linkId: item.linkId, in: draft, into: &focus)
        if focus.isEmpty { focus = [.element(FHIRPathElementNode(resource: draft))] }
        let environment = FHIRPathEnvironment(variables: [
            "questionnaire": [.element(FHIRPathElementNode(resource: questionnaire.element))],
            "qitem": [.element(FHIRPathElementNode(element: item.element, typeName: "BackboneElement", context: "Questionnaire.item"))],
        ], now: context.authored)
        let results: [FHIRPathValue]
        do {
            results = try FHIRPathExpression(text).evaluate(context: focus, resource: draft, rootResource: draft, environment: environment)
        } catch {
            notes.append("\(item.linkId): the calculatedExpression failed: \(error)")
            return nil
        }
        guard results.count <= 1 else {
            notes.append("\(item.linkId): the calculatedExpression gave \(results.count) values, where one was expected")
            return nil
        }
        guard let result = results.first else { return nil }
        guard let value = Self.answer(result, for: item) else {
            notes.append("\(item.linkId): the calculatedExpression gave a \(result.typeName), which a \(item.type?.rawValue ?? "") item cannot take")
            return nil
        }
        return value
    }

    /// The response items with `linkId`, typed for FHIRPath.
    static func responseItems(linkId: String, in parent: Element, into output: inout [FHIRPathValue]) {
        for child in parent.children where child.name == "item" || child.name == "answer" {
            if child.name == "item", child.childValue("linkId") == linkId {
                output.append(.element(FHIRPathElementNode(element: child, typeName: "BackboneElement", context: "QuestionnaireResponse.item")))
            }
            responseItems(linkId: linkId, in: child, into: &output)
        }
    }

    /// A FHIRPath result as the answer of `item`'s type.
    static func answer(_ result: FHIRPathValue, for item: QuestionnaireItem) -> AnswerValue? {
        let number: Decimal? = switch result {
        case .integer(let value): Decimal(value)
        case .decimal(let value): value.value
        case .quantity(let value): value.value.value
        default: Decimal(string: result.description, locale: Locale(identifier: "en_US_POSIX")).flatMap { result.typeName == "decimal" || result.typeName == "integer" ? $0 : nil }
        }
        switch item.type {
        case .integer?:
            guard let number, abs(number) < 1_000_000_000_000 else { return nil }
            var whole = Decimal()
            var copy = number
            NSDecimalRound(&whole, &copy, 0, .plain)
            guard whole == number else { return nil }
            return .integer(NSDecimalNumber(decimal: whole).intValue)
        case .decimal?: return number.map(AnswerValue.decimal)
        case .quantity?: return number.map { .quantity(SurveyQuantity(value: $0)) }
        case .boolean?:
            if result.description == "true" { return .boolean(true) }
            if result.description == "false" { return .boolean(false) }
            return nil
        case .string?, .text?: return .string(result.description)
        case .date?: return result.typeName == "date" || result.typeName == "dateTime" ? .date(String(result.description.dropFirst().prefix(10))) : nil
        case .dateTime?: return result.typeName == "dateTime" ? .dateTime(String(result.description.dropFirst())) : nil
        default: return nil
        }
    }

    /// The sum of the answer weights in the item's group (or the whole Questionnaire).
    private func totalScore(_ item: QuestionnaireItem, answers: SurveyAnswers, notes: inout [String]) -> AnswerValue? {
        let scope = questionnaire.parent(of: item.linkId).map(\.descendants) ?? questionnaire.allItems
        var sum: Decimal = 0
        var weighed = 0
        for candidate in scope where candidate.linkId != item.linkId && candidate.isQuestion {
            for value in answers.values(SurveyAnswers.Key(linkId: candidate.linkId)) {
                if case .coding(let coding) = value, let weight = coding.weight {
                    sum += weight
                    weighed += 1
                }
            }
        }
        guard weighed > 0 else {
            notes.append("\(item.linkId): no answer carries a weight, so the total score is not calculated")
            return nil
        }
        return Self.answer(.decimal(FHIRPathDecimal(sum, scale: max(0, -sum.exponent))), for: item)
    }
}
