import FHIRCore
import FHIRValidation

/// One pass over a response's items beside the Questionnaire's, collecting issues (see
/// ``QuestionnaireResponseValidator``).
struct ResponseWalk {
    let questionnaire: Questionnaire
    let answers: SurveyAnswers
    let enablement: SurveyEnablement
    let checksRequired: Bool
    var issues: [ValidationIssue] = []
    /// Depth of items being walked inside an item already reported as not enabled: their own enablement
    /// and required items are not reported again, their linkIds, nesting and types still are.
    var disabledDepth = 0

    private mutating func issue(_ code: ValidationIssue.Code, _ linkId: String, _ message: String, at path: String,
                                severity: ValidationIssue.Severity = .error) {
        issues.append(ValidationIssue(severity: severity, code: code, diagnostics: "linkId \(linkId): \(message)", expression: path))
    }

    /// `elements` are the response items at `path` (`...item` without the index), `expected` the
    /// Questionnaire items that may stand there, `context` the repetitions of the repeating groups above.
    mutating func items(_ elements: [Element], expected: [QuestionnaireItem], path: String, context: [Int]) {
        var counts: [String: Int] = [:]
        var present: Set<String> = []
        for (index, element) in elements.enumerated() {
            let itemPath = "\(path).item[\(index)]"
            guard let linkId = element.childValue("linkId"), !linkId.isEmpty else {
                issue(.structure, "(none)", "the item has no linkId", at: itemPath)
                continue
            }
            guard let definition = expected.first(where: { $0.linkId == linkId }) else {
                if let elsewhere = questionnaire.item(linkId: linkId) {
                    let parent = questionnaire.parent(of: elsewhere.linkId).map { "under the item \($0.linkId)" } ?? "at the top level"
                    issue(.structure, linkId, "the Questionnaire has this item \(parent), not here", at: itemPath)
                } else {
                    issue(.structure, linkId, "the Questionnaire has no item with this linkId", at: itemPath)
                }
                continue
            }
            let occurrence = counts[linkId, default: 0]
            counts[linkId] = occurrence + 1
            if occurrence == 1, !(definition.type == .group && definition.repeats) {
                let why = definition.type == .group ? "the group does not repeat" : "a question's answers go in one item (qrs-2)"
                issue(.structure, linkId, "the item appears more than once: \(why)", at: itemPath)
            }
            var inner = context
            if definition.type == .group, definition.repeats { inner.append(occurrence) }
            var visiting: Set<String> = []
            let hasContent = !element.children(named: "answer").isEmpty || !element.children(named: "item").isEmpty
            present.insert(linkId)
            if disabledDepth == 0, hasContent,
               !enablement.isEnabled(linkId: linkId, context: definition.type == .group ? inner : context, visiting: &visiting) {
                issue(.invalid, linkId, "the item is answered, but it is not enabled by the answers it depends on (enableWhen)", at: itemPath)
                disabledDepth += 1
                item(element, definition: definition, path: itemPath, context: context, inner: inner)
                disabledDepth -= 1
                continue
            }
            item(element, definition: definition, path: itemPath, context: context, inner: inner)
        }
        if checksRequired, disabledDepth == 0 { required(expected, present: present, path: path, context: context) }
    }

    private mutating func item(_ element: Element, definition: QuestionnaireItem, path: String, context: [Int], inner: [Int]) {
        let answerElements = element.children(named: "answer")
        let nested = element.children(named: "item")
        guard definition.isQuestion else {
            if !answerElements.isEmpty {
                issue(.structure, definition.linkId, "a \(definition.type?.rawValue ?? "") item takes no answer", at: "\(path).answer[0]")
            }
            items(nested, expected: definition.items, path: path, context: inner)
            return
        }
        for (index, child) in nested.enumerated() {
            let childLinkId = child.childValue("linkId") ?? ""
            if definition.items.contains(where: { $0.linkId == childLinkId }) {
                issue(.structure, childLinkId, "an item under the question \(definition.linkId) goes under its answer (answer.item), not under the item",
                      at: "\(path).item[\(index)]")
            }
        }
        // Walked for what they hold (unknown linkIds, types); their place is reported above.
        items(nested, expected: definition.items, path: path, context: context)
        if answerElements.count > 1, !definition.repeats {
            issue(.structure, definition.linkId, "the item does not repeat, and has \(answerElements.count) answers", at: "\(path).answer[1]")
        }
        for (index, answer) in answerElements.enumerated() {
            let answerPath = "\(path).answer[\(index)]"
            if let valueElement = answer.children.first(where: { $0.name.hasPrefix("value") && $0.name.count > 5 }) {
                checkValue(valueElement, definition: definition, path: "\(answerPath).\(valueElement.name)")
            }
            items(answer.children(named: "item"), expected: definition.items, path: answerPath, context: context)
        }
    }

    private mutating func checkValue(_ element: Element, definition: QuestionnaireItem, path: String) {
        let suffix = String(element.name.dropFirst(5))
        let linkId = definition.linkId
        let type = definition.type?.rawValue ?? ""
        var allowed = definition.type?.answerTypeSuffixes ?? []
        let constraint = questionnaire.answerConstraint(for: definition)
        if definition.type == .choice || definition.type == .openChoice {
            if case .options(let options) = constraint {
                allowed = Set(options.map(\.value.typeSuffix))
            } else {
                allowed = ["Coding"]
            }
            if definition.type == .openChoice { allowed.insert("String") }
        }
        guard allowed.contains(suffix), let value = AnswerValue.read(element, suffix: suffix) else {
            issue(.value, linkId, "a \(type) item is answered with value\(suffix); it takes " + allowed.sorted().map { "value\($0)" }.joined(separator: " or "), at: path)
            return
        }
        switch constraint {
        case .options(let options):
            let isFreeText = definition.type == .openChoice && suffix == "String"
            if !isFreeText, !options.contains(where: { $0.value.matches(value) }) {
                issue(.codeInvalid, linkId, "the answer \(value.typeSuffix == "Coding" ? value.description + " " : "")is not among the item's answerOptions", at: path)
            }
        case .valueSet(let valueSet):
            if case .coding(let coding) = value, valueSet.concept(matching: coding) == nil {
                issue(.codeInvalid, linkId, "the answer \(coding.token) is not in the ValueSet \(definition.answerValueSet ?? "")", at: path)
            }
        case .unresolved, .none:
            break
        }
        if let maxLength = definition.maxLength, value.description.count > maxLength, [.string, .text, .url, .openChoice, .integer, .decimal].contains(definition.type) {
            issue(.value, linkId, "the answer is longer than the item's maxLength \(maxLength)", at: path)
        }
        if let minimum = definition.minValue, value.compare(to: minimum) == .orderedAscending {
            issue(.value, linkId, "the answer is below the item's minValue \(minimum)", at: path)
        }
        if let maximum = definition.maxValue, value.compare(to: maximum) == .orderedDescending {
            issue(.value, linkId, "the answer is above the item's maxValue \(maximum)", at: path)
        }
    }

    /// Required items of `expected` that are enabled and absent, where their parent is present.
    private mutating func required(_ expected: [QuestionnaireItem], present: Set<String>, path: String, context: [Int]) {
        for definition in expected where definition.required && !present.contains(definition.linkId) && definition.type != .display {
            var visiting: Set<String> = []
            guard enablement.isEnabled(linkId: definition.linkId, context: context, visiting: &visiting) else { continue }
            issue(.required, definition.linkId, "the item is required and enabled, and the response has no answer to it", at: path)
        }
    }
}
