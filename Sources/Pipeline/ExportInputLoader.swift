import CareModel
import FHIR
import Foundation
import Mapping
import Store
import Synchronization

/// Reads what the export of a run of outbox entries needs from the store, a few queries per run rather
/// than per outcome: the queued outcome versions, their task versions, the tasks' patients, and which
/// earlier versions of the outcomes were sent. Task versions, plans and patients are kept across runs (an
/// export touches few of them, many times).
///
/// Runs are loaded on several threads at once: the caches are guarded by a mutex, the store is read
/// outside it (two threads may read the same task once each; both get the same version).
final class ExportInputLoader: Sendable {
    /// An outbox entry whose entity cannot be found as it was queued.
    struct MissingInput: Error, CustomStringConvertible {
        let description: String
    }

    /// A care plan activity an outcome completes: `CarePlan/<id>` and the activity's path in it.
    struct ActivityCompletion: Sendable, Hashable {
        let carePlan: String
        let path: String
    }

    private let store: any Store
    /// Whether to work out which outcomes complete their activity (the mapping's `activity-status`).
    private let checksCompletion: Bool
    /// What earlier runs read, shared by the threads that load runs.
    private struct Caches {
        var tasks: [UUID: CareTask] = [:]
        /// Task versions asked for, found or not (one not found is not asked again).
        var taskVersionsRead: Set<UUID> = []
        var patientOfPlan: [String: String] = [:]
        var plansRead: Set<String> = []
        var patients: [String: Patient] = [:]
        var patientsRead: Set<String> = []

        /// The entity id of `task`'s patient.
        func patientID(of task: CareTask) -> String? {
            task.metadata.linkage.patientID ?? task.carePlanID.flatMap { patientOfPlan[$0] }
        }
    }

    private let caches = Mutex(Caches())

    init(store: any Store, checksCompletion: Bool = false) {
        self.store = store
        self.checksCompletion = checksCompletion
    }

    /// The input of each entry (its outcome version, task version and patient), or why there is none.
    func load(_ entries: [OutboxEntry]) throws -> [(input: Result<OutcomeExportInput, MissingInput>, completes: ActivityCompletion?)] {
        var versions: [UUID: Outcome] = [:]
        var history: [String: [Outcome]] = [:]
        for case .outcome(let outcome) in try store.histories(.outcome, ids: entries.map(\.entityID)) {
            versions[outcome.metadata.uuid] = outcome
            history[outcome.id, default: []].append(outcome)
        }
        let reachedProvider = try versionsThatMayHaveReached(entries, history: history)
        // Only the task versions the outcomes name: a task's other versions (a long-running task has
        // many) are never exported against, and each costs a decoding.
        let wanted = caches.withLock { caches in
            Set(versions.values.map(\.taskUUID).filter { caches.tasks[$0] == nil }).subtracting(caches.taskVersionsRead)
        }
        if !wanted.isEmpty {
            let taskIDs = Set(versions.values.compactMap { wanted.contains($0.taskUUID) ? $0.taskID : nil })
            let read = try store.taskVersions(uuids: Array(wanted), ids: Array(taskIDs))
            caches.withLock { caches in
                for task in read { caches.tasks[task.metadata.uuid] = task }
                caches.taskVersionsRead.formUnion(wanted)
            }
        }
        let runTasks = caches.withLock { caches in versions.values.compactMap { caches.tasks[$0.taskUUID] } }
        let plans = caches.withLock { caches in
            Set(runTasks.compactMap { $0.metadata.linkage.patientID == nil ? $0.carePlanID : nil }).subtracting(caches.plansRead)
        }
        if !plans.isEmpty {
            let read = try store.carePlans(EntityQuery(ids: Array(plans)))
            caches.withLock { caches in
                for plan in read { caches.patientOfPlan[plan.id] = plan.patientID }
                caches.plansRead.formUnion(plans)
            }
        }
        let patientIDs = caches.withLock { caches in Set(runTasks.compactMap(caches.patientID(of:))).subtracting(caches.patientsRead) }
        if !patientIDs.isEmpty {
            let read = try store.patients(EntityQuery(ids: Array(patientIDs)))
            caches.withLock { caches in
                for patient in read { caches.patients[patient.id] = patient }
                caches.patientsRead.formUnion(patientIDs)
            }
        }
        return try entries.map { entry in
            guard let outcome = versions[entry.entityUUID] else {
                return (.failure(MissingInput(description: "the queued version \(entry.entityUUID) of outcome \(entry.entityID) is not in the store")), nil)
            }
            let found = caches.withLock { caches -> (CareTask, Patient?)? in
                guard let task = caches.tasks[outcome.taskUUID] else { return nil }
                return (task, caches.patientID(of: task).flatMap { caches.patients[$0] })
            }
            guard let (task, patient) = found else {
                return (.failure(MissingInput(description: "its task version \(outcome.taskUUID) is not in the store")), nil)
            }
            let earlier = Self.otherVersions(of: entry, in: history)
            let atProvider = earlier.filter { reachedProvider[entry.destination]?.contains($0.metadata.uuid) == true }
            var input = OutcomeExportInput(
                outcome: outcome, task: task, patient: patient, earlierVersionMayBeAtProvider: !atProvider.isEmpty,
                derivedFrom: Self.providerObservations(of: earlier))
            input.earlierVersionsAtProvider = atProvider
            return (.success(input), checksCompletion ? try completion(by: input) : nil)
        }
    }

