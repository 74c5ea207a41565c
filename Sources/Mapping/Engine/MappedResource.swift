import CareModel
import Foundation

/// What mapping one resource produced.
public struct MappedResource: Sendable {
    public enum Result: Sendable {
        /// The entities it makes (new or current versions; the store decides added/updated/unchanged),
        /// and the outcome values it contributes.
        case mapped(entities: [CareEntity], outcomes: [OutcomeContribution])
        /// Its `delete-when` holds (entered-in-error, revoked): what it made is to be tombstoned.
        case delete
        /// Its mapping's `when` is false, or no mapping covers its type.
        case skipped(String)
        /// It cannot be mapped; nothing of it is kept.
        case failed(MappingFailure)
    }

    public let key: ResourceKey
    public let result: Result
    /// Warnings and information: what was assumed or not carried over, with where it sits.
    public let notes: [MappingNote]

    public init(key: ResourceKey, result: Result, notes: [MappingNote] = []) {
        self.key = key
        self.result = result
        self.notes = notes
    }
}

/// Values one resource (an Observation) adds to one occurrence of one task: the engine finds the task
/// and occurrence, the pipeline merges contributions into outcomes (several Observations can fill the
/// same day's log outcome), and replaces a source's earlier values when it is imported again.
public struct OutcomeContribution: Sendable, Hashable {
    public let taskID: String
    /// The task version, when not the current one (an earlier version owning the Observation's time).
    public let taskUUID: UUID?
    public let occurrence: Int
    public let values: [OutcomeValue]
    /// `Observation/id`: whose values these are.
    public let source: ResourceKey
    /// The log task to create first, when the Observation belongs to no planned task.
    public var logTask: CareTask? { sharedLogTask?.task }
    /// Whether it goes to a log task (``logTask``), without copying the task.
    public var isLogged: Bool { sharedLogTask != nil }
    /// The id of ``logTask``, without copying the task.
    public var logTaskID: String? { sharedLogTask?.task.id }
    public let provenance: Provenance
    /// The log task, held by reference: most Observations of a record go to a log, every contribution
    /// is copied several times on its way to the store, and a task copied by value is some thirty
    /// reference counts.
    private let sharedLogTask: SharedTask?

    public init(
        taskID: String, taskUUID: UUID? = nil, occurrence: Int, values: [OutcomeValue], source: ResourceKey, logTask: CareTask?, provenance: Provenance
    ) {
        self.taskID = taskID
        self.taskUUID = taskUUID
        self.occurrence = occurrence
        self.values = values
        self.source = source
        sharedLogTask = logTask.map(SharedTask.init)
        self.provenance = provenance
    }

    /// A task by reference that compares and hashes as its value, so that the contribution's own
    /// conformances stay the synthesized ones.
    private final class SharedTask: Sendable, Hashable {
        let task: CareTask
        init(_ task: CareTask) { self.task = task }
        static func == (left: SharedTask, right: SharedTask) -> Bool { left.task == right.task }
        func hash(into hasher: inout Hasher) { hasher.combine(task) }
    }
}

/// The tasks an Observation can belong to, beyond those of the current input: the importer fills it
/// from the store (tasks made by earlier imports) and from the input's own mapped tasks.
public protocol TaskCatalog: Sendable {
    /// The current version of task `id`.
    func task(id: String) -> CareTask?
    /// The tasks made from resource `key` (a CarePlan's activities, a MedicationRequest's task).
    func tasks(madeFrom key: ResourceKey) -> [CareTask]
    /// The tasks of patient `patientID` (its entity id) that carry any of `codes` (`system|code`).
    func tasks(ofPatient patientID: String, withAnyCode codes: [String]) -> [CareTask]
    /// The task whose activity names Observation `key` in its `outcomeReference`.
    func taskForOutcome(_ key: ResourceKey) -> String?
    /// The versions of task `id` before its current one, oldest first, tombstones left out: an
    /// Observation dated before the current version takes effect belongs to the one in effect then.
    func earlierVersions(of id: String) -> [CareTask]
    /// The survey tasks of patient `patientID` (its entity id) whose `userInfo.questionnaire` names the
    /// Questionnaire url `url` (any version): where a provider's QuestionnaireResponse may belong.
    func surveyTasks(ofPatient patientID: String, questionnaireURL url: String) -> [CareTask]
}

extension TaskCatalog {
    public func earlierVersions(of id: String) -> [CareTask] { [] }
    public func surveyTasks(ofPatient patientID: String, questionnaireURL url: String) -> [CareTask] { [] }
}
