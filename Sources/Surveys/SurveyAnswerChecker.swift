import CareModel
import Foundation

/// Checks an outcome's values against a Questionnaire version (issue 44, item 3): each value placed
/// by its `kind` and typed by its item, then the whole answered against the Questionnaire's rules:
/// unknown linkIds, wrong types, answers not among the options, repeats, maxLength, minValue/maxValue,
/// answers to items not enabled (enableWhen evaluated on the given answers) and required items missing
/// where they are enabled. The push route and `caregate outcomes import` call it.
///
/// ```swift
/// let result = SurveyAnswerChecker(questionnaire).check(outcome.values)
/// guard result.isAccepted else { throw ... result.problems }   // 422 with each linkId
/// let built = try SurveyResponseBuilder(questionnaire).build(result.answers, context: context)
/// ```
public struct SurveyAnswerChecker: Sendable {
    public let questionnaire: Questionnaire

    /// Most values one outcome may carry for a survey: more is refused before any work.
    public static let maxValues = 10_000

    public init(_ questionnaire: Questionnaire) {
        self.questionnaire = questionnaire
    }

    public func check(_ values: [OutcomeValue]) -> SurveyCheckResult {
        var problems: [SurveyAnswerProblem] = []
        guard values.count <= Self.maxValues else {
            return SurveyCheckResult(answers: SurveyAnswers(), problems: [SurveyAnswerProblem(
                .repeats, linkId: "", message: "an outcome carries at most \(Self.maxValues) values, this one \(values.count)")])
        }
        let typing = OutcomeAnswerTyping(questionnaire: questionnaire)
        var answers = SurveyAnswers()
        var indices: [SurveyAnswers.Key: [Int]] = [:]
        for (index, value) in values.enumerated() {
            guard let kindText = value.kind, let kind = OutcomeValueKind(kindText) else {
                problems.append(SurveyAnswerProblem(.malformedKind, linkId: value.kind ?? "", valueIndex: index,
                                                    message: "a survey value's kind is its item's linkId, or group[n]/linkId inside a repeating group"))
                continue
            }
            guard let item = questionnaire.item(linkId: kind.linkId), !kind.linkId.isEmpty else {
                problems.append(SurveyAnswerProblem(.unknownLinkId, linkId: kind.linkId, valueIndex: index,
                                                    message: "no item of the Questionnaire has the linkId \(kind.linkId)"))
                continue
            }
            let key: SurveyAnswers.Key
            switch placement(of: kind, item: item) {
            case .success(let placed): key = placed
            case .failure(let problem):
                problems.append(SurveyAnswerProblem(problem.kind, linkId: problem.linkId, valueIndex: index, message: problem.message))
                continue
            }
            if case .text(askedUnknownText) = value.value, item.isQuestion {
                answers.answers[key, default: []].append(.askedUnknown)
                indices[key, default: []].append(index)
                continue
            }
            switch typing.answer(value, for: item) {
            case .success(let answer):
                problems += bounds(answer, item: item, index: index)
                answers.answers[key, default: []].append(.value(answer))
                indices[key, default: []].append(index)
            case .failure(.wrongType(let message)):
                problems.append(SurveyAnswerProblem(.wrongType, linkId: item.linkId, valueIndex: index, message: message))
            case .failure(.notAnOption(let message)):
                problems.append(SurveyAnswerProblem(.notAnOption, linkId: item.linkId, valueIndex: index, message: message))
            case .failure(.unsupported(let message)):
                let kind: SurveyAnswerProblem.Kind = item.type?.takesAnswers == false ? .notAQuestion : .unsupportedType
                problems.append(SurveyAnswerProblem(kind, linkId: item.linkId, valueIndex: index, message: message))
            }
        }
        for (key, given) in answers.answers.sorted(by: { (indices[$0.key]?.first ?? 0) < (indices[$1.key]?.first ?? 0) }) {
            guard let item = questionnaire.item(linkId: key.linkId) else { continue }
            if given.count > 1, !item.repeats {
                problems.append(SurveyAnswerProblem(.repeats, linkId: key.linkId, valueIndex: indices[key]?.dropFirst().first,
                                                    message: "the item does not repeat, and has \(given.count) answers"))
            }
            if given.count > 1, given.contains(.askedUnknown) {
                problems.append(SurveyAnswerProblem(.repeats, linkId: key.linkId, valueIndex: indices[key]?.first,
                                                    message: "\"\(askedUnknownText)\" is the only answer an item may have when it is given"))
            }
        }
        // enableWhenExpression is evaluated on the response these answers make (its context is a
        // placeholder: an expression about the answers does not depend on it).
        var expressionNotes: [String] = []
        let placeholder = SurveyResponseContext(patient: "Patient/unknown", authored: Date(timeIntervalSince1970: 0))
        let disabled = ExpressionEnablement(questionnaire: questionnaire, builder: SurveyResponseBuilder(questionnaire), context: placeholder)
            .disabled(answers, notes: &expressionNotes)
        let enablement = SurveyEnablement(questionnaire: questionnaire, answers: answers, disabledByExpression: disabled)
        for (key, _) in answers.answers.sorted(by: { (indices[$0.key]?.first ?? 0) < (indices[$1.key]?.first ?? 0) }) {
            guard let item = questionnaire.item(linkId: key.linkId) else { continue }
            if !enablement.isEnabled(key) {
                problems.append(SurveyAnswerProblem(.notEnabled, linkId: key.linkId, valueIndex: indices[key]?.first,
                                                    message: "the item is not enabled by the other answers (enableWhen), so it takes no answer"))
            } else if let parent = questionnaire.parent(of: item.linkId), parent.isQuestion,
                      answers.values(SurveyAnswers.Key(linkId: parent.linkId, repetitions: enablement.repetitions(for: parent, from: key))).isEmpty {
                problems.append(SurveyAnswerProblem(.parentNotAnswered, linkId: key.linkId, valueIndex: indices[key]?.first,
                                                    message: "the item sits under the question \(parent.linkId), which has no answer"))
            }
        }
        problems += SurveyRequiredItems(questionnaire: questionnaire, answers: answers, enablement: enablement).missing()
        return SurveyCheckResult(answers: answers, problems: problems)
    }

