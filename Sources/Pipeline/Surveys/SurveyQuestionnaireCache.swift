import CareModel
import FHIR
import Foundation
import Store
import Surveys

/// The Questionnaire a survey task asks, read from the store and parsed once per canonical: what the
/// push route and `caregate outcomes import` check a survey outcome against, and what the export builds
/// its QuestionnaireResponse with.
///
/// A task is a survey when it carries the tag `survey` (`SurveyQuestionnaires/tag`); it asks the
/// canonical under its `userInfo` key `questionnaire`: `url|version` (that version), `url` (the version
/// kept last), or `Questionnaire/<id>` (the version kept last of that id from the task's source system).
public final class SurveyQuestionnaireCache: @unchecked Sendable {
    /// What a task asks.
    public enum Lookup {
        /// Not a survey task.
        case notSurvey
        /// A survey task whose Questionnaire the store does not keep (yet): `canonical` as the task names it.
        case missing(canonical: String)
        /// The Questionnaire the task asks, and the canonical the store keeps it under.
        case found(Questionnaire, canonical: String)
    }

    private let store: (any QuestionnaireStore)?
    private let lock = NSLock()
    private var parsed: [String: (Questionnaire, String)?] = [:]

    public init(store: any Store) {
        self.store = store.questionnaires
    }

    /// Whether `task` is a survey task.
    public static func isSurvey(_ task: CareTask) -> Bool { SurveyQuestionnaires.isSurvey(task) }

    /// What `task` asks.
    ///
    /// - Throws: what the store throws reading it; a kept Questionnaire that cannot be read (not JSON,
    ///   not a Questionnaire) counts as missing.
    public func lookup(_ task: CareTask) throws -> Lookup {
        guard Self.isSurvey(task) else { return .notSurvey }
        guard let text = task.metadata.userInfo?[SurveyQuestionnaires.userInfoKey], let canonical = QuestionnaireIdentity.Canonical(text) else {
            return .missing(canonical: "")
        }
        let source = task.metadata.provenance?.sourceSystem ?? "default"
        let key = source + " " + canonical.description
        if let known = lock.withLock({ parsed[key] }) {
            return known.map { .found($0.0, canonical: $0.1) } ?? .missing(canonical: canonical.description)
        }
        var found: (Questionnaire, String)?
        if let kept = try kept(canonical, sourceSystem: source), let element = try? FHIRJSON.read(kept.json),
           let questionnaire = try? Questionnaire(element) {
            found = (questionnaire, kept.canonical)
        }
        // A missing one is not remembered: it may arrive while this cache lives (a server's push pool).
        if found != nil { lock.withLock { parsed[key] = .some(found) } }
        return found.map { .found($0.0, canonical: $0.1) } ?? .missing(canonical: canonical.description)
    }

    private func kept(_ canonical: QuestionnaireIdentity.Canonical, sourceSystem: String) throws -> StoredQuestionnaire? {
        guard let store else { return nil }
        if let version = canonical.version { return try store.questionnaire(url: canonical.url, version: version) }
        if let id = canonical.referencedID { return try store.latestQuestionnaire(sourceSystem: sourceSystem, resourceID: id) }
        return try store.latestQuestionnaire(url: canonical.url)
    }
}

/// Checks a survey task's outcome against the Questionnaire version the task asks (issue 44, item 3):
/// the push route answers 422 with the problems, `caregate outcomes import` refuses the outcome.
public struct SurveyOutcomeCheck: Sendable {
    public let questionnaires: SurveyQuestionnaireCache

    public init(questionnaires: SurveyQuestionnaireCache) {
        self.questionnaires = questionnaires
    }

    public init(store: any Store) {
        questionnaires = SurveyQuestionnaireCache(store: store)
    }

    /// Why `outcome` of `task` does not fit the Questionnaire the task asks, each problem with its linkId;
    /// empty when it fits, when the task is no survey, when the outcome is a deletion, or when the
    /// Questionnaire is not kept yet (the outcome is then taken, and its export waits until it arrives).
    public func problems(_ outcome: Outcome, of task: CareTask) throws -> [SurveyAnswerProblem] {
        guard outcome.metadata.deletedDate == nil, case .found(let questionnaire, _) = try questionnaires.lookup(task) else { return [] }
        return SurveyAnswerChecker(questionnaire).check(outcome.values).problems
    }

    /// Why `outcome` of `task` is refused, in one line naming each linkId (at most five); nil when it is
    /// taken (``problems(_:of:)`` is empty).
    public func refusal(_ outcome: Outcome, of task: CareTask) throws -> String? {
        let found = try problems(outcome, of: task)
        return found.isEmpty ? nil : "the answers do not fit the Questionnaire: " + Self.describe(found)
    }

    /// The problems in one line (at most `limit` of them), for an HTTP body or a command's error.
    public static func describe(_ problems: [SurveyAnswerProblem], limit: Int = 5) -> String {
        let shown = problems.prefix(limit).map(\.description).joined(separator: "; ")
        return problems.count > limit ? shown + "; and \(problems.count - limit) more" : shown
    }
}
