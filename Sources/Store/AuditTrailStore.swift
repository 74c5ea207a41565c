import Foundation

/// The audit trail's operations, which the app API's store (``AppSyncStore``) includes: what a store
/// keeps of who read or wrote which patient's data, the refusal counts, retention and size. ``SQLiteStore`` keeps the trail in a file beside the store; the PostgreSQL store
/// in tables of its database, which every instance of `caregate serve` on it shares. The same contract
/// tests run on both (`AuditTrailContractTests`).
public protocol AuditTrailStore: AnyObject, Sendable {
    /// Appends `entries` to the audit trail, in order, in one transaction: all of them are durable when it
    /// returns, or none is. The trail has a write lock of its own: it never waits for the store's writer.
    /// An entry with an `id` completes the entry of that id (a write's ``AuditEntry/unanswered`` entry)
    /// instead of adding one. Returns each entry's id.
    @discardableResult
    func recordAudit(_ entries: [AuditEntry]) throws -> [Int64]
    /// Appends `entries` as ``recordAudit(_:)-([AuditEntry])`` does, also when the store was opened for
    /// reading only, where the trail lives apart from the store (``SQLiteStore``'s file beside it): what
    /// the command line's reads of patient data write. By default, ``recordAudit(_:)-([AuditEntry])``.
    @discardableResult
    func recordAuditBesideStore(_ entries: [AuditEntry]) throws -> [Int64]
    /// Opens (making it when missing) the audit trail for writing, so that a server finds out when it
    /// starts, not at its first request, that it cannot write it; keeps entries `retentionDays` days
    /// (``pruneAuditTrail(now:)``) and prunes older ones now.
    func prepareAuditTrail(retentionDays: Int) throws
    /// Adds `counts` to the trail's refusal counts (one row per minute, route, status and reason), in one
    /// transaction.
    func recordRefusals(_ counts: [AuditRefusalCount]) throws
    /// The latest `limit` refusal counts, newest minute first.
    func auditRefusals(limit: Int) throws -> [AuditRefusalCount]
    /// Deletes the trail's entries and refusal counts older than its retention before `now`, a bounded
    /// batch per transaction; returns how many rows went.
    @discardableResult
    func pruneAuditTrail(now: Date) throws -> Int
    /// The trail's size: rows, refusal counts, oldest and newest, bytes on disk.
    func auditStatistics() throws -> AuditTrailStatistics
    /// The latest audit entries, newest first (of one patient when `patientID` is given).
    func auditEntries(patientID: String?, limit: Int) throws -> [AuditEntry]
}

extension AuditTrailStore {
    /// Appends one entry to the audit trail (its own transaction); returns its id.
    @discardableResult
    public func recordAudit(_ entry: AuditEntry) throws -> Int64 {
        try recordAudit([entry]).first ?? 0
    }

    @discardableResult
    public func recordAuditBesideStore(_ entries: [AuditEntry]) throws -> [Int64] {
        try recordAudit(entries)
    }

    /// ``prepareAuditTrail(retentionDays:)`` with the default retention (``AuditRetention/defaultDays``).
    public func prepareAuditTrail() throws {
        try prepareAuditTrail(retentionDays: AuditRetention.defaultDays)
    }
}
