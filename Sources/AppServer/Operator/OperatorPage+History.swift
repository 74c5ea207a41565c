import Foundation
import Store

/// The operator page's look back: the last sync runs (each linking to its report) and the last import's
/// coverage, as the store recorded them (``SyncRunStore``, ``ImportCoverageStore``).
extension OperatorPage {
    /// The runs listed.
    static let syncRunsShown = 20
    /// The coverage paths listed (the most frequent first).
    static let coveragePathsShown = 200

    func syncRuns() throws -> String {
        var html = "<h2 id=\"sync-runs\">Last sync runs</h2>"
        guard let history = store.syncRunHistory else { return html + "<p>This store keeps no history of sync runs.</p>" }
        let runs = try history.syncRuns(limit: Self.syncRunsShown)
        let rows = runs.map { run in
            let c = run.counts
            return [
                OperatorHTML.date(run.started), String(format: "%.1f s", run.seconds), run.result.rawValue, run.runID,
                "\(c.pulled) (\(c.imported) imported, \(c.failed) failed)", "\(c.pushed) (\(c.acknowledged) acknowledged, \(c.refused) refused)",
                String(c.deadLetters), String(c.problems), run.error ?? "",
            ]
        }
        let links = runs.map { run in run.id.map { "<a href=\"/operator/sync-runs/\($0)\">report</a>" } ?? "" }
        html += OperatorHTML.table(["Started", "Took", "Result", "Run", "Pulled", "Pushed", "Dead letters", "Problems", "Error", ""], rows, extra: links)
        return html
    }

    func importCoverage() throws -> String {
        var html = "<h2 id=\"coverage\">Last import coverage</h2>"
        guard let record = try store.importCoverage?.lastImportCoverage() else {
            return html + "<p class=\"empty\">No import with coverage recorded (caregate import --coverage records one).</p>"
        }
        let counts = record.counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        html += "<p>\(OperatorHTML.escape(OperatorHTML.date(record.recordedDate))): \(record.resourcesRead) resources read in "
        html += "\(OperatorHTML.escape(String(format: "%.2f", record.seconds))) s (\(OperatorHTML.escape(counts))); "
        html += "\(record.pathCount + record.omittedPaths) element paths present that no mapping reads.</p>"
        var rows: [[String]] = []
        for (type, paths) in record.coverage {
            for (path, count) in paths { rows.append([type, path, String(count)]) }
        }
        rows.sort { (Int($1[2]) ?? 0, $0[0], $0[1]) < (Int($0[2]) ?? 0, $1[0], $1[1]) }
        let hidden = rows.count - min(rows.count, Self.coveragePathsShown) + record.omittedPaths
        html += OperatorHTML.table(["Type", "Unread path", "Times present"], Array(rows.prefix(Self.coveragePathsShown)))
        if hidden > 0 { html += "<p>\(hidden) more paths not shown.</p>" }
        return html
    }
}
