import FHIRCore
import FHIRPath
import Foundation

/// Reads a Questionnaire element into ``Questionnaire``, noting how each item is handled. Built from
/// R4's Questionnaire definition and SDC's extensions; nothing it does not understand is dropped
/// without a note.
struct QuestionnaireReader {
    /// ValueSet resources given in the input beside the Questionnaire.
    let valueSets: [Element]

    /// Extensions whose meaning the model reads on an item.
    static let itemExtensionsRead: Set<String> = [
        SurveyExtensionURL.minValue, SurveyExtensionURL.maxValue, SurveyExtensionURL.calculatedExpression,
        SurveyExtensionURL.enableWhenExpression, SurveyExtensionURL.observationExtract,
        SurveyExtensionURL.observationExtractCategory, SurveyExtensionURL.itemControl, SurveyExtensionURL.cqfExpression,
    ]

    func read(_ element: Element) -> Questionnaire {
        var sets: [String: SurveyValueSet] = [:]
        for resource in valueSets where resource.resourceType == "ValueSet" {
            register(SurveyValueSet(resource), contained: false, into: &sets)
        }
        for resource in element.children(named: "contained") where resource.resourceType == "ValueSet" {
            register(SurveyValueSet(resource), contained: true, into: &sets)
        }
        var rootSupport = ItemSupport()
        for extensionElement in element.children(named: "extension") {
            guard let url = extensionElement.childValue("url"), url != SurveyExtensionURL.observationExtract,
                  url != SurveyExtensionURL.observationExtractCategory else { continue }
            rootSupport.add(url, .partly, "not interpreted by CareGate; kept in the Questionnaire the app receives")
        }
        for modifier in element.children(named: "modifierExtension") {
            rootSupport.add(modifier.childValue("url") ?? "modifierExtension", .notSupported, "a modifier extension CareGate does not understand")
        }
        var questionnaire = Questionnaire(
            id: element.childValue("id"), url: element.childValue("url"), version: element.childValue("version"),
            status: element.childValue("status"), title: element.childValue("title"), items: [], valueSets: sets,
            observationExtract: element.extension(SurveyExtensionURL.observationExtract)?.choiceValue?.value.map { $0 == "true" },
            observationExtractCategories: categories(of: element), rootSupport: rootSupport, element: element)
        let items = element.children(named: "item").enumerated().map { index, child in
            readItem(child, path: "Questionnaire.item[\(index)]")
        }
        questionnaire.items = items
        questionnaire.items = items.map { annotate($0, in: questionnaire) }
        return questionnaire
    }

    private func register(_ valueSet: SurveyValueSet, contained: Bool, into sets: inout [String: SurveyValueSet]) {
        if contained, let id = valueSet.id { sets["#" + id] = valueSet }
        if let url = valueSet.url {
            sets[url] = sets[url] ?? valueSet
        }
    }

    private func categories(of element: Element) -> [SurveyCoding] {
        element.extensions(SurveyExtensionURL.observationExtractCategory).flatMap { ext in
            ext.child(named: "valueCodeableConcept")?.children(named: "coding").map { SurveyCoding($0) } ?? []
        }
    }

