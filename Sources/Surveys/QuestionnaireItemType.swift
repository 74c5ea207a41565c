/// R4's `Questionnaire.item.type` (http://hl7.org/fhir/R4/valueset-item-type.html), with what each
/// answers with.
public enum QuestionnaireItemType: String, Sendable, CaseIterable {
    case group, display, boolean, decimal, integer, date, dateTime, time, string, text, url, choice
    case openChoice = "open-choice"
    case attachment, reference, quantity
    /// R4's abstract `question`, which an item may not use (only its specializations).
    case question

    /// True for the types that take answers (every type but group, display and the abstract question).
    public var takesAnswers: Bool {
        switch self {
        case .group, .display, .question: false
        default: true
        }
    }

    /// The `value[x]` types an answer to this type may have (R4 QuestionnaireResponse, "answer.value[x]"
    /// and the item type table): a choice answers with its options' type, Coding by default.
    public var answerTypeSuffixes: Set<String> {
        switch self {
        case .boolean: ["Boolean"]
        case .decimal: ["Decimal"]
        case .integer: ["Integer"]
        case .date: ["Date"]
        case .dateTime: ["DateTime"]
        case .time: ["Time"]
        case .string, .text: ["String"]
        case .url: ["Uri"]
        case .choice: ["Coding", "String", "Integer", "Date", "Time", "Reference"]
        case .openChoice: ["Coding", "String", "Integer", "Date", "Time", "Reference"]
        case .attachment: ["Attachment"]
        case .reference: ["Reference"]
        case .quantity: ["Quantity"]
        case .group, .display, .question: []
        }
    }

    /// True for the types `maxLength` may constrain (que-10: simple question types).
    public var allowsMaxLength: Bool {
        switch self {
        case .boolean, .decimal, .integer, .string, .text, .url, .openChoice: true
        default: false
        }
    }
}
