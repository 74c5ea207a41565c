import CareModel
import Foundation
import Store

/// The export sent to a receiver (a FHIR server) rather than written to a file.
extension Exporter {
    /// Sends the pending exports to `receiver` as transaction or batch Bundles of `batchSize` outcomes
    /// each, and records each outcome's receipt: stored is acknowledged, refused fails for good, retry
    /// later fails until its time. Each Bundle's receipts are committed before the next is sent, so a
    /// run killed at any point sends again only what had no receipt yet, under the same Observation id
    /// (PUT) or identifier (conditional create): the server stores it once.
    ///
    /// A Bundle that gets no answer at all (after the receiver's own retries) is reported in
    /// ``ExportReport/unanswered``, its outcomes fail with a retry time a minute away, and the run goes
    /// on with the next Bundle; after ``unansweredLimit`` such Bundles in a row the receiver counts as
    /// down, and the rest waits for a later run.
    ///
    /// On a store whose outbox workers share by claims (`OutboxClaimingStore`: PostgreSQL), the push
    /// claims its outcomes a Bundle at a time and records their answers with claim-checked steps, so
    /// that several pushes run side by side (``push(to:batchSize:now:audit:claims:)``). Elsewhere (SQLite)
    /// it holds the store's writer lease from reading the outbox to its last receipt, so that two pushes
    /// at once never send the same entry twice.
    ///
    /// With `audit`, each Bundle writes the audit trail's entries of the patients whose outcomes it
    /// carries (``PushAudit``).
    public func push(to receiver: any ExportReceiver, batchSize: Int = 100, now: Date = Date(), audit: PushAudit? = nil) throws -> ExportReport {
        try push(to: receiver, batchSize: batchSize, now: now, audit: audit, claims: OutboxClaimSettings())
    }

    /// ``push(to:batchSize:now:audit:)`` with the worker's name and lease its claims take, on a store that
    /// offers claims (ignored on one that does not).
    public func push(to receiver: any ExportReceiver, batchSize: Int = 100, now: Date = Date(), audit: PushAudit? = nil, claims: OutboxClaimSettings) throws -> ExportReport {
        try checkSendable()
        if let claiming = store as? any OutboxClaimingStore {
            return try pushClaiming(on: claiming, to: receiver, batchSize: batchSize, now: now, audit: audit, settings: claims)
        }
        return try store.withWriterLease("caregate export push") { try pushing(to: receiver, batchSize: batchSize, now: now, audit: audit) }
    }

    /// Refuses a format or Bundle type a server does not take.
    func checkSendable() throws {
        guard options.format != .ndjson, options.bundleType != .collection else {
            throw ExportError.notSendable(reason: "a server takes transaction or batch Bundles, not \(options.format == .ndjson ? "NDJSON" : "a collection")")
        }
    }

    private func pushing(to receiver: any ExportReceiver, batchSize: Int, now: Date, audit: PushAudit?) throws -> ExportReport {
        let started = Date()
        let (_, newest, entriesOf) = try pending(at: now)
        let rendering = ExportRendering(options: options, identifierSystem: exporter.mapping.identifierSystem, exportID: UUID().canonicalString.lowercased(), now: now)
        let sender = OutboxBundleSender(store: store, receiver: receiver, rendering: rendering, batchSize: batchSize, now: now, audit: audit)
        do {
            try send(newest, of: entriesOf, rendering: rendering, through: sender)
            try sender.send()
        } catch is OutboxBundleSender.ReceiverDown {
            // What was not sent stays due: the next run sends it.
        }
        var report = sender.report
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// Builds the outcomes of `newest` and hands each to `sender` (with every due entry of its outcome in
    /// `entriesOf`), or refuses it into the sender's next batch.
    func send(_ newest: [OutboxEntry], of entriesOf: DueEntries, rendering: ExportRendering, through sender: OutboxBundleSender) throws {
        try build(newest, rendering: rendering) { entry, built in
            switch built {
            case .success(let rendered):
                sender.report.observations += 1
                try sender.add(entry, rendered: rendered, with: entriesOf[entry.entityID] ?? [], audited: PushAudit.Item(patientID: rendered.patientID, what: "outcome"))
            case .failure(let refusal):
                refuse(entry, with: entriesOf[entry.entityID] ?? [], refusal, into: &sender.refusals, report: &sender.report)
            }
        }
    }

    /// Bundles in a row without an answer after which the receiver counts as down for this run.
    public static let unansweredLimit = 3
}

/// Sends rendered outbox items (an outcome's Observation and Provenance, a report's DocumentReference
/// and Provenance) to a receiver as transaction or batch Bundles of `batchSize` items, each activity's
/// PATCH once per Bundle (``ExportRendering/ActivityPatches``: a Bundle is stored or fails as a whole, so
/// each Bundle whose outcomes complete an activity says so, and none says it twice), and commits each
/// Bundle's receipts, with the refusals gathered before it, before the next is sent: stored is
/// acknowledged, refused fails for good, retry later fails until its time, no answer fails with a retry a
/// minute away (the attempt counts: the server may have stored it).
final class OutboxBundleSender {
    /// The receiver gave no answer to ``Exporter/unansweredLimit`` Bundles in a row.
    struct ReceiverDown: Error {}

    let store: any Store
    let receiver: any ExportReceiver
    let rendering: ExportRendering
    let batchSize: Int
    let now: Date
    var report = ExportReport()
    /// Refusals (and their dead letters) to commit with the next Bundle's receipts.
    var refusals: StoreBatch
    private var waiting: [(entry: OutboxEntry, rendered: ExportRendering.Rendered, group: [OutboxEntry], audited: PushAudit.Item?)] = []
    private var unansweredInARow = 0

