/// Which item instances are enabled by the answers given (R4 `enableWhen` and `enableBehavior`): an
/// instance is enabled when every item above it is, and its own conditions hold. A condition's
/// question is read in the nearest instance, the one in the same repetitions of the repeating groups
/// both share (R4: "the nearest question occurrence reachable by tracing first the ancestor axis");
/// a question that is itself not enabled counts as unanswered.
struct SurveyEnablement {
    let questionnaire: Questionnaire
    let answers: SurveyAnswers
    /// Items whose SDC `enableWhenExpression` is false on these answers (``ExpressionEnablement``).
    var disabledByExpression: Set<String> = []

    /// Whether the instance `key` is enabled.
    func isEnabled(_ key: SurveyAnswers.Key) -> Bool {
        var visiting: Set<String> = []
        return isEnabled(linkId: key.linkId, context: key.repetitions, visiting: &visiting)
    }

    /// The repetitions that name `item`'s instance above the instance `key` of one of its descendants.
    func repetitions(for item: QuestionnaireItem, from key: SurveyAnswers.Key) -> [Int] {
        Array(key.repetitions.prefix(repeatingGroupsAbove(item.linkId).count))
    }

    /// The repeating groups strictly above the item, outermost first.
    func repeatingGroupsAbove(_ linkId: String) -> [String] {
        questionnaire.ancestry(of: linkId).dropLast().filter { $0.type == .group && $0.repeats }.map(\.linkId)
    }

    /// `context` gives the repetitions of the repeating groups above the item (and of the item itself,
    /// when it is a repeating group, as a group's instance is known by its own index too).
    func isEnabled(linkId: String, context: [Int], visiting: inout Set<String>) -> Bool {
        let trail = questionnaire.ancestry(of: linkId)
        guard !trail.isEmpty else { return false }
        guard visiting.insert(linkId).inserted else { return false }  // a condition that depends on itself never holds
        defer { visiting.remove(linkId) }
        var depth = 0
        for level in trail {
            if level.type == .group && level.repeats { depth += 1 }
            let levelContext = Array(context.prefix(depth))
            if !conditionsHold(level, context: levelContext, visiting: &visiting) { return false }
        }
        return true
    }

    private func conditionsHold(_ item: QuestionnaireItem, context: [Int], visiting: inout Set<String>) -> Bool {
        if disabledByExpression.contains(item.linkId) { return false }
        guard !item.enableWhen.isEmpty else { return true }
        var results: [Bool] = []
        for condition in item.enableWhen {
            let given = answersOf(condition.question, near: item.linkId, context: context, visiting: &visiting)
            results.append(condition.isSatisfied(by: given))
        }
        switch item.enableBehavior ?? .all {
        case .all: return results.allSatisfy { $0 }
        case .any: return results.contains(true)
        }
    }

    /// The answers of `question` in the instances nearest `linkId`'s instance `context`, those of its
    /// instances that are enabled.
    private func answersOf(_ question: String, near linkId: String, context: [Int], visiting: inout Set<String>) -> [AnswerValue] {
        let shared = zip(repeatingGroupsAbove(question), repeatingGroupsAbove(linkId) + [linkId]).prefix { $0 == $1 }.count
        let prefix = Array(context.prefix(shared))
        var values: [AnswerValue] = []
        for (key, given) in answers.answers where key.linkId == question && key.repetitions.starts(with: prefix) {
            guard isEnabled(linkId: question, context: key.repetitions, visiting: &visiting) else { continue }
            values += given.compactMap(\.value)
        }
        return values
    }
}

/// The required items an outcome leaves unanswered, where they are enabled and their group is
/// present (R4: `required` means the item must be present when its parent is).
struct SurveyRequiredItems {
    let questionnaire: Questionnaire
    let answers: SurveyAnswers
    let enablement: SurveyEnablement

    func missing() -> [SurveyAnswerProblem] {
        var problems: [SurveyAnswerProblem] = []
        walk(questionnaire.items, context: [], into: &problems)
        return problems
    }

    private func walk(_ items: [QuestionnaireItem], context: [Int], into problems: inout [SurveyAnswerProblem]) {
        for item in items where !item.linkId.isEmpty {
            var visiting: Set<String> = []
            guard enablement.isEnabled(linkId: item.linkId, context: context, visiting: &visiting) else { continue }
            let subtree = Set([item.linkId] + item.descendants.map(\.linkId))
            switch item.type {
            case .group?:
                if item.repeats {
                    let instances = Set(answers.answers.keys.filter { key in
                        subtree.contains(key.linkId) && key.repetitions.count > context.count && key.repetitions.starts(with: context)
                            && !(answers.answers[key] ?? []).isEmpty
                    }.map { $0.repetitions[context.count] }).sorted()
                    if instances.isEmpty, item.required { problems.append(missingProblem(item)) }
                    for instance in instances { walk(item.items, context: context + [instance], into: &problems) }
                } else {
                    let present = answers.hasAnswers(among: subtree, within: context)
                    if !present, item.required { problems.append(missingProblem(item)) }
                    if present || item.required { walk(item.items, context: context, into: &problems) }
                }
            case .display?:
                continue
            default:
                let given = answers.answers[SurveyAnswers.Key(linkId: item.linkId, repetitions: context)] ?? []
                if given.isEmpty, item.required, !item.isCalculatedByCareGate { problems.append(missingProblem(item)) }
                if !given.compactMap(\.value).isEmpty { walk(item.items, context: context, into: &problems) }
            }
        }
    }

    private func missingProblem(_ item: QuestionnaireItem) -> SurveyAnswerProblem {
        SurveyAnswerProblem(.missingRequired, linkId: item.linkId, message: "the item is required and enabled, and has no answer")
    }
}
