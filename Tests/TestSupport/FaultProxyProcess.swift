import Foundation

/// Scripts/fault-proxy.py as a process on 127.0.0.1, between a client and a real server: it forwards
/// requests and, on the schedule the test gives, drops connections (after the server did the work),
/// refuses them, answers 429 or 500, truncates answers or delays them.
public final class FaultProxyProcess: @unchecked Sendable {
    /// The proxy's address with the upstream's path (`http://127.0.0.1:<port>/fhir`).
    public let base: URL
    private let process: Process

    /// Starts a proxy to `upstream` with `schedule` (`["ok", "drop", "429", ...]`, cycled).
    public static func start(upstream: URL, schedule: [String]) throws -> FaultProxyProcess {
        let (process, port) = try ScriptRunner.startListening(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", Corpus.projectRoot.appendingPathComponent("Scripts/fault-proxy.py").path, upstream.absoluteString, schedule.joined(separator: ",")])
        guard var parts = URLComponents(url: upstream, resolvingAgainstBaseURL: false) else {
            process.terminate()
            throw FHIRServerProcess.ServerFailure(description: "no proxy URL for \(upstream)")
        }
        parts.host = "127.0.0.1"
        parts.port = port
        guard let base = parts.url else { throw FHIRServerProcess.ServerFailure(description: "no proxy URL") }
        return FaultProxyProcess(base: base, process: process)
    }

    private init(base: URL, process: Process) {
        self.base = base
        self.process = process
    }

    deinit { stop() }

    /// What the proxy did so far, by action.
    public func stats() throws -> [String: Int] {
        var parts = URLComponents(url: base, resolvingAgainstBaseURL: false)
        parts?.path = "/_proxy/stats"
        guard let url = parts?.url else { return [:] }
        return (try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Int]) ?? [:]
    }

    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
