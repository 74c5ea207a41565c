import FHIRCore

/// One `Questionnaire.item.enableWhen`: the item is enabled when the answers to `question` satisfy
/// `operator` against `answer` (R4 QuestionnaireItemOperator).
public struct EnableWhen: Hashable, Sendable {
    /// R4's operators (http://hl7.org/fhir/R4/valueset-questionnaire-enable-operator.html).
    public enum Operator: String, Sendable, CaseIterable {
        case exists
        case equal = "="
        case notEqual = "!="
        case greater = ">"
        case less = "<"
        case greaterOrEqual = ">="
        case lessOrEqual = "<="
    }

    /// The linkId of the question whose answers decide.
    public var question: String
    public var `operator`: Operator
    /// `answer[x]`: a boolean for `exists` (que-7).
    public var answer: AnswerValue

    public init(question: String, operator: Operator, answer: AnswerValue) {
        self.question = question
        self.operator = `operator`
        self.answer = answer
    }

    /// Whether the condition holds for the answers a question has (none when it is unanswered or not
    /// enabled, as R4 says a disabled question counts as unanswered).
    ///
    /// R4's definitions: `exists` compares "has an answer" with the boolean; `=` holds when at least one
    /// answer equals the value; `!=` when no answer equals it; `>`, `<`, `>=`, `<=` when at least one
    /// answer compares so (values that cannot be ordered against it, such as Codings, never do).
    public func isSatisfied(by answers: [AnswerValue]) -> Bool {
        switch `operator` {
        case .exists:
            guard case .boolean(let expected) = answer else { return false }
            return answers.isEmpty != expected
        case .equal:
            return answers.contains { $0.matches(answer) }
        case .notEqual:
            return !answers.contains { $0.matches(answer) }
        case .greater, .less, .greaterOrEqual, .lessOrEqual:
            return answers.contains { given in
                guard let order = given.compare(to: answer) else { return false }
                switch `operator` {
                case .greater: return order == .orderedDescending
                case .less: return order == .orderedAscending
                case .greaterOrEqual: return order != .orderedAscending
                default: return order != .orderedDescending
                }
            }
        }
    }
}

/// `Questionnaire.item.enableBehavior`: whether all or any of several conditions must hold.
public enum EnableBehavior: String, Sendable {
    case all, any
}
