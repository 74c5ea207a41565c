import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Store
import StoreTestSupport
import Sync
import TestSupport
import XCTest

/// `GET /metrics` of a long-running `caregate sync --metrics-port` against a real FHIR server
/// (sekmet-fhir), and of `caregate serve --metrics-port`: scraped as Prometheus scrapes, they match the
/// job report and the requests made, and hold nothing of a patient.
final class MetricsLiveTests: XCTestCase {
    private func scrape(_ port: Int) throws -> (text: String, parsed: PrometheusText) {
        let text = String(decoding: try Data(contentsOf: XCTUnwrap(URL(string: "http://127.0.0.1:\(port)/metrics"))), as: UTF8.self)
        return (text, PrometheusText(text))
    }

    func testASyncJobsMetricsMatchItsReport() throws {
        let fhir = try FHIRServerProcess.start()
        defer { fhir.stop() }
        let folder = try makeScratchFolder("metrics-sync")
        let provider = Corpus.projectRoot.appendingPathComponent("Fixtures/provider")
        let files = try FileManager.default.contentsOfDirectory(atPath: provider.path).filter { $0.hasSuffix(".json") }.map { provider.appendingPathComponent($0).path }
        try loadKeepingIDs(files, into: fhir.base)
        let config = try folder.writeFile("sync.yaml", "server: \(fhir.base.absoluteString)\ntime-zone: America/Chicago\ninterval: 1h\n")
        try forEachStore(sqliteFile: true) { tested in
            let reportPath = folder.appendingPathComponent("run-\(tested.kind).json").path
            let port = try FreePort.next()
            let job = try CLIRunner.start([
                "sync", "--config", config, "--store", try XCTUnwrap(tested.location), "--report", reportPath, "--metrics-port", "\(port)",
            ])
            defer { job.terminate() }
            let deadline = Date().addingTimeInterval(120)
            while !FileManager.default.fileExists(atPath: reportPath), job.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.2) }
            let report = try JSONDecoder().decode(SyncReport.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
            let (text, metrics) = try scrape(port)

            XCTAssertEqual(metrics.value("caregate_sync_runs_total"), 1, "\(tested.kind): \(text)")
            XCTAssertFalse(report.pulled.isEmpty)
            for (type, pulled) in report.pulled {
                XCTAssertEqual(metrics.value("caregate_sync_resources_pulled_total", ["type": type]) ?? 0, Double(pulled.resources), type)
                XCTAssertEqual(metrics.value("caregate_sync_resources_imported_total", ["type": type, "result": "created"]) ?? 0, Double(pulled.created), type)
            }
            XCTAssertGreaterThan(report.pulled.values.reduce(0) { $0 + $1.created }, 0, "the run imported something")
            // Every search the job made is counted and timed, by operation and status.
            let searches = try XCTUnwrap(metrics.value("caregate_fhir_requests_total", ["operation": "search", "status": "200"]))
            XCTAssertGreaterThanOrEqual(searches, Double(report.pulled.count))
            XCTAssertEqual(metrics.value("caregate_fhir_request_duration_seconds_count", ["operation": "search"]), searches + (metrics.value("caregate_fhir_requests_total", ["operation": "search", "status": "none"]) ?? 0))
            XCTAssertEqual(metrics.value("caregate_fhir_requests_total", ["operation": "capabilities"]).map { $0 >= 1 }, true)
            XCTAssertEqual(metrics.value("caregate_sync_phase_duration_seconds_count", ["phase": "run"]), 1)
            // The store's gauges, read at the scrape.
            XCTAssertEqual(metrics.value("caregate_outbox_entries", ["state": "pending"]), 0)
            XCTAssertNotNil(metrics.value("caregate_dead_letters"))
            // Nothing of the patient: Fixtures/provider's patient is Jane Doe, born 1961-04-12.
            for secret in ["Jane", "Doe", "1961"] { XCTAssertFalse(text.contains(secret), secret) }
            XCTAssertTrue(text.contains("# TYPE caregate_sync_runs_total counter"), text)
        }
    }

    func testTheServersMetricsCountRequestsByRoutePatternOnALoopbackPortOfTheirOwn() throws {
        try forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("metrics-serve")
            let store = try XCTUnwrap(tested.location)
            let key = folder.appendingPathComponent("server.key").path
            XCTAssertEqual(try CLIRunner.run(["import", Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path, "--store", store]).status, 0)
            let token = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "Patient/pat-1"]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let port = try FreePort.next()
            let server = try AppServerProcess.start(store: store, key: key, extra: ["--metrics-port", "\(port)"])
            defer { server.stop() }
            func get(_ path: String, token: String?) throws -> Int {
                var request = URLRequest(url: server.base.appendingPathComponent(path))
                if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
                return try URLSessionSync.status(of: request)
            }
            XCTAssertEqual(try get("carekit/v1/tasks", token: token), 200)
            XCTAssertEqual(try get("carekit/v1/tasks", token: token), 200)
            XCTAssertEqual(try get("carekit/v1/tasks", token: nil), 401)
            XCTAssertEqual(try get("metrics", token: nil), 404, "the API's own port does not serve the metrics")
            let (text, metrics) = try scrape(port)
            XCTAssertEqual(metrics.value("caregate_api_requests_total", ["route": "/carekit/v1/tasks", "method": "GET", "status": "200"]), 2, "\(tested.kind): \(text)")
            XCTAssertEqual(metrics.value("caregate_api_requests_total", ["route": "/carekit/v1/tasks", "method": "GET", "status": "401"]), 1, text)
            XCTAssertEqual(metrics.value("caregate_api_request_duration_seconds_count", ["route": "/carekit/v1/tasks"]), 3, text)
            XCTAssertNotNil(metrics.value("caregate_api_store_writes_in_flight"))
            XCTAssertEqual(metrics.value("caregate_outbox_entries", ["state": "pending"]), 0)
            for secret in ["Jane", "Doe", token] { XCTAssertFalse(text.contains(secret)) }
        }
    }
}

/// One request, waited for, its status returned.
enum URLSessionSync {
    static func status(of request: URLRequest) throws -> Int {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var status: Int?
        nonisolated(unsafe) var failure: (any Error)?
        URLSession.shared.dataTask(with: request) { _, response, error in
            status = (response as? HTTPURLResponse)?.statusCode
            failure = error
            done.signal()
        }.resume()
        done.wait()
        if let failure { throw failure }
        return status ?? 0
    }
}
