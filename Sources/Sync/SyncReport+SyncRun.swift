import Foundation
import Store

extension SyncReport {
    /// The store's record of the run this report ends (``SyncRun``): its counts, and the report as JSON.
    /// `result` is ok when the run's exit status is 0, partial otherwise.
    public func syncRun(runID: String, started: Date, ended: Date = Date()) -> SyncRun {
        let counts = SyncRun.Counts(
            pulled: pulled.values.reduce(0) { $0 + $1.resources }, imported: pulled.values.reduce(0) { $0 + $1.created + $1.updated + $1.deleted },
            failed: pulled.values.reduce(0) { $0 + $1.failed }, pushed: pushed, acknowledged: acknowledged, refused: refused,
            deadLetters: deadLetters, problems: problems.count)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        let json = (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) }
        return SyncRun(
            runID: runID, server: server, started: started, ended: ended, result: exitStatus == 0 ? .ok : .partial, counts: counts, report: json)
    }
}

extension SyncRun {
    /// The record of a run that stopped on `error` before its report.
    public static func failed(runID: String, server: String, started: Date, ended: Date = Date(), error: any Error) -> SyncRun {
        SyncRun(runID: runID, server: server, started: started, ended: ended, result: .failed, error: "\(error)")
    }
}
