import CareModel
import Foundation
import PostgresStore
import Store

/// The outbox benchmark behind `caregate-bench postgres-outbox` (issue 47, item 5): outbox entries claimed
/// and acknowledged per second by 1, 2, 4 and 8 workers on one PostgreSQL, beside the SQLite store's own
/// outbox in the same run on the same number of entries.
///
/// A PostgreSQL worker is a thread with its own connection pool (as a `caregate sync` process would be):
/// it claims a batch (`FOR UPDATE SKIP LOCKED`), marks it sent and acknowledges it, one statement each,
/// until nothing is due. The SQLite baseline is what the sync job's push does on one machine: every due
/// entry read at once (`dueOutboxEntries`), then a store batch per Bundle of entries, each entry marked
/// sent and acknowledged.
/// Neither side talks to a FHIR server: this measures the store's part of a push.
///
/// Each run checks what it measured: every entry acknowledged once (one attempt each), the workers'
/// claims disjoint, no step refused. Figures are printed, never asserted.
public struct PostgresOutboxBenchmark {
    public struct Configuration: Sendable {
        public var entries = 20_000
        /// Entries per claim (and per SQLite batch).
        public var batch = 100
        public var workers = [1, 2, 4, 8]
        public var runs = 3
        /// Bytes of payload per entry (an Observation's JSON is about this size).
        public var payloadBytes = 600
        public init() {}
    }

    /// The target of issue 47 for 4 workers on the 2-core machine.
    static let goalPerSecond = 2_000.0

    public let configuration: Configuration
    public let location: PostgresLocation
    /// Where the SQLite baseline's store files go (each removed after its run).
    public let scratch: URL
    public let report: (String) -> Void

    public init(configuration: Configuration, location: PostgresLocation, scratch: URL, report: @escaping (String) -> Void) {
        self.configuration = configuration
        self.location = location
        self.scratch = scratch
        self.report = report
    }

    /// Runs every measurement `runs` times, alternating SQLite and PostgreSQL, and prints each run's
    /// figures and their medians.
    public func run() throws {
        let c = configuration
        let database = try PostgresDatabase(location: location)
        defer { database.close() }
        let outbox = PostgresOutbox(database: database)
        try outbox.prepare()
        report("outbox: \(c.entries) entries of \(c.payloadBytes) bytes, claims of \(c.batch), \(c.runs) runs; PostgreSQL \(location.redacted)")
        var sqliteRates: [Double] = []
        var postgresRates: [Int: [Double]] = [:]
        for run in 1...c.runs {
            let sqlite = try measureSQLite(run: run)
            sqliteRates.append(sqlite)
            var line = "run \(run): sqlite \(Self.format(sqlite))/s"
            for workers in c.workers {
                let rate = try measurePostgres(workers: workers, outbox: outbox)
                postgresRates[workers, default: []].append(rate)
                line += ", postgres×\(workers) \(Self.format(rate))/s"
            }
            report(line)
        }
        let baseline = Self.median(sqliteRates)
        report("medians of \(c.runs) runs (entries claimed and acknowledged per second):")
        report("  sqlite, one writer (baseline)   \(Self.format(baseline))/s")
        for workers in c.workers {
            let rate = Self.median(postgresRates[workers] ?? [])
            let ratio = baseline > 0 ? String(format: "%.2f", rate / baseline) : "-"
            report("  postgres, \(workers) worker\(workers == 1 ? " " : "s")            \(Self.format(rate))/s  (\(ratio)× sqlite)")
        }
        if let four = postgresRates[4] {
            let rate = Self.median(four)
            report("goal: at least \(Self.format(Self.goalPerSecond))/s with 4 workers: \(rate >= Self.goalPerSecond ? "met" : "not met") (\(Self.format(rate))/s)")
        }
    }

    /// The entries of one run: outcome exports for the provider, each its own entity version.
    func entries() -> [OutboxEntry] {
        let payload = Data(repeating: UInt8(ascii: "x"), count: configuration.payloadBytes)
        let now = Date()
        return (0..<configuration.entries).map { number in
            OutboxEntry(destination: OutboxEntry.provider, entityKind: .outcome, entityID: "outcome-\(number)", entityUUID: UUID(), payload: payload, createdDate: now)
        }
    }

