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

    /// The entries written before one Bundle is sent: one per patient, in the order the Bundle first
    /// names them, with what each counts, and which entry each audited item of the Bundle falls under.
    struct Opened {
        fileprivate var patients: [String?] = []
        fileprivate var counts: [[String: Int]] = []
        fileprivate var ids: [Int64] = []
        /// Item position in the Bundle -> index of its patient's entry.
        fileprivate var entryAt: [Int: Int] = [:]
    }

    /// Writes, before a Bundle of `items` (nil: not audited) is sent, one entry per patient.
    func open(_ items: [Item?], in trail: any AuditTrailStore, now: Date) throws -> Opened {
        var opened = Opened()
        var entryOfPatient: [String?: Int] = [:]
        for (position, item) in items.enumerated() {
            guard let item else { continue }
            let entry: Int
            if let known = entryOfPatient[item.patientID] {
                entry = known
            } else {
                entry = opened.patients.count
                entryOfPatient[item.patientID] = entry
                opened.patients.append(item.patientID)
                opened.counts.append([:])
            }
            opened.counts[entry][item.what, default: 0] += 1
            opened.entryAt[position] = entry
        }
        guard !opened.patients.isEmpty else { return opened }
        opened.ids = try trail.recordAudit(zip(opened.patients, opened.counts).map { patient, counts in
            AuditEntry(date: now, subject: subject, patientID: patient, action: action, status: 0, detail: detail(counts, outcome: "being sent"))
        })
        return opened
    }

    /// Completes the entries of `opened` with the receipts of the Bundle's items (by position), or, when
    /// the Bundle got no answer, says so (status 1).
    func complete(_ opened: Opened, receipts: [Int: Receipt]?, in trail: any AuditTrailStore, now: Date) throws {
        guard !opened.ids.isEmpty else { return }
        var tallies = Array(repeating: (stored: 0, refused: 0, later: 0), count: opened.ids.count)
        for (position, receipt) in receipts ?? [:] {
            guard let entry = opened.entryAt[position] else { continue }
            switch receipt {
            case .stored: tallies[entry].stored += 1
            case .refused: tallies[entry].refused += 1
            case .later: tallies[entry].later += 1
            }
        }
        _ = try trail.recordAudit(opened.ids.indices.map { entry in
            let tally = tallies[entry]
            let outcome = receipts == nil
                ? "no answer (sent again later)" : "\(tally.stored) stored, \(tally.refused) refused, \(tally.later) to send again"
            return AuditEntry(
                id: opened.ids[entry], date: now, subject: subject, patientID: opened.patients[entry], action: action,
                status: receipts == nil ? 1 : 0, detail: detail(opened.counts[entry], outcome: outcome))
        })
    }

    /// Writes the entry of `count` outcomes written to a folder that stands for the server (`push-to:` a
    /// folder): one entry naming no patient, as `caregate export` writes (the file export does not say
    /// whose outcomes it wrote). Nothing when none was written, or the store keeps no trail.
    public func recordFolderExport(_ count: Int, to folder: String, in store: any Store, now: Date = Date()) throws {
        guard count > 0, let trail = store as? any AuditTrailStore else { return }
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
