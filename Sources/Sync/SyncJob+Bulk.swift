import FHIR
import Foundation
import Store

/// The pull through FHIR Bulk Data (`bulk: true`): one asynchronous `$export` of the configured types
/// (system level, or the cohort Group's), `_since` the last export's transaction time; its NDJSON files
/// downloaded and imported together; then the transaction time kept as the next `_since`.
extension SyncJob {
    /// The checkpoint row holding the last completed export's `transactionTime`.
    static let bulkCheckpoint = "$export"

    /// How long an export may take before the job gives up on it (the server keeps working; the next
    /// run starts another).
    static let bulkDeadline: TimeInterval = 3600

    func pullBulk(into report: inout SyncReport) throws {
        let since = try store.checkpoint(server: checkpointServer, resourceType: Self.bulkCheckpoint)?.cursor
        let manifest: BulkManifest
        let status: URL
        do {
            (manifest, status) = try export(since: since)
        } catch let error as FHIRClientError {
            report.problems.append("bulk export: \(error)")
            return
        }
        // The downloaded files stay in memory: nothing of a patient's goes to disk outside the store.
        var files: [FHIRInput.Source] = []
        for (position, output) in manifest.output.enumerated() where configuration.resources.contains(output.type) {
            do {
                guard let url = URL(string: output.url, relativeTo: client.base)?.absoluteURL else {
                    throw FHIRClientError.notFHIR(request: "bulk export", reason: "the manifest's file URL '\(output.url)' is not a URL")
                }
                let answer = try client.send("GET", url: url, extraHeaders: ["Accept": "application/fhir+ndjson"])
                files.append(.memory(name: "\(output.type) file \(position + 1) of the bulk export", bytes: answer.body))
                var pulled = report.pulled[output.type, default: SyncReport.Pulled()]
                pulled.pages += 1
                pulled.resources += answer.body.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
                    + (answer.body.last.map { $0 == UInt8(ascii: "\n") ? 0 : 1 } ?? 0)
                report.pulled[output.type] = pulled
                progress?("downloaded \(output.type): \(pulled.resources)")
            } catch let error as FHIRClientError {
                report.problems.append("bulk export file \(output.type): \(error)")
            }
        }
        // The files are downloaded: the server may drop them (the spec's DELETE on the status URL).
        _ = try? client.send("DELETE", url: status)
        if !files.isEmpty { try importPulled(files, into: &report) }
        // A file that could not be downloaded means the next export starts from the same point.
        if !dryRun, report.problems.isEmpty {
            var batch = StoreBatch()
            batch.setCheckpoint(SyncCheckpoint(server: checkpointServer, resourceType: Self.bulkCheckpoint, cursor: manifest.transactionTime))
            try store.apply(batch)
        }
    }

    /// Kicks the export off and polls its status (honouring `Retry-After`) until the manifest comes; the
    /// manifest and the status URL.
    private func export(since: String?) throws -> (BulkManifest, URL) {
        let path: String
        if case .group(let id)? = configuration.cohort { path = "Group/\(FHIRClient.escaped(id))/$export" } else { path = "$export" }
        var query = [("_type", configuration.resources.joined(separator: ",")), ("_outputFormat", "application/fhir+ndjson")]
        if let since { query.append(("_since", since)) }
        let kickoff = try client.send(
            "GET", path: path, query: query, extraHeaders: ["Prefer": "respond-async", "Accept": "application/fhir+json"], idempotent: true)
        guard kickoff.status == 202, let location = kickoff.headers["content-location"],
              let status = URL(string: location, relativeTo: client.base)?.absoluteURL
        else {
            throw FHIRClientError.notFHIR(request: kickoff.request, reason: "a Bulk Data kick-off answers 202 with a Content-Location, not \(kickoff.status)")
        }
        progress?("bulk export started")
        let deadline = Date().addingTimeInterval(Self.bulkDeadline)
        while true {
            let answer = try client.send("GET", url: status, extraHeaders: ["Accept": "application/json"])
            if answer.status == 202 {
                guard Date() < deadline else {
                    throw FHIRClientError.timeout(request: answer.request, seconds: Self.bulkDeadline)
                }
                if let progressText = answer.headers["x-progress"] { progress?("bulk export: \(progressText)") }
                Thread.sleep(forTimeInterval: min(max(answer.retryAfter ?? 2, 0.2), 120))
                continue
            }
            return (try BulkManifest(answer), status)
        }
    }
}

/// The manifest a completed Bulk Data export answers with (plain JSON, not a FHIR resource).
struct BulkManifest {
    struct Output {
        var type: String
        var url: String
    }

    /// The server's time when the export started: the next export's `_since`.
    var transactionTime: String
    var output: [Output]

    init(_ answer: FHIRResponse) throws {
        guard let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any],
              let time = object["transactionTime"] as? String, let output = object["output"] as? [[String: Any]]
        else {
            throw FHIRClientError.notFHIR(request: answer.request, reason: "not a Bulk Data manifest (transactionTime and output)")
        }
        transactionTime = time
        self.output = try output.map { item in
            guard let type = item["type"] as? String, let url = item["url"] as? String else {
                throw FHIRClientError.notFHIR(request: answer.request, reason: "a manifest output without type or url")
            }
            return Output(type: type, url: url)
        }
    }
}
