import FHIRCore
import Foundation

/// The functions SDC adds to FHIRPath for Questionnaires
/// (https://build.fhir.org/ig/HL7/sdc/expressions.html#fhirpath-supplements):
///
/// - `weight()` (and its earlier name `ordinal()`): the score of each Coding (or code, or response
///   answer) in the input: an `itemWeight`/`ordinalValue` extension on the element itself, else the
///   one on the matching `answerOption` of its Questionnaire item, else on the matching concept of the
///   item's contained ValueSet (expansion or compose). The Questionnaire is `%questionnaire`; the item
///   is found by the response item whose answer holds the Coding (`%resource`), else among all items.
///   Values with no weight give nothing; a Coding whose weight cannot be looked up because there is no
///   `%questionnaire`, or that two items weigh differently, fails the expression, as SDC says it should.
/// - `answers()`: every `answer` in the items of a QuestionnaireResponse (or of response items) given,
///   nested ones included, as SDC's PHQ-9 example uses it (`%resource.answers().value.ordinal().sum()`).
///
/// `%questionnaire`, `%qitem` and `%resource` as SDC defines them are set by the caller: the first two
/// as environment variables, `%resource` as the evaluation's resource (the response).
extension FHIRPathEvaluator {
    static let weightExtensionURLs = ["http://hl7.org/fhir/StructureDefinition/itemWeight", "http://hl7.org/fhir/StructureDefinition/ordinalValue"]

    func sdc(_ function: FHIRPathFunction, node: FHIRPathNode, input: [FHIRPathValue]) throws -> [FHIRPathValue] {
        switch function {
        case .answers:
            var output: [FHIRPathValue] = []
            var pending = input.compactMap { value -> FHIRPathElementNode? in if case .element(let node) = value { node } else { nil } }
            var steps = 0
            while !pending.isEmpty {
                let current = pending.removeFirst()
                steps += 1
                if steps > 1_000_000 { throw fail("answers() visited too many items", node) }
                var items: [FHIRPathValue] = []
                navigator.children(of: current, named: "item", into: &items)
                for case .element(let item) in items {
                    var answers: [FHIRPathValue] = []
                    navigator.children(of: item, named: "answer", into: &answers)
                    output += answers
                    pending.append(item)
                    for case .element(let answer) in answers { pending.append(answer) }
                }
            }
            return output
        default:
            var output: [FHIRPathValue] = []
            for item in input {
                if let weight = try weight(of: item, node: node) {
                    output.append(.decimal(FHIRPathDecimal(weight, scale: max(0, -weight.exponent))))
                }
            }
            return output
        }
    }

    /// The weight of one input item, nil when it has none.
    private func weight(of item: FHIRPathValue, node: FHIRPathNode) throws -> Decimal? {
        var coding: Element
        switch item {
        case .element(let elementNode):
            var element = elementNode.element
            if let own = Self.weightExtension(of: element) { return own }
            // A response answer: its value[x] (a Coding, or a code).
            if let value = element.children.first(where: { $0.name.hasPrefix("value") && $0.name.count > 5 }), element.child(named: "code") == nil {
                if let own = Self.weightExtension(of: value) { return own }
                element = value
            }
            if element.child(named: "code") != nil {
                coding = element
            } else if let code = element.value, element.children.allSatisfy({ $0.name != "system" }) {
                coding = Element(name: "valueCoding", children: [Element(name: "code", value: code)])
            } else {
                return nil
            }
        case .string(let code):
            coding = Element(name: "valueCoding", children: [Element(name: "code", value: code)])
        default:
            return nil
        }
        guard case .element(let questionnaireNode)? = environment.variables["questionnaire"]?.first else {
            throw fail("weight() needs %questionnaire to look up the weight of a code", node)
        }
        let questionnaire = questionnaireNode.element
        var linkIds = Set<String>()
        if let response = resource, response.resourceType == "QuestionnaireResponse" {
            Self.collectLinkIds(answering: coding, in: response, into: &linkIds)
        }
        var weights = Set<Decimal>()
        Self.collectWeights(of: coding, items: questionnaire.children(named: "item"), linkIds: linkIds, questionnaire: questionnaire, into: &weights)
        guard weights.count <= 1 else {
            throw fail("weight(): the code \(coding.childValue("code") ?? "") has different weights in different items", node)
        }
        return weights.first
    }

    static func weightExtension(of element: Element) -> Decimal? {
        for url in weightExtensionURLs {
            if let ext = element.children.first(where: { $0.name == "extension" && $0.childValue("url") == url }),
               let text = ext.children.first(where: { $0.name.hasPrefix("value") })?.value,
               let number = FHIRPathDecimal(text) {
                return number.value
            }
        }
        return nil
    }

    /// Whether two Codings name one concept: equal codes, and equal systems where both say one.
    static func sameConcept(_ left: Element, _ right: Element) -> Bool {
        guard let code = left.childValue("code"), code == right.childValue("code") else { return false }
        if let system = left.childValue("system"), let other = right.childValue("system") { return system == other }
        return true
    }

    /// The linkIds of the response items with an answer whose Coding is `coding`.
    private static func collectLinkIds(answering coding: Element, in parent: Element, into linkIds: inout Set<String>) {
        for item in parent.children where item.name == "item" {
            for answer in item.children where answer.name == "answer" {
                if let value = answer.child(named: "valueCoding"), sameConcept(value, coding), let linkId = item.childValue("linkId") {
                    linkIds.insert(linkId)
                }
                collectLinkIds(answering: coding, in: answer, into: &linkIds)
            }
            collectLinkIds(answering: coding, in: item, into: &linkIds)
        }
    }

    /// The weights Questionnaire items give `coding`: only the items in `linkIds` when there are any.
    private static func collectWeights(of coding: Element, items: [Element], linkIds: Set<String>, questionnaire: Element, into weights: inout Set<Decimal>) {
        for item in items {
            if linkIds.isEmpty || linkIds.contains(item.childValue("linkId") ?? "") {
                if let weight = itemWeight(of: coding, in: item, questionnaire: questionnaire) { weights.insert(weight) }
            }
            collectWeights(of: coding, items: item.children(named: "item"), linkIds: linkIds, questionnaire: questionnaire, into: &weights)
        }
    }

    /// The weight `item` gives `coding`: its answerOption's, else its contained ValueSet concept's.
    private static func itemWeight(of coding: Element, in item: Element, questionnaire: Element) -> Decimal? {
        for option in item.children(named: "answerOption") {
            guard let value = option.child(named: "valueCoding"), sameConcept(value, coding) else { continue }
            return weightExtension(of: option) ?? weightExtension(of: value)
        }
        guard let reference = item.childValue("answerValueSet") else { return nil }
        let valueSet = questionnaire.children(named: "contained").first { contained in
            contained.resourceType == "ValueSet"
                && (reference == "#" + (contained.childValue("id") ?? "\u{0}") || reference == contained.childValue("url"))
        }
        guard let valueSet else { return nil }
        if let expansion = valueSet.child(named: "expansion") {
            var stack = expansion.children(named: "contains")
            while let contains = stack.popLast() {
                if sameConcept(contains, coding) { return weightExtension(of: contains) }
                stack += contains.children(named: "contains")
            }
        }
        for include in valueSet.child(named: "compose")?.children(named: "include") ?? [] {
            for concept in include.children(named: "concept") {
                var withSystem = concept
                if let system = include.childValue("system") { withSystem.children.append(Element(name: "system", value: system)) }
                if sameConcept(withSystem, coding) { return weightExtension(of: concept) }
            }
        }
        return nil
    }
}
