import Foundation
import Pipeline

/// What one sync run did: the job report (`caregate sync` prints it, and writes it as JSON with
/// `--report`). No PHI: counts, resource types and error messages about requests only.
public struct SyncReport: Sendable, Codable, Equatable {
    public struct Pulled: Sendable, Codable, Equatable {
        public var resources = 0
        public var pages = 0
        public var created = 0, updated = 0, unchanged = 0, deleted = 0, skipped = 0, failed = 0

        /// Takes what the import did with the pulled resources.
        mutating func record(_ counts: ImportReport.Counts) {
            (created, updated, unchanged, deleted, skipped, failed) =
                (counts.created, counts.updated, counts.unchanged, counts.deleted, counts.skipped, counts.failed)
        }

        /// What the import did with the pulled resources.
        var counts: ImportReport.Counts {
            var counts = ImportReport.Counts()
            (counts.created, counts.updated, counts.unchanged, counts.deleted, counts.skipped, counts.failed) =
                (created, updated, unchanged, deleted, skipped, failed)
            return counts
        }
    }

    /// The care-team reports of the run (`reports:`): made and queued, found queued by an earlier run,
    /// left out for want of data; sent, stored by the server, refused or left for a later run.
    public struct Reports: Sendable, Codable, Equatable {
        public var made = 0, alreadyQueued = 0, withoutData = 0
        public var sent = 0, acknowledged = 0, refused = 0, later = 0

        public init() {}
    }

    /// The other entries that carry their own resources (`PayloadOutbox`: consent decisions, shares),
    /// of one kind: sent, stored by the server, refused or left for a later run.
    public struct Sent: Sendable, Codable, Equatable {
        public var sent = 0, acknowledged = 0, refused = 0, later = 0

        public init() {}
    }

    public var server: String
    /// Per resource type.
    public var pulled: [String: Pulled] = [:]
    /// Outcomes sent, stored by the server, refused or left for a later run; dead letters.
    public var pushed = 0, acknowledged = 0, refused = 0, later = 0, deadLetters = 0
    /// Outbox entries that failed before and wait for their next attempt (not due in this run), and
    /// the earliest of those attempts.
    /// Set when the configuration asks for reports.
    public var reports: Reports?
    /// Per `PayloadOutbox.Kind` other than reports (`consent`, `share`), when the run sent any.
    public var payloads: [String: Sent] = [:]
    public var waiting = 0
    public var nextAttempt: Date?
    /// The dead letters in the store waiting for a person after the run (this run's and earlier ones'),
    /// until a replay resolves them. Not a failure of the run: it is said, not counted in the exit status.
    public var deadLettersWaiting = 0
    public var requests = 0
    public var retries = 0
    public var seconds = 0.0
    /// The run's time by phase: pulling (requests and downloads), importing what was pulled, pushing.
    public var pullSeconds = 0.0, importSeconds = 0.0, pushSeconds = 0.0
    /// What went wrong (no patient data: types, ids of entries, server messages).
    public var problems: [String] = []
    /// What the run left out on purpose, and why (not failures).
    public var notes: [String] = []
    /// Outcomes that wait for their patient's consent (terms with `required: true`): not failures.
    public var held = 0

    /// An empty report of a run against `server`.
    public init(server: String) {
        self.server = server
    }

    /// 0 when everything was done, 1 when anything failed or waits for a later run.
    public var exitStatus: Int32 {
        let failedPulls = pulled.values.reduce(0) { $0 + $1.failed }
        let reportsNotTaken = (reports?.refused ?? 0) + (reports?.later ?? 0)
        let payloadsNotTaken = payloads.values.reduce(0) { $0 + $1.refused + $1.later }
        return failedPulls + refused + later + waiting + deadLetters + reportsNotTaken + payloadsNotTaken + problems.count == 0 ? 0 : 1
    }

    /// The report as text, a line per resource type.
    public var text: String {
        var lines = ["sync with \(server.hasPrefix("file://") ? URL(string: server)?.path ?? server : server): \(String(format: "%.1f", seconds)) s (pull \(String(format: "%.1f", pullSeconds)), import \(String(format: "%.1f", importSeconds)), push \(String(format: "%.1f", pushSeconds))), \(requests) push request(s), \(retries) retr\(retries == 1 ? "y" : "ies")"]
        for type in pulled.keys.sorted() {
            let p = pulled[type] ?? Pulled()
            lines.append("  pulled \(type): \(p.resources)\(p.pages > 0 ? " in \(p.pages) page(s)" : " read"): \(p.created) created, \(p.updated) updated, \(p.unchanged) unchanged, \(p.deleted) deleted, \(p.skipped) skipped, \(p.failed) failed")
        }
        lines.append("  pushed: \(pushed) outcome(s): \(acknowledged) acknowledged, \(refused) refused, \(later) to send again, \(deadLetters) dead letter(s)")
        if held > 0 { lines.append("  held: \(held) outcome(s) wait for their patient's consent (caregate outbox lists them)") }
        if let r = reports {
            lines.append("  reports: \(r.made) made, \(r.alreadyQueued) queued before, \(r.withoutData) without data; \(r.sent) sent: \(r.acknowledged) acknowledged, \(r.refused) refused, \(r.later) to send again")
        }
        for kind in payloads.keys.sorted() {
            let p = payloads[kind] ?? Sent()
            lines.append("  \(kind): \(p.sent) sent: \(p.acknowledged) acknowledged, \(p.refused) refused, \(p.later) to send again")
        }
        if waiting > 0 {
            lines.append("  waiting: \(waiting) outbox entr\(waiting == 1 ? "y" : "ies") failed before and wait for a later run" + (nextAttempt.map { " (the first from \($0.formatted(.iso8601)); caregate outbox --state failed lists them, caregate outbox retry ID sends one now)" } ?? ""))
        }
        if deadLettersWaiting > 0 {
            lines.append("  needs a person: \(deadLettersWaiting) dead letter(s) waiting (caregate store dead-letters lists them; fix the cause, then caregate store dead-letters retry ID... or --all)")
        }
        lines += notes.map { "  note: \($0)" }
        lines += problems.map { "  problem: \($0)" }
        return lines.joined(separator: "\n")
    }
}
