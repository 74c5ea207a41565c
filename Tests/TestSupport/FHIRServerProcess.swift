import Foundation
import XCTest

/// A real FHIR R4 server for the tests: sekmet-fhir (PyPI, pinned in Scripts/test-tools-requirements.txt,
/// installed into .venv by Scripts/setup-test-tools.sh), run as its own process on 127.0.0.1 with a
/// fresh data folder, and stopped by ``stop()`` (or when the object goes away).
public final class FHIRServerProcess: @unchecked Sendable {
    /// The FHIR base URL (`http://127.0.0.1:<port>/fhir`).
    public let base: URL
    private let process: Process
    private let folder: URL
    private let log: URL

    /// Starts a server and waits until it answers `GET /fhir/metadata`; skips with a notice when the
    /// server is not installed (fails under CI=true, where it must run).
    /// `settings` are more lines of the server's settings YAML (`server_auth:` for one).
    public static func start(settings extra: String = "", file: StaticString = #filePath, line: UInt = #line) throws -> FHIRServerProcess {
        let program = Corpus.projectRoot.appendingPathComponent(".venv/bin/sekmet")
        guard FileManager.default.isExecutableFile(atPath: program.path) else {
            let notice = "sekmet-fhir is not installed: run bash Scripts/setup-test-tools.sh"
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(notice + " (CI must run the server tests)", file: file, line: line) }
            print("notice: skipping, \(notice)")
            throw XCTSkip(notice)
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-fhir-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let port = try FreePort.next()
        // Its own settings: loopback only (it binds 0.0.0.0 unless told), its data in the fresh folder,
        // and the workflow simulator off: left on, it answers MedicationRequests and the like with
        // resources of its own (a Practitioner, a dispense), which no test asked for.
        let settings = """
            host: 127.0.0.1
            port: \(port)
            base_url: http://127.0.0.1:\(port)/fhir
            data_dir: \(folder.appendingPathComponent("data").path)
            simulator:
              enabled: false

            """ + extra
        try Data(settings.utf8).write(to: folder.appendingPathComponent("settings.yaml"))
        let process = Process()
        process.executableURL = program
        process.arguments = ["serve", "--config", folder.appendingPathComponent("settings.yaml").path, "--host", "127.0.0.1", "--port", "\(port)"]
        process.currentDirectoryURL = folder
        // The base the server writes into its links (next pages, locations): the one it listens on.
        var environment = ProcessInfo.processInfo.environment
        environment["SEKMET_BASE_URL"] = "http://127.0.0.1:\(port)/fhir"
        process.environment = environment
        let log = folder.appendingPathComponent("server.log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let server = FHIRServerProcess(base: URL(string: "http://127.0.0.1:\(port)/fhir")!, process: process, folder: folder, log: log)
        try server.waitUntilReady(timeout: 90)
        return server
    }

    private init(base: URL, process: Process, folder: URL, log: URL) {
        self.base = base
        self.process = process
        self.folder = folder
        self.log = log
    }

    deinit { stop() }

    /// Stops the server and removes its data.
    public func stop() {
        if process.isRunning {
            process.terminate()
            // A server started from a thread that blocks SIGTERM (seen from async tests) inherits the block and
            // never sees it: after ten seconds it is killed.
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { usleep(50_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }

    /// The server's own log, for assertion messages.
    public var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    private func waitUntilReady(timeout: TimeInterval) throws {
        let deadline = Date().addingTimeInterval(timeout)
        let metadata = base.appendingPathComponent("metadata")
        while Date() < deadline {
            guard process.isRunning else { throw ServerFailure(description: "the FHIR server exited: \(output)") }
            if let data = try? Data(contentsOf: metadata), data.count > 100 { return }
            usleep(200_000)
        }
        stop()
        throw ServerFailure(description: "the FHIR server did not answer within \(Int(timeout)) s: \(output)")
    }

    public struct ServerFailure: Error, CustomStringConvertible {
        public let description: String
    }
}
