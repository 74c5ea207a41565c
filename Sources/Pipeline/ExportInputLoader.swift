import CareModel
import Foundation
import Mapping
import Store

/// Reads what the export of a run of outbox entries needs from the store, a few queries per run rather
/// than per outcome: the queued outcome versions, their task versions, and the tasks' patients. Task
/// versions, plans and patients are kept across runs (an export touches few of them, many times).
final class ExportInputLoader {
    /// An outbox entry whose entity cannot be found as it was queued.
    struct MissingInput: Error, CustomStringConvertible {
        let description: String
    }

    private let store: any Store
    private var tasks: [UUID: CareTask] = [:]
    private var tasksRead: Set<String> = []
    private var patientOfPlan: [String: String] = [:]
    private var plansRead: Set<String> = []
    private var patients: [String: Patient] = [:]
    private var patientsRead: Set<String> = []

    init(store: any Store) {
        self.store = store
    }

    /// The input of each entry (its outcome version, task version and patient), or why there is none.
    func load(_ entries: [OutboxEntry]) throws -> [Result<OutcomeExportInput, MissingInput>] {
        var versions: [UUID: Outcome] = [:]
        for case .outcome(let outcome) in try store.histories(.outcome, ids: entries.map(\.entityID)) {
            versions[outcome.metadata.uuid] = outcome
        }
        let wanted = Set(versions.values.compactMap { tasks[$0.taskUUID] == nil ? $0.taskID : nil }).subtracting(tasksRead)
        if !wanted.isEmpty {
            for case .task(let task) in try store.histories(.task, ids: Array(wanted)) { tasks[task.metadata.uuid] = task }
            tasksRead.formUnion(wanted)
        }
        let plans = Set(tasks.values.compactMap { $0.metadata.userInfo?[UserInfoKey.patient] == nil ? $0.carePlanID : nil }).subtracting(plansRead)
        if !plans.isEmpty {
            for plan in try store.carePlans(EntityQuery(ids: Array(plans))) { patientOfPlan[plan.id] = plan.patientID }
            plansRead.formUnion(plans)
        }
        let patientIDs = Set(versions.values.compactMap { tasks[$0.taskUUID].flatMap(patientID(of:)) }).subtracting(patientsRead)
        if !patientIDs.isEmpty {
            for patient in try store.patients(EntityQuery(ids: Array(patientIDs))) { patients[patient.id] = patient }
            patientsRead.formUnion(patientIDs)
        }
        return entries.map { entry in
            guard let outcome = versions[entry.entityUUID] else {
                return .failure(MissingInput(description: "the queued version \(entry.entityUUID) of outcome \(entry.entityID) is not in the store"))
            }
            guard let task = tasks[outcome.taskUUID] else {
                return .failure(MissingInput(description: "its task version \(outcome.taskUUID) is not in the store"))
            }
            return .success(OutcomeExportInput(outcome: outcome, task: task, patient: patientID(of: task).flatMap { patients[$0] }))
        }
    }

    private func patientID(of task: CareTask) -> String? {
        task.metadata.userInfo?[UserInfoKey.patient] ?? task.carePlanID.flatMap { patientOfPlan[$0] }
    }
}
