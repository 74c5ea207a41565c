import Foundation

/// One `caregate sync` run as the store remembers it: when it ran, how it ended, its counts and its report.
///
/// `caregate sync` records one when a run ends (`--once`, and each run of a repeating job); a run killed
/// before its end has no record. The report is the job's JSON report (`SyncReport`, no patient data);
/// the store keeps it as text, knowing nothing of its shape. Listed by `caregate store sync-runs` and
/// on the operator page (Docs/operations.md, "Sync runs").
public struct SyncRun: Sendable, Equatable, Codable {
    /// How a run ended.
    public enum Result: String, Sendable, Codable, CaseIterable {
        /// Everything was done (exit status 0).
        case ok
        /// The run ended with its report, but something failed or waits for a later run (exit status 1).
        case partial
        /// The run stopped on an error before its report (``SyncRun/error``).
        case failed
    }

    /// What the run did, in numbers (the report's totals).
    public struct Counts: Sendable, Equatable, Codable {
        /// Resources pulled, and of them those that made or changed entities, and those that failed.
        public var pulled = 0, imported = 0, failed = 0
        /// Outbox entries sent, stored by the server, refused; dead letters made.
        public var pushed = 0, acknowledged = 0, refused = 0, deadLetters = 0
        /// Problems the report names.
        public var problems = 0

        public init(
            pulled: Int = 0, imported: Int = 0, failed: Int = 0, pushed: Int = 0, acknowledged: Int = 0, refused: Int = 0,
            deadLetters: Int = 0, problems: Int = 0
        ) {
            (self.pulled, self.imported, self.failed) = (pulled, imported, failed)
            (self.pushed, self.acknowledged, self.refused, self.deadLetters, self.problems) = (pushed, acknowledged, refused, deadLetters, problems)
        }
    }

    /// The store's number of the record (nil before it is recorded).
    public var id: Int64?
    /// The run id every log line of the run carries (`run=`).
    public var runID: String
    /// The FHIR server (without credentials) or folder the run synced with.
    public var server: String
    public var started: Date
    public var ended: Date
    public var result: Result
    public var counts: Counts
    /// The job report as JSON; nil in lists (``SyncRunStore/syncRuns(limit:)``) and for a failed run.
    public var report: String?
    /// Why a failed run stopped (no patient data: the job's error message).
    public var error: String?

    /// The most bytes of report kept; a longer one is replaced by a note saying so.
    public static let maximumReportBytes = 1 << 20
    /// The most bytes of error kept.
    public static let maximumErrorBytes = 4_096

    public init(
        id: Int64? = nil, runID: String, server: String, started: Date, ended: Date, result: Result, counts: Counts = Counts(),
        report: String? = nil, error: String? = nil
    ) {
        self.id = id
        self.runID = runID
        self.server = server
        self.started = started
        self.ended = ended
        self.result = result
        self.counts = counts
        self.report = report
        self.error = error
    }

    /// How long the run took, in seconds.
    public var seconds: Double { max(0, ended.timeIntervalSince(started)) }
}

/// The store's history of sync runs (``SyncRun``): the newest ``defaultKept`` kept, older ones pruned as
/// each is recorded.
///
/// A store that keeps it conforms (``SQLiteStore`` does); reach it from any store with ``Store/syncRunHistory``.
public protocol SyncRunStore: AnyObject, Sendable {
    /// Records `run`, and deletes all but the newest `keeping` runs, in one transaction; returns its id.
    /// A report longer than ``SyncRun/maximumReportBytes`` is kept as a note saying so.
    @discardableResult
    func recordSyncRun(_ run: SyncRun, keeping: Int) throws -> Int64
    /// The newest `limit` runs, newest first, without their reports.
    func syncRuns(limit: Int) throws -> [SyncRun]
    /// Run `id`, with its report.
    func syncRun(id: Int64) throws -> SyncRun?
}

extension SyncRunStore {
    /// Runs kept when none is said: a repeating job every 5 minutes keeps about 40 hours of runs.
    public static var defaultKept: Int { 500 }

    /// ``recordSyncRun(_:keeping:)`` keeping the newest 500.
    @discardableResult
    public func recordSyncRun(_ run: SyncRun) throws -> Int64 {
        try recordSyncRun(run, keeping: Self.defaultKept)
    }
}

extension Store {
    /// This store's history of sync runs, when it keeps one.
    public var syncRunHistory: (any SyncRunStore)? { self as? any SyncRunStore }
}
