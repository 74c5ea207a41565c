import Foundation
import Sync
import TestSupport
import XCTest

/// A FHIR server that never stops answering (Scripts/hostile-server.py): an endless chunked body, a
/// lying Content-Length of 4 GiB, a server that keeps writing after the client hangs up, a gzip bomb.
/// Each request fails with ``FHIRClientError/tooLarge(request:bytes:limit:)`` and the process's peak
/// resident memory (the kernel's high-water mark) grows by a few times the client's limit at most,
/// however much the server sends.
final class HostileServerMemoryTests: XCTestCase {
    /// The client's `maxResponseBytes` in these tests: small, so that the bound is tight and quick.
    private static let limit: Int64 = 4 << 20
    /// What the peak may grow by: the answer itself, one copy of it as `Data`, and the buffers of the
    /// transport. Anything that keeps reading after the refusal grows by the server's whole stream.
    private static let allowedGrowth: Int64 = 6 * limit

    private func client(_ base: URL) -> FHIRClient {
        FHIRClient(base: base, timeout: 10, retry: RetryPolicy(maxAttempts: 1), maxResponseBytes: Self.limit)
    }

    /// Starts a server whose streams stop after 8 s or 512 MiB, and warms a client up on a small answer
    /// (so that the first request's one-time costs are not counted).
    private func hostile() throws -> HostileServerProcess {
        guard PeakMemory.peakBytes != nil, PeakMemory.resetPeak() else { throw XCTSkip("no /proc/self/status or clear_refs here") }
        let server = try HostileServerProcess.start(seconds: 8, bytes: 512 << 20)
        _ = try client(server.url("/fhir")).capabilities()
        return server
    }

    /// Sends a search to `mode` and asserts it fails as too large, with the peak memory bounded, and
    /// returns the growth of the peak, in bytes.
    @discardableResult
    private func assertRefusedWithinTheLimit(
        _ mode: String, by server: HostileServerProcess, settle: TimeInterval = 0, file: StaticString = #filePath, line: UInt = #line
    ) throws -> Int64 {
        let client = client(server.url("/\(mode)/fhir"))
        PeakMemory.resetPeak()
        let before = PeakMemory.residentBytes ?? 0
        XCTAssertThrowsError(try client.search("Observation", [("_count", "1000")]) { _ in true }, file: file, line: line) { error in
            guard case FHIRClientError.tooLarge(_, let bytes, let limit)? = error as? FHIRClientError else {
                return XCTFail("\(mode): \(error)", file: file, line: line)
            }
            XCTAssertEqual(limit, Self.limit, file: file, line: line)
            XCTAssertGreaterThan(bytes, limit, file: file, line: line)
        }
        // Time for whatever the server still sends to arrive, were the client still reading.
        if settle > 0 { Thread.sleep(forTimeInterval: settle) }
        let growth = (PeakMemory.peakBytes ?? 0) - before
        print("\(mode): peak resident memory grew by \(growth >> 20) MiB (limit \(Self.limit >> 20) MiB)")
        XCTAssertLessThan(growth, Self.allowedGrowth, "\(mode): the peak grew by \(growth >> 20) MiB", file: file, line: line)
        // The client closed its connection at the refusal: the kernel took little more than the limit
        // from the server (the socket buffers), whatever the server tried after that.
        let stream = try XCTUnwrap(try server.settledStream("/\(mode)/"), file: file, line: line)
        print("\(mode): the server could send \(stream.bytes >> 20) MiB, \(stream.failedWrites ?? 0) writes failed")
        XCTAssertLessThan(stream.bytes, Self.limit + (16 << 20), "\(mode): the server could send \(stream.bytes >> 20) MiB", file: file, line: line)
        return growth
    }

    func testAnEndlessChunkedAnswerIsRefusedAtTheLimit() throws {
        let server = try hostile()
        defer { server.stop() }
        try assertRefusedWithinTheLimit("endless", by: server)
    }

    func testALyingContentLengthIsRefusedBeforeItsBody() throws {
        let server = try hostile()
        defer { server.stop() }
        try assertRefusedWithinTheLimit("lying", by: server)
    }

    func testAServerThatKeepsSendingAfterTheHangUpCostsNothingMore() throws {
        let server = try hostile()
        defer { server.stop() }
        // Three seconds of a server writing on after the refusal: nothing more is read, nothing more held.
        try assertRefusedWithinTheLimit("after-hangup", by: server, settle: 3)
    }

    func testAGzipBombIsRefusedAtTheLimitOfWhatItInflatesTo() throws {
        let server = try hostile()
        defer { server.stop() }
        try assertRefusedWithinTheLimit("gzip-bomb", by: server)
    }

    /// Every client shuts its HTTP client down when it goes, on the process's shared event loops: twenty
    /// clients, each refused an endless answer, leave no thread behind.
    func testClientsLeaveNoThreadsBehind() throws {
        let server = try hostile()
        defer { server.stop() }
        guard let before = PeakMemory.threadCount else { throw XCTSkip("no /proc/self/status here") }
        for _ in 0..<20 {
            XCTAssertThrowsError(try client(server.url("/endless/fhir")).capabilities())
        }
        // Threads end a moment after their client goes: waited for, with a generous bound.
        var after = try XCTUnwrap(PeakMemory.threadCount)
        let deadline = Date().addingTimeInterval(30)
        while after > before + 2, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            after = try XCTUnwrap(PeakMemory.threadCount)
        }
        XCTAssertLessThanOrEqual(after, before + 2, "threads: \(before) before, \(after) after twenty clients")
    }
}
