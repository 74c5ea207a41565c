import CareModel
import Foundation
import PostgresNIO
import Store

/// What the writer reads of the store (the SQLite store's BatchWriter+Lookups.swift, ported): the tip of an
/// id, whether a uuid or id exists, the references a version names, and the patient a version belongs to.
extension PostgresBatchWriter {
    func tip(_ kind: EntityKind, id: String) async throws -> Tip? {
        if let known = known.tip(kind, id: id) { return known.value }
        try await flushPending()
        let rows = try await connection.query("""
            SELECT row_id, uuid, effective_date, deleted_date, content_hash FROM \(unescaped: PostgresEntitySchema.table(kind))
            WHERE id = \(id) AND next_version_uuid IS NULL ORDER BY row_id LIMIT 1
            """, logger: logger)
        var found: Tip?
        for try await (rowID, uuid, effective, deleted, hash) in rows.decode((Int64, UUID, Double, Double?, String?).self) {
            found = Tip(
                rowID: rowID, uuid: uuid, effectiveDate: Date(timeIntervalSince1970: effective),
                deletedDate: deleted.map(Date.init(timeIntervalSince1970:)), contentHash: hash)
        }
        known.tips[kind, default: [:]][ByteExactID(id)] = found.map { .present($0) } ?? .absent
        return found
    }

    /// The tip of an outcome, the newest when it has several (the others in its `others`).
    func outcomeTip(taskUUID: UUID, eventStart: Date, occurrence: Int) async throws -> Tip? {
        let key = KnownState.OutcomeKey(taskUUID: taskUUID, eventStart: eventStart.timeIntervalSince1970, occurrence: occurrence)
        if let known = known.outcomeTips[key] { return known.value }
        if known.newTaskVersions.contains(taskUUID), !known.outcomesToRead.contains(key) { return nil }
        let tips = try await outcomeVersions(taskUUID: taskUUID, eventStart: eventStart, occurrence: occurrence, tipsOnly: true).map(\.version)
        let newest = Self.newestTip(of: tips)
        known.outcomeTips[key] = newest.map { .present($0) } ?? .absent
        return newest
    }

    /// The stored versions of an outcome (or its tips only), in arrival order, each with whether it is a
    /// tip and whether a provider's resource made it.
    func outcomeVersions(
        taskUUID: UUID, eventStart: Date, occurrence: Int, tipsOnly: Bool = false
    ) async throws -> [(version: Tip, isTip: Bool, fromProvider: Bool)] {
        try await flushPending()
        let rows = try await connection.query("""
            SELECT row_id, uuid, effective_date, deleted_date, content_hash, version_number, next_version_uuid IS NULL, fhir_type IS NOT NULL
            FROM outcome WHERE task_uuid = \(taskUUID) AND event_start = \(eventStart.timeIntervalSince1970) AND occurrence_index = \(occurrence)
            \(unescaped: tipsOnly ? "AND next_version_uuid IS NULL" : "") ORDER BY version_number
            """, logger: logger)
        var versions: [(version: Tip, isTip: Bool, fromProvider: Bool)] = []
        for try await (rowID, uuid, effective, deleted, hash, number, isTip, fromProvider)
            in rows.decode((Int64, UUID, Double, Double?, String?, Int32, Bool, Bool).self)
        {
            let tip = Tip(
                rowID: rowID, uuid: uuid, effectiveDate: Date(timeIntervalSince1970: effective),
                deletedDate: deleted.map(Date.init(timeIntervalSince1970:)), contentHash: hash, versionNumber: Int(number))
            versions.append((tip, isTip, fromProvider))
        }
        return versions
    }

    func uuidExists(_ kind: EntityKind, _ uuid: UUID) async throws -> Bool {
        if kind != .outcome, let known = known.uuids[kind]?[uuid] { return known.value != nil }
        try await flushPending()
        return try await !connection.values(
            "SELECT 1 FROM \(unescaped: PostgresEntitySchema.table(kind)) WHERE uuid = \(uuid) LIMIT 1", as: Int32.self, logger: logger
        ).isEmpty
    }

    /// The stable id of version `uuid` of `kind` (not an outcome), if the store has it.
    func id(of kind: EntityKind, uuid: UUID) async throws -> String? {
        if let known = known.uuids[kind]?[uuid] { return known.value }
        try await flushPending()
        let found = try await connection.values(
            "SELECT id FROM \(unescaped: PostgresEntitySchema.table(kind)) WHERE uuid = \(uuid) LIMIT 1", as: String.self, logger: logger
        ).first
        known.uuids[kind, default: [:]][uuid] = found.map { .present($0) } ?? .absent
        return found
    }

