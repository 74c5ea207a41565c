import CareModel
import Foundation
import GRDB

/// The migrations of CareKit sync's store: devices' version graphs (v8), the revision log's tasks of
/// no care plan (v9) and their index by patient (v13).
extension StoreSchema {
    /// The patient a task's FHIR linkage names, as SQL over its stored JSON.
    static let linkedPatientOfTask = "json_extract(payload, '\(FHIRLinkage.patientJSONPath)')"

    /// Tasks of no care plan (medication orders, Observation logs) and their outcomes were in no patient's
    /// revision log before v9, so no app ever pulled them: they are filed now under the patient their FHIR
    /// linkage names, in one new record per patient (one tick of the clock), so that every device pulls
    /// them at its next sync.
    static func logTasksOfNoCarePlan(_ db: Database) throws {
        let linked = "json_extract(t.payload, '\(FHIRLinkage.patientJSONPath)')"
        try db.execute(sql: """
            CREATE TEMP TABLE unlogged (patientID TEXT NOT NULL, entityKind TEXT NOT NULL, entityUUID BLOB NOT NULL, entityRowID INTEGER NOT NULL);
            INSERT INTO unlogged
                SELECT \(linked), 'task', t.uuid, t.rowID FROM task t
                WHERE \(linked) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM revision r WHERE r.entityKind = 'task' AND r.entityRowID = t.rowID)
                ORDER BY t.rowID;
            INSERT INTO unlogged
                SELECT u.patientID, 'outcome', o.uuid, o.rowID FROM outcome o JOIN unlogged u ON u.entityKind = 'task' AND u.entityUUID = o.taskUUID
                WHERE NOT EXISTS (SELECT 1 FROM revision r WHERE r.entityKind = 'outcome' AND r.entityRowID = o.rowID)
                ORDER BY o.rowID;
            UPDATE syncClock SET clock = clock + 1 WHERE EXISTS (SELECT 1 FROM unlogged);
            INSERT INTO revisionStamp (patientID, serverClock, processes)
                SELECT DISTINCT u.patientID, (SELECT clock FROM syncClock),
                       (SELECT json_group_array(json_object('id', processID, 'clock', clock)) FROM patientKnowledge k WHERE k.patientID = u.patientID)
                FROM unlogged u;
            INSERT INTO revision (patientID, serverClock, entityKind, entityUUID, entityRowID)
                SELECT patientID, (SELECT clock FROM syncClock), entityKind, entityUUID, entityRowID FROM unlogged ORDER BY rowid;
            DROP TABLE unlogged;
            """)
    }

    /// Outcomes pushed by devices keep CareKit's version graph rather than one chain: a version names
    /// every version it replaced, and an outcome may have several tips (versions no stored version
    /// names), which the device resolves.
    ///
    /// - `previousVersionUUIDs`: the versions a version names, as 16-byte uuids one after the other, when
    ///   it names more than one (a device's conflict resolution); otherwise NULL and `previousVersionUUID`
    ///   holds the one it names. `nextVersionUUID` stays set on every version some version names, so
    ///   `nextVersionUUID IS NULL` is still "a tip".
    /// - `versionNumber` becomes the arrival number of a version among its outcome's (still unique, and the
    ///   newest version is always a tip).
    /// - `outcomeConflict`: the outcomes (CareKit ids) that have several tips now; their export waits until
    ///   the device's resolution makes one tip again.
    ///
    /// Stores made before hold one chain per outcome: nothing to convert, no conflict.
    static func addOutcomeVersionGraph(_ db: Database) throws {
        try db.alter(table: Table.outcome) { t in
            t.add(column: "previousVersionUUIDs", .blob)
        }
        try db.create(table: Table.outcomeConflict, options: [.withoutRowID]) { t in
            t.column("outcomeID", .text).notNull().primaryKey()
            t.column("since", .double).notNull()
        }
    }

    /// The day's events of a patient include their tasks of no care plan, found by the patient their FHIR
    /// linkage names: indexed, so that a day view does not read every such task of the store.
    static func indexTasksOfNoCarePlanByPatient(_ db: Database) throws {
        try db.execute(sql: "CREATE INDEX task_of_no_carePlan_by_patient ON task (\(linkedPatientOfTask)) WHERE carePlanID IS NULL")
    }
}
