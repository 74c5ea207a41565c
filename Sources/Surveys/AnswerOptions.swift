import FHIRCore
import Foundation

/// One `Questionnaire.item.answerOption`: a permitted answer, whether it starts selected, and its score.
public struct AnswerOption: Hashable, Sendable {
    public var value: AnswerValue
    public var initialSelected: Bool
    /// The option's score: the `itemWeight`/`ordinalValue` extension on the option, else on its Coding.
    public var weight: Decimal?

    public init(value: AnswerValue, initialSelected: Bool = false, weight: Decimal? = nil) {
        self.value = value
        self.initialSelected = initialSelected
        self.weight = weight
    }
}

/// A ValueSet an item's `answerValueSet` names, reduced to its concepts: from `expansion.contains`
/// (recursively) when expanded, else from `compose.include.concept`. A compose that needs a terminology
/// server (filters, whole systems, other value sets, excludes) is marked incomplete.
public struct SurveyValueSet: Hashable, Sendable {
    public var url: String?
    public var id: String?
    public var concepts: [SurveyCoding]
    /// Why the concept list is not the whole value set, when it is not.
    public var incompleteReason: String?

    public init(url: String? = nil, id: String? = nil, concepts: [SurveyCoding], incompleteReason: String? = nil) {
        self.url = url
        self.id = id
        self.concepts = concepts
        self.incompleteReason = incompleteReason
    }

    /// Reads a ValueSet resource element.
    public init(_ element: Element) {
        url = element.childValue("url")
        id = element.childValue("id")
        if let expansion = element.child(named: "expansion") {
            var collected: [SurveyCoding] = []
            func walk(_ parent: Element) {
                for contains in parent.children(named: "contains") {
                    if contains.childValue("code") != nil, contains.childValue("abstract") != "true" { collected.append(SurveyCoding(contains)) }
                    walk(contains)
                }
            }
            walk(expansion)
            concepts = collected
            incompleteReason = nil
            return
        }
        var collected: [SurveyCoding] = []
        var reasons: [String] = []
        if let compose = element.child(named: "compose") {
            for include in compose.children(named: "include") {
                let system = include.childValue("system")
                let concepts = include.children(named: "concept")
                if !include.children(named: "filter").isEmpty { reasons.append("an include with a filter") }
                if !include.children(named: "valueSet").isEmpty { reasons.append("an include of another value set") }
                if concepts.isEmpty, include.children(named: "filter").isEmpty, system != nil { reasons.append("an include of a whole code system") }
                collected += concepts.map { SurveyCoding($0, system: system) }
            }
            if !compose.children(named: "exclude").isEmpty { reasons.append("an exclude") }
        } else {
            reasons.append("neither an expansion nor a compose")
        }
        concepts = collected
        incompleteReason = reasons.isEmpty ? nil : "needs a terminology server (" + reasons.joined(separator: ", ") + ")"
    }

    /// The concept `coding` names, if it is listed.
    public func concept(matching coding: SurveyCoding) -> SurveyCoding? {
        concepts.first { $0.sameConcept(as: coding) }
    }
}

/// Where an item's permitted answers come from, once its `answerValueSet` is looked up.
public enum AnswerConstraint: Sendable {
    /// Any value of the item's type.
    case none
    /// The item's `answerOption`s.
    case options([AnswerOption])
    /// A ValueSet from the Questionnaire's `contained` or from the input.
    case valueSet(SurveyValueSet)
    /// A ValueSet that could not be read: the answers are not checked against it.
    case unresolved(canonical: String, reason: String)
}
