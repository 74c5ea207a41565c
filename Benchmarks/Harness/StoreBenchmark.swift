import Store
import SyntheticData
import CareModel
import Foundation

/// The store benchmark behind `caregate-bench store`: insert throughput in batches, then the latency of
/// "events of one patient for one day" through the store's indexes beside the same query as a plain
/// SQLite table scan (`NOT INDEXED`), in the same run on the same file. The insert and the day queries
/// are ``StoreWorkload``'s, which ``PostgresStoreBenchmark`` runs on a PostgreSQL store after this one.
///
/// Figures are printed, never asserted: speed is measured here, in a release build, not in tests.
public struct StoreBenchmark {
    public struct Configuration: Sendable {
        public var patients = 1_000
        public var tasksPerPatient = 20
        public var days = 365
        public var daysPerBatch = 7
        public var queries = 1_000
        public var scanQueries = 5
        public var cacheMiB = 512
        public var walCheckpointPages = 100_000
        public init() {}
    }

    /// Latency percentiles of one kind of query, in milliseconds.
    public struct Latency: Sendable {
        public var count: Int
        public var p50: Double
        public var p99: Double
        public var mean: Double
        public var max: Double

        init(_ samples: [Double]) {
            let sorted = samples.sorted()
            count = sorted.count
            func percentile(_ p: Double) -> Double {
                guard !sorted.isEmpty else { return 0 }
                let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
                return sorted[Swift.max(0, Swift.min(sorted.count - 1, rank))]
            }
            p50 = percentile(0.50)
            p99 = percentile(0.99)
            mean = sorted.isEmpty ? 0 : sorted.reduce(0, +) / Double(sorted.count)
            max = sorted.last ?? 0
        }
    }

    /// What one store's run measured and counted (the insert is nil when the store already held data).
    public struct Figures: Sendable {
        /// The store, as the report names it (a path, or a URL without its password).
        public var store: String
        public var outcomesInserted: Int?
        public var insertSeconds: Double?
        public var outcomesPerSecond: Double?
        /// Outcome versions the store holds after the run (its statistics).
        public var outcomesStored: Int
        public var dayQuery: Latency
        /// Events the day queries found, in all, and those with an outcome.
        public var events: Int
        public var eventsWithOutcome: Int
        /// Each day query's event count, in the order of the seeded mix.
        public var eventsPerQuery: [Int]
    }

    public let configuration: Configuration
    public let path: String
    /// Where progress and results go, line by line.
    public let report: (String) -> Void

    public init(configuration: Configuration, path: String, report: @escaping (String) -> Void) {
        self.configuration = configuration
        self.path = path
        self.report = report
    }

