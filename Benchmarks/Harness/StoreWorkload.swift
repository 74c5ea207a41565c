import CareModel
import Foundation
import Store
import SyntheticData

/// The part of the store benchmark that any store runs alike, through the `Store` protocol only: the
/// synthetic care data inserted in batches of `daysPerBatch` days, then "events of one patient for one
/// day" for a seeded mix of patients and days (the same mix on every store and in every run), so that the
/// SQLite store and the PostgreSQL store are timed on the same writes and the same questions.
struct StoreWorkload {
    let configuration: StoreBenchmark.Configuration
    let data: SyntheticCareData
    /// Where progress and results go, line by line.
    let report: (String) -> Void

    init(configuration: StoreBenchmark.Configuration, report: @escaping (String) -> Void) {
        self.configuration = configuration
        data = SyntheticCareData(patients: configuration.patients, tasksPerPatient: configuration.tasksPerPatient, days: configuration.days)
        self.report = report
    }

    /// What an insert did and how fast.
    struct Insert: Sendable {
        var outcomes: Int
        var batches: Int
        /// Wall-clock seconds of the outcome batches (the batches are built outside the timed part).
        var seconds: Double
        /// This process's CPU seconds in them (a database server's own work is not counted).
        var cpuSeconds: Double
        var outcomesPerSecond: Double { Double(outcomes) / max(seconds, 1e-9) }
    }

    /// The day queries' latencies and what they found.
    struct DayQueries: Sendable {
        var latency: StoreBenchmark.Latency
        /// Events found, in all (each query's count is in `eventsPerQuery`).
        var events: Int
        /// Of them, those with an outcome.
        var eventsWithOutcome: Int
        /// Each query's event count, in the order of the mix: two stores holding the same data agree.
        var eventsPerQuery: [Int]
        /// This process's CPU milliseconds per query, on average (decoding and assembling the events,
        /// and the client's side of the round trips; a database server's work is not counted).
        var cpuMillisecondsPerQuery: Double
    }

    /// The seeded mix: `count` (patient id, day) pairs, the same on every call.
    func picks(_ count: Int) -> [(patientID: String, day: DateInterval)] {
        var random = SeededRandom(seed: 42)
        let c = configuration
        return (0..<count).map { _ in
            let patient = Int(random.next() % UInt64(max(1, c.patients)))
            let day = Int(random.next() % UInt64(max(1, c.days)))
            let start = data.start.addingTimeInterval(Double(day) * 86_400)
            return (data.patientID(patient), DateInterval(start: start, duration: 86_400))
        }
    }

    /// Inserts the entities in one batch, then the outcomes `daysPerBatch` days per batch, reporting
    /// progress every 5% (`name` names the store in the lines).
    func insert(into store: any Store, name: String) throws -> Insert {
        let c = configuration
        report("\(name): \(c.patients) patients x \(c.tasksPerPatient) tasks x \(c.days) days = \(StoreBenchmark.grouped(data.totalOutcomes)) outcomes")
        let entities = try data.entityBatch()
        var clock = Stopwatch()
        try store.apply(entities)
        let entitySeconds = clock.lap()
        report("\(name): entities \(StoreBenchmark.grouped(entities.count)) (patients, care plans, tasks) in 1 batch: \(StoreBenchmark.seconds(entitySeconds)), \(StoreBenchmark.grouped(Int(Double(entities.count) / max(entitySeconds, 1e-9)))) entities/s")

        var result = Insert(outcomes: 0, batches: 0, seconds: 0, cpuSeconds: 0)
        var day = 0
        var lastReport = 0
        let step = max(1, c.daysPerBatch)
        while day < c.days {
            let range = day..<min(c.days, day + step)
            let batch = data.outcomeBatch(days: range)  // built outside the timed part
            var batchClock = Stopwatch()
            let cpuBefore = Stopwatch.processCPUSeconds()
            try store.apply(batch)
            result.seconds += batchClock.lap()
            result.cpuSeconds += Stopwatch.processCPUSeconds() - cpuBefore
            result.outcomes += batch.count
            result.batches += 1
            day = range.upperBound
            let percent = day * 100 / max(1, c.days)
            if percent >= lastReport + 5 || day == c.days {
                lastReport = percent
                report("  \(name) \(percent)%: \(StoreBenchmark.grouped(result.outcomes)) outcomes, \(StoreBenchmark.grouped(Int(result.outcomesPerSecond))) outcomes/s so far")
            }
        }
        report("\(name): outcomes \(StoreBenchmark.grouped(result.outcomes)) in \(result.batches) batches of \(StoreBenchmark.grouped(c.patients * c.tasksPerPatient * step)): \(StoreBenchmark.seconds(result.seconds)), \(StoreBenchmark.grouped(Int(result.outcomesPerSecond))) outcomes/s (each with one value); \(StoreBenchmark.grouped(Int(Double(result.outcomes) / max(result.cpuSeconds, 1e-9)))) outcomes per CPU-second of this process")
        return result
    }

    /// Warms the store up as a running gateway would be (one day of each patient read once), then times
    /// the first `queries` picks of the seeded mix.
    func dayQueries(on store: any Store, name: String) throws -> DayQueries {
        for patient in 0..<min(configuration.patients, 5_000) {
            _ = try store.events(patientID: data.patientID(patient), in: DateInterval(start: data.start, duration: 86_400))
        }
        var samples: [Double] = []
        var result = DayQueries(latency: StoreBenchmark.Latency([]), events: 0, eventsWithOutcome: 0, eventsPerQuery: [], cpuMillisecondsPerQuery: 0)
        let cpuBefore = Stopwatch.processCPUSeconds()
        for (patient, day) in picks(configuration.queries) {
            var clock = Stopwatch()
            let events = try store.events(patientID: patient, in: day)
            samples.append(clock.lap() * 1000)
            result.events += events.count
            result.eventsWithOutcome += events.filter { $0.outcome != nil }.count
            result.eventsPerQuery.append(events.count)
        }
        result.cpuMillisecondsPerQuery = (Stopwatch.processCPUSeconds() - cpuBefore) * 1000 / Double(max(1, samples.count))
        result.latency = StoreBenchmark.Latency(samples)
        let fast = result.latency
        report("\(name): events of one patient for one day (\(fast.count) queries, \(StoreBenchmark.grouped(result.events / max(1, fast.count))) events each, \(StoreBenchmark.grouped(result.eventsWithOutcome)) with an outcome in all): p50 \(StoreBenchmark.millis(fast.p50)), p99 \(StoreBenchmark.millis(fast.p99)), mean \(StoreBenchmark.millis(fast.mean)), max \(StoreBenchmark.millis(fast.max)); this process's CPU \(StoreBenchmark.millis(result.cpuMillisecondsPerQuery)) a query")
        return result
    }
}
