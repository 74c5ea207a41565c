import CareModel
import Foundation

/// What the app server needs of a store beyond ``Store``: the per-patient revision log of CareKit's
/// knowledge-vector sync, and the audit trail of the app API.
///
/// Every write that changes a patient's entities (``Store/apply(_:)``: imports, syncs, the command line)
/// files the versions it writes in that patient's log in the same transaction, stamped with the store's
/// clock (see ``RevisionStamp``); the app server reads the log back with ``revisions(patientID:afterClock:maxEntities:including:)``.
///
/// ## Topics
///
/// - ``serverClock()``
/// - ``revisions(patientID:afterClock:maxEntities:knownBy:including:)``
/// - ``patientExists(_:)``, ``currentCarePlans(patientID:)``
/// - the audit trail: ``AuditTrailStore``
public protocol AppSyncStore: Store, AuditTrailStore {
    /// The store's process uuid and its clock now.
    func serverClock() throws -> ServerClock
    /// The revisions of patient `patientID` stamped after `afterClock` that `including` accepts, oldest
    /// first, whole revisions until `maxEntities` entities are read; with the store's clock and the
    /// patient's device clocks, all read in one snapshot.
    ///
    /// `device`, when given, is the knowledge vector of the device that asks (process uuid -> clock):
    /// the store may then leave unread the stamps that are certainly less than it (CareKit's rule:
    /// they are not sent), so that an up-to-date device costs an index lookup, not a scan of its log.
    /// What `including` is given and what comes back are the same as without it.
    func revisions(
        patientID: String, afterClock: Int, maxEntities: Int, knownBy device: [UUID: Int]?, including: (RevisionStamp) -> Bool
    ) throws -> RevisionLogRead
    /// The revisions of patient `patientID` stamped after `afterClock` that a device of knowledge vector
    /// `device` has not seen by CareKit's rule (a revision whose vector is not less than the device's), as
    /// ``revisions(patientID:afterClock:maxEntities:knownBy:including:)`` reads them: the store's own
    /// process taken from the same snapshot, so a pull is one read.
    func revisions(patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector) throws -> RevisionLogRead
    /// ``revisions(patientID:afterClock:maxEntities:unseenBy:)`` when the store has a current version of
    /// patient `patientID` (``patientExists(_:)``), nil when it has none: both from one snapshot, so that a
    /// pull that checks its patient is one read, not two.
    func revisionsOfExistingPatient(patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector) throws -> RevisionLogRead?
    /// Retires the device processes of patient `patientID` (nil: of every patient whose vector serves more
    /// than ``DeviceKnowledgeLimits/processesPerPatient``): the vector serves none of them any more. A
    /// device that knows one is still answered with its clock; its next push that carries it serves it
    /// again.
    func retireDeviceProcesses(patientID: String?) throws -> [RetiredKnowledge]
    /// Whether the store has a current (not deleted) version of patient `id`: an indexed read, no decoding.
    func patientExists(_ id: String) throws -> Bool
    /// The current care plans of patient `patientID` (an indexed read: the store's other care plans are
    /// not decoded).
    func currentCarePlans(patientID: String) throws -> [CarePlan]
    /// A day view's reads from one snapshot: the current version of patient `patientID` (nil when the store
    /// has none), the events of the interval `day` gives for that version, and the patient's current care
    /// plans. One read, not three.
    func dayView(patientID: String, day: (Patient) throws -> DateInterval) throws -> DayViewRead?
    /// The current tasks of no care plan (medication orders, Observation logs) whose FHIR linkage names
    /// patient `patientID`.
    func currentTasksOfNoCarePlan(patientID: String) throws -> [CareTask]
    /// The store's file, for a server's readiness check (``StoreFileWatch``); nil for a store in memory.
    var storeFilePath: String? { get }
}

extension AppSyncStore {
    /// ``revisions(patientID:afterClock:maxEntities:knownBy:including:)`` reading every stamp after `afterClock`.
    public func revisions(
        patientID: String, afterClock: Int, maxEntities: Int, including: (RevisionStamp) -> Bool
    ) throws -> RevisionLogRead {
        try revisions(patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, knownBy: nil, including: including)
    }

}

