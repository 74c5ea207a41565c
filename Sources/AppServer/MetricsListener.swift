import Foundation
import Hummingbird
import Logging
import Observability
import Store

/// The listener an operator's Prometheus scrapes: `GET /metrics` (and `GET /health/live`) on
/// 127.0.0.1 only, on a port of its own (`caregate serve --metrics-port`, `caregate sync --metrics-port`),
/// apart from the app API, which a TLS proxy may expose to the world. Each scrape reads the outbox
/// gauges from the store, off the event loop as every store call of the server: through `front` when it
/// is given (`caregate serve`), else from `store` on a thread of ``BlockingCall`` (`caregate sync`).
public enum MetricsListener {
    /// The application serving `metrics` on `127.0.0.1:port`.
    public static func application(
        port: Int, metrics: CareGateMetrics, store: (any Store)? = nil, front: (any AsyncAppStore)? = nil, logLevel: Logger.Level = .info,
        beforeScrape: @escaping @Sendable () -> Void = {}, onRunning: @escaping @Sendable () -> Void = {}
    ) -> some ApplicationProtocol {
        var logger = Logger(label: "caregate.metrics")
        logger.logLevel = logLevel
        let router = Router()
        router.get("metrics") { _, _ in
            beforeScrape()
            // Off the event loop and the concurrency threads either way: a PostgreSQL store's read blocks on the server.
            let text = if let front { try await front.read { metrics.exposition(store: $0) } } else { try await BlockingCall.run { metrics.exposition(store: store) } }
            var headers = HTTPFields()
            headers[.contentType] = CareGateMetrics.contentType
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("health/live") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        return Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "CareGate metrics"),
            onServerRunning: { _ in onRunning() }, logger: logger)
    }

    /// Ports `--metrics-port` takes.
    public static let ports = 1...65535

    /// Serves the metrics in the background of a process that is not async (`caregate sync`), until
    /// the process exits; returns once the port is bound, or throws what kept it from binding.
    public static func startInBackground(port: Int, metrics: CareGateMetrics, store: (any Store)?) throws {
        let outcome = BindOutcome()
        let application = application(port: port, metrics: metrics, store: store, onRunning: { outcome.settle(nil) })
        Task.detached {
            do {
                try await application.run()
            } catch {
                outcome.settle(error)
            }
        }
        if let error = outcome.wait(seconds: 30) { throw error }
    }
}

/// Whether the background listener bound its port (nil) or failed (the error), told once.
private final class BindOutcome: @unchecked Sendable {
    private let lock = NSCondition()
    private var settled = false
    private var error: (any Error)?

    func settle(_ error: (any Error)?) {
        lock.lock()
        defer { lock.unlock() }
        guard !settled else { return }
        settled = true
        self.error = error
        lock.broadcast()
    }

    func wait(seconds: TimeInterval) -> (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        let deadline = Date().addingTimeInterval(seconds)
        while !settled, lock.wait(until: deadline) {}
        return settled ? error : MetricsListenerTimeout()
    }
}

/// The listener neither bound its port nor failed in time.
public struct MetricsListenerTimeout: Error, CustomStringConvertible {
    public var description: String { "the metrics listener did not start within 30 s" }
}
