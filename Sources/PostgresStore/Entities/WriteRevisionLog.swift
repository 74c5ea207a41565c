import CareModel
import Foundation
import Logging
import PostgresNIO
import Store

/// The per-patient revision log of a PostgreSQL store, written in the transaction of the batch that writes
/// the versions (the SQLite store's RevisionLog.swift, ported).
///
/// The store is one process of CareKit's knowledge-vector sync (``PostgresServerClock``). A batch that
/// writes versions files each under its patient (`revision`), and each patient it touched gets one stamp
/// (`revision_stamp`): the clock, with the device clocks that patient's served devices had taught the store
/// when its first version of the batch was filed. The SQLite store ticks the clock at the first version; here
/// the versions are kept and filed at ``finish()``, which ticks once, just before the commit: the clock's
/// row lock (held until the commit) then serializes only the end of each writing transaction.
///
/// A version is filed under the patient it belongs to: a patient under itself, a care plan under its
/// patient, a task or contact under its care plan's patient, one of no care plan under the patient of its
/// FHIR linkage, an outcome under its task's. A version that belongs to no patient is in no patient's log.
final class PostgresRevisionLog {
    private let connection: PostgresConnection
    private let logger: Logger
    /// The versions filed by this transaction, in order: patient, kind, uuid, row id.
    private var patients: [String] = []
    private var kinds: [String] = []
    private var entityUUIDs: [UUID] = []
    private var rowIDs: [Int64] = []
    /// The stamps of this transaction, per patient in the order first filed: the device clocks as JSON.
    private var stampOrder: [ByteExactID] = []
    private var stamps: [ByteExactID: String] = [:]
    /// Care plan id -> patient id, and task version -> patient id, as this transaction found them.
    private var carePlanPatients: [ByteExactID: String?] = [:]
    private var taskPatients: [UUID: String?] = [:]

    /// Whether the stamps' device clocks may be read at ``finish()`` rather than at each patient's first
    /// version: when the batch teaches no device clocks, they are the same then.
    var readsClocksAtTheEnd = false
    /// Run before each read of an entity table: the writer's rows still waiting are written first.
    var beforeRead: () async throws -> Void = {}

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
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
    func append(_ kind: EntityKind, uuid: UUID, rowID: Int64, owner: Owner) async throws {
        guard let patientID = try await patient(of: owner) else { return }
        // Ids as the database compares them (``ByteExactID``): canonically equivalent ids are two patients.
        let key = ByteExactID(patientID)
        if stamps[key] == nil {
            stamps[key] = readsClocksAtTheEnd ? "" : try await servedClocks(patientID: patientID)
            stampOrder.append(key)
        }
        patients.append(patientID)
        kinds.append(kind.rawValue)
        entityUUIDs.append(uuid)
        rowIDs.append(rowID)
    }

    /// Care plan `id` has a new version, of patient `patientID`: what this transaction learnt of its tasks'
    /// patients is forgotten (the new version may name another patient).
    func carePlanChanged(_ id: String, patientID: String?) {
        carePlanPatients[ByteExactID(id)] = .some(patientID)
        taskPatients.removeAll()
    }

    /// Ends the revision the batch's versions so far make (``StoreBatch/endRevision()``): they are filed
    /// under a tick of their own now, and the versions after start a revision of their own, stamped again,
    /// as a transaction of their own would file them (the SQLite store's `RevisionLog.endRevision()`).
    func endRevision() async throws {
        try await finish()
        stamps = [:]
        stampOrder = []
    }

