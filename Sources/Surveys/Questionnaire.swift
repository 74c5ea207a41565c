import FHIRCore
import Foundation

/// A FHIR R4 Questionnaire read into a typed model: its identity, its items (recursively) and the value
/// sets its items name, with a support report saying how CareGate handles each item.
///
/// ```swift
/// let questionnaire = try Questionnaire(element, valueSets: valueSetsFromTheInput)
/// for line in questionnaire.supportReport where line.support.level != .supported { print(line) }
/// let result = SurveyAnswerChecker(questionnaire).check(outcome.values)
/// ```
///
/// ## Topics
/// - ``init(_:valueSets:)`` reads a Questionnaire element (from JSON or XML, through FHIRCore's readers).
/// - ``item(linkId:)``, ``allItems``, ``parent(of:)`` find items.
/// - ``answerConstraint(for:)`` says where an item's permitted answers come from.
/// - ``extractsObservation(_:)`` and ``extractCategories(_:)`` resolve SDC's inherited extraction flags.
/// - ``supportReport`` lists every item's handling.
public struct Questionnaire: Sendable {
    public var id: String?
    public var url: String?
    public var version: String?
    public var status: String?
    public var title: String?
    public var items: [QuestionnaireItem]
    /// ValueSets by the references an `answerValueSet` may use: `#id` for contained ones, `url` and
    /// `url|version` for those given in the input (and contained ones with a url).
    public var valueSets: [String: SurveyValueSet]
    /// SDC `observationExtract` on the Questionnaire root.
    public var observationExtract: Bool?
    /// SDC `observation-extract-category` on the root.
    public var observationExtractCategories: [SurveyCoding]
    /// Notes on the Questionnaire as a whole (root extensions, libraries).
    public var rootSupport: ItemSupport
    /// The resource as read.
    public var element: Element

    /// `url|version`, `url`, or nil when the Questionnaire has no url.
    public var canonical: String? {
        guard let url else { return nil }
        return version.map { "\(url)|\($0)" } ?? url
    }

    /// Reads `element`, a Questionnaire resource; `valueSets` are ValueSet resources given beside it.
    /// Throws only when `element` is not a Questionnaire: everything else is reported in the support
    /// report.
    public init(_ element: Element, valueSets: [Element] = []) throws(SurveyError) {
        guard element.resourceType == "Questionnaire" else {
            throw SurveyError.notAQuestionnaire(element.resourceType ?? element.name)
        }
        self = QuestionnaireReader(valueSets: valueSets).read(element)
    }

    init(id: String?, url: String?, version: String?, status: String?, title: String?, items: [QuestionnaireItem],
         valueSets: [String: SurveyValueSet], observationExtract: Bool?, observationExtractCategories: [SurveyCoding],
         rootSupport: ItemSupport, element: Element) {
        self.id = id
        self.url = url
        self.version = version
        self.status = status
        self.title = title
        self.items = items
        self.valueSets = valueSets
        self.observationExtract = observationExtract
        self.observationExtractCategories = observationExtractCategories
        self.rootSupport = rootSupport
        self.element = element
    }

    /// Every item, depth first, in document order.
    public var allItems: [QuestionnaireItem] { items.flatMap { [$0] + $0.descendants } }

    /// The item with `linkId` (R4 requires linkIds unique within a Questionnaire; the first wins).
    public func item(linkId: String) -> QuestionnaireItem? {
        allItems.first { $0.linkId == linkId }
    }

    /// The items from the root down to the item with `linkId`, the item last; empty when there is none.
    public func ancestry(of linkId: String) -> [QuestionnaireItem] {
        func search(_ items: [QuestionnaireItem], _ trail: [QuestionnaireItem]) -> [QuestionnaireItem]? {
            for item in items {
                if item.linkId == linkId { return trail + [item] }
                if let found = search(item.items, trail + [item]) { return found }
            }
            return nil
        }
        return search(items, []) ?? []
    }

    /// The item that holds the item with `linkId`, nil for a top-level item.
    public func parent(of linkId: String) -> QuestionnaireItem? {
        let trail = ancestry(of: linkId)
        return trail.count >= 2 ? trail[trail.count - 2] : nil
    }

    /// Where the item's permitted answers come from.
    public func answerConstraint(for item: QuestionnaireItem) -> AnswerConstraint {
        if !item.answerOptions.isEmpty { return .options(item.answerOptions) }
        guard let canonical = item.answerValueSet else { return .none }
        if let valueSet = valueSets[canonical] {
            if let reason = valueSet.incompleteReason { return .unresolved(canonical: canonical, reason: reason) }
            return .valueSet(valueSet)
        }
        let reason = canonical.hasPrefix("#")
            ? "no contained ValueSet has the id \(canonical.dropFirst())"
            : "the ValueSet is neither contained nor in the input (CareGate uses no terminology server)"
        return .unresolved(canonical: canonical, reason: reason)
    }

    /// Whether SDC's observation-based extraction applies to the item: its own `observationExtract`,
    /// else its nearest ancestor's, else the root's.
    public func extractsObservation(_ item: QuestionnaireItem) -> Bool {
        for level in ancestry(of: item.linkId).reversed() {
            if let flag = level.observationExtract { return flag }
        }
        return observationExtract ?? false
    }

    /// The categories of Observations extracted from the item: the nearest `observation-extract-category`
    /// (item, ancestors, root); empty when none says one (the extractor then uses `survey`).
    public func extractCategories(_ item: QuestionnaireItem) -> [SurveyCoding] {
        for level in ancestry(of: item.linkId).reversed() where !level.observationExtractCategories.isEmpty {
            return level.observationExtractCategories
        }
        return observationExtractCategories
    }

    /// One line per item (and one for the root when it has notes), depth first.
    public var supportReport: [SupportReportLine] {
        var lines: [SupportReportLine] = []
        if !rootSupport.notes.isEmpty {
            lines.append(SupportReportLine(path: "Questionnaire", linkId: nil, support: rootSupport))
        }
        lines += allItems.map { SupportReportLine(path: $0.path, linkId: $0.linkId.isEmpty ? nil : $0.linkId, support: $0.support) }
        return lines
    }
}

/// What reading or using a Questionnaire can refuse.
public enum SurveyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The element is not a Questionnaire.
    case notAQuestionnaire(String)

    public var description: String {
        switch self {
        case .notAQuestionnaire(let type): "expected a Questionnaire, got \(type)"
        }
    }
}
