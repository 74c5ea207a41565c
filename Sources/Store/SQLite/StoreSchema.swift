import CareModel
import Foundation
import GRDB

/// The SQLite schema of a CareGate store, as named migrations applied in order by a `DatabaseMigrator`.
///
/// Schema changes happen only here, as new registered migrations appended at the end; a shipped
/// migration is never edited. A store that has applied a migration this build does not know was written
/// by a newer CareGate and is refused (``StoreError/newerSchema(path:unknownMigrations:)``).
///
/// Every care entity table holds all versions of its entities, one row per version, with the same
/// version and provenance columns; dates are `REAL` seconds since 1970 (compact and ordered), uuids are
/// 16-byte blobs. Each table also has the columns its queries need (`carePlan.patientID`,
/// `task.carePlanID`, `outcome.taskUUID`, `outcome.eventStart`) and an index for them.
///
/// ## Topics
///
/// - ``migrator``
/// - ``Table``
enum StoreSchema {
    /// Table names, in one place so SQL strings and migrations agree.
    enum Table {
        static let patient = "patient"
        static let carePlan = "carePlan"
        static let contact = "contact"
        static let task = "task"
        static let outcome = "outcome"
        static let outcomeValue = "outcomeValue"
        static let sourceResource = "sourceResource"
        static let resourceLink = "resourceLink"
        static let syncCheckpoint = "syncCheckpoint"
        static let outbox = "outbox"
        static let deadLetter = "deadLetter"
        static let syncClock = "syncClock"
        static let patientKnowledge = "patientKnowledge"
        static let revisionStamp = "revisionStamp"
        static let revision = "revision"
        static let audit = "audit"
        static let outcomeConflict = "outcomeConflict"

        static func entity(_ kind: EntityKind) -> String {
            switch kind {
            case .patient: return patient
            case .carePlan: return carePlan
            case .contact: return contact
            case .task: return task
            case .outcome: return outcome
            }
        }
    }

    /// All migrations of the store, in the order they were written.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 care entities", migrate: createCareEntities)
        migrator.registerMigration("v1 staging tables", migrate: createStagingTables)
        migrator.registerMigration("v2 outcome version numbers", migrate: numberOutcomeVersions)
        migrator.registerMigration("v3 first outcome value inline", migrate: inlineFirstOutcomeValues)
        migrator.registerMigration("v4 application id") { db in
            try db.execute(sql: "PRAGMA application_id = \(applicationID)")
        }
        migrator.registerMigration("v5 outcome source column", migrate: addOutcomeSource)
        migrator.registerMigration("v6 outbox server id and version", migrate: addOutboxServerVersion)
        migrator.registerMigration("v7 revision log", migrate: createRevisionLog)
        migrator.registerMigration("v7 audit", migrate: createAudit)
        migrator.registerMigration("v8 outcome version graph", migrate: addOutcomeVersionGraph)
        migrator.registerMigration("v9 tasks of no care plan in their patient's log", migrate: logTasksOfNoCarePlan)
        migrator.registerMigration("v10 export progress", migrate: createExportProgress)
        migrator.registerMigration("v13 tasks of no care plan by patient", migrate: indexTasksOfNoCarePlanByPatient)
        migrator.registerMigration("v14 activity details", migrate: addActivityDetails)
        migrator.registerMigration("v15 source resources by type and id", migrate: indexSourceResourcesByTypeAndID)
        migrator.registerMigration("v16 report start", migrate: createReportStart)
        migrator.registerMigration("v17 source resources by type and id through the unique key", migrate: dropSourceResourcesByTypeAndID)
        // Nothing changes in the file: the version tells builds before the append gate (which would run
        // an import while this build's server lets a push in) to refuse the store.
        migrator.registerMigration("v18 pushes between an import's steps (append gate)") { _ in }
        migrator.registerMigration("v19 served device processes (bounded knowledge vectors)", migrate: SQLiteStore.addServedDeviceProcesses)
        migrator.registerMigration("questionnaires by url and version (surveys)", migrate: SQLiteStore.createQuestionnaires)
        migrator.registerMigration("dead letter replays", migrate: SQLiteStore.addDeadLetterReplays)
        migrator.registerMigration("consent decisions", migrate: SQLiteStore.createConsentDecisions)
        migrator.registerMigration("sync runs and last import coverage", migrate: createSyncRunsAndImportCoverage)