    /// Ticks the clock and writes the stamps and revisions, when the transaction filed any version.
    func finish() async throws {
        guard !patients.isEmpty else { return }
        let unread = stampOrder.filter { stamps[$0] == "" }.map(\.id)
        if !unread.isEmpty {
            for (patientID, clocks) in try await servedClocks(patientIDs: unread) { stamps[patientID] = clocks }
        }
        let clock = try await PostgresServerClock.tick(on: connection)
        try await connection.finish("""
            INSERT INTO revision_stamp (patient_id, server_clock, processes)
            SELECT patient_id, \(clock), processes FROM unnest(\(stampOrder.map(\.id))::text[], \(stampOrder.map { stamps[$0] ?? "[]" })::text[]) AS t(patient_id, processes)
            ON CONFLICT DO NOTHING
            """, logger: logger)
        for start in stride(from: 0, to: patients.count, by: PostgresBatchWriter.rowsPerStatement) {
            let range = start..<min(start + PostgresBatchWriter.rowsPerStatement, patients.count)
            try await connection.finish("""
                INSERT INTO revision (patient_id, server_clock, entity_kind, entity_uuid, entity_row_id)
                SELECT patient_id, \(clock), entity_kind, entity_uuid, entity_row_id
                FROM unnest(\(Array(patients[range]))::text[], \(Array(kinds[range]))::text[], \(Array(entityUUIDs[range]))::uuid[],
                            \(Array(rowIDs[range]))::int8[]) WITH ORDINALITY AS t(patient_id, entity_kind, entity_uuid, entity_row_id, position)
                ORDER BY position
                """, logger: logger)
        }
        patients = []
        kinds = []
        entityUUIDs = []
        rowIDs = []
    }

    /// The device clocks patient `patientID`'s vector serves, as the SQLite store's stamps keep them:
    /// `[{"id":"<process>","clock":<n>},...]` in the order of the process ids' bytes.
    private func servedClocks(patientID: String) async throws -> String {
        let rows = try await connection.query(
            "SELECT process_id, clock FROM patient_knowledge WHERE patient_id = \(patientID) AND served ORDER BY process_id COLLATE \"C\"",
            logger: logger)
        var entries: [String] = []
        for try await (process, clock) in rows.decode((String, Int64).self) {
            entries.append("{\"id\":\(Self.jsonString(process)),\"clock\":\(clock)}")
        }
        return "[" + entries.joined(separator: ",") + "]"
    }

    /// ``servedClocks(patientID:)`` of each of `patientIDs`, in one statement.
    private func servedClocks(patientIDs: [String]) async throws -> [ByteExactID: String] {
        let rows = try await connection.query("""
            SELECT patient_id, process_id, clock FROM patient_knowledge WHERE patient_id = ANY(\(patientIDs)::text[]) AND served
            ORDER BY patient_id, process_id COLLATE "C"
            """, logger: logger)
        var entries: [ByteExactID: [String]] = [:]
        for try await (patientID, process, clock) in rows.decode((String, String, Int64).self) {
            entries[ByteExactID(patientID), default: []].append("{\"id\":\(Self.jsonString(process)),\"clock\":\(clock)}")
        }
        return Dictionary(patientIDs.map(ByteExactID.init).map { ($0, "[" + (entries[$0] ?? []).joined(separator: ",") + "]") }) { first, _ in first }
    }

    /// `text` as a JSON string (process ids are uuids, but nothing is assumed).
    static func jsonString(_ text: String) -> String {
        let data = (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The patient a version of task `uuid` is filed under (nil: none, or no such version).
    func patient(ofTaskVersion uuid: UUID) async throws -> String? {
        try await patient(of: .taskVersion(uuid))
    }

    private func patient(of owner: Owner) async throws -> String? {
        switch owner {
        case .patient(let id): return id
        case .carePlan(let patientID): return patientID
        case .inCarePlan(let carePlanID, let linkedPatient):
            if let carePlanID, let patient = try await patient(ofCarePlan: carePlanID) { return patient }
            return linkedPatient
        case .taskVersion(let uuid):
            if let known = taskPatients[uuid] { return known }
            try await beforeRead()
            let rows = try await connection.query("SELECT care_plan_id, linked_patient_id FROM task WHERE uuid = \(uuid)", logger: logger)
            var row: (String?, String?)?
            for try await found in rows.decode((String?, String?).self) { row = found }
            var found: String?
            if let carePlanID = row?.0 { found = try await patient(ofCarePlan: carePlanID) }
            if found == nil { found = row?.1 ?? nil }
            taskPatients[uuid] = .some(found)
            return found
        }
    }

    private func patient(ofCarePlan id: String) async throws -> String? {
        if let known = carePlanPatients[ByteExactID(id)] { return known }
        try await beforeRead()
        let found = try await connection.values(
            "SELECT patient_id FROM care_plan WHERE id = \(id) AND next_version_uuid IS NULL ORDER BY row_id LIMIT 1", as: String?.self, logger: logger
        ).first ?? nil
        carePlanPatients[ByteExactID(id)] = .some(found)
        return found
    }
}
