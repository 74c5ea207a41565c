import FHIRCore
import Foundation

/// Builds the R4 QuestionnaireResponse of a checked outcome (issue 44, item 4): items nested exactly as
/// the Questionnaire nests them (groups, each repetition of a repeating group, items under a question
/// placed under its answer), each answer typed by its item, items not enabled and display items left
/// out, "I don't know" as an item without answer carrying `data-absent-reason` `asked-unknown`. Items
/// CareGate calculates (``SurveyScores``) are answered, and items marked `observationExtract` give
/// Observations (``SurveyObservationExtractor``).
public struct SurveyResponseBuilder: Sendable {
    public let questionnaire: Questionnaire

    public init(_ questionnaire: Questionnaire) {
        self.questionnaire = questionnaire
    }

    /// Checks `values` and builds their response; refuses values that do not fit.
    public func build(checking result: SurveyCheckResult, context: SurveyResponseContext) throws(SurveyBuildError) -> SurveyResponse {
        guard result.isAccepted else { throw .notAccepted(result.problems) }
        return build(result.answers, context: context)
    }

    /// Builds the response of answers the checker accepted.
    public func build(_ answers: SurveyAnswers, context: SurveyResponseContext) -> SurveyResponse {
        var notes: [String] = []
        let scores = SurveyScores(questionnaire: questionnaire, builder: self, context: context)
        let (completed, calculated) = scores.complete(answers, notes: &notes)
        let disabled = ExpressionEnablement(questionnaire: questionnaire, builder: self, context: context).disabled(completed, notes: &notes)
        let response = responseElement(completed, context: context, disabledByExpression: disabled)
        let observations = SurveyObservationExtractor(questionnaire: questionnaire).observations(
            of: completed, enablement: SurveyEnablement(questionnaire: questionnaire, answers: completed, disabledByExpression: disabled),
            context: context, notes: &notes)
        return SurveyResponse(response: response, observations: observations, calculated: calculated, notes: notes)
    }

    /// The QuestionnaireResponse resource for `answers`.
    func responseElement(_ answers: SurveyAnswers, context: SurveyResponseContext, disabledByExpression: Set<String> = []) -> Element {
        var children: [Element] = []
        if let id = context.id { children.append(Element(name: "id", value: id)) }
        for reference in context.basedOn { children.append(referenceElement("basedOn", reference)) }
        for reference in context.partOf { children.append(referenceElement("partOf", reference)) }
        if let canonical = questionnaire.canonical { children.append(Element(name: "questionnaire", value: canonical)) }
        children.append(Element(name: "status", value: context.isAmendment ? "amended" : "completed"))
        children.append(referenceElement("subject", context.patient))
        children.append(Element(name: "authored", value: context.authoredText))
        children.append(referenceElement("author", context.patient))
        children.append(referenceElement("source", context.patient))
        let enablement = SurveyEnablement(questionnaire: questionnaire, answers: answers, disabledByExpression: disabledByExpression)
        children += items(questionnaire.items, context: [], answers: answers, enablement: enablement)
        return Element.resource("QuestionnaireResponse", children: children)
    }

    private func referenceElement(_ name: String, _ reference: String) -> Element {
        Element(name: name, children: [Element(name: "reference", value: reference)])
    }

    /// The response items for `items` in the repetitions `context` of the repeating groups above them.
    private func items(_ items: [QuestionnaireItem], context: [Int], answers: SurveyAnswers, enablement: SurveyEnablement) -> [Element] {
        var built: [Element] = []
        for item in items where !item.linkId.isEmpty && item.type != .display {
            var visiting: Set<String> = []
            guard enablement.isEnabled(linkId: item.linkId, context: context, visiting: &visiting) else { continue }
            switch item.type {
            case .group?:
                if item.repeats {
                    let subtree = Set(item.descendants.map(\.linkId))
                    let instances = Set(answers.answers.keys.filter {
                        subtree.contains($0.linkId) && $0.repetitions.count > context.count && $0.repetitions.starts(with: context)
                    }.map { $0.repetitions[context.count] }).sorted()
                    for instance in instances {
                        let children = self.items(item.items, context: context + [instance], answers: answers, enablement: enablement)
                        if !children.isEmpty { built.append(itemElement(item, answers: [], children: children)) }
                    }
                } else {
                    let children = self.items(item.items, context: context, answers: answers, enablement: enablement)
                    if !children.isEmpty { built.append(itemElement(item, answers: [], children: children)) }
                }
            default:
                let given = answers.answers[SurveyAnswers.Key(linkId: item.linkId, repetitions: context)] ?? []
                if given.contains(.askedUnknown) {
                    built.append(askedUnknownElement(item))
                    continue
                }
                let values = given.compactMap(\.value)
                guard !values.isEmpty else { continue }
                let nested = self.items(item.items, context: context, answers: answers, enablement: enablement)
                var answerElements = values.map { Element(name: "answer", children: [$0.element(prefix: "value")]) }
                // Items under a question go under its answer (R4: QuestionnaireResponse.item.answer.item);
                // for a repeating question, under its first answer.
                answerElements[0].children += nested
                built.append(itemElement(item, answers: answerElements, children: []))
            }
        }
        return built
    }

    private func itemElement(_ item: QuestionnaireItem, answers: [Element], children: [Element]) -> Element {
        var elements = [Element(name: "linkId", value: item.linkId)]
        if let text = item.text { elements.append(Element(name: "text", value: text)) }
        return Element(name: "item", children: elements + answers + children)
    }

    private func askedUnknownElement(_ item: QuestionnaireItem) -> Element {
        let reason = Element(name: "extension", children: [
            Element(name: "url", value: SurveyExtensionURL.dataAbsentReason), Element(name: "valueCode", value: "asked-unknown"),
        ])
        var element = itemElement(item, answers: [], children: [])
        element.children.insert(reason, at: 0)
        return element
    }
}