    /// Inserts (unless the file already holds data) and queries the SQLite store at `path`; prints the
    /// figures beside the targets and the table scan, and returns them.
    @discardableResult
    public func run() throws -> Figures {
        let c = configuration
        let store = try SQLiteStore(
            path: path, options: SQLiteStore.Options(cacheMiB: c.cacheMiB, walCheckpointPages: c.walCheckpointPages))
        let workload = StoreWorkload(configuration: c, report: report)
        var insert: StoreWorkload.Insert?
        if (try store.statistics().entities[.patient]?.versions ?? 0) > 0 {
            report("store \(path) already holds data: insert phase skipped, queries run on what it holds")
        } else {
            report("generating into \(path)")
            insert = try workload.insert(into: store, name: "sqlite")
            // Pages not yet checkpointed are still in the write-ahead log beside the file.
            let bytes = [path, path + "-wal"].reduce(0) { total, file in
                total + ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0)
            }
            report("store file and its WAL: \(Self.grouped(bytes / 1_000_000)) MB")
        }
        let indexed = try workload.dayQueries(on: store, name: "sqlite")
        let scan = try measureScan(store, workload)
        summarize(workload.data, insertRate: insert?.outcomesPerSecond, indexed: indexed.latency, scan: scan)
        return Figures(
            store: path, outcomesInserted: insert?.outcomes, insertSeconds: insert?.seconds, outcomesPerSecond: insert?.outcomesPerSecond,
            outcomesStored: try store.statistics().entities[.outcome]?.versions ?? 0, dayQuery: indexed.latency,
            events: indexed.events, eventsWithOutcome: indexed.eventsWithOutcome, eventsPerQuery: indexed.eventsPerQuery)
    }

    /// The acceptance figures of issue 3, beside the measured ones.
    static let targetOutcomesPerSecond = 100_000
    static let targetP99Milliseconds = 5.0
    static let acceptanceOutcomes = 7_300_000

    /// The measured figures beside the targets and the table-scan baseline, in a few lines.
    private func summarize(_ data: SyntheticCareData, insertRate: Double?, indexed: Latency, scan: Latency?) {
        let scale = data.totalOutcomes >= Self.acceptanceOutcomes
            ? "at the acceptance scale (\(Self.grouped(data.totalOutcomes)) outcomes)"
            : "at \(Self.grouped(data.totalOutcomes)) outcomes, below the acceptance scale of \(Self.grouped(Self.acceptanceOutcomes)): figures are not comparable"
        report("summary \(scale):")
        if let insertRate {
            let verdict = Int(insertRate) >= Self.targetOutcomesPerSecond ? "meets" : "MISSES"
            report("  insert:           \(Self.grouped(Int(insertRate))) outcomes/s; target at least \(Self.grouped(Self.targetOutcomesPerSecond)): \(verdict)")
        }
        let verdict = indexed.p99 < Self.targetP99Milliseconds ? "meets" : "MISSES"
        report("  events of a day:  indexed p50 \(Self.millis(indexed.p50)), p99 \(Self.millis(indexed.p99)); target p99 under \(Self.millis(Self.targetP99Milliseconds)): \(verdict)")
        if let scan {
            report("  baseline (scan):  p50 \(Self.millis(scan.p50)), p99 \(Self.millis(scan.p99)): the index is \(Self.grouped(Int(scan.p50 / max(indexed.p50, 1e-9))))x faster at p50")
        }
    }

    /// Times the same query as a plain table scan (`NOT INDEXED`), on the picks of the seeded mix after
    /// the indexed ones, and checks it agrees with the indexed answer; nil when no scan queries are asked for.
    private func measureScan(_ store: SQLiteStore, _ workload: StoreWorkload) throws -> Latency? {
        let c = configuration
        guard c.scanQueries > 0 else { return nil }
        var scanned: [Double] = []
        var agree = true
        for (patient, day) in workload.picks(c.queries + c.scanQueries).suffix(c.scanQueries) {
            var clock = Stopwatch()
            let events = try store.eventsByTableScan(patientID: patient, in: day)
            scanned.append(clock.lap() * 1000)
            let viaIndex = try store.events(patientID: patient, in: day)
            agree = agree && events == viaIndex
        }
        let slow = Latency(scanned)
        report("same query as a plain table scan, NOT INDEXED (\(slow.count) queries): p50 \(Self.millis(slow.p50)), p99 \(Self.millis(slow.p99)), mean \(Self.millis(slow.mean)); results \(agree ? "agree" : "DIFFER") with the indexed ones")
        return slow
    }

    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return (value < 0 ? "-" : "") + out
    }

    static func seconds(_ value: Double) -> String { String(format: "%.2f s", value) }
    static func millis(_ value: Double) -> String { String(format: value < 10 ? "%.3f ms" : "%.0f ms", value) }
}

/// Elapsed wall-clock time, in seconds, from a monotonic clock.
struct Stopwatch {
    private var start = DispatchTime.now().uptimeNanoseconds

    /// The seconds since the start or the previous lap.
    mutating func lap() -> Double {
        let now = DispatchTime.now().uptimeNanoseconds
        defer { start = now }
        return Double(now - start) / 1e9
    }

    /// The CPU time this process has used, in seconds (the machine may be shared: wall time alone
    /// would count other processes' work).
    static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// A small deterministic generator (SplitMix64), so that runs query the same patients and days (and
/// tests that draw random orders draw the same ones).
public struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
