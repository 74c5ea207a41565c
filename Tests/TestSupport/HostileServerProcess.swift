import Foundation

/// Scripts/hostile-server.py as a process on 127.0.0.1: endless and lying answers, a server that keeps
/// sending after the client hangs up, a gzip bomb, redirects anywhere, and a record of what it sent
/// (``records()``). Each hostile stream ends by itself after `seconds` or `bytes`.
public final class HostileServerProcess: @unchecked Sendable {
    /// `http://127.0.0.1:<port>`.
    public let origin: URL
    public let port: Int
    private let process: Process

    /// One request as the server saw it.
    public struct Record: Decodable, Sendable {
        public let path: String
        public let method: String
        /// Whether an `Authorization` header came with it.
        public let authorization: Bool
        public let status: Int
        /// The body bytes the kernel accepted from the server (for a stream, until the client hung up).
        public let bytes: Int64
        /// Writes that failed because the client had gone (streams only).
        public let failedWrites: Int?
        /// Whether the stream ended (the client hung up, or its bounds were reached).
        public let done: Bool?
    }

    public static func start(seconds: Double = 8, bytes: Int64 = 1 << 30, root: URL? = nil) throws -> HostileServerProcess {
        var arguments = [Corpus.projectRoot.appendingPathComponent("Scripts/hostile-server.py").path, "--seconds", "\(seconds)", "--bytes", "\(bytes)"]
        if let root { arguments += ["--root", root.path] }
        let (process, port) = try ScriptRunner.startListening(URL(fileURLWithPath: "/usr/bin/env"), ["python3"] + arguments)
        return HostileServerProcess(process: process, port: port)
    }

    private init(process: Process, port: Int) {
        self.process = process
        self.port = port
        origin = URL(string: "http://127.0.0.1:\(port)")!
    }

    deinit { stop() }

    /// `origin` + `path` (`/endless/fhir`, say).
    public func url(_ path: String) -> URL {
        URL(string: origin.absoluteString + path)!
    }

    /// What the server did so far, one record per request, in the order they began.
    public func records() throws -> [Record] {
        try JSONDecoder().decode([Record].self, from: Data(contentsOf: url("/_stats")))
    }

    /// The record of the last request whose path starts with `prefix`, once its stream has ended or
    /// has seen a write fail (the client hung up), or after `seconds` as it is then.
    public func settledStream(_ prefix: String, seconds: TimeInterval = 15) throws -> Record? {
        let end = Date().addingTimeInterval(seconds)
        while true {
            let record = try records().last { $0.path.hasPrefix(prefix) }
            if record?.done == true || (record?.failedWrites ?? 0) > 0 || Date() > end { return record }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    public func stop() {
        if process.isRunning {
            // SIGKILL: a process started from a concurrency thread inherits its mask, SIGTERM blocked.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
