import Foundation
import Observability

/// What a sync run records in the process's metrics (`caregate sync --metrics-port`): its report as
/// counters and durations, and each request to the FHIR server as it is answered. The names are listed
/// in Docs/operations.md; they match the job report's figures one for one.
public enum SyncMetrics {
    /// Has `client` record each request's operation, status and duration.
    public static func observe(_ client: FHIRClient, into metrics: CareGateMetrics) {
        client.requestObserver = { operation, status, seconds in
            let labels = [("operation", operation.rawValue)]
            metrics.time("caregate_fhir_request_duration_seconds", labels, seconds: seconds)
            metrics.count("caregate_fhir_requests_total", labels + [("status", status.map { String($0) } ?? "none")])
        }
    }

    /// Adds one run's report to the counters, and sets the last run's gauges.
    public static func record(_ report: SyncReport, into metrics: CareGateMetrics, now: Date = Date()) {
        metrics.count("caregate_sync_runs_total", [("result", report.exitStatus == 0 ? "done" : "failed")])
        metrics.set("caregate_sync_last_run_timestamp_seconds", to: now.timeIntervalSince1970)
        metrics.set("caregate_sync_last_run_failed", to: report.exitStatus == 0 ? 0 : 1)
        for (type, pulled) in report.pulled {
            metrics.count("caregate_sync_resources_pulled_total", [("type", type)], by: pulled.resources)
            for (result, amount) in [
                ("created", pulled.created), ("updated", pulled.updated), ("unchanged", pulled.unchanged),
                ("deleted", pulled.deleted), ("skipped", pulled.skipped), ("failed", pulled.failed),
            ] {
                metrics.count("caregate_sync_resources_imported_total", [("type", type), ("result", result)], by: amount)
            }
        }
        pushed("outcome", sent: report.pushed, acknowledged: report.acknowledged, refused: report.refused, later: report.later, into: metrics)
        if let reports = report.reports {
            pushed("report", sent: reports.sent, acknowledged: reports.acknowledged, refused: reports.refused, later: reports.later, into: metrics)
        }
        for (kind, sent) in report.payloads {
            pushed(kind, sent: sent.sent, acknowledged: sent.acknowledged, refused: sent.refused, later: sent.later, into: metrics)
        }
        metrics.count("caregate_sync_dead_letters_total", by: report.deadLetters)
        metrics.count("caregate_sync_retries_total", by: report.retries)
        metrics.count("caregate_sync_problems_total", by: report.problems.count)
        for (phase, seconds) in [("pull", report.pullSeconds), ("import", report.importSeconds), ("push", report.pushSeconds), ("run", report.seconds)] {
            metrics.time("caregate_sync_phase_duration_seconds", [("phase", phase)], seconds: seconds)
        }
    }

    private static func pushed(_ kind: String, sent: Int, acknowledged: Int, refused: Int, later: Int, into metrics: CareGateMetrics) {
        for (result, amount) in [("sent", sent), ("acknowledged", acknowledged), ("refused", refused), ("retry", later)] {
            metrics.count("caregate_sync_pushed_total", [("kind", kind), ("result", result)], by: amount)
        }
    }
}
