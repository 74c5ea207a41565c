import Foundation

/// The tables of pulls shared by several sync workers: who pulls which part of the work now
/// (`pull_partition`), and how far each pull has got (`sync_checkpoint`, the SQLite store's
/// `syncCheckpoint`). Migrations named `0300-...`.
enum PostgresPullSchema {
    static let migrations: [PostgresMigrations.Migration] = [
        .init("0300-pull-partitions", [
            """
            CREATE TABLE pull_partition (
                partition text PRIMARY KEY,
                claimed_by text,
                claimed_until timestamptz
            )
            """,
            """
            CREATE TABLE sync_checkpoint (
                server text NOT NULL,
                resource_type text NOT NULL,
                cursor text NOT NULL,
                updated_date double precision NOT NULL,
                PRIMARY KEY (server, resource_type)
            )
            """,
        ]),
        // A claim that lasts only while its worker is present (``PostgresWorkerPresence``).
        .init("0301-pull-partition-presence", [
            "ALTER TABLE pull_partition ADD COLUMN claimed_presence boolean NOT NULL DEFAULT false",
        ]),
    ]
}
