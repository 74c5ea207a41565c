import CareModel
import FHIR
import Foundation

/// The rules that find the task an Observation's values belong to, in order:
///
/// 1. a task made from the plan or order it is based on or part of (`basedOn`, `partOf`), with one of its
///    codes; when codes decide nothing and that resource made several tasks, the one titled as the
///    Observation's concept text (as export writes it); when it made one task, that task (a
///    QuestionnaireResponse follows its own rule: ``surveyCandidates(patientID:questionnaire:basedOn:)``);
/// 2. the task whose activity names the Observation in its `outcomeReference`;
/// 3. only when neither gives a candidate: a task of the same patient with one of its codes, not a log
///    (the importer puts a log value on the log version that owns its day, which may be an earlier
///    version than the current one this catalog holds).
///
/// The first candidate with an occurrence at the Observation's time takes its values
/// (``firstOccurrence(among:at:)``); when none has one, the mapping logs the value instead.
struct OutcomeTaskMatching {
    /// The tasks an import knows (made by the input or stored); none matches without it.
    let catalog: (any TaskCatalog)?

    /// The candidate tasks of Observation `observation` of patient `patientID` (its entity id), coded
    /// `codes` (`system|code`), based on or part of the resources `basedOn` (nil when the mapping does not
    /// say), in the order of the rules. `conceptText` gives the Observation's concept text; it is asked for
    /// only when codes decide nothing.
    func candidates(
        for observation: ResourceKey, patientID: String, codes: [String], basedOn: [ResourceKey]?,
        conceptText: () throws(MappingFailure) -> String?
    ) throws(MappingFailure) -> [CareTask] {
        // A QuestionnaireResponse belongs to a survey task asking its Questionnaire (its concept text is
        // its `questionnaire`), never to another task.
        if observation.type == "QuestionnaireResponse" {
            guard let asked = try conceptText() else { return [] }
            return surveyCandidates(patientID: patientID, questionnaire: asked, basedOn: basedOn ?? [])
        }
        var candidates: [CareTask] = []
        // 1. The plan or order it is based on or part of.
        for target in basedOn ?? [] {
            let made = catalog?.tasks(madeFrom: target) ?? []
            var matching = made.filter { !Set(Self.codes(of: $0)).isDisjoint(with: codes) }
            // Codes that decide nothing: the concept's text names the task (as export writes it).
            if matching.isEmpty, made.count > 1, let text = try conceptText() {
                matching = made.filter { $0.title == text }
            }
            candidates += matching.isEmpty && made.count == 1 ? made : matching
        }
        // 2. The activity whose outcomeReference names it.
        if let id = catalog?.taskForOutcome(observation), let task = catalog?.task(id: id) { candidates.append(task) }
        // 3. A task of the same patient with the same code; a log's values take the log branch.
        if candidates.isEmpty, !codes.isEmpty {
            candidates = (catalog?.tasks(ofPatient: patientID, withAnyCode: codes) ?? []).filter { !$0.isObservationLog }
        }
        return candidates
    }

    /// The survey tasks a provider's QuestionnaireResponse of patient `patientID` may belong to (issue 44,
    /// item 5): the patient's survey tasks asking the url of `questionnaire` (the response's canonical),
    /// made from a resource of `basedOn` when it names one that made such a task (basedOn narrows; one
    /// naming only resources CareGate made no survey of, an order it never pulled, does not). Whether a
    /// task's version asks the exact version is for ``firstOccurrence(among:at:accepting:)`` to say, on
    /// the version in effect at the response's time. In id order, so that the first is always the same.
    func surveyCandidates(patientID: String, questionnaire: String, basedOn: [ResourceKey]) -> [CareTask] {
        let url = Self.split(questionnaire).url
        let asking = (catalog?.surveyTasks(ofPatient: patientID, questionnaireURL: url) ?? []).sorted { $0.id < $1.id }
        let sources = Set(basedOn)
        let narrowed = asking.filter { task in task.metadata.provenance.map { sources.contains($0.resource) } ?? false }
        return narrowed.isEmpty ? asking : narrowed
    }

    /// The first of `candidates` with an occurrence at `time`, and that occurrence: of its current
    /// version, or, when that has none and `time` is before it takes effect, of the earlier version in
    /// effect at `time` (a long-running task given a version starting recently keeps its earlier
    /// outcomes on the version before, ``earlierVersions(of:)``). `isCurrent` is false for an earlier version.
    /// `accepting` says whether a version (the one in effect) may take the values at all: a survey task's
    /// version must ask the response's Questionnaire.
    func firstOccurrence(
        among candidates: [CareTask], at time: Date, accepting: (CareTask) -> Bool = { _ in true }
    ) -> (task: CareTask, occurrence: Int, isCurrent: Bool)? {
        for task in candidates {
            if let occurrence = Self.occurrence(of: task.schedule, at: time) {
                if accepting(task) { return (task, occurrence, true) }
                continue
            }
            guard time < task.metadata.effectiveDate,
                  let earlier = catalog?.earlierVersions(of: task.id).last(where: { $0.metadata.effectiveDate <= time }) else { continue }
            if accepting(earlier), let occurrence = Self.occurrence(of: earlier.schedule, at: time) { return (earlier, occurrence, false) }
        }
        return nil
    }

    /// The occurrence of `schedule` that `time` belongs to: the last event starting at or before it,
    /// provided the event has not ended more than a day before.
    static func occurrence(of schedule: Schedule, at time: Date) -> Int? {
        schedule.occurrence(at: time)
    }

    /// Whether survey task `task` asks the Questionnaire `canonical` names (`url` or `url|version`): the
    /// same url, and the same version when both name one.
    static func asks(_ task: CareTask, _ canonical: String) -> Bool {
        guard task.metadata.tags?.contains("survey") ?? false, let named = task.metadata.userInfo?["questionnaire"] else { return false }
        let (taskURL, taskVersion) = split(named)
        let (url, version) = split(canonical)
        return taskURL == url && (taskVersion == nil || version == nil || taskVersion == version)
    }

    /// A canonical's url and version (`url|version`).
    static func split(_ text: String) -> (url: String, version: String?) {
        guard let bar = text.lastIndex(of: "|") else { return (text, nil) }
        return (String(text[..<bar]), String(text[text.index(after: bar)...]))
    }

    /// The FHIR codes a task carries (`system|code`), as the mapping kept them in its `userInfo`.
    static func codes(of task: CareTask) -> [String] {
        task.metadata.linkage.codes
    }
}

extension CareTask {
    /// The url of the Questionnaire a survey task asks (its `userInfo.questionnaire` without the
    /// version); nil for a task that is no survey.
    public var askedQuestionnaireURL: String? {
        guard metadata.tags?.contains("survey") ?? false, let named = metadata.userInfo?["questionnaire"] else { return nil }
        return OutcomeTaskMatching.split(named).url
    }
}
