import Store
import SyntheticData
import CareModel
import Foundation

/// The store benchmark behind `caregate-bench store`: insert throughput in batches, then the latency of
/// "events of one patient for one day" through the store's indexes beside the same query as a plain
/// SQLite table scan (`NOT INDEXED`), in the same run on the same file.
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

    public let configuration: Configuration
    public let path: String
    /// Where progress and results go, line by line.
    public let report: (String) -> Void

    public init(configuration: Configuration, path: String, report: @escaping (String) -> Void) {
        self.configuration = configuration
        self.path = path
        self.report = report
    }

    public func run() throws {
        let c = configuration
        let store = try SQLiteStore(
            path: path, options: SQLiteStore.Options(cacheMiB: c.cacheMiB, walCheckpointPages: c.walCheckpointPages))
        let data = SyntheticCareData(patients: c.patients, tasksPerPatient: c.tasksPerPatient, days: c.days)
        let existing = try store.statistics()
        var insertRate: Double?
        if (existing.entities[.patient]?.versions ?? 0) > 0 {
            report("store \(path) already holds data: insert phase skipped, queries run on what it holds")
        } else {
            insertRate = try insert(data, into: store)
        }
        let (indexed, scan) = try measureQueries(store, data)
        summarize(data, insertRate: insertRate, indexed: indexed, scan: scan)
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

    /// Inserts the entities, then the outcomes in batches; returns outcomes per second.
    private func insert(_ data: SyntheticCareData, into store: SQLiteStore) throws -> Double {
        let c = configuration
        report("generating \(c.patients) patients x \(c.tasksPerPatient) tasks x \(c.days) days = \(Self.grouped(data.totalOutcomes)) outcomes into \(path)")
        let entities = try data.entityBatch()
        var clock = Stopwatch()
        try store.apply(entities)
        let entitySeconds = clock.lap()
        report("insert entities: \(Self.grouped(entities.count)) (patients, care plans, tasks) in 1 batch: \(Self.seconds(entitySeconds)), \(Self.grouped(Int(Double(entities.count) / entitySeconds))) entities/s")

        var day = 0
        var inserted = 0
        var insertSeconds = 0.0
        var cpuSeconds = 0.0
        var lastReport = 0
        let step = max(1, c.daysPerBatch)
        var batches = 0
        while day < c.days {
            let range = day..<min(c.days, day + step)
            let batch = data.outcomeBatch(days: range)  // built outside the timed part
            var batchClock = Stopwatch()
            let cpuBefore = Stopwatch.processCPUSeconds()
            try store.apply(batch)
            insertSeconds += batchClock.lap()
            cpuSeconds += Stopwatch.processCPUSeconds() - cpuBefore
            inserted += batch.count
            batches += 1
            day = range.upperBound
            let percent = day * 100 / max(1, c.days)
            if percent >= lastReport + 5 || day == c.days {
                lastReport = percent
                report("  \(percent)%: \(Self.grouped(inserted)) outcomes, \(Self.grouped(Int(Double(inserted) / insertSeconds))) outcomes/s so far")
            }
        }
        report("insert outcomes: \(Self.grouped(inserted)) in \(batches) batches of \(Self.grouped(c.patients * c.tasksPerPatient * step)): \(Self.seconds(insertSeconds)), \(Self.grouped(Int(Double(inserted) / max(insertSeconds, 1e-9)))) outcomes/s (each with one value); \(Self.grouped(Int(Double(inserted) / max(cpuSeconds, 1e-9)))) outcomes per CPU-second")
        // Pages not yet checkpointed are still in the write-ahead log beside the file.
        let bytes = [path, path + "-wal"].reduce(0) { total, file in
            total + ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0)
        }
        report("store file and its WAL: \(Self.grouped(bytes / 1_000_000)) MB")
        return Double(inserted) / max(insertSeconds, 1e-9)
    }

    /// Times the indexed query, then the table scan (nil when no scan queries are asked for).
    private func measureQueries(_ store: SQLiteStore, _ data: SyntheticCareData) throws -> (Latency, Latency?) {
        let c = configuration
        var random = SeededRandom(seed: 42)
        func pick() -> (String, DateInterval) {
            let patient = Int(random.next() % UInt64(max(1, c.patients)))
            let day = Int(random.next() % UInt64(max(1, c.days)))
            let start = data.start.addingTimeInterval(Double(day) * 86_400)
            return (data.patientID(patient), DateInterval(start: start, duration: 86_400))
        }
        // Warm up as a running gateway would be: each patient's tasks decoded once, hot pages cached.
        for patient in 0..<min(c.patients, 5_000) {
            _ = try store.events(patientID: data.patientID(patient), in: DateInterval(start: data.start, duration: 86_400))
        }

        var indexed: [Double] = []
        var found = 0
        for _ in 0..<c.queries {
            let (patient, day) = pick()
            var clock = Stopwatch()
            let events = try store.events(patientID: patient, in: day)
            indexed.append(clock.lap() * 1000)
            found += events.count
        }
        let fast = Latency(indexed)
        report("events of one patient for one day, indexed (\(fast.count) queries, \(Self.grouped(found / max(1, c.queries))) events each): p50 \(Self.millis(fast.p50)), p99 \(Self.millis(fast.p99)), mean \(Self.millis(fast.mean)), max \(Self.millis(fast.max))")

        var scanned: [Double] = []
        var agree = true
        for _ in 0..<c.scanQueries {
            let (patient, day) = pick()
            var clock = Stopwatch()
            let events = try store.eventsByTableScan(patientID: patient, in: day)
            scanned.append(clock.lap() * 1000)
            let viaIndex = try store.events(patientID: patient, in: day)
            agree = agree && events == viaIndex
        }
        guard !scanned.isEmpty else { return (fast, nil) }
        let slow = Latency(scanned)
        report("same query as a plain table scan, NOT INDEXED (\(slow.count) queries): p50 \(Self.millis(slow.p50)), p99 \(Self.millis(slow.p99)), mean \(Self.millis(slow.mean))")
        report("indexed vs scan: \(Self.grouped(Int(slow.p50 / max(fast.p50, 1e-9))))x faster at p50; results \(agree ? "agree" : "DIFFER")")
        return (fast, slow)
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
