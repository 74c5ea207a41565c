import CareModel
import Foundation
import GRDB

/// What the writer reads of the store: the current version (tip) of an id, whether a uuid or id
/// exists, the references a version names, and the patient a version belongs to (for the revision log).
extension BatchWriter {
    /// Read through a statement of its own, as ``outcomeTip(taskUUID:eventStart:occurrence:)`` is: every
    /// version an import writes asks for its tip, and GRDB's row costs several times the lookup.
    func tip(_ kind: EntityKind, id: String) throws -> Tip? {
        if let written = writtenTips[EntityKey(kind, id: id)] { return written }
        let statement = RawStatement(try db.cachedStatement(sql: """
            SELECT rowID, uuid, effectiveDate, deletedDate, contentHash FROM \(StoreSchema.Table.entity(kind))
            WHERE id = ? AND nextVersionUUID IS NULL
            """), in: db)
        defer { statement.reset() }
        statement.bind(1, id)
        guard try statement.step(), !statement.isNull(0), !statement.isNull(2), let uuid = statement.uuid(1) else { return nil }
        return Tip(
            rowID: statement.int64(0), uuid: uuid, effectiveDate: Date(storeSeconds: statement.double(2)),
            deletedDate: statement.isNull(3) ? nil : Date(storeSeconds: statement.double(3)), contentHash: statement.text(4))
    }

    /// The tip of an outcome, the newest when it has several (the others in its `others`).
    ///
    /// One pass over a statement of its own: this runs for every outcome an import upserts, and an outcome
    /// nearly always has one tip.
    func outcomeTip(taskUUID: UUID, eventStart: Date, occurrence: Int) throws -> Tip? {
        let statement = RawStatement(try db.cachedStatement(sql: """
            SELECT rowID, uuid, effectiveDate, deletedDate, contentHash, versionNumber FROM outcome
            WHERE taskUUID = ? AND eventStart = ? AND occurrenceIndex = ? AND nextVersionUUID IS NULL
            """), in: db)
        defer { statement.reset() }
        statement.bind(1, taskUUID)
        statement.bind(2, eventStart.storeSeconds)
        statement.bind(3, occurrence)
        var newest: Tip?
        var others: [Tip] = []
        while try statement.step() {
            guard let tip = Self.outcomeVersion(statement) else { continue }
            if let current = newest, current.versionNumber >= tip.versionNumber {
                others.append(tip)
            } else {
                if let current = newest { others.append(current) }
                newest = tip
            }
        }
        newest?.others = others
        return newest
    }

    /// The stored versions of an outcome (or its tips only), each with whether it is a tip and whether
    /// it was made from a provider's resource.
    func outcomeVersions(
        taskUUID: UUID, eventStart: Date, occurrence: Int, tipsOnly: Bool = false
    ) throws -> [(version: Tip, isTip: Bool, fromProvider: Bool)] {
        let statement = RawStatement(try db.cachedStatement(sql: """
            SELECT rowID, uuid, effectiveDate, deletedDate, contentHash, versionNumber, nextVersionUUID IS NULL, fhirType IS NOT NULL
            FROM outcome WHERE taskUUID = ? AND eventStart = ? AND occurrenceIndex = ?\(tipsOnly ? " AND nextVersionUUID IS NULL" : "")
            """), in: db)
        defer { statement.reset() }
        statement.bind(1, taskUUID)
        statement.bind(2, eventStart.storeSeconds)
        statement.bind(3, occurrence)
        var versions: [(version: Tip, isTip: Bool, fromProvider: Bool)] = []
        while try statement.step() {
            guard let tip = Self.outcomeVersion(statement) else { continue }
            versions.append((tip, statement.int64(6) != 0, statement.int64(7) != 0))
        }
        return versions
    }

    /// The version on `statement`'s current row, whose first columns are rowID, uuid, effectiveDate,
    /// deletedDate, contentHash and versionNumber.
    private static func outcomeVersion(_ statement: RawStatement) -> Tip? {
        guard let uuid = statement.uuid(1) else { return nil }
        return Tip(
            rowID: statement.int64(0), uuid: uuid, effectiveDate: Date(storeSeconds: statement.double(2)),
            deletedDate: statement.isNull(3) ? nil : Date(storeSeconds: statement.double(3)), contentHash: statement.text(4),
            versionNumber: Int(statement.int64(5)))
    }

    static func tip(_ row: Row) -> Tip? {
        // Columns by position (rowID, uuid, effectiveDate, deletedDate, contentHash): this runs once per row written.
        guard let rowID: Int64 = row[0], let uuid: UUID = row[1], let effective: Double = row[2] else { return nil }
        let deleted: Double? = row[3]
        return Tip(
            rowID: rowID, uuid: uuid, effectiveDate: Date(storeSeconds: effective),
            deletedDate: deleted.map(Date.init(storeSeconds:)), contentHash: row[4])
    }

