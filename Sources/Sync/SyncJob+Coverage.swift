import Foundation
import Mapping
import Store

extension SyncJob {
    /// Keeps the coverage of the run's imports in the store (`coverage: true`), where the operator page
    /// shows the last one; one that cannot be kept is a warning, never a failure of the run.
    func keepCoverage(of report: SyncReport) {
        guard let unread = runCoverage?.unread() else { return }
        var total = SyncReport.Pulled()
        for pulled in report.pulled.values {
            total.resources += pulled.resources
            total.created += pulled.created
            total.updated += pulled.updated
            total.unchanged += pulled.unchanged
            total.deleted += pulled.deleted
            total.skipped += pulled.skipped
            total.failed += pulled.failed
        }
        let counts: [String: Int] = [
            "created": total.created, "updated": total.updated, "unchanged": total.unchanged, "deleted": total.deleted,
            "skipped": total.skipped, "failed": total.failed,
        ]
        let record = ImportCoverageRecord(resourcesRead: total.resources, counts: counts, seconds: report.importSeconds, coverage: unread)
        do {
            try store.importCoverage?.recordImportCoverage(record)
        } catch {
            progress?("warning: the run's import coverage was not kept in the store: \(error)")
        }
    }
}
