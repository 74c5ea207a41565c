import CareModel
import FHIR
import Foundation

/// A QuestionnaireResponse's answers as the outcome values of a survey task, encoded as an app sends
/// them (Docs/surveys.md): one value per answer, its `kind` the item's `linkId`, or
/// `<group linkId>[n]/<linkId>` inside the n-th repetition of a repeating group (a group whose linkId
/// stands more than once among its siblings: without the Questionnaire, a repeating group answered once
/// reads as one that does not repeat); the answer typed as CareKit types values (boolean, integer,
/// decimal as double, date and dateTime as date, a Coding as `system|code`, text otherwise; a Quantity as
/// a double with its unit). Items nested under an answer keep the answer's context. Attachments and
/// References have no outcome value: each is a note, never dropped silently.
enum QuestionnaireAnswerValues {
    /// Most values one response gives: more is a note, the rest left out.
    static let maximumValues = 10_000

    static func values(_ response: FHIRPathElementNode, time: Date?, zone: TimeZone, notes: inout [MappingNote]) -> [OutcomeValue] {
        var values: [OutcomeValue] = []
        walk(response.element.children(named: "item"), prefix: "", path: response.path ?? "QuestionnaireResponse", time: time, zone: zone, into: &values, notes: &notes)
        if values.count > maximumValues {
            notes.append(MappingNote(.warning, at: response.path ?? "QuestionnaireResponse", "more than \(maximumValues) answers: the rest are left out"))
            values.removeLast(values.count - maximumValues)
        }
        return values
    }

    private static func walk(
        _ items: [Element], prefix: String, path: String, time: Date?, zone: TimeZone, into values: inout [OutcomeValue], notes: inout [MappingNote]
    ) {
        var counts: [String: Int] = [:]
        for item in items { counts[item.childValue("linkId") ?? "", default: 0] += 1 }
        var seen: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            let itemPath = "\(path).item[\(index)]"
            guard let linkId = item.childValue("linkId"), !linkId.isEmpty, values.count <= maximumValues else { continue }
            let answers = item.children(named: "answer")
            if answers.isEmpty {
                // A group: its repetitions are numbered when it stands more than once.
                let repetition = seen[linkId, default: 0]
                seen[linkId] = repetition + 1
                let step = (counts[linkId] ?? 0) > 1 ? "\(prefix)\(linkId)[\(repetition)]/" : prefix
                walk(item.children(named: "item"), prefix: step, path: itemPath, time: time, zone: zone, into: &values, notes: &notes)
                continue
            }
            for (answerIndex, answer) in answers.enumerated() {
                let answerPath = "\(itemPath).answer[\(answerIndex)]"
                if let value = value(of: answer, kind: prefix + linkId, time: time, zone: zone) {
                    values.append(value)
                } else if answer.children.contains(where: { $0.name.hasPrefix("value") }) {
                    notes.append(MappingNote(.warning, at: answerPath, "an Attachment or Reference answer has no outcome value: not carried over"))
                }
                walk(answer.children(named: "item"), prefix: prefix, path: answerPath, time: time, zone: zone, into: &values, notes: &notes)
            }
        }
    }

    private static func value(of answer: Element, kind: String, time: Date?, zone: TimeZone) -> OutcomeValue? {
        guard let element = answer.children.first(where: { $0.name.hasPrefix("value") }) else { return nil }
        let made = { (value: OutcomeValue.Value, units: String?) in OutcomeValue(value, units: units, kind: kind, createdDate: time, timezone: zone) }
        let text = element.value ?? ""
        switch element.name {
        case "valueBoolean": return made(.boolean(text == "true"), nil)
        case "valueInteger": return Int(text).map { made(.integer($0), nil) }
        case "valueDecimal": return Double(text).map { made(.double($0), nil) }
        case "valueDate", "valueDateTime": return FHIRDateText.date(text, in: zone).map { made(.date($0), nil) } ?? made(.text(text), nil)
        case "valueCoding":
            guard let code = element.childValue("code") else { return element.childValue("display").map { made(.text($0), nil) } }
            return made(.text(element.childValue("system").map { "\($0)|\(code)" } ?? code), nil)
        case "valueQuantity":
            return element.childValue("value").flatMap(Double.init).map { made(.double($0), element.childValue("unit") ?? element.childValue("code")) }
        case "valueAttachment", "valueReference": return nil
        default: return made(.text(text), nil)
        }
    }
}
