import Foundation
import GRDB

/// The audit trail's upkeep (``AuditTrailFile``): refusal counts, retention and size.
extension SQLiteStore {
    public func prepareAuditTrail(retentionDays: Int) throws {
        auditTrail.retentionDays = min(max(1, retentionDays), AuditRetention.maximumDays)
        _ = try auditTrail.writer(lastStoreID: lastAuditIDInStore)
        try pruneAuditTrail(now: Date())
    }

    /// Appends `entries` to the trail as ``recordAudit(_:)`` does, also when this store was opened for
    /// reading only: the trail is a file of its own beside the store (``AuditTrailFile``), opened for
    /// writing for this call and made when missing; the store itself is only read. The command line's
    /// reads of patient data audit themselves so (Docs/audit-events.md). Throws when the trail cannot be
    /// written (a read-only folder, say).
    @discardableResult
    public func recordAuditBesideStore(_ entries: [AuditEntry]) throws -> [Int64] {
        try auditTrail.forWriting().record(entries, lastStoreID: lastAuditIDInStore)
    }

    public func recordRefusals(_ counts: [AuditRefusalCount]) throws {
        try auditTrail.recordRefusals(counts, lastStoreID: lastAuditIDInStore)
    }

    public func auditRefusals(limit: Int) throws -> [AuditRefusalCount] {
        try auditTrail.refusals(limit: limit, lastStoreID: lastAuditIDInStore)
    }

    /// Prunes the trail's file only: entries an older CareGate kept in the store's own `audit` table stay
    /// (deleting them is a write to the store, which waits for `caregate sync`).
    @discardableResult
    public func pruneAuditTrail(now: Date) throws -> Int {
        let cutoff = now.addingTimeInterval(-Double(auditTrail.retentionDays) * 86_400)
        return try auditTrail.prune(before: cutoff, lastStoreID: lastAuditIDInStore)
    }

    public func auditStatistics() throws -> AuditTrailStatistics {
        var statistics = try auditTrail.statistics(lastStoreID: lastAuditIDInStore)
        statistics.entriesInStore = try readSnapshot { db in
            try db.tableExists(StoreSchema.Table.audit) ? try Int.fetchOne(db, sql: "SELECT count(*) FROM audit") ?? 0 : 0
        }
        return statistics
    }
}
