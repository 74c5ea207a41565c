import CareModel
import Mapping
import Store

/// The tasks an import's Observations can belong to: those the input makes, and those earlier imports
/// left in the store, indexed by the resource they came from and by patient.
// Unchecked: filled and read by one thread at a time (the import's planner, between its passes); it
// crosses to a worker thread only when that thread alone owns it for a pass.
final class ImportTaskCatalog: TaskCatalog, @unchecked Sendable {
    private var byID: [String: CareTask] = [:]
    private var bySource: [ResourceKey: [String]] = [:]
    /// Task ids by patient and code.
    private var byPatientCode: [String: [String]] = [:]
    private var outcomes: [ResourceKey: String] = [:]
    /// The stored tasks the input has not made again (yet).
    private var storedOnly: Set<String> = []
    /// The resources the input has made tasks of.
    private var remade: Set<ResourceKey> = []

    /// An empty catalog.
    init() {}

    /// Loads the current tasks of `store` that carry a patient (tasks made by imports).
    init(store: any Store) throws {
        for task in try store.tasks(.current) {
            insert(task)
            storedOnly.insert(task.id)
        }
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
            if let patient = task.metadata.linkage.patientID {
                for code in task.metadata.linkage.codes { byPatientCode["\(patient) \(code)"]?.removeAll { $0 == id } }
            }
            for key in task.metadata.linkage.outcomeReferences where outcomes[key] == id { outcomes[key] = nil }
        }
    }

    private func insert(_ task: CareTask) {
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
        }
    }

    func task(id: String) -> CareTask? { byID[id] }

    func tasks(madeFrom key: ResourceKey) -> [CareTask] { (bySource[key] ?? []).compactMap { byID[$0] } }

    func tasks(ofPatient patientID: String, withAnyCode codes: [String]) -> [CareTask] {
        var seen: Set<String> = []
        return codes.flatMap { byPatientCode["\(patientID) \($0)"] ?? [] }.filter { seen.insert($0).inserted }.compactMap { byID[$0] }
    }

    func taskForOutcome(_ key: ResourceKey) -> String? { outcomes[key] }

    /// The Observation logs of the patients `patientIDs` (entity ids), not deleted.
    func observationLogs(ofPatients patientIDs: Set<String>) -> [CareTask] {
        byID.values.filter { task in
            task.isObservationLog && task.metadata.deletedDate == nil && task.metadata.linkage.patientID.map(patientIDs.contains) == true
        }
    }
}
