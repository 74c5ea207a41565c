import CareModel
import Foundation
import GRDB

/// Appends to the per-patient revision log, inside the transaction of the batch that writes the versions.
///
/// The store is one process of CareKit's knowledge-vector sync: it has a process uuid and a logical clock
/// (`syncClock`). A transaction that writes entity versions ticks the clock once, on its first version,
/// and files each version under its patient (`revision`); each patient it touched gets one stamp
/// (`revisionStamp`): the clock, with the device clocks that patient's devices have taught the store (those
/// its vector serves: ``DeviceKnowledgePush``),
/// which together are the knowledge vector of the revision record the transaction makes for that patient.
/// A batch may end a revision within its transaction (``StoreBatch/endRevision()``): the versions after
/// it are filed as a transaction of their own would file them (``endRevision()``).
///
/// A version is filed under the patient it belongs to: a patient under itself, a care plan under its
/// patient, a task or contact under its care plan's patient, a task or contact of no care plan (a
/// medication order, an Observation log, a RelatedPerson) under the patient of its FHIR linkage
/// (``FHIRLinkage/patientID``), an outcome under its task's. A version that belongs to no patient (a
/// contact of no care plan and no patient: a practitioner several patients may share) is in no patient's log.
struct RevisionLog {
    private let db: Database
    /// The clock of this transaction, once it has written a version.
    private var clock: Int64?
    /// The patients stamped in this transaction (ids as the store compares them: ``ByteExactID``).
    private var stamped: Set<ByteExactID> = []
    /// Care plan id -> patient id, and task version -> patient id, as this transaction found them.
    private var carePlanPatients: [ByteExactID: String?] = [:]
    private var taskPatients: [UUID: String?] = [:]

    init(db: Database) {
        self.db = db
    }

    /// What a new version says about its patient.
    enum Owner {
        case patient(String)
        case carePlan(patientID: String?)
        /// A task or contact: its care plan's patient, else the patient its linkage names.
        case inCarePlan(String?, linkedPatient: String?)
        case taskVersion(UUID)
    }

    /// Files version `uuid` of `kind`, stored at `rowID` of its table, under the patient `owner` leads to.
    mutating func append(_ kind: EntityKind, uuid: UUID, rowID: Int64, owner: Owner) throws {
        guard let patientID = try patient(of: owner) else { return }
        let clock = try tick()
        if stamped.insert(ByteExactID(patientID)).inserted {
            try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO revisionStamp (patientID, serverClock, processes)
                SELECT ?, ?, (SELECT json_group_array(json_object('id', processID, 'clock', clock))
                              FROM patientKnowledge WHERE patientID = ? AND served = 1)
                """).execute(arguments: [patientID, clock, patientID])
        }
        // Bound directly: this runs once per version written (every outcome of an import).
        let insert = RawStatement(
            try db.cachedStatement(sql: "INSERT INTO revision (patientID, serverClock, entityKind, entityUUID, entityRowID) VALUES (?, ?, ?, ?, ?)"),
            in: db)
        insert.bind(1, patientID)
        insert.bind(2, clock)
        insert.bind(3, kind.rawValue)
        insert.bind(4, uuid)
        insert.bind(5, rowID)
        try insert.execute()
    }

    /// Ends this transaction's revision (``StoreBatch/endRevision()``): the next version written ticks the
    /// clock again and stamps its patient again. What it learnt of patients stays true.
    mutating func endRevision() {
        clock = nil
        stamped = []
    }

    /// Forgets what this transaction learnt of care plan `id` (a new version may name another patient).
    mutating func carePlanChanged(_ id: String) {
        carePlanPatients[ByteExactID(id)] = nil
        taskPatients.removeAll()
    }

    /// The store's clock for this transaction: ticked once, on the first version written.
    private mutating func tick() throws -> Int64 {
        if let clock { return clock }
        // A cached statement: parsing it again cost about 100,000 instructions, once per transaction (and per
        // revision a batch ends: a long-running task's versions). The cursor resets it once read.
        let next = try Int64.fetchOne(db.cachedStatement(sql: "UPDATE syncClock SET clock = clock + 1 RETURNING clock")) ?? 0
        clock = next
        return next
    }

    /// The patient a version of task `uuid` is filed under (nil: none, or no such version).
    mutating func patient(ofTaskVersion uuid: UUID) throws -> String? {
        try patient(of: .taskVersion(uuid))
    }

    private mutating func patient(of owner: Owner) throws -> String? {
        switch owner {
        case .patient(let id): return id
        case .carePlan(let patientID): return patientID
        case .inCarePlan(let carePlanID, let linkedPatient): return try carePlanID.flatMap { try patient(ofCarePlan: $0) } ?? linkedPatient
        case .taskVersion(let uuid):
            if let known = taskPatients[uuid] { return known }
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT carePlanID, json_extract(payload, ?) AS linkedPatient FROM task WHERE uuid = ?"),
                arguments: [FHIRLinkage.patientJSONPath, uuid])
            let carePlanID: String? = row?["carePlanID"]
            let found = try carePlanID.flatMap { try patient(ofCarePlan: $0) } ?? row?["linkedPatient"]
            taskPatients[uuid] = .some(found)
            return found
        }
    }

    private mutating func patient(ofCarePlan id: String) throws -> String? {
        if let known = carePlanPatients[ByteExactID(id)] { return known }
        let found = try String.fetchOne(
            db.cachedStatement(sql: "SELECT patientID FROM carePlan WHERE id = ? AND nextVersionUUID IS NULL"), arguments: [id])
        carePlanPatients[ByteExactID(id)] = .some(found)
        return found
    }
}