        return migrator
    }

    /// The SQLite header's application id of a CareGate store ("CrGt"), which tells it from any other
    /// program's SQLite file before anything is changed. Stores made before it existed are known by
    /// their first migration.
    static let applicationID: Int32 = 0x4372_4774

    /// The migration every CareGate store has applied first.
    static let firstMigration = "v1 care entities"

    /// Patients, care plans, contacts, tasks and outcomes, every version of each.
    private static func createCareEntities(_ db: Database) throws {
        try db.create(table: Table.patient) { t in
            addVersionColumns(t)
        }
        try db.create(table: Table.carePlan) { t in
            addVersionColumns(t)
            t.column("patientUUID", .blob)
            t.column("patientID", .text)
        }
        try db.create(table: Table.contact) { t in
            addVersionColumns(t)
            t.column("carePlanUUID", .blob)
            t.column("carePlanID", .text)
        }
        try db.create(table: Table.task) { t in
            addVersionColumns(t)
            t.column("carePlanUUID", .blob)
            t.column("carePlanID", .text)
        }
        // An outcome's id is CareKit's `<taskUUID>_<occurrenceIndex>`: it is not stored, the two columns are.
        try db.create(table: Table.outcome) { t in
            addVersionColumns(t, withID: false)
            t.column("taskUUID", .blob).notNull()
            t.column("taskID", .text).notNull()
            t.column("occurrenceIndex", .integer).notNull()
            // The start of the event the outcome belongs to, as CareKit's `OCKCDOutcome.date`.
            t.column("eventStart", .double).notNull()
            t.column("timezone", .text).notNull()
        }
        // Outcome values live beside their outcome, clustered by it: appending them stays sequential.
        try db.create(table: Table.outcomeValue, options: [.withoutRowID]) { t in
            t.column("outcomeRowID", .integer).notNull()
            t.column("position", .integer).notNull()
            t.column("type", .text).notNull()
            t.column("value", .any)
            t.column("units", .text)
            t.column("kind", .text)
            t.column("valueIndex", .integer)
            t.column("createdDate", .double)
            // NULL for GMT, CareModel's default.
            t.column("timezone", .text)
            t.primaryKey(["outcomeRowID", "position"])
        }

        for kind in EntityKind.allCases where kind != .outcome {
            let table = Table.entity(kind)
            try db.create(index: "\(table)_by_id", on: table, columns: ["id"])
        }
        // "care plans of patient P", then "tasks and contacts of care plan C".
        try db.create(index: "carePlan_by_patient", on: Table.carePlan, columns: ["patientID"])
        try db.create(index: "contact_by_carePlan", on: Table.contact, columns: ["carePlanID"])
        try db.create(index: "task_by_carePlan", on: Table.task, columns: ["carePlanID"])
        // "outcomes of task version T between dates", the last step of "events of patient P"; with the
        // occurrence index it also finds every version of one outcome (its id).
        try db.create(index: "outcome_by_task_date", on: Table.outcome, columns: ["taskUUID", "eventStart", "occurrenceIndex"])
    }

    /// The columns every versioned entity table has.
    ///
    /// Outcome uuids are made by the store for every version (as CareKit's store does), so they need no
    /// unique index; on a table of millions of rows a random-key index would dominate the cost of inserts.
    private static func addVersionColumns(_ t: TableDefinition, withID: Bool = true) {
        t.column("rowID", .integer).primaryKey()
        if withID {
            t.column("uuid", .blob).notNull().unique()
            t.column("id", .text).notNull()
        } else {
            t.column("uuid", .blob).notNull()
        }
        t.column("effectiveDate", .double).notNull()
        t.column("deletedDate", .double)
        t.column("previousVersionUUID", .blob)
        t.column("nextVersionUUID", .blob)
        // The effective date of the next version: with `effectiveDate` it bounds the time this version owns.
        t.column("nextEffectiveDate", .double)
        t.column("createdDate", .double)
        t.column("updatedDate", .double)
        // Provenance: where this version came from.
        t.column("sourceSystem", .text)
        t.column("fhirType", .text)
        t.column("fhirID", .text)
        t.column("fhirVersionID", .text)
        t.column("fhirLastUpdated", .double)
        t.column("contentHash", .text)
        // The entity's other fields, in CareModel's JSON encoding (NULL when there is nothing more).
        t.column("payload", .blob)
    }

    /// Numbers the versions of each outcome (0 for the first) and makes the task/date index unique on
    /// that number: a second first version of an outcome, which `add` must refuse, is then refused by the
    /// index itself, and adding an outcome needs no lookup before its insert.
    private static func numberOutcomeVersions(_ db: Database) throws {
        try db.alter(table: Table.outcome) { t in
            t.add(column: "versionNumber", .integer).notNull().defaults(to: 0)
        }
        try db.execute(sql: """
            UPDATE outcome SET versionNumber = (
                SELECT count(*) FROM outcome AS earlier
                WHERE earlier.taskUUID = outcome.taskUUID AND earlier.occurrenceIndex = outcome.occurrenceIndex
                  AND earlier.rowID < outcome.rowID)
            """)
        try db.drop(index: "outcome_by_task_date")
        try db.create(
            index: "outcome_by_task_date_version", on: Table.outcome,
            columns: ["taskUUID", "eventStart", "occurrenceIndex", "versionNumber"], unique: true)
    }

    /// Keeps an outcome's first value in the outcome row itself (most outcomes have exactly one), and
    /// only the others in `outcomeValue`; `extraValues` counts those, so reading a one-value outcome
    /// needs no second table.
    private static func inlineFirstOutcomeValues(_ db: Database) throws {
        try db.alter(table: Table.outcome) { t in
            t.add(column: "firstValueType", .text)
            t.add(column: "firstValue", .any)
            t.add(column: "firstValueUnits", .text)
            t.add(column: "firstValueKind", .text)
            t.add(column: "firstValueIndex", .integer)
            t.add(column: "firstValueCreatedDate", .double)
            t.add(column: "firstValueTimezone", .text)
            t.add(column: "extraValues", .integer).notNull().defaults(to: 0)
        }
        try db.execute(sql: """
            UPDATE outcome SET
                (firstValueType, firstValue, firstValueUnits, firstValueKind, firstValueIndex, firstValueCreatedDate, firstValueTimezone) =
                (SELECT type, value, units, kind, valueIndex, createdDate, timezone FROM outcomeValue
                 WHERE outcomeRowID = outcome.rowID AND position = 0),
                extraValues = (SELECT count(*) FROM outcomeValue WHERE outcomeRowID = outcome.rowID AND position > 0);
            DELETE FROM outcomeValue WHERE position = 0;
            """)
    }

    /// Keeps an outcome's `source` (the app or device that recorded it, which nearly every outcome a
    /// patient records carries) in a column, so that such an outcome needs no JSON. Rows written before
    /// keep it in their JSON, which reading still honours.
    private static func addOutcomeSource(_ db: Database) throws {
        try db.alter(table: Table.outcome) { t in
            t.add(column: "source", .text)
        }
    }

    /// The id and version a server gave an acknowledged export.
    private static func addOutboxServerVersion(_ db: Database) throws {
        try db.alter(table: Table.outbox) { t in
            t.add(column: "serverID", .text)
            t.add(column: "serverVersion", .text)
        }
    }

    /// CareKit's knowledge-vector sync (see ``RevisionLog``): the store's process uuid and clock, the device
    /// clocks each patient's devices taught it, and each patient's log of versions, stamped per transaction.
    /// The versions a store already holds are filed at clock 1, every patient's in one record, so a device
    /// that pulls first meets them all.
    private static func createRevisionLog(_ db: Database) throws {
        try db.create(table: Table.syncClock) { t in
            t.column("singleton", .integer).primaryKey().check { $0 == 1 }
            t.column("processUUID", .blob).notNull()
            t.column("clock", .integer).notNull()
        }
        try db.execute(sql: "INSERT INTO syncClock (singleton, processUUID, clock) VALUES (1, ?, 0)", arguments: [UUID()])
        try db.create(table: Table.patientKnowledge, options: [.withoutRowID]) { t in
            t.column("patientID", .text).notNull()
            // A device process uuid, as CareKit writes it (upper-case text).
            t.column("processID", .text).notNull()
            t.column("clock", .integer).notNull()
            t.primaryKey(["patientID", "processID"])
        }
        try db.create(table: Table.revisionStamp, options: [.withoutRowID]) { t in
            t.column("patientID", .text).notNull()
            t.column("serverClock", .integer).notNull()
            // The device clocks of the record's vector: a JSON array of {"id", "clock"}.
            t.column("processes", .text).notNull()
            t.primaryKey(["patientID", "serverClock"])
        }
        try db.create(table: Table.revision) { t in
            t.column("rowID", .integer).primaryKey()
            t.column("patientID", .text).notNull()
            t.column("serverClock", .integer).notNull()
            t.column("entityKind", .text).notNull()
            t.column("entityUUID", .blob).notNull()
            // The version's row in its entity table (outcome uuids have no index).
            t.column("entityRowID", .integer).notNull()
        }
        try db.create(index: "revision_by_patient", on: Table.revision, columns: ["patientID", "serverClock"])
        // A care plan's patient is the one its current version names.
        let plans = "(SELECT id, patientID FROM carePlan WHERE nextVersionUUID IS NULL AND patientID IS NOT NULL)"
        try db.execute(sql: """
            INSERT INTO revision (patientID, serverClock, entityKind, entityUUID, entityRowID)
                SELECT id, 1, 'patient', uuid, rowID FROM patient ORDER BY rowID;
            INSERT INTO revision (patientID, serverClock, entityKind, entityUUID, entityRowID)
                SELECT patientID, 1, 'carePlan', uuid, rowID FROM carePlan WHERE patientID IS NOT NULL ORDER BY rowID;
            INSERT INTO revision (patientID, serverClock, entityKind, entityUUID, entityRowID)
                SELECT p.patientID, 1, 'contact', c.uuid, c.rowID FROM contact c JOIN \(plans) p ON p.id = c.carePlanID ORDER BY c.rowID;
            INSERT INTO revision (patientID, serverClock, entityKind, entityUUID, entityRowID)
                SELECT p.patientID, 1, 'task', t.uuid, t.rowID FROM task t JOIN \(plans) p ON p.id = t.carePlanID ORDER BY t.rowID;
            INSERT INTO revision (patientID, serverClock, entityKind, entityUUID, entityRowID)
                SELECT p.patientID, 1, 'outcome', o.uuid, o.rowID FROM outcome o JOIN task t ON t.uuid = o.taskUUID
                JOIN \(plans) p ON p.id = t.carePlanID ORDER BY o.rowID;
            INSERT INTO revisionStamp (patientID, serverClock, processes) SELECT DISTINCT patientID, 1, '[]' FROM revision;
            UPDATE syncClock SET clock = 1 WHERE EXISTS (SELECT 1 FROM revision);
            """)
    }

    /// Every read and write of patient data through the app API: who, what, when, and the result.
    private static func createAudit(_ db: Database) throws {
        try db.create(table: Table.audit) { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("date", .double).notNull()
            // The token's subject and the patient it is bound to (nil when no valid token was given).
            t.column("subject", .text)
            t.column("patientID", .text)
            t.column("action", .text).notNull()
            t.column("status", .integer).notNull()
            t.column("detail", .text)
        }
        try db.create(index: "audit_by_patient", on: Table.audit, columns: ["patientID", "date"])
    }

    /// Raw resources, resource-to-entity links, sync checkpoints, the export outbox and dead letters.
    private static func createStagingTables(_ db: Database) throws {
        try db.create(table: Table.sourceResource) { t in
            t.column("rowID", .integer).primaryKey()
            t.column("sourceSystem", .text).notNull()
            t.column("resourceType", .text).notNull()
            t.column("resourceID", .text).notNull()
            t.column("versionID", .text)
            t.column("lastUpdated", .text)
            t.column("contentHash", .text).notNull()
            t.column("format", .text).notNull()
            t.column("body", .blob).notNull()
            t.column("receivedDate", .double).notNull()
            t.uniqueKey(["sourceSystem", "resourceType", "resourceID", "contentHash"])
        }
        try db.create(table: Table.resourceLink, options: [.withoutRowID]) { t in
            t.column("resourceType", .text).notNull()
            t.column("resourceID", .text).notNull()
            t.column("sourceSystem", .text).notNull()
            t.column("entityKind", .text).notNull()
            t.column("entityID", .text).notNull()
            // Leading with type and id serves "entities from FHIR resource R" from any source system.
            t.primaryKey(["resourceType", "resourceID", "sourceSystem", "entityKind", "entityID"])
        }
        try db.create(index: "resourceLink_by_entity", on: Table.resourceLink, columns: ["entityKind", "entityID"])
        try db.create(table: Table.syncCheckpoint, options: [.withoutRowID]) { t in
            t.column("server", .text).notNull()
            t.column("resourceType", .text).notNull()
            t.column("cursor", .text).notNull()
            t.column("updatedDate", .double).notNull()
            t.primaryKey(["server", "resourceType"])
        }
        try db.create(table: Table.outbox) { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("destination", .text).notNull()
            t.column("entityKind", .text).notNull()
            t.column("entityID", .text).notNull()
            t.column("entityUUID", .blob).notNull()
            t.column("payload", .blob)
            t.column("state", .text).notNull()
                .check(sql: "state IN ('pending', 'sent', 'acknowledged', 'failed')")
            t.column("attempts", .integer).notNull().defaults(to: 0)
            t.column("lastError", .text)
            t.column("nextAttemptDate", .double)
            t.column("createdDate", .double).notNull()
            t.column("updatedDate", .double).notNull()
            t.uniqueKey(["destination", "entityUUID"])
        }
        try db.create(index: "outbox_by_state", on: Table.outbox, columns: ["state", "nextAttemptDate"])
        try db.create(table: Table.deadLetter) { t in
            t.autoIncrementedPrimaryKey("id")
            t.column("system", .text).notNull()
            t.column("resourceType", .text)
            t.column("resourceID", .text)
            t.column("outboxEntryID", .integer)
            t.column("reason", .text).notNull()
            t.column("detail", .text)
            t.column("payload", .blob)
            t.column("createdDate", .double).notNull()
        }
    }
}