    /// Writes each Bundle's entries into the audit trail (``PushAudit``), when the push is audited and the
    /// store keeps a trail.
    private let audit: (PushAudit, any AuditTrailStore)?

    /// The claim-checked steps that record the answers, on a store whose workers share the outbox by
    /// claims; nil: the answers go in one batch (the push holds the writer lease).
    private let claims: ClaimedOutboxSteps?

    init(
        store: any Store, receiver: any ExportReceiver, rendering: ExportRendering, batchSize: Int, now: Date, audit: PushAudit? = nil,
        claims: ClaimedOutboxSteps? = nil
    ) {
        self.store = store
        self.claims = claims
        self.receiver = receiver
        self.rendering = rendering
        self.batchSize = max(1, batchSize)
        self.now = now
        self.refusals = StoreBatch(date: now)
        if let audit, let trail = store as? any AuditTrailStore { self.audit = (audit, trail) } else { self.audit = nil }
    }

    /// Queues `entry`'s rendered bytes for the next Bundle; `group` is every due entry it answers for
    /// (an outcome's older versions go out as its newest); `audited` says whose data it is, for the audit
    /// trail (nil: not audited); sends when the Bundle is full.
    func add(_ entry: OutboxEntry, rendered: ExportRendering.Rendered, with group: [OutboxEntry], audited: PushAudit.Item?) throws {
        waiting.append((entry, rendered, group, audited))
        if waiting.count >= batchSize { try send() }
    }

    /// Sends what is waiting as one Bundle and commits its receipts (or only the refusals, when nothing
    /// waits).
    func send() throws {
        guard !waiting.isEmpty || !refusals.isEmpty else { return }
        var batch = refusals
        refusals = StoreBatch(date: now)
        defer { waiting.removeAll() }
        guard !waiting.isEmpty else {
            _ = try commit(batch)
            return
        }
        var patches = ExportRendering.ActivityPatches()
        let placed = waiting.map { patches.place($0.rendered) }
        var bundle = rendering.head()
        for (position, rendered) in placed.enumerated() {
            if position > 0 { bundle.append(rendering.separator) }
            bundle.append(rendered.bytes)
        }
        bundle.append(rendering.tail())
        report.requests += 1
        // Written before the Bundle leaves: a job killed meanwhile still leaves the entries.
        let opened = try audit.map { audit, trail in try audit.open(waiting.map(\.audited), in: trail, now: now) }
        let receipts: [ExportReceipt]
        do {
            receipts = try receiver.receive(bundle: bundle, entryCounts: placed.map(\.entries))
            unansweredInARow = 0
        } catch {
            for item in waiting {
                for entry in item.group {
                    guard let id = entry.id else { continue }
                    // It was sent (the server may well have stored it): the attempt counts.
                    batch.transition(outboxEntry: id, .sent(at: now))
                    batch.transition(outboxEntry: id, .failed(error: "\(error)", retryAt: now.addingTimeInterval(60), at: now))
                }
            }
            _ = try commit(batch)
            if let (audit, trail) = audit, let opened { try audit.complete(opened, receipts: nil, in: trail, now: now) }
            report.unanswered.append("\(error)")
            unansweredInARow += 1
            if unansweredInARow >= Exporter.unansweredLimit { throw ReceiverDown() }
            return
        }
        var audited: [Int: PushAudit.Receipt] = [:]
        for (position, (item, receipt)) in zip(waiting, receipts + Array(repeating: .retryLater(reason: "no receipt for it in the answer", after: 60), count: max(0, waiting.count - receipts.count))).enumerated() {
            for entry in item.group {
                guard let id = entry.id else { continue }
                switch receipt {
                case .stored(let location):
                    batch.transition(outboxEntry: id, .sent(at: now))
                    batch.transition(outboxEntry: id, .acknowledged(at: now, server: location.flatMap(ServerVersion.init(location:))))
                    report.sent += 1
                case .refused(let reason):
                    batch.transition(outboxEntry: id, .failed(error: reason, retryAt: nil, at: now))
                case .retryLater(let reason, let after):
                    batch.transition(outboxEntry: id, .failed(error: reason, retryAt: now.addingTimeInterval(after), at: now))
                }
            }
            switch receipt {
            case .stored:
                report.acknowledged += 1
                audited[position] = .stored
            case .refused(let reason):
                report.notTaken.append((item.entry.id ?? 0, item.entry.entityID, reason, false))
                audited[position] = .refused
            case .retryLater(let reason, _):
                report.notTaken.append((item.entry.id ?? 0, item.entry.entityID, reason, true))
                audited[position] = .later
            }
        }
        let refused = try commit(batch)
        // An answer a lapsed claim kept from being recorded does not count: the entry's new holder sends it.
        for (position, item) in waiting.enumerated() where audited[position] == .stored {
            let lost = item.group.compactMap(\.id).filter(refused.contains).count
            report.sent -= lost
            if let id = item.entry.id, refused.contains(id) { report.acknowledged -= 1 }
        }
        if let (audit, trail) = audit, let opened { try audit.complete(opened, receipts: audited, in: trail, now: now) }
    }

    /// Records `batch`: in one transaction, or by claim-checked steps when the push claims its entries;
    /// a refused step is reported in ``ExportReport/unanswered``. Returns the ids refused.
    private func commit(_ batch: StoreBatch) throws -> Set<Int64> {
        guard let claims else {
            try store.apply(batch)
            return []
        }
        let refusals = try claims.apply(batch)
        report.unanswered += refusals.map { "\($0.reason): the server's answer for it was not recorded by this worker" }
        return Set(refusals.map(\.id))
    }
}
