import FHIR
import Foundation
import Sync
import TestSupport
import XCTest

/// Retries against a small misbehaving HTTP server of the test's own (its own process on 127.0.0.1):
/// it answers each request with the next status of a schedule, then with a Patient.
final class RetryTests: XCTestCase {
    /// Starts the server with `schedule` (statuses, `429:2` for a 429 with Retry-After: 2) and returns
    /// its base URL and process.
    private func misbehavingServer(_ schedule: [String]) throws -> (URL, Process) {
        let (process, port) = try ScriptRunner.startHTTPServerPython(
            prelude: "schedule = \(String(decoding: try JSONSerialization.data(withJSONObject: schedule), as: UTF8.self))",
            answer: """
                headers = {'Content-Type': 'application/fhir+json'}
                if schedule:
                    code, _, after = schedule.pop(0).partition(':')
                    status = int(code)
                    if after: headers['Retry-After'] = after
                    body = json.dumps({'resourceType': 'OperationOutcome', 'issue': [{'severity': 'error', 'code': 'transient', 'diagnostics': 'busy'}]}).encode()
                else:
                    body = json.dumps({'resourceType': 'Patient', 'id': 'p1'}).encode()
                """)
        return (try XCTUnwrap(URL(string: "http://127.0.0.1:\(port)/fhir")), process)
    }

    func testTransientFailuresAreRetriedHonouringRetryAfter() throws {
        let (base, server) = try misbehavingServer(["429:1", "503"])
        defer { server.terminate() }
        let client = FHIRClient(base: base, timeout: 10, retry: RetryPolicy(maxAttempts: 4, baseDelay: 0.01, maxDelay: 0.05))
        let started = Date()
        let patient = try client.read("Patient", "p1")
        XCTAssertEqual(patient.childValue("id"), "p1")
        XCTAssertEqual(client.retries, 2)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 1, "Retry-After: 1 was waited for")
    }

    func testRetriesAreBoundedPerJob() throws {
        let (base, server) = try misbehavingServer(Array(repeating: "503", count: 10))
        defer { server.terminate() }
        let client = FHIRClient(base: base, timeout: 10, retry: RetryPolicy(maxAttempts: 5, baseDelay: 0.01, maxRetriesPerJob: 2))
        XCTAssertThrowsError(try client.read("Patient", "p1"))
        XCTAssertEqual(client.retries, 2, "the job's two retries spent on the first request")
        XCTAssertThrowsError(try client.read("Patient", "p1"))
        XCTAssertEqual(client.retries, 2, "the next request gets its one attempt")
        client.resetRetries()
        XCTAssertThrowsError(try client.read("Patient", "p1"))
        XCTAssertEqual(client.retries, 2, "a new job, a new budget")
    }

    func testRetriesAreBoundedAndAPermanentErrorIsNotRetried() throws {
        let (base, server) = try misbehavingServer(["500", "500", "500", "404"])
        defer { server.terminate() }
        let client = FHIRClient(base: base, timeout: 10, retry: RetryPolicy(maxAttempts: 3, baseDelay: 0.01))
        XCTAssertThrowsError(try client.read("Patient", "p1")) { error in
            guard case FHIRClientError.status(_, 500, _, let detail) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(detail, "busy")
        }
        XCTAssertEqual(client.retries, 2, "three attempts in all")
        XCTAssertThrowsError(try client.read("Patient", "p1")) { error in
            guard case FHIRClientError.status(_, 404, _, _) = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(client.retries, 2, "a 404 is not retried")
    }

    func testAServerAskingForTooLongAWaitIsTakenAsDown() throws {
        let (base, server) = try misbehavingServer(["503:3600"])
        defer { server.terminate() }
        let client = FHIRClient(base: base, timeout: 10, retry: RetryPolicy(maxAttempts: 5, maxRetryAfter: 60))
        XCTAssertThrowsError(try client.read("Patient", "p1")) { error in
            XCTAssertEqual((error as? FHIRClientError)?.retryAfter, 3600)
        }
        XCTAssertEqual(client.retries, 0)
    }

    func testBackoffGrowsAndIsCapped() {
        let policy = RetryPolicy(maxAttempts: 10, baseDelay: 1, maxDelay: 4)
        for attempt in 1...9 {
            let wait = policy.delay(afterFailures: attempt, retryAfter: nil) ?? -1
            XCTAssertTrue((0...min(4, pow(2, Double(attempt - 1)))).contains(wait), "attempt \(attempt): \(wait)")
        }
        XCTAssertNil(policy.delay(afterFailures: 10, retryAfter: nil), "no attempt left")
        XCTAssertEqual(policy.delay(afterFailures: 1, retryAfter: 3) ?? 0, 3, accuracy: 1, "Retry-After is honoured")
    }
}
