import Foundation
import Store

/// One sync run on the operator page (`/operator/sync-runs/{id}`): what the list says, and the job's
/// report (JSON, as the job wrote it: counts, types, server messages; no patient data), every value escaped.
struct OperatorSyncRunPage {
    let run: SyncRun

    func render() -> String {
        let c = run.counts
        var body = "<h1>Sync run #\(run.id ?? 0)</h1><p><a href=\"/operator#sync-runs\">Back to the operator page</a></p>"
        body += OperatorHTML.table(["Field", "Value"], [
            ["Run id (run= in the log)", run.runID], ["Server", run.server], ["Started", OperatorHTML.date(run.started)],
            ["Ended", OperatorHTML.date(run.ended)], ["Took", String(format: "%.1f s", run.seconds)], ["Result", run.result.rawValue],
            ["Pulled", "\(c.pulled) (\(c.imported) imported, \(c.failed) failed)"],
            ["Pushed", "\(c.pushed) (\(c.acknowledged) acknowledged, \(c.refused) refused)"],
            ["Dead letters", String(c.deadLetters)], ["Problems", String(c.problems)], ["Error", run.error ?? ""],
        ])
        body += "<h2 id=\"report\">Report</h2>"
        if let report = run.report {
            body += "<pre>\(OperatorHTML.escape(Self.pretty(report)))</pre>"
        } else {
            body += "<p class=\"empty\">No report: the run stopped before it.</p>"
        }
        return OperatorHTML.document(title: "CareGate sync run #\(run.id ?? 0)", body: body)
    }

    /// `json` indented, or as it is when it does not parse.
    static func pretty(_ json: String) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return json }
        return String(decoding: data, as: UTF8.self)
    }
}
