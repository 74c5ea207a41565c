/// The PostgreSQL outbox's tables, as named migrations (``PostgresMigrations``) whose names start with
/// `0200-`: the range the outbox owns, beside the store's other parts.
///
/// `outbox` holds the same columns as the SQLite store's table (snake_case; its dates `timestamptz` here,
/// made `double precision` seconds since 1970 as SQLite keeps them by the staging schema's
/// `0604-staging-outbox-dates-as-seconds`, ``PostgresStagingSchema``), plus a
/// claim: `claimed_by` (the worker's name) and `claimed_until` (when the claim lapses, NULL when none is
/// held). One entry per destination and entity version (the unique key), as in SQLite. The partial index
/// holds only the entries a claim may still take, in id order, so that a claim never walks the
/// acknowledged history.
public enum PostgresOutboxSchema {
    /// The outbox's migrations, in order.
    public static let migrations: [PostgresMigrations.Migration] = [
        .init("0200-outbox", [
            """
            CREATE TABLE outbox (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                destination text NOT NULL,
                entity_kind text NOT NULL,
                entity_id text NOT NULL,
                entity_uuid uuid NOT NULL,
                payload bytea,
                state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'acknowledged', 'failed')),
                attempts integer NOT NULL DEFAULT 0,
                last_error text,
                next_attempt_at timestamptz,
                server_id text,
                server_version text,
                created_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL,
                claimed_by text,
                claimed_until timestamptz,
                UNIQUE (destination, entity_uuid)
            )
            """,
            "CREATE INDEX outbox_claimable ON outbox (id) WHERE state IN ('pending', 'sent', 'failed')",
        ]),
        // A claim of whole groups (``PostgresOutbox/claimGroups(worker:kinds:after:limit:leaseFor:dueAt:)``)
        // looks up an entity's other open entries.
        .init("0201-outbox-open-by-entity", [
            "CREATE INDEX outbox_open_by_entity ON outbox (destination, entity_kind, entity_id) WHERE state IN ('pending', 'sent', 'failed')",
        ]),
        // A claim that lasts only while its worker is present (``PostgresWorkerPresence``).
        .init("0202-outbox-claim-presence", [
            "ALTER TABLE outbox ADD COLUMN claimed_presence boolean NOT NULL DEFAULT false",
        ]),
    ]
}
