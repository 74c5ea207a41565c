import Foundation

/// The tables of the operations history: sync runs and the last import's coverage (as the SQLite store's
/// `syncRun` and `lastImportCoverage`, StoreSchema+OperationsMigrations.swift).
enum PostgresOperationsSchema {
    static let migrations: [PostgresMigrations.Migration] = [
        .init("0010-operations-history", [
            """
            CREATE TABLE sync_run (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                run_id text NOT NULL,
                server text NOT NULL,
                started double precision NOT NULL,
                ended double precision NOT NULL,
                result text NOT NULL,
                pulled bigint NOT NULL, imported bigint NOT NULL, failed bigint NOT NULL,
                pushed bigint NOT NULL, acknowledged bigint NOT NULL, refused bigint NOT NULL,
                dead_letters bigint NOT NULL, problems bigint NOT NULL,
                report text,
                error text
            )
            """,
            """
            CREATE TABLE last_import_coverage (
                slot integer PRIMARY KEY CHECK (slot = 1),
                recorded_date double precision NOT NULL,
                record text NOT NULL
            )
            """,
        ]),
        // The audit trail (as the SQLite store's trail file: AuditTrailFile.swift), in the store's database.
        .init("0011-audit-trail", [
            """
            CREATE TABLE audit (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                date double precision NOT NULL,
                subject text,
                patient_id text,
                action text NOT NULL,
                status integer NOT NULL,
                detail text,
                client_address text
            )
            """,
            "CREATE INDEX audit_by_patient ON audit (patient_id, date)",
            "CREATE INDEX audit_by_date ON audit (date)",
            """
            CREATE TABLE audit_refusals (
                minute bigint NOT NULL,
                action text NOT NULL,
                status integer NOT NULL,
                reason text NOT NULL,
                count bigint NOT NULL,
                PRIMARY KEY (minute, action, status, reason)
            )
            """,
        ]),
    ]
}