    /// Per destination, the other versions of the entries' outcomes (than the versions queued) that were
    /// sent to it and may be there (``OutboxEntry/mayHaveReachedDestination``): one read per destination,
    /// and none for outcomes of one version. A version made from the provider's resource does not count:
    /// the export writes its own Observation, not that resource.
    private func versionsThatMayHaveReached(_ entries: [OutboxEntry], history: [String: [Outcome]]) throws -> [String: Set<UUID>] {
        var asked: [String: Set<UUID>] = [:]
        for entry in entries {
            let others = Self.otherVersions(of: entry, in: history).filter { $0.metadata.provenance == nil }
            guard !others.isEmpty else { continue }
            asked[entry.destination, default: []].formUnion(others.map(\.metadata.uuid))
        }
        var reached: [String: Set<UUID>] = [:]
        for (destination, uuids) in asked {
            let sent = try store.outboxEntries(destination: destination, entityUUIDs: Array(uuids)).filter(\.mayHaveReachedDestination)
            reached[destination] = Set(sent.map(\.entityUUID))
        }
        return reached
    }

    /// The provider's Observations `versions` were made from (`Observation/<id>`, each once, oldest first).
    static func providerObservations(of versions: [Outcome]) -> [String] {
        var seen: Set<String> = []
        return versions.compactMap { version -> String? in
            guard let provenance = version.metadata.provenance, provenance.fhirType == "Observation", !provenance.fhirID.isEmpty else { return nil }
            let reference = "Observation/\(provenance.fhirID)"
            return seen.insert(reference).inserted ? reference : nil
        }
    }

    /// The versions of `entry`'s outcome other than the one it queued.
    private static func otherVersions(of entry: OutboxEntry, in history: [String: [Outcome]]) -> [Outcome] {
        (history[entry.entityID] ?? []).filter { $0.metadata.uuid != entry.entityUUID }
    }

    /// The care plan activity `input`'s outcome completes: its task was made from a CarePlan's activity
    /// with a `detail` (whose status can say so), its schedule is finite, and every occurrence now has
    /// an outcome. A deletion completes nothing.
    private func completion(by input: OutcomeExportInput) throws -> ActivityCompletion? {
        let task = input.task
        guard input.outcome.metadata.deletedDate == nil, let provenance = task.metadata.provenance, provenance.fhirType == "CarePlan",
              let path = task.metadata.linkage.elementPath, path.hasPrefix("CarePlan.activity["),
              let count = task.schedule.occurrenceCount, count > 0, let end = task.schedule.endDate,
              let patientID = caches.withLock({ $0.patientID(of: task) })
        else { return nil }
        let events = try store.events(patientID: patientID, in: DateInterval(start: task.schedule.startDate, end: max(end, task.schedule.startDate.addingTimeInterval(1))))
        let done = events.filter { $0.task.id == task.id && $0.outcome != nil }.count
        guard done >= count, try activityHasDetail(path, carePlanID: provenance.fhirID) else { return nil }
        return ActivityCompletion(carePlan: "CarePlan/\(provenance.fhirID)", path: path)
    }

    /// Whether the activity at `path` (`CarePlan.activity[1]`) of CarePlan `carePlanID`, as last received,
    /// has a `detail`: as the import recorded it beside the CarePlan it kept.
    private func activityHasDetail(_ path: String, carePlanID: String) throws -> Bool {
        if let recorded = try store.activitiesWithDetail(resourceType: "CarePlan", resourceID: carePlanID) {
            return recorded.contains(path)
        }
        return try Self.unrecordedActivityHasDetail(path, in: store.sourceResources(resourceType: "CarePlan", resourceID: carePlanID).last)
    }

    /// Whether the activity at `path` of the CarePlan kept in `source` has a `detail`, for a CarePlan kept
    /// before stores recorded it (``SourceResource/activitiesWithDetail`` nil): read from the CarePlan as
    /// received, by the rule the import records it with (``MappingStage/activitiesWithDetail(of:)``). A
    /// CarePlan an import keeps since carries the answer and never comes here.
    private static func unrecordedActivityHasDetail(_ path: String, in source: SourceResource?) throws -> Bool {
        guard let source else { return false }
        let plan = source.format == "xml" ? try FHIRXML.read(source.body) : try FHIRJSON.read(source.body)
        return MappingStage.activitiesWithDetail(of: plan).contains(path)
    }
}
