import FHIRCore
import FHIRPath

/// SDC's `enableWhenExpression`: the items whose FHIRPath expression is not true on the response the
/// answers make, evaluated with SDC's variables as calculated expressions are (``SurveyScores``). An
/// expression that fails, or an item in a repeating group, leaves the item enabled, with a note.
struct ExpressionEnablement {
    let questionnaire: Questionnaire
    let builder: SurveyResponseBuilder
    let context: SurveyResponseContext

    func disabled(_ answers: SurveyAnswers, notes: inout [String]) -> Set<String> {
        let items = questionnaire.allItems.filter { $0.enableWhenExpression != nil }
        guard !items.isEmpty else { return [] }
        let draft = builder.responseElement(answers, context: context)
        let probe = SurveyEnablement(questionnaire: questionnaire, answers: answers)
        var disabled = Set<String>()
        for item in items {
            guard let text = item.enableWhenExpression else { continue }
            guard probe.repeatingGroupsAbove(item.linkId).isEmpty else {
                notes.append("\(item.linkId): enableWhenExpression not evaluated in a repeating group; the item counts as enabled")
                continue
            }
            var focus: [FHIRPathValue] = []
            // SDC: %context is the item's response items; an item not (yet) in the response has none, so
            // its parent's stand in, else the response.
            SurveyScores.responseItems(linkId: item.linkId, in: draft, into: &focus)
            if focus.isEmpty, let parent = questionnaire.parent(of: item.linkId) { SurveyScores.responseItems(linkId: parent.linkId, in: draft, into: &focus) }
            if focus.isEmpty { focus = [.element(FHIRPathElementNode(resource: draft))] }
            let environment = FHIRPathEnvironment(variables: [
                "questionnaire": [.element(FHIRPathElementNode(resource: questionnaire.element))],
                "qitem": [.element(FHIRPathElementNode(element: item.element, typeName: "BackboneElement", context: "Questionnaire.item"))],
            ], now: context.authored)
            do {
                let result = try FHIRPathExpression(text).evaluate(context: focus, resource: draft, rootResource: draft, environment: environment)
                if result.count != 1 || result.first?.description != "true" { disabled.insert(item.linkId) }
            } catch {
                notes.append("\(item.linkId): enableWhenExpression failed (\(error)); the item counts as enabled")
            }
        }
        return disabled
    }
}
