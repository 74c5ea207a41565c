import CareModel
import FHIR
import Foundation
import Store

/// Queues the audit trail's entries as BALP AuditEvents (``BALPAuditEvent``) in the outbox, each once,
/// for the sync job to push (`audit-events: true` in sync.yaml) through the same Bundles, states,
/// receipts and retries as outcomes and reports (``PayloadOutbox``, kind `audit`).
///
/// An entry's outbox entry has the id `AuditEvent/<id>` and a uuid that is the AuditEvent's id, derived
/// from the trail entry: queueing it again finds it, so each is sent once; its payload is one
/// `PUT AuditEvent/<id>`, so a push repeated after a lost answer stores it once. A write still
/// unanswered (the server may yet complete it) is queued once it is older than ``unansweredGrace``:
/// by then its server has stopped without answering, and the event says so (outcome 8).
public struct AuditEventOutbox {
    /// The most trail entries one run looks at, newest first.
    public static let scanLimit = 100_000
    /// How long an unanswered write waits before it is queued as such.
    public static let unansweredGrace: TimeInterval = 3_600
    /// How many outbox lookups are made at once.
    static let lookupChunk = 500

    public let store: any AppSyncStore

    public init(store: any AppSyncStore) {
        self.store = store
    }

    /// What one ``enqueueNew(now:)`` did.
    public struct Queueing: Sendable, Equatable {
        public var queued = 0
        public var alreadyQueued = 0
        /// Unanswered writes left for a later run.
        public var waiting = 0
        /// Whether the scan stopped at ``AuditEventOutbox/scanLimit`` with every entry new: older ones may be missed.
        public var truncated = false
    }

    /// Queues every entry of the trail (the newest ``scanLimit``) not queued before.
    public func enqueueNew(now: Date = Date()) throws -> Queueing {
        var result = Queueing()
        let entries = try store.auditEntries(patientID: nil, limit: Self.scanLimit)
        let host = BALPAuditEvent.hostName
        var start = 0
        while start < entries.count {
            let chunk = Array(entries[start..<min(start + Self.lookupChunk, entries.count)])
            start += Self.lookupChunk
            let uuids = chunk.compactMap { UUID(uuidString: BALPAuditEvent.id(of: $0)) }
            let known = Set(try store.outboxEntries(destination: OutboxEntry.provider, entityUUIDs: uuids).map(\.entityUUID))
            var batch = StoreBatch(date: now)
            for entry in chunk {
                guard let uuid = UUID(uuidString: BALPAuditEvent.id(of: entry)) else { continue }
                if known.contains(uuid) {
                    result.alreadyQueued += 1
                    continue
                }
                if entry.isUnanswered, now.timeIntervalSince(entry.date) < Self.unansweredGrace {
                    result.waiting += 1
                    continue
                }
                let entries = BALPAuditEvent.transactionEntries([entry], host: host)
                guard !entries.isEmpty else { continue }
                batch.enqueue(try PayloadOutbox.entry(.audit, id: "AuditEvent/\(uuid.canonicalString.lowercased())", uuid: uuid, entries: entries, now: now))
                result.queued += 1
            }
            try store.apply(batch)
        }
        result.truncated = entries.count == Self.scanLimit && result.alreadyQueued == 0
        return result
    }
}