    func uuidExists(_ kind: EntityKind, _ uuid: UUID) throws -> Bool {
        let statement = RawStatement(try db.cachedStatement(sql: "SELECT 1 FROM \(StoreSchema.Table.entity(kind)) WHERE uuid = ?"), in: db)
        defer { statement.reset() }
        statement.bind(1, uuid)
        return try statement.step() && !statement.isNull(0)
    }

    /// The stable id of the version `uuid` of `kind`, if the store has it.
    func id(of kind: EntityKind, uuid: UUID) throws -> String? {
        let statement = RawStatement(try db.cachedStatement(sql: "SELECT id FROM \(StoreSchema.Table.entity(kind)) WHERE uuid = ?"), in: db)
        defer { statement.reset() }
        statement.bind(1, uuid)
        return try statement.step() ? statement.text(0) : nil
    }

    /// Read through a statement of its own, as ``uuidExists(_:_:)`` is: every task version an import
    /// writes (a long-running task's tens of versions each) checks its care plan this way.
    func idExists(_ kind: EntityKind, _ id: String) throws -> Bool {
        let statement = RawStatement(try db.cachedStatement(sql: "SELECT 1 FROM \(StoreSchema.Table.entity(kind)) WHERE id = ? LIMIT 1"), in: db)
        defer { statement.reset() }
        statement.bind(1, id)
        return try statement.step() && !statement.isNull(0)
    }

    /// Checks a care plan's patient, or a task's or contact's care plan, and fills in the stable id
    /// from the version uuid when only that is given.
    func resolvingReferences(_ entity: CareEntity) throws -> CareEntity {
        switch entity {
        case .patient, .outcome:
            return entity
        case .carePlan(var plan):
            plan.patientID = try resolve(
                owner: entity, field: "patientUUID", kind: .patient, uuid: plan.patientUUID, id: plan.patientID)
            return .carePlan(plan)
        case .task(var task):
            task.carePlanID = try resolve(
                owner: entity, field: "carePlanUUID", kind: .carePlan, uuid: task.carePlanUUID, id: task.carePlanID)
            return .task(task)
        case .contact(var contact):
            contact.carePlanID = try resolve(
                owner: entity, field: "carePlanUUID", kind: .carePlan, uuid: contact.carePlanUUID, id: contact.carePlanID)
            return .contact(contact)
        }
    }

    func resolve(owner: CareEntity, field: String, kind: EntityKind, uuid: UUID?, id: String?) throws -> String? {
        if let uuid {
            guard let found = try self.id(of: kind, uuid: uuid) else {
                throw StoreError.missingReference(kind: owner.kind, id: owner.id, field: field, reference: "\(kind) version \(uuid.uuidString)")
            }
            if let id, id != found {
                throw StoreError.invalidEntity(
                    kind: owner.kind, id: owner.id,
                    reason: "\(field) \(uuid.uuidString) is a version of \(kind) '\(found)', not of '\(id)'")
            }
            return found
        }
        if let id, !(try idExists(kind, id)) {
            throw StoreError.missingReference(kind: owner.kind, id: owner.id, field: "\(kind)ID", reference: "\(kind) '\(id)'")
        }
        return id
    }
    /// The patient a new version of `entity` belongs to, as the revision log finds it.
    static func owner(of entity: CareEntity) -> RevisionLog.Owner {
        switch entity {
        case .patient(let patient): return .patient(patient.id)
        case .carePlan(let plan): return .carePlan(patientID: plan.patientID)
        case .task(let task): return .inCarePlan(task.carePlanID, linkedPatient: task.metadata.linkage.patientID)
        case .contact(let contact): return .inCarePlan(contact.carePlanID, linkedPatient: contact.metadata.linkage.patientID)
        case .outcome(let outcome): return .taskVersion(outcome.taskUUID)
        }
    }

    /// The patient the stored version at `rowID` of `kind` belongs to (what a tombstone copies).
    func owner(ofRow rowID: Int64, kind: EntityKind, id: String) throws -> RevisionLog.Owner {
        let table = StoreSchema.Table.entity(kind)
        switch kind {
        case .patient: return .patient(id)
        case .carePlan:
            return .carePlan(patientID: try String.fetchOne(db, sql: "SELECT patientID FROM carePlan WHERE rowID = ?", arguments: [rowID]))
        case .task, .contact:
            let row = try Row.fetchOne(
                db, sql: "SELECT carePlanID, json_extract(payload, ?) AS linkedPatient FROM \(table) WHERE rowID = ?",
                arguments: [FHIRLinkage.patientJSONPath, rowID])
            return .inCarePlan(row?["carePlanID"], linkedPatient: row?["linkedPatient"])
        case .outcome:
            let taskUUID = try UUID.fetchOne(db, sql: "SELECT taskUUID FROM outcome WHERE rowID = ?", arguments: [rowID])
            return taskUUID.map { .taskVersion($0) } ?? .carePlan(patientID: nil)
        }
    }
}
