import CareModel

/// Writes the `kind` of survey outcome values as the app encoding says (Docs/surveys.md): every
/// repeating group above the answered item named with its repetition, `<group linkId>[n]/<linkId>`.
///
/// A QuestionnaireResponse read without its Questionnaire numbers a group only when it stands more
/// than once, so a repeating group answered once reads as `linkId`; with the Questionnaire the task asks,
/// that is `group[0]/linkId`, the same kind an app sends, so that a later version of the outcome (or the
/// app's own edit of it) names the same instance. A step on a group that does not repeat, index 0, is
/// dropped; anything the Questionnaire does not place (an unknown linkId, a malformed kind, a step that is
/// not a group above the item) is left as it is, for the checker to report.
public enum SurveyAnswerKinds {
    /// `values` with their kinds written out against `questionnaire`.
    public static func canonical(_ values: [OutcomeValue], in questionnaire: Questionnaire) -> [OutcomeValue] {
        values.map { value in
            guard let text = value.kind, let kind = canonical(text, in: questionnaire), kind != text else { return value }
            var written = value
            written.kind = kind
            return written
        }
    }

    /// Kind `text` written out against `questionnaire`; nil when the Questionnaire does not place it.
    public static func canonical(_ text: String, in questionnaire: Questionnaire) -> String? {
        guard let kind = OutcomeValueKind(text), questionnaire.item(linkId: kind.linkId) != nil else { return nil }
        var given = kind.groups[...]
        var steps = ""
        for ancestor in questionnaire.ancestry(of: kind.linkId).dropLast() where ancestor.type == .group {
            var index = 0
            if let step = given.first, step.linkId == ancestor.linkId {
                given = given.dropFirst()
                index = step.index
            }
            // A non-repeating group's repetition 0 needs no step; any other index is kept for the checker.
            if ancestor.repeats || index != 0 { steps += "\(ancestor.linkId)[\(index)]/" }
        }
        guard given.isEmpty else { return nil }
        return steps + kind.linkId
    }
}