    /// The item's own content; support notes that need the whole Questionnaire come in ``annotate``.
    private func readItem(_ element: Element, path: String) -> QuestionnaireItem {
        var support = ItemSupport()
        let linkId = element.childValue("linkId") ?? ""
        if linkId.isEmpty { support.add("linkId", .notSupported, "the item has no linkId (R4 requires one): it cannot be answered or checked") }
        let typeText = element.childValue("type")
        let type = typeText.flatMap(QuestionnaireItemType.init(rawValue:))
        let options = element.children(named: "answerOption").map { option -> AnswerOption in
            let value = AnswerValue.read(from: option, prefix: "value")
            var weight = option.weightExtension
            if weight == nil, let coding = option.child(named: "valueCoding") { weight = coding.weightExtension }
            if value == nil { support.add("answerOption", .notSupported, "an option without a value of a permitted type") }
            return AnswerOption(value: value ?? .string(""), initialSelected: option.childValue("initialSelected") == "true", weight: weight)
        }
        var calculated: String?
        if let expression = element.extension(SurveyExtensionURL.calculatedExpression)?.child(named: "valueExpression") {
            calculated = fhirPath(expression, feature: "calculatedExpression", support: &support)
        }
        var enableExpression: String?
        if let expression = element.extension(SurveyExtensionURL.enableWhenExpression)?.child(named: "valueExpression") {
            enableExpression = fhirPath(expression, feature: "enableWhenExpression", support: &support)
        }
        for cqf in element.extensions(SurveyExtensionURL.cqfExpression) {
            let language = cqf.child(named: "valueExpression")?.childValue("language") ?? "no language"
            support.add("cqf-expression", .notSupported,
                        "an expression in \(language) (\(cqf.child(named: "valueExpression")?.childValue("expression") ?? "")) with no SDC role; CareGate evaluates FHIRPath calculatedExpression and enableWhenExpression only")
        }
        for extensionElement in element.children(named: "extension") {
            guard let url = extensionElement.childValue("url"), !Self.itemExtensionsRead.contains(url) else { continue }
            support.add(url, .partly, "not interpreted by CareGate; kept in the Questionnaire the app receives")
        }
        for modifier in element.children(named: "modifierExtension") {
            support.add(modifier.childValue("url") ?? "modifierExtension", .notSupported, "a modifier extension CareGate does not understand")
        }
        let enableWhen = element.children(named: "enableWhen").compactMap { condition -> EnableWhen? in
            guard let question = condition.childValue("question"),
                  let op = condition.childValue("operator").flatMap(EnableWhen.Operator.init(rawValue:)),
                  let answer = AnswerValue.read(from: condition, prefix: "answer") else {
                support.add("enableWhen", .notSupported, "a condition without a question, an R4 operator or an answer of a permitted type")
                return nil
            }
            return EnableWhen(question: question, operator: op, answer: answer)
        }
        let itemControl = element.extensions(SurveyExtensionURL.itemControl).flatMap { ext in
            ext.child(named: "valueCodeableConcept")?.children(named: "coding").compactMap { $0.childValue("code") } ?? []
        }
        let children = element.children(named: "item").enumerated().map { index, child in
            readItem(child, path: "\(path).item[\(index)]")
        }
        return QuestionnaireItem(
            linkId: linkId, type: type, typeText: typeText, text: element.childValue("text"), prefix: element.childValue("prefix"),
            code: element.children(named: "code").map { SurveyCoding($0) },
            required: element.childValue("required") == "true", repeats: element.childValue("repeats") == "true",
            readOnly: element.childValue("readOnly") == "true", maxLength: element.childValue("maxLength").flatMap { Int($0) },
            initial: element.children(named: "initial").compactMap { AnswerValue.read(from: $0, prefix: "value") },
            answerOptions: options, answerValueSet: element.childValue("answerValueSet"), enableWhen: enableWhen,
            enableBehavior: element.childValue("enableBehavior").flatMap(EnableBehavior.init(rawValue:)),
            minValue: element.extension(SurveyExtensionURL.minValue).flatMap { AnswerValue.read(from: $0, prefix: "value") },
            maxValue: element.extension(SurveyExtensionURL.maxValue).flatMap { AnswerValue.read(from: $0, prefix: "value") },
            calculatedExpression: calculated, enableWhenExpression: enableExpression,
            observationExtract: element.extension(SurveyExtensionURL.observationExtract)?.choiceValue?.value.map { $0 == "true" },
            observationExtractCategories: categories(of: element), itemControl: itemControl, items: children, path: path,
            element: element, support: support)
    }

