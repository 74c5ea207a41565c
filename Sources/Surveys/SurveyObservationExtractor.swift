import FHIRCore
import Foundation

/// SDC's observation-based extraction (https://build.fhir.org/ig/HL7/sdc/extraction.html#observation-based-extraction):
/// one Observation per answer of each enabled question marked `observationExtract` (on the item, an
/// ancestor or the root) that has a code: `status` final, `code` all the item's codes, `value[x]` the
/// answer, `subject`, `effectiveDateTime` and `issued` = `authored`, `performer` = the author,
/// `derivedFrom` the response, `basedOn`/`partOf` copied, `category` from `observation-extract-category`,
/// else `survey`.
struct SurveyObservationExtractor {
    let questionnaire: Questionnaire

    static let surveyCategory = SurveyCoding(
        system: "http://terminology.hl7.org/CodeSystem/observation-category", code: "survey", display: "Survey")

    func observations(of answers: SurveyAnswers, enablement: SurveyEnablement, context: SurveyResponseContext, notes: inout [String]) -> [Element] {
        var observations: [Element] = []
        for item in questionnaire.allItems where item.isQuestion && questionnaire.extractsObservation(item) && !item.code.isEmpty {
            let keys = answers.answers.keys.filter { $0.linkId == item.linkId }.sorted { $0.repetitions.lexicographicallyPrecedes($1.repetitions) }
            for key in keys where enablement.isEnabled(key) {
                for value in answers.values(key) {
                    guard let valueElement = Self.observationValue(value) else {
                        notes.append("\(item.linkId): a \(value.typeSuffix) answer has no Observation value type, so none is extracted")
                        continue
                    }
                    observations.append(observation(item, value: valueElement, context: context))
                }
            }
        }
        return observations
    }

    private func observation(_ item: QuestionnaireItem, value: Element, context: SurveyResponseContext) -> Element {
        func reference(_ name: String, _ text: String) -> Element { Element(name: name, children: [Element(name: "reference", value: text)]) }
        var children: [Element] = []
        children += context.basedOn.map { reference("basedOn", $0) }
        children += context.partOf.map { reference("partOf", $0) }
        children.append(Element(name: "status", value: "final"))
        let categories = questionnaire.extractCategories(item)
        for category in categories.isEmpty ? [Self.surveyCategory] : categories {
            children.append(Element(name: "category", children: [category.element(named: "coding")]))
        }
        children.append(Element(name: "code", children: item.code.map { $0.element(named: "coding") }))
        children.append(reference("subject", context.patient))
        children.append(Element(name: "effectiveDateTime", value: context.authoredText))
        children.append(Element(name: "issued", value: context.authoredText))
        children.append(reference("performer", context.patient))
        children.append(value)
        if let response = context.responseReference { children.append(reference("derivedFrom", response)) }
        return Element.resource("Observation", children: children)
    }

    /// The Observation `value[x]` of an answer (Observation has no decimal, date, uri or Coding value).
    static func observationValue(_ value: AnswerValue) -> Element? {
        switch value {
        case .boolean, .integer, .string, .time, .dateTime, .quantity: return value.element(prefix: "value")
        case .decimal(let number): return AnswerValue.quantity(SurveyQuantity(value: number)).element(prefix: "value")
        case .date(let text): return Element(name: "valueDateTime", value: text)
        case .uri(let text): return Element(name: "valueString", value: text)
        case .coding(let coding): return Element(name: "valueCodeableConcept", children: [coding.element(named: "coding")])
        case .reference, .attachment: return nil
        }
    }
}
