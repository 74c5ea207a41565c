import CareModel
import FHIR
import Foundation
import Mapping
import Store
import Surveys

/// The Questionnaires of an import and the survey tasks that ask them.
///
/// - ``keep(from:)`` keeps every Questionnaire of the input in the store (``QuestionnaireStore``), by
///   url and version (``QuestionnaireIdentity``), and counts it under `Questionnaire`.
/// - ``pin(_:)`` makes each survey task (tag `survey`) name the exact version it asks: its `userInfo`
///   key `questionnaire` becomes `url|version` of the version the store keeps (the one kept last when the
///   mapping gave a url alone; a `Questionnaire/<id>` reference is found by the import's source system and
///   id). One the store lacks is asked of the ``QuestionnaireLookup`` (the sync's server or folder) and
///   kept; one found nowhere is a warning naming the canonical looked for, and the task is still made,
///   naming it as written (its outcomes wait in the outbox until the Questionnaire arrives).
///
/// The rules of which resources make survey tasks are the mapping files' (CarePlan.yaml, Task.yaml,
/// ServiceRequest.yaml); this only resolves versions, which a mapping cannot (the store and server are
/// beyond it).
final class SurveyQuestionnaires {
    /// The tag of a survey task, and its `userInfo` key naming the Questionnaire.
    static let tag = "survey"
    static let userInfoKey = "questionnaire"

    private let store: (any QuestionnaireStore)?
    private let sourceSystem: String
    private let lookup: (any QuestionnaireLookup)?
    private let ledger: ImportLedger
    /// A dry run keeps nothing: the input's Questionnaires are held here instead.
    private var held: [String: StoredQuestionnaire] = [:]
    /// What each canonical as written was pinned to (nil: found nowhere), so each is looked up once.
    private var pinned: [String: String?] = [:]

    init(store: any Store, options: ImportOptions, ledger: ImportLedger) {
        self.store = store.questionnaires
        sourceSystem = options.mapping.sourceSystem
        lookup = options.questionnaireLookup
        self.ledger = ledger
    }

    /// Keeps the Questionnaires of the input (`index`).
    func keep(from index: ResourceIndex) {
        for key in index.keys(ofType: "Questionnaire") {
            guard let resource = index.resource(key) else { continue }
            keep(resource, resource: key.description)
        }
    }

    /// Keeps `resource` (a Questionnaire) and counts it; returns what the store keeps for it.
    @discardableResult
    private func keep(_ resource: Element, resource name: String) -> StoredQuestionnaire? {
        guard let stored = QuestionnaireIdentity.stored(resource, sourceSystem: sourceSystem) else {
            ledger.count("Questionnaire") { $0.skipped += 1 }
            ledger.note(name, MappingNote(.warning, at: "Questionnaire", "a Questionnaire with neither url nor id cannot be asked by a task: not kept"))
            return nil
        }
        reportSupport(of: resource, name: name)
        guard !ledger.isDryRun, let store else {
            ledger.count("Questionnaire") { held[stored.canonical] == nil ? ($0.created += 1) : ($0.unchanged += 1) }
            held[stored.canonical] = stored
            return stored
        }
        do {
            switch try store.keep(stored) {
            case .added:
                ledger.count("Questionnaire") { $0.created += 1 }
            case .unchanged:
                ledger.count("Questionnaire") { $0.unchanged += 1 }
            case .conflicting:
                ledger.count("Questionnaire") { $0.unchanged += 1 }
                ledger.note(name, MappingNote(
                    .warning, at: "Questionnaire.version",
                    "\(stored.canonical) is kept already with other content: the version kept first stays (a changed Questionnaire needs a new version)"))
            }
            return stored
        } catch {
            ledger.count("Questionnaire") { $0.failed += 1 }
            ledger.note(name, MappingNote(.error, at: "Questionnaire", "cannot be kept: \(error)"))
            return nil
        }
    }

    /// Reports how every item of `resource` is handled (the Surveys module's support report): a note per
    /// item, information when it is wholly supported, a warning saying what is not and why otherwise.
    private func reportSupport(of resource: Element, name: String) {
        guard let questionnaire = try? Questionnaire(resource) else { return }
        for line in questionnaire.supportReport {
            let severity: MappingNote.Severity = line.support.level == .supported ? .info : .warning
            ledger.note(name, MappingNote(severity, at: line.path, line.description))
        }
    }

    /// `mapped` with each survey task naming the exact Questionnaire version it asks.
    func pin(_ mapped: MappedResource) -> MappedResource {
        guard case .mapped(let entities, let outcomes) = mapped.result,
              entities.contains(where: { if case .task(let task) = $0 { return Self.isSurvey(task) } else { return false } })
        else { return mapped }
        var notes = mapped.notes
        let pinnedEntities = entities.map { entity -> CareEntity in
            guard case .task(var task) = entity, Self.isSurvey(task) else { return entity }
            guard let written = task.metadata.userInfo?[Self.userInfoKey], let canonical = QuestionnaireIdentity.Canonical(written) else {
                notes.append(MappingNote(.warning, at: mapped.key.type, "the survey task \(task.id) names no Questionnaire"))
                return entity
            }
            guard let exact = resolve(canonical) else {
                notes.append(MappingNote(
                    .warning, at: mapped.key.type,
                    "the Questionnaire \(canonical) was found neither in the input, the store nor the server: the task is made, its outcomes wait until it arrives"))
                return entity
            }
            guard exact != written else { return entity }
            task.metadata.userInfo?[Self.userInfoKey] = exact
            if task.metadata.provenance != nil, let hash = try? ContentJSON.hash(.task(task)) { task.metadata.provenance?.contentHash = hash }
            return .task(task)
        }
        return MappedResource(key: mapped.key, result: .mapped(entities: pinnedEntities, outcomes: outcomes), notes: notes)
    }

    static func isSurvey(_ task: CareTask) -> Bool { task.metadata.tags?.contains(tag) ?? false }

    /// The `url|version` the store keeps for `canonical` (asking the lookup when it keeps none), or nil.
    private func resolve(_ canonical: QuestionnaireIdentity.Canonical) -> String? {
        if let known = pinned[canonical.description] { return known }
        var found = kept(canonical)
        if found == nil, let lookup {
            do {
                for resource in try lookup.questionnaires(for: canonical) { keep(resource, resource: "Questionnaire \(canonical)") }
                found = kept(canonical)
            } catch {
                ledger.note("Questionnaire \(canonical)", MappingNote(.warning, at: "Questionnaire", "cannot be fetched: \(error)"))
            }
        }
        pinned[canonical.description] = .some(found)
        return found
    }

    /// What the store (or, in a dry run, the input) keeps for `canonical`.
    private func kept(_ canonical: QuestionnaireIdentity.Canonical) -> String? {
        if let version = canonical.version {
            if held[canonical.description] != nil { return canonical.description }
            return (try? store?.questionnaire(url: canonical.url, version: version))?.canonical
        }
        if let id = canonical.referencedID {
            if let found = held.values.first(where: { $0.resourceID == id && $0.sourceSystem == sourceSystem }) { return found.canonical }
            return (try? store?.latestQuestionnaire(sourceSystem: sourceSystem, resourceID: id))?.canonical
        }
        if let found = held.values.filter({ $0.url == canonical.url }).max(by: { $0.keptDate < $1.keptDate }) { return found.canonical }
        return (try? store?.latestQuestionnaire(url: canonical.url))?.canonical
    }
}
