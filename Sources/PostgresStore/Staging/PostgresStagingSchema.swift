// OWNER: helper h-pgstaging.
/// The tables of the store's staging records that are not care-entity versions, as named migrations
/// (``PostgresMigrations``) whose names start with `0600-`: the last export committed to each file target
/// (`export_progress`), the first day the care-team reports cover (`report_start`), dead letters with
/// their replays and settlement (`dead_letter`), the patients' consent decisions with their attachments
/// (`consent_decision`) and the Questionnaires survey tasks ask, by url and version (`questionnaire`).
///
/// Each mirrors the SQLite store's table of the same records (StoreSchema+ExportMigrations.swift,
/// SQLiteStore+DeadLetters.swift, SQLiteStore+Consents.swift, SQLiteStore+Questionnaires.swift), in
/// snake_case, with dates as `double precision` seconds since 1970 as SQLite keeps them, so that a store
/// moved from one to the other reads back equal to the bit. Where SQLite orders by `rowid` (the order
/// decisions and Questionnaire versions were recorded), the table has an identity column `row_id`.
///
/// The outbox (``PostgresOutboxSchema``) and the pulls' cursors (``PostgresPullSchema``) have tables of
/// their own; ``outboxMigrations`` adds the index the reads of entries by state take (the SQLite store's
/// `outbox_by_state`), beside the claims' partial index, and keeps the outbox's dates as SQLite does.
public enum PostgresStagingSchema {
    public static let migrations: [PostgresMigrations.Migration] = [
        .init("0600-staging-records", [
            """
            CREATE TABLE export_progress (
                target text PRIMARY KEY,
                export_id text NOT NULL,
                file text NOT NULL,
                committed_date double precision NOT NULL
            )
            """,
            """
            CREATE TABLE report_start (
                frequency text PRIMARY KEY,
                first_day text NOT NULL,
                recorded_date double precision NOT NULL
            )
            """,
            // Never deleted: a replay sets resolved_date and resolution, or a new reason and replayed_date.
            """
            CREATE TABLE dead_letter (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                system text NOT NULL,
                resource_type text,
                resource_id text,
                outbox_entry_id bigint,
                reason text NOT NULL,
                detail text,
                payload bytea,
                created_date double precision NOT NULL,
                replayed_date double precision,
                resolved_date double precision,
                resolution text
            )
            """,
            "CREATE INDEX dead_letter_waiting ON dead_letter (resolved_date, created_date)",
            // A requeue settles the letters waiting for its entry: found without a scan.
            "CREATE INDEX dead_letter_of_outbox_entry ON dead_letter (outbox_entry_id) WHERE resolved_date IS NULL",
        ]),
        .init("0601-staging-consent-decisions", [
            // Every decision kept, never changed; numbered per patient and terms (`sequence`).
            """
            CREATE TABLE consent_decision (
                row_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                uuid uuid NOT NULL UNIQUE,
                patient_id text NOT NULL,
                terms_id text NOT NULL,
                terms_version text NOT NULL,
                choice text NOT NULL,
                date double precision NOT NULL,
                signer_name text,
                document_size bigint,
                document_hash text,
                submission_hash text NOT NULL,
                source text NOT NULL,
                sequence integer NOT NULL,
                recorded_date double precision NOT NULL,
                document bytea,
                signature_image bytea,
                UNIQUE (patient_id, terms_id, sequence)
            )
            """,
            "CREATE INDEX consent_decision_by_patient ON consent_decision (patient_id, row_id)",
        ]),
        .init("0602-staging-questionnaires", [
            // One row per url and version, never removed (outcomes recorded against a version keep it readable).
            """
            CREATE TABLE questionnaire (
                row_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                url text NOT NULL,
                version text NOT NULL,
                source_system text NOT NULL,
                resource_id text,
                content_hash text NOT NULL,
                resource bytea NOT NULL,
                kept_date double precision NOT NULL,
                UNIQUE (url, version)
            )
            """,
            "CREATE INDEX questionnaire_by_url ON questionnaire (url, row_id)",
            "CREATE INDEX questionnaire_by_source_id ON questionnaire (source_system, resource_id, row_id)",
        ]),
    ] + outboxMigrations

    /// The staging schema's changes to the outbox's table (``PostgresOutboxSchema``), which
    /// ``PostgresOutbox/prepare()`` applies too.
    public static let outboxMigrations: [PostgresMigrations.Migration] = [
        // The reads of entries by state (outbox summaries, `caregate outbox`): SQLite's `outbox_by_state`.
        .init("0603-staging-outbox-by-state", [
            "CREATE INDEX outbox_by_state ON outbox (state, id)"
        ]),
        // The outbox's dates as the SQLite store keeps them (seconds since 1970, a double): `timestamptz`
        // keeps microseconds, so an entry read back, or moved to SQLite and back, would differ from the
        // one written. The claims' lease (`claimed_until`) stays `timestamptz`, read against the
        // database's clock.
        .init("0604-staging-outbox-dates-as-seconds", [
            """
            ALTER TABLE outbox
                ALTER COLUMN next_attempt_at TYPE double precision USING extract(epoch FROM next_attempt_at)::double precision,
                ALTER COLUMN created_at TYPE double precision USING extract(epoch FROM created_at)::double precision,
                ALTER COLUMN updated_at TYPE double precision USING extract(epoch FROM updated_at)::double precision
            """
        ]),
    ]
}