    /// The SQLite store's rate: the due entries, then one store batch per `batch` of them, each entry
    /// sent and acknowledged, as the sync job's push records them.
    func measureSQLite(run: Int) throws -> Double {
        let path = scratch.appendingPathComponent("outbox-\(run)-\(UUID().uuidString).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let store = try SQLiteStore(path: path)
        let all = entries()
        for start in stride(from: 0, to: all.count, by: 5_000) {
            try store.apply(StoreBatch(changes: all[start..<min(start + 5_000, all.count)].map { .enqueue($0) }))
        }
        let started = DispatchTime.now()
        var done = 0
        // As the sync job's push (Exporter.push): every due entry read at once, then one store batch per
        // Bundle of `batch` entries, each entry marked sent and acknowledged.
        let now = Date()
        let due = try store.dueOutboxEntries(at: now, limit: .max)
        for start in stride(from: 0, to: due.count, by: configuration.batch) {
            var batch = StoreBatch(date: now)
            for entry in due[start..<min(start + configuration.batch, due.count)] {
                guard let id = entry.id else { continue }
                batch.transition(outboxEntry: id, .sent(at: now))
                batch.transition(outboxEntry: id, .acknowledged(at: now, server: ServerVersion(id: "obs-\(id)", version: "1")))
                done += 1
            }
            try store.apply(batch)
        }
        let seconds = Self.seconds(since: started)
        let acknowledged = try store.outboxEntries(in: .acknowledged, limit: .max)
        guard done == all.count, acknowledged.count == all.count, acknowledged.allSatisfy({ $0.attempts == 1 }) else {
            throw BenchmarkCheckFailed(description: "sqlite: \(done) pushed, \(acknowledged.count) acknowledged of \(all.count)")
        }
        return Double(all.count) / seconds
    }

    /// The rate of `workers` PostgreSQL workers on a fresh outbox of the same number of entries.
    func measurePostgres(workers: Int, outbox: PostgresOutbox) throws -> Double {
        // New entries each time; those of earlier measurements are acknowledged, outside the claims' index.
        let ids = try outbox.enqueue(entries())
        let pools = try (0..<workers).map { _ in try PostgresDatabase(location: location) }
        defer { pools.forEach { $0.close() } }
        // Each pool connects before the clock starts.
        for pool in pools { _ = try PostgresOutbox(database: pool).entry(id: 0) }
        let tally = Tally()
        let group = DispatchGroup()
        let started = DispatchTime.now()
        for (number, pool) in pools.enumerated() {
            group.enter()
            let batch = configuration.batch
            Thread.detachNewThread {
                defer { group.leave() }
                tally.record(Self.work(worker: "bench-\(number)", outbox: PostgresOutbox(database: pool), batch: batch))
            }
        }
        group.wait()
        let seconds = Self.seconds(since: started)
        let acknowledged = try outbox.entries(ids: ids).filter { $0.state == .acknowledged && $0.attempts == 1 }.count
        let (claimed, problems) = tally.result
        guard problems.isEmpty, claimed == configuration.entries, acknowledged == configuration.entries else {
            throw BenchmarkCheckFailed(description: "postgres ×\(workers): \(claimed) claimed, \(acknowledged) acknowledged once of \(configuration.entries); \(problems.prefix(3))")
        }
        return Double(configuration.entries) / seconds
    }

    /// One worker's loop: claim, mark sent, acknowledge, until nothing is due; how many it claimed, and
    /// what went wrong (a refusal, an error).
    static func work(worker: String, outbox: PostgresOutbox, batch: Int) -> (claimed: Int, problems: [String]) {
        var claimed = 0
        do {
            while true {
                let claims = try outbox.claim(worker: worker, limit: batch, leaseFor: .seconds(300))
                guard !claims.isEmpty else { break }
                claimed += claims.count
                let ids = claims.map(\.id)
                let sent = try outbox.transition(ids, .sent(at: Date()), worker: worker)
                let acknowledged = try outbox.acknowledge(ids.map { ($0, ServerVersion(id: "obs-\($0)", version: "1")) }, worker: worker)
                let refused = sent.refused + acknowledged.refused
                if !refused.isEmpty { return (claimed, refused.map { "\($0)" }) }
            }
        } catch {
            return (claimed, ["\(worker): \(error)"])
        }
        return (claimed, [])
    }

    static func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func format(_ rate: Double) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.maximumFractionDigits = 0
        return formatter.string(from: NSNumber(value: rate)) ?? "\(Int(rate))"
    }
}

/// What a benchmark run found wrong with what it measured: its figures would mean nothing.
public struct BenchmarkCheckFailed: Error, CustomStringConvertible {
    public let description: String
}

/// The workers' counts, gathered across threads.
private final class Tally: @unchecked Sendable {
    private let lock = NSLock()
    private var claimed = 0
    private var problems: [String] = []

    func record(_ outcome: (claimed: Int, problems: [String])) {
        lock.withLock {
            claimed += outcome.claimed
            problems += outcome.problems
        }
    }

    var result: (Int, [String]) { lock.withLock { (claimed, problems) } }
}