    /// The instance a kind names: each repeating group above the item gets the repetition the kind
    /// gives it (0 when the kind leaves it out); a step naming anything else is refused.
    private func placement(of kind: OutcomeValueKind, item: QuestionnaireItem) -> Result<SurveyAnswers.Key, SurveyAnswerProblem> {
        let ancestors = questionnaire.ancestry(of: item.linkId).dropLast()
        var given = kind.groups[...]
        var repetitions: [Int] = []
        for ancestor in ancestors where ancestor.type == .group {
            if let step = given.first, step.linkId == ancestor.linkId {
                given = given.dropFirst()
                if !ancestor.repeats, step.index != 0 {
                    return .failure(SurveyAnswerProblem(.badRepetition, linkId: item.linkId,
                                                        message: "the group \(ancestor.linkId) does not repeat, so it has only repetition 0"))
                }
                if ancestor.repeats { repetitions.append(step.index) }
            } else if ancestor.repeats {
                repetitions.append(0)
            }
        }
        if let step = given.first {
            return .failure(SurveyAnswerProblem(.malformedKind, linkId: item.linkId,
                                                message: "\(step.linkId) is not a group above the item \(item.linkId)"))
        }
        return .success(SurveyAnswers.Key(linkId: item.linkId, repetitions: repetitions))
    }

    /// maxLength and minValue/maxValue for one typed answer.
    private func bounds(_ answer: AnswerValue, item: QuestionnaireItem, index: Int) -> [SurveyAnswerProblem] {
        var problems: [SurveyAnswerProblem] = []
        if let maxLength = item.maxLength {
            let length: Int? = switch answer {
            case .string(let text), .uri(let text): text.count
            case .integer, .decimal, .boolean: answer.description.count
            default: nil
            }
            if let length, length > maxLength {
                problems.append(SurveyAnswerProblem(.maxLength, linkId: item.linkId, valueIndex: index,
                                                    message: "the answer is \(length) characters long, more than the item's maxLength \(maxLength)"))
            }
        }
        if let minimum = item.minValue, let order = answer.compare(to: minimum), order == .orderedAscending {
            problems.append(SurveyAnswerProblem(.minValue, linkId: item.linkId, valueIndex: index, message: "the answer is below the item's minValue \(minimum)"))
        }
        if let maximum = item.maxValue, let order = answer.compare(to: maximum), order == .orderedDescending {
            problems.append(SurveyAnswerProblem(.maxValue, linkId: item.linkId, valueIndex: index, message: "the answer is above the item's maxValue \(maximum)"))
        }
        return problems
    }
}
