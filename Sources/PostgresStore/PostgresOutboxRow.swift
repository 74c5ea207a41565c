import CareModel
import Foundation
import PostgresNIO
import Store

/// One row of the `outbox` table as read back: the ``OutboxEntry`` and its claim.
struct PostgresOutboxRow: Sendable {
    /// The columns every read selects, in the order of ``Columns``.
    static let columns = columns(of: nil)
    /// The same, each qualified by `table` (a RETURNING of an UPDATE ... FROM names them so).
    static func columns(of table: String?) -> String {
        let names = [
            "id", "destination", "entity_kind", "entity_id", "entity_uuid", "payload", "state", "attempts", "last_error", "next_attempt_at",
            "server_id", "server_version", "created_at", "updated_at", "claimed_by", "claimed_until",
        ]
        return names.map { name in table.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }
    typealias Columns = (
        Int64, String, String, String, UUID, Data?, String, Int, String?, Double?,
        String?, String?, Double, Double, String?, Date?
    )

    var entry: OutboxEntry
    var claimedBy: String?
    var claimedUntil: Date?

    /// The row of `values`; a kind or state this build does not know (a row written by hand, or by a
    /// newer CareGate) is an error naming the entry, never skipped.
    init(_ values: Columns, url: String) throws {
        let (id, destination, kindText, entityID, uuid, payload, stateText, attempts, lastError, nextAttempt,
             serverID, serverVersion, created, updated, claimedBy, claimedUntil) = values
        guard let kind = EntityKind(rawValue: kindText), let state = OutboxState(rawValue: stateText) else {
            throw PostgresStoreError.server(url: url, problem: "outbox entry \(id) has an unknown entity kind or state (\(kindText), \(stateText))")
        }
        entry = OutboxEntry(
            id: id, destination: destination, entityKind: kind, entityID: entityID, entityUUID: uuid, payload: payload, state: state,
            attempts: attempts, lastError: lastError, nextAttemptDate: nextAttempt.map(Date.init(timeIntervalSince1970:)), server: serverID.map { ServerVersion(id: $0, version: serverVersion) },
            createdDate: Date(timeIntervalSince1970: created), updatedDate: Date(timeIntervalSince1970: updated))
        self.claimedBy = claimedBy
        self.claimedUntil = claimedUntil
    }
}
