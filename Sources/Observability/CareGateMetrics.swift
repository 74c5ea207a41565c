import CoreMetrics
import Foundation
import Prometheus
import Store

/// The metrics of one CareGate process (`caregate serve`, or a long-running `caregate sync` with
/// `--metrics-port`), recorded through swift-metrics into a Prometheus registry of its own and scraped
/// as Prometheus's text format (``exposition(store:now:)``).
///
/// Names follow Prometheus's conventions: `caregate_` first, base units (`_seconds`), `_total` for
/// counters, labels from small fixed sets (a route's pattern, never its path; a resource type; a status).
/// No label or value ever holds patient data. Each is listed in Docs/operations.md.
///
/// The registry is this object's, not swift-metrics' global one: the library never bootstraps the
/// process's metrics system, so an application embedding CareGate keeps its own.
public final class CareGateMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // From a cached answer (a millisecond) to a long import phase (ten minutes).
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
            .seconds(30), .seconds(60), .seconds(300), .seconds(600),
        ]
        self.factory = factory
    }

    /// Adds `amount` to counter `name` with `labels` (made on first use).
    public func count(_ name: String, _ labels: [(String, String)] = [], by amount: Int = 1) {
        guard amount > 0 else { return }
        Counter(label: name, dimensions: labels, factory: factory).increment(by: amount)
    }

    /// Records a duration into histogram `name` with `labels`.
    public func time(_ name: String, _ labels: [(String, String)] = [], seconds: TimeInterval) {
        guard seconds.isFinite, seconds >= 0 else { return }
        Timer(label: name, dimensions: labels, factory: factory).recordNanoseconds(Int64(min(seconds, 1e9) * 1_000_000_000))
    }

    /// Sets gauge `name` with `labels` to `value`.
    public func set(_ name: String, _ labels: [(String, String)] = [], to value: Double) {
        Gauge(label: name, dimensions: labels, factory: factory).record(value)
    }

    /// The outbox and dead-letter gauges, read from `store` now (a scrape sees the store as it is, not as
    /// the last run left it).
    public func recordOutbox(of store: any Store, now: Date = Date()) {
        guard let summary = try? store.outboxSummary() else {
            count("caregate_store_read_failures_total")
            return
        }
        for state in OutboxState.allCases {
            set("caregate_outbox_entries", [("state", state.rawValue)], to: Double(summary.entries[state] ?? 0))
        }
        set("caregate_outbox_oldest_waiting_age_seconds", to: summary.oldestWaiting.map { max(0, now.timeIntervalSince($0)) } ?? 0)
        set("caregate_dead_letters", to: Double(summary.deadLetters))
    }

    /// Prometheus's text exposition format (version 0.0.4) of every metric, the store's gauges read
    /// first when a store is given.
    public func exposition(store: (any Store)? = nil, now: Date = Date()) -> String {
        if let store { recordOutbox(of: store, now: now) }
        return registry.emitToString()
    }

    /// The media type of ``exposition(store:now:)``.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}
