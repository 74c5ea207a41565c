import CareModel
import Foundation
import Store

/// The name and lease of a push's claims on a store whose outbox workers share (`OutboxClaimingStore`).
public struct OutboxClaimSettings: Sendable {
    /// The worker's name in the store: unique among live workers (host, process, a random part).
    public var worker: String
    /// How long a claim lasts: longer than a Bundle's round trip with the receiver's retries. A stuck
    /// worker keeps its claims this long; one whose process died gives them up at once where the store
    /// knows its workers' presence (PostgreSQL).
    public var lease: Duration

    /// Five minutes: a Bundle's round trip, retries included, fits many times over.
    public static let defaultLease = Duration.seconds(300)

    public init(worker: String = ClaimWorker.name(), lease: Duration = OutboxClaimSettings.defaultLease) {
        self.worker = worker
        self.lease = lease
    }
}

/// The push on a store whose outbox several workers share by claims (PostgreSQL): no writer lease, so
/// that workers push side by side.
extension Exporter {
    /// Claims due outcome entries a Bundle at a time (whole groups: an outcome's older versions with its
    /// newest, `OutboxClaimingStore.claimOutboxEntries(worker:kinds:after:limit:leaseFor:dueAt:)`),
    /// renders the newest of each outcome it holds as ``pending(at:)`` groups them, sends them as one
    /// Bundle, and records each answer with claim-checked steps (``ClaimedOutboxSteps``): an entry whose
    /// claim lapsed and was taken over is not acknowledged by this worker, and the refusal is reported in
    /// ``ExportReport/unanswered``. Refusals keep their dead letters; outcomes held for consent fail, due
    /// again at once, as under the lease. The run walks the outbox in id order (each claim takes entries
    /// after the last it took), so it never claims again what it answered, a held outcome included.
    func pushClaiming(
        on claiming: any OutboxClaimingStore, to receiver: any ExportReceiver, batchSize: Int, now: Date, audit: PushAudit?, settings: OutboxClaimSettings
    ) throws -> ExportReport {
        let started = Date()
        let rendering = ExportRendering(options: options, identifierSystem: exporter.mapping.identifierSystem, exportID: UUID().canonicalString.lowercased(), now: now)
        let sender = OutboxBundleSender(
            store: store, receiver: receiver, rendering: rendering, batchSize: batchSize, now: now, audit: audit,
            claims: ClaimedOutboxSteps(store: claiming, worker: settings.worker))
        let perClaim = max(1, batchSize)
        var after: Int64 = 0
        var remaining = options.limit
        do {
            while remaining > 0 {
                let limit = min(remaining, perClaim)
                let claimed = try claiming.claimOutboxEntries(
                    worker: settings.worker, kinds: [.outcome], after: after, limit: limit, leaseFor: settings.lease, dueAt: now)
                guard !claimed.isEmpty else { break }
                // Each outcome's oldest claimed entry: the next claim takes outcomes whose oldest due
                // entry comes after the last of these.
                var oldest: [String: Int64] = [:]
                for entry in claimed {
                    guard let id = entry.id else { continue }
                    let key = entry.destination + "\u{0}" + entry.entityID
                    oldest[key] = min(oldest[key] ?? id, id)
                }
                guard let last = oldest.values.max(), last > after else { break }
                after = last
                remaining -= claimed.count
                let entriesOf = DueEntries(claimed)
                try send(entriesOf.newest, of: entriesOf, rendering: rendering, through: sender)
                // Each claim's Bundle goes before the next claim: nothing is held longer than one round trip.
                try sender.send()
            }
        } catch is OutboxBundleSender.ReceiverDown {
            // What was not sent stays due: the next run sends it.
        }
        var report = sender.report
        report.seconds = Date().timeIntervalSince(started)
        return report
    }
}
