/// The tables that let several workers share one PostgreSQL store: the app API's clock
/// (``PostgresServerClock``). The writer lease and the append gate are advisory locks
/// (``PostgresWriterLease``) and need no table. Named from "0100-" on, after the store's own migrations.
public enum PostgresCoordinationMigrations {
    public static let all: [PostgresMigrations.Migration] = [
        .init("0100-sync-clock", [
            // One row: the store's process in CareKit's knowledge vector, and its logical clock (0 until
            // the first write). gen_random_uuid() is built in from PostgreSQL 13.
            """
            CREATE TABLE sync_clock (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                process_uuid uuid NOT NULL,
                clock bigint NOT NULL CHECK (clock >= 0)
            )
            """,
            "INSERT INTO sync_clock (singleton, process_uuid, clock) VALUES (true, gen_random_uuid(), 0)",
        ])
    ]
}
