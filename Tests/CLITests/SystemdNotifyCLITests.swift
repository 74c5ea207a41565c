import Foundation
import TestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `caregate serve` and a repeating `caregate sync` under systemd's `Type=notify` (sd_notify(3)): a
/// real datagram socket stands for the service manager, named to the process by `NOTIFY_SOCKET`.
final class SystemdNotifyCLITests: XCTestCase {
    func testServeSaysReadyOnceItListensAndStoppingOnSIGTERM() throws {
        let folder = try makeScratchFolder("notify-serve")
        let manager = try ServiceManagerSocket()
        let port = try FreePort.next()
        let serving = try CLIRunner.start(
            ["serve", "--store", folder.appendingPathComponent("s.sqlite").path, "--key", folder.appendingPathComponent("server.key").path,
             "--host", "127.0.0.1", "--port", "\(port)"],
            environment: ["NOTIFY_SOCKET": manager.path])
        let ready = manager.receive(until: { $0.contains { $0.hasPrefix("READY=1") } })
        XCTAssertTrue(ready.contains { $0.hasPrefix("READY=1") && $0.contains("STATUS=serving on 127.0.0.1:\(port)") }, "\(ready)")
        // Ready means listening: a request is answered at once.
        let health = try Data(contentsOf: XCTUnwrap(URL(string: "http://127.0.0.1:\(port)/health")))
        XCTAssertTrue(String(decoding: health, as: UTF8.self).contains("ok"))
        serving.terminate()
        let stopping = manager.receive(until: { $0.contains("STOPPING=1") })
        XCTAssertTrue(stopping.contains("STOPPING=1"), "\(stopping)")
        XCTAssertEqual(try serving.wait().status, 0)
    }

    func testARepeatingSyncSaysReadyReloadsOnSIGHUPAtTheNextRunAndStopsCleanly() throws {
        let folder = try makeScratchFolder("notify-sync")
        let manager = try ServiceManagerSocket()
        let provider = Corpus.projectRoot.appendingPathComponent("Fixtures/provider").path
        let config = try folder.writeFile("sync.yaml", "server: \(provider)\npush-to: pushed\ntime-zone: America/Chicago\ninterval: 1s\nresources: [Patient]\n")
        let reportPath = folder.appendingPathComponent("run.json").path
        let syncing = try CLIRunner.start(
            ["sync", "--config", config, "--store", folder.appendingPathComponent("s.sqlite").path, "--report", reportPath],
            environment: ["NOTIFY_SOCKET": manager.path, "WATCHDOG_USEC": "400000"])
        XCTAssertFalse(manager.receive(until: { $0.contains { $0.hasPrefix("READY=1") } }).isEmpty)
        XCTAssertTrue(waitForReport(reportPath) { Array($0.keys) == ["Patient"] }, "the first runs pull Patient only")

        // A changed configuration, and SIGHUP: the next run pulls what it now names.
        try "server: \(provider)\npush-to: pushed\ntime-zone: America/Chicago\ninterval: 1s\nresources: [Patient, CarePlan]\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        syncing.signal(SIGHUP)
        let reload = manager.receive(until: { messages in
            messages.firstIndex { $0.hasPrefix("RELOADING=1") }.map { index in messages[index...].contains { $0.hasPrefix("READY=1") } } ?? false
        })
        let reloading = try XCTUnwrap(reload.first { $0.hasPrefix("RELOADING=1") }, "\(reload)")
        XCTAssertTrue(reloading.contains("MONOTONIC_USEC="), reloading)
        XCTAssertTrue(waitForReport(reportPath) { $0.keys.contains("CarePlan") }, "a run after the reload pulls CarePlan")
        XCTAssertTrue(reload.contains("WATCHDOG=1") || manager.receive(until: { $0.contains("WATCHDOG=1") }).contains("WATCHDOG=1"))

        // A broken configuration is not taken: the job goes on with the one it had.
        try "server: \(provider)\ninterval: soon\n".write(toFile: config, atomically: true, encoding: .utf8)
        syncing.signal(SIGHUP)
        let second = manager.receive(until: { messages in
            let reloads = messages.indices.filter { messages[$0].hasPrefix("RELOADING=1") }
            return reloads.count == 2 && messages[reloads[1]...].contains { $0.hasPrefix("READY=1") }
        })
        XCTAssertEqual(second.filter { $0.hasPrefix("RELOADING=1") }.count, 2, "\(second)")
        XCTAssertTrue(waitForReport(reportPath) { $0.keys.contains("CarePlan") })
        syncing.terminate()
        XCTAssertTrue(manager.receive(until: { $0.contains("STOPPING=1") }).contains("STOPPING=1"))
        let ended = try syncing.wait()
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertTrue(ended.stderr.contains("reloaded \(config)"), ended.stderr)
        XCTAssertTrue(ended.stderr.contains("reload: \(config) was not taken"), ended.stderr)
    }

    /// Waits (at most 60 s) until the job report's `pulled` types satisfy `check`, rereading the file the
    /// job rewrites after each run.
    private func waitForReport(_ path: String, _ check: ([String: Any]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let data = FileManager.default.contents(atPath: path),
               let report = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
               let pulled = report["pulled"] as? [String: Any], check(pulled) {
                return true
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return false
    }
}

/// A datagram socket standing for systemd's notification socket: it gathers what the service says.
private final class ServiceManagerSocket {
    let path: String
    private let descriptor: Int32
    private var received: [String] = []

    init() throws {
        // Short: a socket's path must fit sockaddr_un's 108 bytes.
        path = "/tmp/cg-notify-\(UUID().uuidString.prefix(8)).sock"
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw Failure(description: "bind: \(errno)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Every message received so far, waiting (at most 60 s) until `enough` holds of them.
    func receive(until enough: ([String]) -> Bool) -> [String] {
        let deadline = Date().addingTimeInterval(60)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !enough(received), Date() < deadline {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count > 0 { received.append(String(decoding: buffer[0..<count], as: UTF8.self)) }
        }
        return received
    }

    struct Failure: Error, CustomStringConvertible { let description: String }
}
