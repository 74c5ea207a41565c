import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `caregate serve` under connections a stranger can open (issue 41, item 2): idle, silent, trickling,
/// uploading without end, pushing in bursts. Each test starts the server as a process with small limits
/// given as options, and asserts what the server does (answers, closes, refuses), never how fast; the
/// waits are generous bounds on behaviour, not measurements.
final class ConnectionLimitTests: XCTestCase {
    /// A store with one patient, a token for them, and a server with `options`.
    private func serve(_ name: String, _ options: [String]) throws -> (AppServerProcess, token: String, store: String) {
        let folder = try makeScratchFolder(name)
        let store = folder.appendingPathComponent("store.sqlite").path
        let key = folder.appendingPathComponent("server.key").path
        let generated = try CLIRunner.run(["store", "generate", "--store", store, "--patients", "1", "--tasks", "1", "--days", "1"])
        XCTAssertEqual(generated.status, 0, generated.stderr)
        let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "patient-1", "--expires-in", "30m"])
        XCTAssertEqual(issued.status, 0, issued.stderr)
        let server = try AppServerProcess.start(store: store, key: key, extra: options)
        return (server, issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines), store)
    }

    private func port(_ server: AppServerProcess) -> Int { server.base.port ?? 0 }

    /// A push of no records: valid, and answered once it has waited for the store's append gate.
    private func push(token: String, contentLength: Int? = nil) -> String {
        let body = #"{"deviceRevisions":[],"deviceKnowledge":{"processes":[]}}"#
        return "POST /carekit/v1/revisions HTTP/1.1\r\nHost: caregate\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(contentLength ?? body.utf8.count)\r\nConnection: close\r\n\r\n" + (contentLength == nil ? body : "{")
    }

    private static let health = "GET /health HTTP/1.1\r\nHost: caregate\r\nConnection: close\r\n\r\n"

    func testFreshClientIsAnsweredWhileThousandsOfConnectionsStayIdle() throws {
        // A long idle timeout: what lets the fresh client in is shedding at the connection cap.
        let (server, _, _) = try serve("idle-thousands", ["--max-connections", "100", "--idle-timeout", "600"])
        defer { server.stop() }
        let count = min(2_000, OpenFiles.raiseLimit(toward: 2_100))
        guard count >= 500 else { throw XCTSkip("this process may open only \(count) files") }
        var idle: [RawConnection] = []
        for _ in 0..<count { idle.append(try RawConnection(port: port(server), waiting: false)) }
        let fresh = try RawConnection(port: port(server))
        XCTAssertTrue(fresh.send(Self.health))
        let answer = fresh.readToEnd(within: 180)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 200"), "a fresh client beside \(count) idle connections got: \(answer.prefix(200))")
        withExtendedLifetime(idle) {}
    }

    func testIdleConnectionsAreClosedByTheServer() throws {
        let (server, _, _) = try serve("idle-closed", ["--idle-timeout", "1"])
        defer { server.stop() }
        let silent = try (0..<20).map { _ in try RawConnection(port: port(server)) }
        // One that was answered and kept alive, then said nothing more.
        let kept = try RawConnection(port: port(server))
        XCTAssertTrue(kept.send("GET /health HTTP/1.1\r\nHost: caregate\r\n\r\n"))
        for (index, connection) in (silent + [kept]).enumerated() {
            XCTAssertTrue(connection.isClosedByServer(within: 60), "idle connection \(index) was not closed")
        }
    }

    func testSlowHeadAndTrickledBodyAreClosed() throws {
        let (server, token, _) = try serve("slow", ["--idle-timeout", "1", "--request-timeout", "2"])
        defer { server.stop() }
        // A head that never ends: a header line every quarter second, for up to 200 lines.
        let head = try RawConnection(port: port(server))
        XCTAssertTrue(head.send("GET /health HTTP/1.1\r\nHost: caregate\r\n"))
        XCTAssertTrue(trickleUntilClosed(head, lines: 200) { "X-Slow-\($0): a\r\n" }, "a head trickled in was never closed")
        // An authenticated push whose 100,000-byte body comes a byte at a time.
        let body = try RawConnection(port: port(server))
        XCTAssertTrue(body.send(push(token: token, contentLength: 100_000)))
        XCTAssertTrue(trickleUntilClosed(body, lines: 400) { _ in " " }, "a body trickled in was never closed")
        // The server still answers.
        let fresh = try RawConnection(port: port(server))
        XCTAssertTrue(fresh.send(Self.health))
        XCTAssertTrue(fresh.readToEnd(within: 60).hasPrefix("HTTP/1.1 200"))
    }

    /// Sends `piece(n)` every quarter second until the server closes the connection (true) or `lines` pass.
    private func trickleUntilClosed(_ connection: RawConnection, lines: Int, _ piece: (Int) -> String) -> Bool {
        for line in 0..<lines {
            if connection.isClosedByServer(within: 0.25) || !connection.send(piece(line)) { return true }
        }
        return false
    }

    func testUploadsPastTheCapAreAnswered503WithRetryAfter() throws {
        // Long timeouts: the stalled bodies must hold their places for the whole test, however slow the machine.
        let (server, token, _) = try serve("uploads", ["--max-uploads", "2", "--request-timeout", "300", "--idle-timeout", "300"])
        defer { server.stop() }
        // Four pushes whose bodies never come: two take the places, the other two are refused at once. Nothing
        // else is sent until two have been answered: a complete push sent sooner may take a place first,
        // and when it is answered only one stalled push holds one.
        let stalled = try (0..<4).map { _ in try RawConnection(port: port(server)) }
        for connection in stalled { XCTAssertTrue(connection.send(push(token: token, contentLength: 8_000_000))) }
        var pending = stalled, refusedFirst: [String] = []
        let deadline = Date().addingTimeInterval(120)
        while refusedFirst.count < 2, Date() < deadline {
            guard let index = pending.firstIndex(where: { $0.readable(within: 0.05) }) else { continue }
            refusedFirst.append(pending.remove(at: index).readToEnd(within: 60))
        }
        XCTAssertEqual(refusedFirst.count, 2, "two of four stalled pushes past a cap of two were not answered")
        for answer in refusedFirst {
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 503"), "a stalled push past the cap got: \(answer.prefix(200))")
        }
        // The two left hold the places (their bodies still to come): a complete push is refused too.
        XCTAssertFalse(pending.contains { $0.readable(within: 0) }, "a stalled push holding a place was answered")
        let third = try RawConnection(port: port(server))
        XCTAssertTrue(third.send(push(token: token)))
        let refused = third.readToEnd(within: 60)
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 503"), "a push while both places were held got: \(refused.prefix(200))")
        XCTAssertTrue(refused.lowercased().contains("retry-after: "), refused)
        XCTAssertTrue(refused.contains(#""error":"busy""#), refused)
        // The stalled clients leave: pushes are taken again.
        stalled.forEach { shutdown($0.descriptor, Int32(SHUT_RDWR)) }
        var taken = false
        for _ in 0..<100 where !taken {
            let again = try RawConnection(port: port(server))
            XCTAssertTrue(again.send(push(token: token)))
            taken = !again.readToEnd(within: 60).hasPrefix("HTTP/1.1 503")
            if !taken { usleep(100_000) }
        }
        XCTAssertTrue(taken, "pushes stayed refused after the stalled uploads left")
    }

    func testStalledLargePushesHoldNoMoreMemoryThanTheUploadCapAllows() throws {
        let (server, token, _) = try serve("stalled-memory", ["--max-uploads", "4", "--request-timeout", "300", "--idle-timeout", "300"])
        defer { server.stop() }
        let before = try peakMemoryMB(of: server)
        // Forty pushes of just under 8 MiB each, every byte but the last few sent, then left hanging:
        // unbounded, the server held them all (about 300 MB); four are read, the rest refused unread.
        let length = 8_300_000
        // Kept alive: a refused push's body is read and dropped, as a client that sends it anyway expects.
        let head = push(token: token, contentLength: length).replacingOccurrences(of: "Connection: close\r\n\r\n{", with: "\r\n")
        let body = String(repeating: " ", count: length - 16)
        let serverPort = port(server)
        let stalled = Answers()
        let connections = ConnectionsKept()
        let group = DispatchGroup()
        for _ in 0..<40 {
            group.enter()
            // A thread each: forty blocking sends at once.
            Thread {
                if let connection = try? RawConnection(port: serverPort) {
                    connections.keep(connection)
                    if connection.send(head), connection.send(body) { stalled.add("sent") }
                }
                group.leave()
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 600), .success)
        let after = try peakMemoryMB(of: server)
        print("peak memory of caregate serve: \(before) MB, \(after) MB after 40 stalled pushes of 8.3 MB (\(stalled.all.count) fully sent)")
        XCTAssertLessThan(after - before, 4 * 2 * 9 + 48, "stalled pushes past the upload cap were held in memory")
        withExtendedLifetime(connections) {}
    }

    /// The server's peak resident memory (VmHWM), in MB.
    private func peakMemoryMB(of server: AppServerProcess) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(server.processIdentifier)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int(line.dropFirst("VmHWM:".count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        else { throw RawConnection.Failure("no VmHWM in /proc") }
        return kilobytes / 1024
    }

    func testBurstOfPushesKeepsTheServersThreadsBounded() throws {
        let workers = 2
        let (server, token, store) = try serve("push-burst", ["--push-workers", "\(workers)", "--max-uploads", "200", "--busy-timeout", "600"])
        defer { server.stop() }
        // Hold the store's writer lease and append gate, as a long import's write would: every push waits for it.
        let release = store + ".release"
        let holder = try StoreLockHolder.start(store: store, release: release, locks: StoreLockHolder.leaseAndGate)
        defer { holder.terminate() }
        let baseline = try server.threads()
        let answers = Answers()
        let group = DispatchGroup()
        let (serverPort, request) = (port(server), push(token: token))
        for _ in 0..<80 {
            DispatchQueue.global().async(group: group) {
                let answer = (try? RawConnection(port: serverPort)).map { connection in
                    connection.send(request)
                    return connection.readToEnd(within: 240)
                }
                answers.add(String((answer ?? "").prefix(12)))
            }
        }
        // Dispatch's pool added a thread about every second for as long as pushes were blocked: watch ten.
        var peak = baseline
        for _ in 0..<100 {
            usleep(100_000)
            peak = max(peak, try server.threads())
        }
        XCTAssertTrue(holder.isRunning, "the other process let go before the pushes were watched")
        FileManager.default.createFile(atPath: release, contents: nil)
        XCTAssertEqual(group.wait(timeout: .now() + 300), .success)
        print("threads of caregate serve: \(baseline) before the burst, at most \(peak) during it (\(workers) push workers)")
        XCTAssertLessThanOrEqual(peak, baseline + workers + 4, "the server's threads grew with the pushes")
        // Every push was answered, none refused for want of a thread (409: pull first, as a push of no vector is).
        XCTAssertEqual(answers.all.count, 80)
        XCTAssertTrue(answers.all.allSatisfy { $0.hasPrefix("HTTP/1.1 4") || $0.hasPrefix("HTTP/1.1 2") }, "\(Set(answers.all))")
    }

    func testLimitsOutsideTheirBoundsAreUsageErrors() throws {
        let folder = try makeScratchFolder("limits-usage")
        let store = folder.appendingPathComponent("store.sqlite").path, key = folder.appendingPathComponent("server.key").path
        for (option, value) in [
            ("--idle-timeout", "0"), ("--idle-timeout", "nan"), ("--request-timeout", "-1"), ("--request-timeout", "inf"),
            ("--max-connections", "0"), ("--max-uploads", "0"), ("--push-workers", "0"), ("--push-workers", "100000"),
        ] {
            let run = try CLIRunner.run(["serve", "--store", store, "--key", key, option, value])
            XCTAssertEqual(run.status, 2, "\(option) \(value): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(option), "\(option) \(value): \(run.stderr)")
        }
        let help = try CLIRunner.run(["serve", "--help"])
        for option in ["--idle-timeout", "--request-timeout", "--max-connections", "--max-uploads", "--push-workers"] {
            XCTAssertTrue(help.stdout.contains(option), "serve --help does not name \(option)")
        }
    }
}

/// Connections opened on several threads, kept open until the test ends.
private final class ConnectionsKept: @unchecked Sendable {
    private let lock = NSLock()
    private var connections: [RawConnection] = []
    func keep(_ connection: RawConnection) { lock.withLock { connections.append(connection) } }
}

/// The status lines of concurrent pushes.
private final class Answers: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    var all: [String] { lock.withLock { lines } }
    func add(_ line: String) { lock.withLock { lines.append(line) } }
}