/// The store's identity in CareKit's sync: one process of the knowledge vector, with its logical clock.
public struct ServerClock: Sendable, Equatable {
    public var processUUID: UUID
    public var clock: Int

    public init(processUUID: UUID, clock: Int) {
        self.processUUID = processUUID
        self.clock = clock
    }
}

/// The stamp of one transaction in one patient's log: the store's clock then, and the device clocks the
/// patient's devices had taught the store. Together (plus the store's process at `serverClock`) they are
/// the knowledge vector of the revision record the transaction makes.
public struct RevisionStamp: Sendable, Equatable {
    public var serverClock: Int
    /// Device process uuid -> clock.
    public var deviceClocks: [UUID: Int]

    public init(serverClock: Int, deviceClocks: [UUID: Int]) {
        self.serverClock = serverClock
        self.deviceClocks = deviceClocks
    }

    /// The knowledge vector, as process uuid -> clock, with the store's own process `server`.
    public func vector(server: UUID) -> [UUID: Int] {
        var vector = deviceClocks
        vector[server] = serverClock
        return vector
    }
}

/// One transaction of a patient's log: its stamp and the versions it wrote, in the order written.
public struct StoredRevision: Sendable {
    public var stamp: RevisionStamp
    public var entities: [CareEntity]

    public init(stamp: RevisionStamp, entities: [CareEntity]) {
        self.stamp = stamp
        self.entities = entities
    }
}

/// What ``AppSyncStore/revisions(patientID:afterClock:maxEntities:knownBy:including:)`` read.
public struct RevisionLogRead: Sendable {
    public var revisions: [StoredRevision]
    /// Whether revisions beyond those read are accepted too (the next read starts after the last one's clock).
    public var hasMore: Bool
    public var server: ServerClock
    /// The device clocks the patient's devices taught the store, that its vector serves.
    public var deviceClocks: [UUID: Int]
    /// Of the processes of the asking device's vector that `deviceClocks` lacks, those a repair retired,
    /// with the clock the store had learnt (``AppSyncStore/retireDeviceProcesses(patientID:)``).
    public var retiredClocks: [UUID: Int] = [:]

    public init(revisions: [StoredRevision], hasMore: Bool, server: ServerClock, deviceClocks: [UUID: Int], retiredClocks: [UUID: Int] = [:]) {
        self.revisions = revisions
        self.hasMore = hasMore
        self.server = server
        self.deviceClocks = deviceClocks
        self.retiredClocks = retiredClocks
    }
}

/// One request of the app API that touched, or tried to touch, patient data.
public struct AuditEntry: Sendable, Equatable, Codable {
    public var id: Int64?
    public var date: Date
    /// The token's subject (nil when no valid token came with the request).
    public var subject: String?
    /// The patient the token is bound to.
    public var patientID: String?
    /// What was asked: the method and path (`GET /carekit/v1/tasks`).
    public var action: String
    /// The HTTP status of the answer (0: a write not answered, ``AuditEntry/unansweredStatus``).
    public var status: Int
    /// What came of it (counts, or the reason of a refusal); never patient data.
    public var detail: String?
    /// The network address (IP) of the client the request came from, when known: nil for entries of the
    /// command line and of trails older than the column.
    public var clientAddress: String?

    public init(
        id: Int64? = nil, date: Date, subject: String?, patientID: String?, action: String, status: Int, detail: String?, clientAddress: String? = nil
    ) {
        self.id = id
        self.date = date
        self.subject = subject
        self.patientID = patientID
        self.action = action
        self.status = status
        self.detail = detail
        self.clientAddress = clientAddress
    }
}

/// What ``AppSyncStore/dayView(patientID:day:)`` reads, from one snapshot.
public struct DayViewRead: Sendable {
    public var patient: Patient
    public var events: [Event]
    public var carePlans: [CarePlan]

    public init(patient: Patient, events: [Event], carePlans: [CarePlan]) {
        self.patient = patient
        self.events = events
        self.carePlans = carePlans
    }
}
