import Foundation

/// The audit trail's own operations, apart from the rest of the app API's store (``AppSyncStore``
/// declares the same): what a store keeps of who read or wrote which patient's data, the refusal counts,
/// retention and size. ``SQLiteStore`` keeps the trail in a file beside the store; the PostgreSQL store
/// in tables of its database, which every instance of `caregate serve` on it shares. The same contract
/// tests run on both (`AuditTrailContractTests`).
public protocol AuditTrailStore: AnyObject, Sendable {
    /// Appends `entries` in order in one transaction (an entry with an `id` completes that entry);
    /// returns each entry's id.
    @discardableResult
    func recordAudit(_ entries: [AuditEntry]) throws -> [Int64]
    /// ``recordAudit(_:)``, also when the store was opened for reading only.
    @discardableResult
    func recordAuditBesideStore(_ entries: [AuditEntry]) throws -> [Int64]
    /// Opens the trail for writing, keeps entries `retentionDays` days and prunes older ones now.
    func prepareAuditTrail(retentionDays: Int) throws
    /// Adds `counts` to the refusal counts (one row per minute, route, status and reason).
    func recordRefusals(_ counts: [AuditRefusalCount]) throws
    /// The latest `limit` refusal counts, newest minute first.
    func auditRefusals(limit: Int) throws -> [AuditRefusalCount]
    /// Deletes entries and refusal counts older than the retention before `now`; returns how many rows went.
    @discardableResult
    func pruneAuditTrail(now: Date) throws -> Int
    /// The trail's size.
    func auditStatistics() throws -> AuditTrailStatistics
    /// The latest entries, newest first (of one patient when `patientID` is given).
    func auditEntries(patientID: String?, limit: Int) throws -> [AuditEntry]
}

extension SQLiteStore: AuditTrailStore {}
