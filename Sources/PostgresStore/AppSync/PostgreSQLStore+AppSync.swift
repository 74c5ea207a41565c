import CareModel
import Foundation
import PostgresNIO
import Store

// What the app server needs of the store (``AppSyncStore``), with the SQLite store's semantics
// (SQLiteStore+Revisions.swift, SQLiteStore+DeviceKnowledge.swift, EventQuery.swift's day view): each read
// is one snapshot, shared by every `caregate serve` instance on the database. The audit trail is
// PostgreSQLStore+AuditTrail.swift's.
extension PostgreSQLStore: AppSyncStore {
    /// No file: the database is the server's (a readiness check asks the database).
    public var storeFilePath: String? { nil }

    public func serverClock() throws -> ServerClock {
        try PostgresServerClock.serverClock(in: database)
    }

    public func revisions(
        patientID: String, afterClock: Int, maxEntities: Int, knownBy device: [UUID: Int]?, including: (RevisionStamp) -> Bool
    ) throws -> RevisionLogRead {
        try withoutActuallyEscaping(including) { including in
            try CallerBound.lend({ (stamp: RevisionStamp, _: ServerClock) in including(stamp) }) { rule in
                try revisions(patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, knownBy: device, rule)
            }
        }
    }

    public func revisions(patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector) throws -> RevisionLogRead {
        try CallerBound.lend(Self.unseen(by: device)) { rule in
            try revisions(patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, knownBy: device.processes, rule)
        }
    }

    public func revisionsOfExistingPatient(
        patientID: String, afterClock: Int, maxEntities: Int, unseenBy device: KnowledgeVector
    ) throws -> RevisionLogRead? {
        let logger = Self.logger
        return try CallerBound.lend(Self.unseen(by: device)) { rule in
            try readSnapshot { connection in
                guard try await Self.patientExists(patientID, on: connection) else { return nil }
                return try await ReadRevisionLog(connection: connection, logger: logger).read(
                    patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, knownBy: device.processes, including: rule)
            }
        }
    }

    /// CareKit's rule: a revision is sent unless its vector is less than the device's.
    private static func unseen(by device: KnowledgeVector) -> (RevisionStamp, ServerClock) -> Bool {
        { stamp, server in !(KnowledgeVector(stamp.vector(server: server.processUUID)) < device) }
    }

    /// The log read in one snapshot.
    private func revisions(
        patientID: String, afterClock: Int, maxEntities: Int, knownBy device: [UUID: Int]?, _ including: CallerBound<(RevisionStamp, ServerClock) -> Bool>
    ) throws -> RevisionLogRead {
        let logger = Self.logger
        return try readSnapshot { connection in
            try await ReadRevisionLog(connection: connection, logger: logger).read(
                patientID: patientID, afterClock: afterClock, maxEntities: maxEntities, knownBy: device, including: including)
        }
    }

    public func patientExists(_ id: String) throws -> Bool {
        try readStatement { connection in try await Self.patientExists(id, on: connection) }
    }

    private static func patientExists(_ id: String, on connection: PostgresConnection) async throws -> Bool {
        try await connection.values(
            "SELECT EXISTS (SELECT 1 FROM patient WHERE id = \(id) AND next_version_uuid IS NULL AND deleted_date IS NULL)", as: Bool.self,
            logger: logger
        ).first ?? false
    }

    public func currentCarePlans(patientID: String) throws -> [CarePlan] {
        let plans = try Self.carePlans(of: patientID)
        let logger = Self.logger
        return try readStatement { connection in
            try await plans.fetch(on: connection, logger: logger).compactMap { if case .carePlan(let value) = $0 { value } else { nil } }
        }
    }

    /// The current care plans of `patientID`.
    private static func carePlans(of patientID: String) throws -> ReadEntityQuery {
        var plans = try ReadEntityQuery(.carePlan, .current)
        try plans.and { "patient_id = \(try $0.bind(patientID))" }
        return plans
    }

    public func currentTasksOfNoCarePlan(patientID: String) throws -> [CareTask] {
        var filter = try ReadEntityQuery(.task, .current)
        try filter.and { "care_plan_id IS NULL AND linked_patient_id = \(try $0.bind(patientID))" }
        let logger = Self.logger
        return try readStatement { [filter] connection in
            try await filter.fetch(on: connection, logger: logger).compactMap { if case .task(let value) = $0 { value } else { nil } }
        }
    }

    /// `day`'s own error (the app server's 400 for a bad date or zone) reaches the caller as it threw it, as
    /// from SQLite's (``CallerThrew``), not as the server's.
    public func dayView(patientID: String, day: (Patient) throws -> DateInterval) throws -> DayViewRead? {
        let patients = try ReadEntityQuery(.patient, EntityQuery(ids: [patientID]))
        let plans = try Self.carePlans(of: patientID)
        let logger = Self.logger
        return try withoutActuallyEscaping(day) { day in
            try CallerBound.lend(day) { day in
                try readSnapshot { connection -> DayViewRead? in
                    guard case .patient(let patient)? = try await patients.fetch(on: connection, logger: logger).first else { return nil }
                    let interval = try CallerThrew.marking { try day.value()(patient) }
                    let events = try await ReadEvents(connection: connection, logger: logger).events(patientID: patientID, in: interval)
                    let carePlans = try await plans.fetch(on: connection, logger: logger).compactMap { if case .carePlan(let value) = $0 { value } else { nil } }
                    return DayViewRead(patient: patient, events: events, carePlans: carePlans)
                }
            }
        }
    }
}
