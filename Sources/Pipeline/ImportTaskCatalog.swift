import Foundation
import CareModel
import Mapping
import Store

/// The tasks an import's Observations can belong to: those the input makes, and those earlier imports
/// left in the store, indexed by the resource they came from and by patient.
final class ImportTaskCatalog: TaskCatalog, @unchecked Sendable {
    private var byID: [String: CareTask] = [:]
    private var bySource: [ResourceKey: [String]] = [:]
    /// Task ids by patient and code.
    private var byPatientCode: [String: [String]] = [:]
    /// Survey task ids by patient and the url of the Questionnaire they ask.
    private var byPatientQuestionnaire: [String: [String]] = [:]
    private var outcomes: [ResourceKey: String] = [:]
    /// The versions before the current one of tasks that have some, oldest first, tombstones left out.
    private var earlier: [String: [CareTask]] = [:]
    /// The stored tasks the input has not made again (yet).
    private var storedOnly: Set<String> = []
    /// The resources the input has made tasks of.
    private var remade: Set<ResourceKey> = []
    /// Stored tasks taken out of the catalog because their resource was made again: one the input makes
    /// again with the same content comes back as the store holds it.
    private var forgotten: [String: CareTask] = [:]

    /// The ids of the tasks the store held when the catalog was loaded, and the uuids of their current versions.
    private var storedIDs: Set<String> = []
    private var storedUUIDs: Set<UUID> = []

    /// An empty catalog.
    init() {}

    /// Loads the current tasks of `store` that carry a patient (tasks made by imports).
    init(store: any Store) throws {
        var versioned: [String] = []
        for task in try store.tasks(.current) {
            insert(task)
            storedOnly.insert(task.id)
            storedIDs.insert(task.id)
            storedUUIDs.insert(task.uuid)
            if !task.isObservationLog, !task.metadata.previousVersionUUIDs.isEmpty { versioned.append(task.id) }
        }
        // An Observation dated before a plan or order task's current version takes effect belongs to the
        // version in effect then (a long-running task's recent version, ``RecentTaskStart``).
        for chunk in versioned.chunked(500) {
            for case .task(let version) in try store.histories(.task, ids: chunk) where version.metadata.deletedDate == nil {
                guard let current = byID[version.id], version.uuid != current.uuid else { continue }
                earlier[version.id, default: []].append(version)
            }
        }
        for id in earlier.keys { earlier[id]?.sort { $0.metadata.effectiveDate < $1.metadata.effectiveDate } }
    }

    func earlierVersions(of id: String) -> [CareTask] { earlier[id] ?? [] }

    /// Whether the catalog's current version of task `id` is the one the store will hold once the
    /// import's entities are written: a task new to the store, or the store's own version (its content
    /// unchanged). Versions planned after it can then name it before anything is written.
    func holdsWrittenVersion(of id: String) -> Bool {
        guard let task = byID[id] else { return false }
        return !storedIDs.contains(id) || storedUUIDs.contains(task.uuid)
    }

    /// Whether the store held task `id` when the catalog was loaded.
    func wasStored(_ id: String) -> Bool { storedIDs.contains(id) }

    /// Puts `versions` (of one task, oldest first, all taking effect after its current version) after the
    /// current version: the last becomes current, the others earlier versions Observations of their days
    /// go on (``RecentTaskStart``).
    func append(versions: [CareTask]) {
        guard let last = versions.last, let current = byID[last.id] else { return }
        earlier[last.id, default: []].append(current)
        earlier[last.id]?.append(contentsOf: versions.dropLast())
        byID[last.id] = last
    }

    /// Adds (or replaces) a task the input makes. The first task of a resource the input makes again
    /// takes the stored tasks of that resource it does not make out of the catalog: the import tombstones
    /// them (a plain task whose activity is now HealthKit-linked, an activity removed from its plan), so
    /// no Observation may be matched to them.
    func add(_ task: CareTask) {
        if let source = task.metadata.provenance?.resource, remade.insert(source).inserted {
            forgetStoredTasks(madeFrom: source)
        }
        storedOnly.remove(task.id)
        if let stored = forgotten.removeValue(forKey: task.id) { insert(stored) }
        insert(task)
    }

    /// Takes the stored tasks of `source` out of the catalog (those the input makes again come back as it adds them).
    private func forgetStoredTasks(madeFrom source: ResourceKey) {
        let dropped = Set((bySource[source] ?? []).filter(storedOnly.contains))
        guard !dropped.isEmpty else { return }
        bySource[source]?.removeAll(where: dropped.contains)
        for id in dropped {
            guard let task = byID.removeValue(forKey: id) else { continue }
            storedOnly.remove(id)
            forgotten[id] = task
            if let patient = task.metadata.linkage.patientID {
                for code in task.metadata.linkage.codes { byPatientCode["\(patient) \(code)"]?.removeAll { $0 == id } }
                if let url = task.askedQuestionnaireURL { byPatientQuestionnaire["\(patient) \(url)"]?.removeAll { $0 == id } }
            }
            for key in task.metadata.linkage.outcomeReferences where outcomes[key] == id { outcomes[key] = nil }
        }
    }

    /// Holds `task`, a version this import wrote to the store itself (a log's new reading days), without
    /// counting its resource as made again by the input.
    func refresh(_ task: CareTask) { insert(task) }

    private func insert(_ task: CareTask) {
        // The same source content as the version held (the store's): that one stays, as the store keeps
        // it; it may be a long-running task's version starting recently (``RecentTaskStart``), whose
        // occurrences count from its own start.
        if let held = byID[task.id], let hash = task.metadata.provenance?.contentHash, hash == held.metadata.provenance?.contentHash { return }
        // The Observations its activity names as outcomes: the version added last says (the input's
        // over the store's).
        let linkage = task.metadata.linkage
        for key in linkage.outcomeReferences { outcomes[key] = task.id }
        let isNew = byID.updateValue(task, forKey: task.id) == nil
        guard isNew else { return }
        if let provenance = task.metadata.provenance {
            bySource[provenance.resource, default: []].append(task.id)
        }
        if let patient = linkage.patientID {
            for code in linkage.codes { byPatientCode["\(patient) \(code)", default: []].append(task.id) }
            if let url = task.askedQuestionnaireURL { byPatientQuestionnaire["\(patient) \(url)", default: []].append(task.id) }
        }
    }

    func task(id: String) -> CareTask? { byID[id] }

    func tasks(madeFrom key: ResourceKey) -> [CareTask] { (bySource[key] ?? []).compactMap { byID[$0] } }

    func tasks(ofPatient patientID: String, withAnyCode codes: [String]) -> [CareTask] {
        var seen: Set<String> = []
        return codes.flatMap { byPatientCode["\(patientID) \($0)"] ?? [] }.filter { seen.insert($0).inserted }.compactMap { byID[$0] }
    }

    func taskForOutcome(_ key: ResourceKey) -> String? { outcomes[key] }

    func surveyTasks(ofPatient patientID: String, questionnaireURL url: String) -> [CareTask] {
        (byPatientQuestionnaire["\(patientID) \(url)"] ?? []).compactMap { byID[$0] }
    }

    /// The ids of the tasks it holds that are not Observation logs.
    var plannedTaskIDs: [String] { byID.values.filter { !$0.isObservationLog }.map(\.id) }

    /// The Observation logs of the patients `patientIDs` (entity ids), not deleted.
    func observationLogs(ofPatients patientIDs: Set<String>) -> [CareTask] {
        byID.values.filter { task in
            task.isObservationLog && task.metadata.deletedDate == nil && task.metadata.linkage.patientID.map(patientIDs.contains) == true
        }
    }
}