    func idExists(_ kind: EntityKind, _ id: String) async throws -> Bool {
        // Every id that has versions has a tip.
        if let known = known.tip(kind, id: id) { return known.value != nil }
        try await flushPending()
        return try await !connection.values(
            "SELECT 1 FROM \(unescaped: PostgresEntitySchema.table(kind)) WHERE id = \(id) LIMIT 1", as: Int32.self, logger: logger
        ).isEmpty
    }

    /// The stored version at `rowID` of `kind`, decoded (nil when there is no such row).
    func storedVersion(_ kind: EntityKind, rowID: Int64) async throws -> CareEntity? {
        try await flushPending()
        let rows = try await connection.query(
            "SELECT \(unescaped: PostgresEntityCodec.selectList(kind)) FROM \(unescaped: PostgresEntitySchema.table(kind)) WHERE row_id = \(rowID)",
            logger: logger)
        var found: CareEntity?
        for try await row in rows { found = try PostgresEntityCodec.decode(kind: kind, row: row).entity }
        return found
    }

    /// Checks a care plan's patient, or a task's or contact's care plan, and fills in the stable id from
    /// the version uuid when only that is given.
    func resolvingReferences(_ entity: CareEntity) async throws -> CareEntity {
        switch entity {
        case .patient, .outcome:
            return entity
        case .carePlan(var plan):
            plan.patientID = try await resolve(owner: entity, field: "patientUUID", kind: .patient, uuid: plan.patientUUID, id: plan.patientID)
            return .carePlan(plan)
        case .task(var task):
            task.carePlanID = try await resolve(owner: entity, field: "carePlanUUID", kind: .carePlan, uuid: task.carePlanUUID, id: task.carePlanID)
            return .task(task)
        case .contact(var contact):
            contact.carePlanID = try await resolve(
                owner: entity, field: "carePlanUUID", kind: .carePlan, uuid: contact.carePlanUUID, id: contact.carePlanID)
            return .contact(contact)
        }
    }

    func resolve(owner: CareEntity, field: String, kind: EntityKind, uuid: UUID?, id: String?) async throws -> String? {
        if let uuid {
            guard let found = try await self.id(of: kind, uuid: uuid) else {
                throw StoreError.missingReference(kind: owner.kind, id: owner.id, field: field, reference: "\(kind) version \(uuid.uuidString)")
            }
            if let id, id != found {
                throw StoreError.invalidEntity(
                    kind: owner.kind, id: owner.id, reason: "\(field) \(uuid.uuidString) is a version of \(kind) '\(found)', not of '\(id)'")
            }
            return found
        }
        if let id, !(try await idExists(kind, id)) {
            throw StoreError.missingReference(kind: owner.kind, id: owner.id, field: "\(kind)ID", reference: "\(kind) '\(id)'")
        }
        return id
    }

    /// The patient a new version of `entity` belongs to, as the revision log finds it.
    static func owner(of entity: CareEntity) -> PostgresRevisionLog.Owner {
        switch entity {
        case .patient(let patient): return .patient(patient.id)
        case .carePlan(let plan): return .carePlan(patientID: plan.patientID)
        case .task(let task): return .inCarePlan(task.carePlanID, linkedPatient: task.metadata.linkage.patientID)
        case .contact(let contact): return .inCarePlan(contact.carePlanID, linkedPatient: contact.metadata.linkage.patientID)
        case .outcome(let outcome): return .taskVersion(outcome.taskUUID)
        }
    }

    /// The patient the stored version at `rowID` of `kind` belongs to (what a tombstone copies).
    func owner(ofRow rowID: Int64, kind: EntityKind, id: String) async throws -> PostgresRevisionLog.Owner {
        try await flushPending()
        switch kind {
        case .patient: return .patient(id)
        case .carePlan:
            let patient = try await connection.values("SELECT patient_id FROM care_plan WHERE row_id = \(rowID)", as: String?.self, logger: logger)
            return .carePlan(patientID: patient.first ?? nil)
        case .task, .contact:
            let rows = try await connection.query(
                "SELECT care_plan_id, linked_patient_id FROM \(unescaped: PostgresEntitySchema.table(kind)) WHERE row_id = \(rowID)", logger: logger)
            var owner = PostgresRevisionLog.Owner.inCarePlan(nil, linkedPatient: nil)
            for try await (plan, linked) in rows.decode((String?, String?).self) { owner = .inCarePlan(plan, linkedPatient: linked) }
            return owner
        case .outcome:
            let task = try await connection.values("SELECT task_uuid FROM outcome WHERE row_id = \(rowID)", as: UUID.self, logger: logger)
            return task.first.map { .taskVersion($0) } ?? .carePlan(patientID: nil)
        }
    }
}
