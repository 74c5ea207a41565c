import Foundation
import Store

/// What a push to the provider's server writes into the audit trail: for each Bundle, one entry per
/// patient whose data it carries (outcomes, reports, consent decisions, shares), written before the
/// Bundle leaves and completed with the server's receipts once they are committed.
///
/// A push discloses patient data to another system, so it is audited as the command line's exports are
/// (BALP's Export shape, ``BALPAuditEvent/Pattern/export``): subject `cli:<user>` (who runs the job),
/// action ``action`` (`caregate sync push`), the patient's id, detail the counts, the run and the
/// server's base URL (never names or values). The entry is written before the Bundle is sent, so a job
/// killed between the two still leaves it; its detail then says the Bundle was being sent. Status 0 is a
/// Bundle the server answered (its receipts, stored or refused, are in the detail), 1 one that got no
/// answer (the server may have stored it: it is sent again later).
///
/// AuditEvents pushed to the server (`audit-events: true`) are not audited again: each push would
/// otherwise make an entry for the next run to push, without end.
public struct PushAudit: Sendable {
    /// The subject of the entries: the user running the job.
    public var subject: String
    /// The entries' action, a command line's (`AuditEntry.commandPrefix`).
    public var action: String
    /// The server the data goes to, without credentials.
    public var recipient: String
    /// The sync run's id (what its log lines carry), when there is one.
    public var runID: String?

    public init(subject: String = AuditEntry.commandLineSubject, action: String = "caregate sync push", recipient: String, runID: String? = nil) {
        self.subject = subject
        self.action = action
        self.recipient = recipient
        self.runID = runID
    }

    /// What one item of a Bundle carries, for the trail: whose data, and what it is.
    public struct Item: Sendable, Equatable {
        /// The patient's id (the store's, or as a payload names it), nil for data of no patient.
        public var patientID: String?
        /// `outcome`, `report`, `consent decision`, `share`.
        public var what: String

        public init(patientID: String?, what: String) {
            self.patientID = patientID
            self.what = what
        }
    }

    /// How the server answered one item.
    enum Receipt {
        case stored, refused, later
    }

    /// The entries written before one Bundle is sent: their ids in the trail, and what each counts.
    struct Opened {
        fileprivate var entries: [(id: Int64, entry: AuditEntry, items: [String: Int])]
        fileprivate var positions: [Int: Int]
    }

    /// Writes, before a Bundle of `items` (nil: not audited) is sent, one entry per patient.
    func open(_ items: [Item?], in trail: any AppSyncStore, now: Date) throws -> Opened {
        var order: [String?] = []
        var counts: [String?: [String: Int]] = [:]
        var positions: [Int: String?] = [:]
        for (position, item) in items.enumerated() {
            guard let item else { continue }
            if counts[item.patientID] == nil { order.append(item.patientID) }
            counts[item.patientID, default: [:]][item.what, default: 0] += 1
            positions[position] = item.patientID
        }
        guard !order.isEmpty else { return Opened(entries: [], positions: [:]) }
        let entries = order.map { patient in
            AuditEntry(date: now, subject: subject, patientID: patient, action: action, status: 0, detail: detail(counts[patient] ?? [:], outcome: "being sent"))
        }
        let ids = try trail.recordAudit(entries)
        let index = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($0.element, $0.offset) })
        return Opened(
            entries: zip(zip(ids, entries), order).map { ($0.0, $0.1, counts[$1] ?? [:]) },
            positions: positions.compactMapValues { index[$0] })
    }

    /// Completes the entries of `opened` with the receipts of the Bundle's items (by position), or, when
    /// the Bundle got no answer, says so (status 1).
    func complete(_ opened: Opened, receipts: [Int: Receipt]?, in trail: any AppSyncStore, now: Date) throws {
        guard !opened.entries.isEmpty else { return }
        var tallies = Array(repeating: (stored: 0, refused: 0, later: 0), count: opened.entries.count)
        if let receipts {
            for (position, receipt) in receipts {
                guard let entry = opened.positions[position] else { continue }
                switch receipt {
                case .stored: tallies[entry].stored += 1
                case .refused: tallies[entry].refused += 1
                case .later: tallies[entry].later += 1
                }
            }
        }
        let completed = opened.entries.enumerated().map { offset, opened in
            var entry = opened.entry
            entry.id = opened.id
            entry.date = now
            if receipts == nil {
                entry.status = 1
                entry.detail = detail(opened.items, outcome: "no answer (sent again later)")
            } else {
                let tally = tallies[offset]
                entry.detail = detail(opened.items, outcome: "\(tally.stored) stored, \(tally.refused) refused, \(tally.later) to send again")
            }
            return entry
        }
        _ = try trail.recordAudit(completed)
    }

    /// Writes the entry of `count` outcomes written to a folder that stands for the server (`push-to:` a
    /// folder): one entry naming no patient, as `caregate export` writes (the file export does not say
    /// whose outcomes it wrote). Nothing when none was written, or the store keeps no trail.
    public func recordFolderExport(_ count: Int, to folder: String, in store: any Store, now: Date = Date()) throws {
        guard count > 0, let trail = store as? any AppSyncStore else { return }
        var audit = self
        audit.recipient = folder
        _ = try trail.recordAudit([
            AuditEntry(date: now, subject: subject, patientID: nil, action: action, status: 0, detail: audit.detail(["outcome": count], outcome: "written")),
        ])
    }

    /// `3 outcome(s), 1 report(s) to https://fhir.example.org/r4 (run 1a2b3c4d): being sent`: counts, the
    /// server and the run, no patient data.
    private func detail(_ items: [String: Int], outcome: String) -> String {
        let what = items.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)(s)" }.joined(separator: ", ")
        let run = runID.map { " (run \($0))" } ?? ""
        return String("\(what) to \(recipient)\(run): \(outcome)".prefix(1_000))
    }
}
