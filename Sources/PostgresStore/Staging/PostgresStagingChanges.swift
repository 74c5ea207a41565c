import Logging
import PostgresNIO
import Store

// OWNER: helper h-pgstaging. A stub until the staging changes land.
/// The changes of a batch that are not about care entities (checkpoints, export progress, report starts,
/// consent decisions, the outbox, dead letters), applied inside the batch's transaction.
enum PostgresStagingChanges {
    /// Applies `change` on `connection` (in the batch's transaction) and counts it in `summary`; false
    /// when `change` is not one of these (the entity writer's).
    static func apply(_ change: StoreChange, on connection: PostgresConnection, logger: Logger, summary: inout BatchSummary) async throws -> Bool {
        false
    }
}
