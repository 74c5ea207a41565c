import CareModel

// OWNER: helper h-pgwrites.
/// The care entities' tables (every version of each), source resources, links, outcome conflicts and the
/// revision log: what the SQLite store's batch writer writes (StoreSchema.swift, StoreSchema+SyncMigrations
/// .swift, RevisionLog.swift, SQLiteStore+DeviceKnowledge.swift), as migrations named `0400-...`.
///
/// ## The entity tables
/// `patient`, `care_plan`, `contact`, `task`, `outcome`: one row per version, in the order stored (`row_id`,
/// an identity: "stored order" is `ORDER BY row_id`). Every table has the version columns
/// (``PostgresEntityCodec/versionColumns``): `uuid`, `effective_date`, `deleted_date`,
/// `previous_version_uuid`, `next_version_uuid`, `next_effective_date` (the effective date of the next
/// version: with `effective_date` it bounds the time this version owns), `created_date`, `updated_date`,
/// provenance (`source_system`, `fhir_type`, `fhir_id`, `fhir_version_id`, `fhir_last_updated`,
/// `content_hash`) and `body` (the whole version in CareModel's JSON encoding, ``PostgresEntityCodec``:
/// the columns are authoritative for the version fields, which later versions update). Dates are
/// `double precision` seconds since 1970, as the SQLite store keeps them.
///
/// A version is a tip (its entity's current version) when `next_version_uuid IS NULL`; a tombstone when
/// `deleted_date IS NOT NULL`.
///
/// Query columns, as SQLite has them:
/// - `patient`, `care_plan`, `contact`, `task`: `id` (the stable id);
/// - `care_plan`: `patient_uuid`, `patient_id`;
/// - `contact`, `task`: `care_plan_uuid`, `care_plan_id`, and `linked_patient_id` (the patient their FHIR
///   linkage names, ``FHIRLinkage/patientID``: a task or contact of no care plan is filed under it);
/// - `outcome`: no `id` column (CareKit's outcome id is `<task_uuid>_<occurrence_index>`): `task_uuid`,
///   `task_id`, `occurrence_index`, `event_start` (the start of the occurrence, CareKit's
///   `OCKCDOutcome.date`), `version_number` (the arrival number of a version among its outcome's, 0 first:
///   unique, which refuses a second first version), `previous_version_uuids` (set only when a version
///   names more than one: a device's conflict resolution; otherwise `previous_version_uuid`).
///
/// ## The other tables
/// - `source_resource`: raw resources as received, once per content (`activities_with_detail`: the paths
///   of a CarePlan's activities that have a `detail`, one per line, NULL when not recorded);
/// - `resource_link`: FHIR resource -> entity made from it;
/// - `outcome_conflict`: outcomes (CareKit ids) with several tips now;
/// - the revision log (CareKit's knowledge-vector sync; the clock is `sync_clock`,
///   ``PostgresCoordinationMigrations``): `revision` (each version filed under its patient at the clock
///   of its transaction, `entity_row_id` its row in its table), `revision_stamp` (per patient and clock,
///   the device clocks of that record's knowledge vector as a JSON array of `{"id","clock"}`),
///   `patient_knowledge` (the device clocks each patient's devices taught the store; `served` false for
///   a process retired by a repair).
public enum PostgresEntitySchema {
    /// The table of entity kind `kind`.
    public static func table(_ kind: EntityKind) -> String {
        switch kind {
        case .patient: return "patient"
        case .carePlan: return "care_plan"
        case .contact: return "contact"
        case .task: return "task"
        case .outcome: return "outcome"
        }
    }

