import Foundation
import Mapping
import Pipeline
import Store

extension SyncJob {
    /// Keeps the coverage of the run's imports in the store (`coverage: true`), where the operator page
    /// shows the last one; one that cannot be kept is a warning, never a failure of the run.
    func keepCoverage(of report: SyncReport) {
        guard let unread = runCoverage?.unread() else { return }
        var total = ImportReport.Counts()
        var read = 0
        for pulled in report.pulled.values {
            total.add(pulled.counts)
            read += pulled.resources
        }
        let record = ImportCoverageRecord(resourcesRead: read, counts: total.byOutcome, seconds: report.importSeconds, coverage: unread)
        do {
            try store.importCoverage?.recordImportCoverage(record)
        } catch {
            progress?("warning: the run's import coverage was not kept in the store: \(error)")
        }
    }
}
