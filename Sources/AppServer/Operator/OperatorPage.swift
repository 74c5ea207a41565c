import CareModel
import Foundation
import Mapping
import Store

/// The operator page's HTML: the last sync runs (each linking to its report), the outbox by state with the
/// oldest entries waiting, the dead letters waiting (each with a Replay button), the last import's
/// coverage, the mappings the server loaded, and the audit trail's latest entries.
/// Read in one pass of the store; every value escaped (``OperatorHTML``).
struct OperatorPage {
    /// The oldest entries listed per state (pending, failed).
    static let entriesShown = 20
    /// The dead letters listed.
    static let deadLettersShown = 100
    /// The audit trail's entries listed.
    static let auditShown = 50

    let store: any AppSyncStore
    /// The mappings the server loaded (`serve --mappings`), which a replay imports with.
    let mappings: MappingSet?
    /// Who is looking (the token's `sub`).
    let subject: String
    /// The proof each form carries (``OperatorAccess/formProof(for:)``).
    let proof: String

    func render(notice: String? = nil) throws -> String {
        var body = "<h1>CareGate operator</h1><p>Signed in as \(OperatorHTML.escape(subject)).</p>"
        body += OperatorHTML.button("Log out", action: "/operator/logout", proof: proof)
        if let notice { body += "<p class=\"notice\">\(OperatorHTML.escape(notice))</p>" }
        body += try syncRuns() + outbox() + deadLetters() + importCoverage() + mappingCheck() + audit()
        return OperatorHTML.document(title: "CareGate operator", body: body)
    }

    private func outbox() throws -> String {
        let summary = try store.outboxSummary()
        var html = "<h2 id=\"outbox\">Outbox</h2>"
        html += OperatorHTML.table(["State", "Entries"], OutboxState.allCases.map { [$0.rawValue, String(summary.entries[$0] ?? 0)] })
        html += "<p>Oldest waiting: \(OperatorHTML.escape(OperatorHTML.date(summary.oldestWaiting).isEmpty ? "none" : OperatorHTML.date(summary.oldestWaiting)))</p>"
        for state in [OutboxState.pending, .failed] {
            let entries = try store.outboxEntries(in: state, limit: Self.entriesShown)
            html += "<h3>Oldest \(state.rawValue)</h3>"
            let rows = entries.map { entry in
                [entry.id.map(String.init) ?? "", entry.entityKind.rawValue, entry.entityID, entry.state.rawValue, String(entry.attempts),
                 entry.lastError ?? "", OperatorHTML.date(entry.nextAttemptDate)]
            }
            let headers = ["Id", "Kind", "Entity", "State", "Attempts", "Last error", "Next attempt"]
            if state == .failed {
                let buttons = entries.map { entry in
                    entry.id.map { OperatorHTML.button("Requeue", action: "/operator/outbox/\($0)/retry", proof: proof) } ?? ""
                }
                html += OperatorHTML.table(headers + [""], rows, extra: buttons)
            } else {
                html += OperatorHTML.table(headers, rows)
            }
        }
        return html
    }

    private func deadLetters() throws -> String {
        let letters = try store.deadLetters(limit: Self.deadLettersShown, includingResolved: false, since: nil)
        var html = "<h2 id=\"dead-letters\">Dead letters waiting</h2>"
        if mappings == nil { html += "<p>Replay needs the server's mappings: this server was made without them.</p>" }
        let rows = letters.map { letter in
            [letter.id.map(String.init) ?? "", OperatorHTML.date(letter.createdDate),
             [letter.resourceType, letter.resourceID].compactMap { $0 }.joined(separator: "/"), letter.reason, letter.detail ?? ""]
        }
        let buttons = letters.map { letter in
            letter.id.map { OperatorHTML.button("Replay", action: "/operator/dead-letters/\($0)/retry", proof: proof) } ?? ""
        }
        html += OperatorHTML.table(["Id", "When", "Resource", "Reason", "Detail", ""], rows, extra: buttons)
        return html
    }

    private func mappingCheck() -> String {
        var html = "<h2 id=\"mappings\">Mapping check</h2>"
        guard let mappings else { return html + "<p>No mappings loaded by this server.</p>" }
        // The server refuses to start on mappings with errors, so what it loaded has none.
        html += "<p>\(mappings.resourceTypes.count) resource types mapped (\(OperatorHTML.escape(mappings.resourceTypes.joined(separator: ", ")))); "
        html += "export mapping \(mappings.export == nil ? "absent" : "loaded"); 0 problems (the server refuses to start on mappings with errors).</p>"
        return html
    }

    private func audit() throws -> String {
        let entries = try store.auditEntries(patientID: nil, limit: Self.auditShown)
        let rows = entries.map { entry in
            [OperatorHTML.date(entry.date), entry.subject ?? "", entry.clientAddress ?? "", entry.patientID ?? "", entry.action, String(entry.status), entry.detail ?? ""]
        }
        return "<h2 id=\"audit\">Audit trail (latest \(Self.auditShown))</h2>"
            + OperatorHTML.table(["When", "Subject", "Client", "Patient", "Action", "Status", "Detail"], rows)
    }
}