    /// The FHIRPath text of an SDC Expression, or nil (with a note) when it is in another language or
    /// does not parse.
    private func fhirPath(_ expression: Element, feature: String, support: inout ItemSupport) -> String? {
        let language = expression.childValue("language") ?? ""
        guard let text = expression.childValue("expression") else {
            support.add(feature, .notSupported, "an Expression without expression text (a reference is not followed)")
            return nil
        }
        guard language == "text/fhirpath" else {
            support.add(feature, .notSupported, "in \(language.isEmpty ? "no language" : language); CareGate evaluates FHIRPath (text/fhirpath) only")
            return nil
        }
        do {
            _ = try FHIRPathExpression(text)
        } catch {
            support.add(feature, .notSupported, "the FHIRPath does not parse: \(error)")
            return nil
        }
        return text
    }

    /// Notes that need the whole Questionnaire: types, answer sources, conditions, scores, extraction.
    private func annotate(_ item: QuestionnaireItem, in questionnaire: Questionnaire) -> QuestionnaireItem {
        var item = item
        var support = item.support
        switch item.type {
        case nil:
            support.add("type \(item.typeText ?? "(none)")", .notSupported, "not an R4 item type")
        case .question?:
            support.add("type question", .notSupported, "R4's abstract type: an item must use one of its specializations")
        case .attachment?:
            support.add("type attachment", .partly, "an app's outcome values cannot carry an attachment: checked in responses, never answered from an app")
        case .quantity?:
            support.add("type quantity", .supported, "answered by a number with its units (questionnaire-unitOption is not checked)")
        case let type?:
            support.add("type \(type.rawValue)", .supported)
        }
        switch questionnaire.answerConstraint(for: item) {
        case .unresolved(let canonical, let reason):
            support.add("answerValueSet \(canonical)", .partly, "\(reason): answers are accepted as codes without being checked, and exported without display")
        case .valueSet(let valueSet):
            support.add("answerValueSet \(item.answerValueSet ?? "")", .supported, "\(valueSet.concepts.count) concept(s)")
        case .options, .none:
            break
        }
        for condition in item.enableWhen where questionnaire.item(linkId: condition.question) == nil {
            support.add("enableWhen", .notSupported, "names the question \(condition.question), which is not in the Questionnaire")
        }
        if item.enableWhenExpression != nil {
            if questionnaire.ancestry(of: item.linkId).dropLast().contains(where: { $0.type == .group && $0.repeats }) {
                support.add("enableWhenExpression", .partly, "not evaluated inside a repeating group: the item counts as enabled")
            } else {
                support.add("enableWhenExpression", .supported, "evaluated on the response the answers make, at push and when the response is built")
            }
        }
        if item.calculatedExpression != nil {
            support.add("calculatedExpression", .supported, "evaluated with CareGate's FHIRPath (weight(), ordinal(), answers(), %questionnaire, %qitem, %resource) when the response is built")
        } else if item.isCodedTotalScore {
            let weighted = questionnaire.allItems.contains { candidate in
                candidate.answerOptions.contains { $0.weight != nil || $0.value.codingWeight != nil }
                    || { if case .valueSet(let set) = questionnaire.answerConstraint(for: candidate) { set.concepts.contains { $0.weight != nil } } else { false } }()
            }
            if weighted {
                support.add("total score", .supported, "coded as a total score: the sum of the weights of the answers in its group")
            } else {
                support.add("total score", .notSupported, "coded as a total score, but no answer option or resolvable ValueSet concept carries a weight (itemWeight/ordinalValue): the app must send it")
            }
        }
        if questionnaire.extractsObservation(item), item.isQuestion, item.code.isEmpty {
            support.add("observationExtract", .partly, "the item has no code, so no Observation is extracted from it")
        } else if questionnaire.extractsObservation(item), item.isQuestion {
            support.add("observationExtract", .supported)
        }
        if !item.itemControl.isEmpty {
            support.add("itemControl \(item.itemControl.joined(separator: ","))", .supported, "reported only: a rendering hint for the app")
        }
        item.support = support
        item.items = item.items.map { annotate($0, in: questionnaire) }
        return item
    }
}

extension AnswerValue {
    /// The weight a Coding value carries itself.
    var codingWeight: Decimal? {
        if case .coding(let coding) = self { return coding.weight }
        return nil
    }
}
