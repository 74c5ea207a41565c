/// Why an outcome does not fit its Questionnaire: one problem, with the linkId (and the outcome value's
/// position) it concerns. The push route answers 422 with these; `outcomes import` refuses with them.
public struct SurveyAnswerProblem: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        /// The value's `kind` is missing, too long, or not `linkId` / `group[n]/linkId`.
        case malformedKind = "malformed-kind"
        /// No item has this linkId.
        case unknownLinkId = "unknown-linkId"
        /// A group or display item was answered.
        case notAQuestion = "not-a-question"
        /// The value's type does not fit the item's type.
        case wrongType = "wrong-type"
        /// The value is not among the item's answer options or ValueSet.
        case notAnOption = "not-an-option"
        /// A required, enabled item has no answer.
        case missingRequired = "missing-required"
        /// An item that is not enabled (enableWhen on the given answers) was answered.
        case notEnabled = "not-enabled"
        /// Several answers to an item that does not repeat.
        case repeats
        /// A text longer than the item's maxLength.
        case maxLength = "max-length"
        /// Below the item's minValue.
        case minValue = "min-value"
        /// Above the item's maxValue.
        case maxValue = "max-value"
        /// A repetition index on a group that does not repeat, or out of bounds.
        case badRepetition = "bad-repetition"
        /// An item nested under a question whose question has no answer.
        case parentNotAnswered = "parent-not-answered"
        /// The item's type cannot be answered from an app (attachment) or is not an R4 type.
        case unsupportedType = "unsupported-type"
    }

    public var kind: Kind
    /// The item's linkId (or the value's kind when it names no item).
    public var linkId: String
    /// The position of the outcome value among the outcome's values, when one value is at fault.
    public var valueIndex: Int?
    /// What is wrong, in words; it names the item, never the patient's answer text.
    public var message: String

    public init(_ kind: Kind, linkId: String, valueIndex: Int? = nil, message: String) {
        self.kind = kind
        self.linkId = linkId
        self.valueIndex = valueIndex
        self.message = message
    }

    public var description: String {
        "\(linkId)\(valueIndex.map { " (value \($0))" } ?? ""): \(message)"
    }
}

/// The result of checking an outcome's values against a Questionnaire.
public struct SurveyCheckResult: Sendable {
    /// The answers that could be placed and typed (problems aside).
    public var answers: SurveyAnswers
    /// Every problem found, in the order of the values, then missing items in Questionnaire order.
    public var problems: [SurveyAnswerProblem]

    /// True when the outcome fits the Questionnaire.
    public var isAccepted: Bool { problems.isEmpty }
}