    /// The migrations, in order.
    public static let migrations: [PostgresMigrations.Migration] = [
        .init("0400-care-entities", entityTables + entityIndexes),
        .init("0401-sources-and-links", [
            """
            CREATE TABLE source_resource (
                row_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                source_system text NOT NULL,
                resource_type text NOT NULL,
                resource_id text NOT NULL,
                version_id text,
                last_updated text,
                content_hash text NOT NULL,
                format text NOT NULL,
                body bytea NOT NULL,
                received_date double precision NOT NULL,
                activities_with_detail text,
                UNIQUE (resource_type, resource_id, source_system, content_hash)
            )
            """,
            """
            CREATE TABLE resource_link (
                resource_type text NOT NULL,
                resource_id text NOT NULL,
                source_system text NOT NULL,
                entity_kind text NOT NULL,
                entity_id text NOT NULL,
                PRIMARY KEY (resource_type, resource_id, source_system, entity_kind, entity_id)
            )
            """,
            "CREATE INDEX resource_link_by_entity ON resource_link (entity_kind, entity_id)",
            """
            CREATE TABLE outcome_conflict (
                outcome_id text PRIMARY KEY,
                since double precision NOT NULL
            )
            """,
        ]),
        .init("0402-revision-log", [
            """
            CREATE TABLE patient_knowledge (
                patient_id text NOT NULL,
                process_id text NOT NULL,
                clock bigint NOT NULL,
                served boolean NOT NULL DEFAULT true,
                PRIMARY KEY (patient_id, process_id)
            )
            """,
            """
            CREATE TABLE revision_stamp (
                patient_id text NOT NULL,
                server_clock bigint NOT NULL,
                processes text NOT NULL,
                PRIMARY KEY (patient_id, server_clock)
            )
            """,
            """
            CREATE TABLE revision (
                row_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                patient_id text NOT NULL,
                server_clock bigint NOT NULL,
                entity_kind text NOT NULL,
                entity_uuid uuid NOT NULL,
                entity_row_id bigint NOT NULL
            )
            """,
            "CREATE INDEX revision_by_patient ON revision (patient_id, server_clock)",
        ]),
    ]

    /// The version columns every entity table has.
    private static let versionColumns = """
        row_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        uuid uuid NOT NULL,
        effective_date double precision NOT NULL,
        deleted_date double precision,
        previous_version_uuid uuid,
        next_version_uuid uuid,
        next_effective_date double precision,
        created_date double precision,
        updated_date double precision,
        source_system text,
        fhir_type text,
        fhir_id text,
        fhir_version_id text,
        fhir_last_updated double precision,
        content_hash text,
        body bytea NOT NULL
        """

    private static let entityTables = [
        "CREATE TABLE patient (\(versionColumns), id text NOT NULL)",
        "CREATE TABLE care_plan (\(versionColumns), id text NOT NULL, patient_uuid uuid, patient_id text)",
        "CREATE TABLE contact (\(versionColumns), id text NOT NULL, care_plan_uuid uuid, care_plan_id text, linked_patient_id text)",
        "CREATE TABLE task (\(versionColumns), id text NOT NULL, care_plan_uuid uuid, care_plan_id text, linked_patient_id text)",
        """
        CREATE TABLE outcome (\(versionColumns),
            task_uuid uuid NOT NULL,
            task_id text NOT NULL,
            occurrence_index bigint NOT NULL,
            event_start double precision NOT NULL,
            version_number integer NOT NULL,
            previous_version_uuids uuid[])
        """,
    ]

    private static let entityIndexes = [
        // Versions of entities other than outcomes have unique uuids (the writer refuses a taken one).
        "CREATE UNIQUE INDEX patient_by_uuid ON patient (uuid)",
        "CREATE UNIQUE INDEX care_plan_by_uuid ON care_plan (uuid)",
        "CREATE UNIQUE INDEX contact_by_uuid ON contact (uuid)",
        "CREATE UNIQUE INDEX task_by_uuid ON task (uuid)",
        // The tip of an id, and its history.
        "CREATE INDEX patient_by_id ON patient (id)",
        "CREATE INDEX care_plan_by_id ON care_plan (id)",
        "CREATE INDEX contact_by_id ON contact (id)",
        "CREATE INDEX task_by_id ON task (id)",
        // "care plans of patient P", then "tasks and contacts of care plan C".
        "CREATE INDEX care_plan_by_patient ON care_plan (patient_id)",
        "CREATE INDEX contact_by_care_plan ON contact (care_plan_id)",
        "CREATE INDEX task_by_care_plan ON task (care_plan_id)",
        // A day's events of a patient include their tasks of no care plan, found by their linkage's patient.
        "CREATE INDEX task_of_no_care_plan_by_patient ON task (linked_patient_id) WHERE care_plan_id IS NULL",
        // Outcomes of a task version between dates; every version of one outcome; refuses a second first
        // version (version_number 0) of an outcome.
        "CREATE UNIQUE INDEX outcome_by_task_date_version ON outcome (task_uuid, event_start, occurrence_index, version_number)",
        // A device's version by uuid (a push names versions by uuid). Outcome uuids are not unique: a
        // version is never refused for its uuid, the writer substitutes one that is another patient's.
        "CREATE INDEX outcome_by_uuid ON outcome (uuid)",
    ]
}
