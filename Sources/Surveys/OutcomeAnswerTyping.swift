import CareModel
import FHIRCore
import Foundation

/// Turns one outcome value into the typed answer its item takes, following the encoding an app uses
/// (Docs/surveys.md, "Answers"): booleans, numbers, text and dates as CareKit types them; a coded
/// answer as text naming an option by its code, `system|code` or display.
struct OutcomeAnswerTyping {
    let questionnaire: Questionnaire

    enum Failure: Error {
        case wrongType(String)
        case notAnOption(String)
        case unsupported(String)
    }

    /// The answer `value` gives `item`, or why it gives none.
    func answer(_ value: OutcomeValue, for item: QuestionnaireItem) -> Result<AnswerValue, Failure> {
        guard let type = item.type else { return .failure(.unsupported("the item's type is not an R4 item type")) }
        let got = value.value
        switch (type, got) {
        case (.boolean, .boolean(let flag)): return .success(.boolean(flag))
        case (.integer, .integer(let number)): return .success(.integer(number))
        case (.integer, .double(let number)) where number.isFinite && number.rounded() == number && abs(number) < 1e15:
            return .success(.integer(Int(number)))
        case (.decimal, .double(let number)) where number.isFinite: return .success(.decimal(Self.decimal(number)))
        case (.decimal, .integer(let number)): return .success(.decimal(Decimal(number)))
        case (.quantity, .double(let number)) where number.isFinite:
            return .success(.quantity(SurveyQuantity(value: Self.decimal(number), unit: value.units)))
        case (.quantity, .integer(let number)): return .success(.quantity(SurveyQuantity(value: Decimal(number), unit: value.units)))
        case (.date, .date(let date)): return .success(.date(Self.dateText(date, value.timezone)))
        case (.date, .text(let text)) where FHIRTemporal.problem(with: text, as: .date) == nil: return .success(.date(text))
        case (.dateTime, .date(let date)): return .success(.dateTime(FHIRTemporal(date, in: value.timezone).text))
        case (.dateTime, .text(let text)) where FHIRTemporal.problem(with: text, as: .dateTime) == nil: return .success(.dateTime(text))
        case (.time, .date(let date)): return .success(.time(String(FHIRTemporal(date, in: value.timezone).text.dropFirst(11).prefix(8))))
        case (.time, .text(let text)) where FHIRTemporal.problem(with: text, as: .time) == nil: return .success(.time(text))
        case (.string, .text(let text)), (.text, .text(let text)): return .success(.string(text))
        case (.url, .text(let text)) where URL(string: text)?.scheme != nil: return .success(.uri(text))
        case (.reference, .text(let text)) where (try? ReferenceFormat.parse(text).get()) != nil: return .success(.reference(text))
        case (.choice, _), (.openChoice, _): return choice(got, value: value, item: item, open: type == .openChoice)
        case (.attachment, _): return .failure(.unsupported("an attachment cannot be sent as an outcome value"))
        case (.group, _), (.display, _), (.question, _): return .failure(.unsupported("a \(type.rawValue) item takes no answer"))
        default:
            return .failure(.wrongType("a \(type.rawValue) item does not take a \(got.type.rawValue) value"))
        }
    }

    /// A choice: the option (or ValueSet concept) the value names; for an open choice, free text
    /// otherwise. With an unresolvable ValueSet, text is taken as `system|code` or a code.
    private func choice(_ got: OutcomeValue.Value, value: OutcomeValue, item: QuestionnaireItem, open: Bool) -> Result<AnswerValue, Failure> {
        switch questionnaire.answerConstraint(for: item) {
        case .options(let options):
            if let match = options.first(where: { Self.names(got, $0.value, timezone: value.timezone) }) {
                var answer = match.value
                if case .coding(var coding) = answer, coding.weight == nil, let weight = match.weight {
                    coding.weight = weight
                    answer = .coding(coding)
                }
                return .success(answer)
            }
        case .valueSet(let valueSet):
            if case .text(let text) = got, let concept = valueSet.concepts.first(where: { Self.names(text, $0) }) {
                return .success(.coding(concept))
            }
        case .unresolved, .none:
            if case .text(let text) = got, !open || text.contains("|") {
                return .success(.coding(Self.coding(text)))
            }
        }
        if open, case .text(let text) = got { return .success(.string(text)) }
        return .failure(.notAnOption("the answer is not among the item's options"))
    }

    /// Whether an outcome value names an option value.
    static func names(_ got: OutcomeValue.Value, _ option: AnswerValue, timezone: TimeZone) -> Bool {
        switch (got, option) {
        case (.text(let text), .coding(let coding)): return names(text, coding)
        case (.text(let text), .string(let string)): return text == string
        case (.integer(let number), .integer(let optionNumber)): return number == optionNumber
        case (.text(let text), .integer(let optionNumber)): return Int(text) == optionNumber
        case (.date(let date), .date(let text)): return dateText(date, timezone) == text
        case (.text(let text), .date(let optionText)), (.text(let text), .time(let optionText)), (.text(let text), .reference(let optionText)):
            return text == optionText
        default: return false
        }
    }

    /// Whether `text` names `coding`: its code, `system|code`, or its display.
    static func names(_ text: String, _ coding: SurveyCoding) -> Bool {
        if let code = coding.code {
            if text == code { return true }
            if let system = coding.system, text == "\(system)|\(code)" { return true }
        }
        return coding.display == text
    }

    /// A Coding from `system|code` or a bare code.
    static func coding(_ text: String) -> SurveyCoding {
        if let bar = text.lastIndex(of: "|") {
            let system = String(text[..<bar]), code = String(text[text.index(after: bar)...])
            return SurveyCoding(system: system.isEmpty ? nil : system, code: code)
        }
        return SurveyCoding(code: text)
    }

    /// A FHIR date (`YYYY-MM-DD`) for `date` in `zone`.
    static func dateText(_ date: Date, _ zone: TimeZone) -> String {
        String(FHIRTemporal(date, in: zone).text.prefix(10))
    }

    /// A Double as a Decimal with the digits it was written with (no binary tail: 0.1 stays 0.1).
    static func decimal(_ number: Double) -> Decimal {
        Decimal(string: "\(number)", locale: Locale(identifier: "en_US_POSIX")) ?? Decimal(number)
    }
}
