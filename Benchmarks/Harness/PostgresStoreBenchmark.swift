import Foundation
import PostgresStore
import Store

/// The PostgreSQL side of `caregate-bench store --postgres <url>` (issue 47, item 5): the same insert and
/// the same seeded day queries as the SQLite run before it (``StoreWorkload``), into a ``PostgreSQLStore``,
/// then the two side by side: insert rate, day-query p50 and p99, and PostgreSQL's figure over SQLite's.
///
/// Each run checks what it measured: every outcome stored (the store's statistics), and each day query
/// answered with as many events as SQLite gave. Figures are printed, never asserted.
public struct PostgresStoreBenchmark {
    /// The two stores' figures, and whether their answers agreed.
    public struct Comparison: Sendable {
        public var sqlite: StoreBenchmark.Figures
        public var postgres: StoreBenchmark.Figures
    }

    public let configuration: StoreBenchmark.Configuration
    public let location: PostgresLocation
    public let report: (String) -> Void

    /// `location`'s password comes from the URL, else `PGPASSWORD` or the password file; it is never
    /// printed (the store is named by ``PostgresLocation/redacted``).
    public init(configuration: StoreBenchmark.Configuration, location: PostgresLocation, report: @escaping (String) -> Void) {
        self.configuration = configuration
        self.location = location
        self.report = report
    }

    /// Inserts into the database (unless it already holds data: then only the queries run) and queries
    /// it as `sqlite`'s run did; prints the comparison and returns it. A store that lost outcomes or
    /// answered differently from SQLite is a ``BenchmarkCheckFailed`` (after the figures are printed).
    @discardableResult
    public func run(beside sqlite: StoreBenchmark.Figures) throws -> Comparison {
        let store = try PostgreSQLStore.open(location: location, creating: true, warn: { report("warning: \($0)") })
        defer { store.close() }
        let workload = StoreWorkload(configuration: configuration, report: report)
        var insert: StoreWorkload.Insert?
        if (try store.statistics().entities[.patient]?.versions ?? 0) > 0 {
            report("postgres: \(location.redacted) already holds data: insert phase skipped, queries run on what it holds")
        } else {
            report("generating into \(location.redacted)")
            insert = try workload.insert(into: store, name: "postgres")
        }
        let indexed = try workload.dayQueries(on: store, name: "postgres")
        let postgres = StoreBenchmark.Figures(
            store: location.redacted, outcomesInserted: insert?.outcomes, insertSeconds: insert?.seconds,
            outcomesPerSecond: insert?.outcomesPerSecond, outcomesStored: try store.statistics().entities[.outcome]?.versions ?? 0,
            dayQuery: indexed.latency, events: indexed.events, eventsWithOutcome: indexed.eventsWithOutcome,
            eventsPerQuery: indexed.eventsPerQuery)
        let comparison = Comparison(sqlite: sqlite, postgres: postgres)
        summarize(comparison, expected: workload.data.totalOutcomes)
        try check(comparison, expected: workload.data.totalOutcomes)
        return comparison
    }

    /// The side-by-side lines: each figure of both stores and PostgreSQL's over SQLite's.
    private func summarize(_ comparison: Comparison, expected: Int) {
        let (sqlite, postgres) = (comparison.sqlite, comparison.postgres)
        report("SQLite beside PostgreSQL (\(StoreBenchmark.grouped(expected)) outcomes generated; stored: SQLite \(StoreBenchmark.grouped(sqlite.outcomesStored)), PostgreSQL \(StoreBenchmark.grouped(postgres.outcomesStored))):")
        func rate(_ figures: StoreBenchmark.Figures) -> String {
            figures.outcomesPerSecond.map { "\(StoreBenchmark.grouped(Int($0)))/s" } ?? "not measured"
        }
        func ratio(_ postgres: Double?, _ sqlite: Double?) -> String {
            guard let postgres, let sqlite, sqlite > 0 else { return "-" }
            return String(format: "%.2fx", postgres / sqlite)
        }
        report("  insert (outcomes/s):      SQLite \(rate(sqlite)), PostgreSQL \(rate(postgres)): PostgreSQL/SQLite \(ratio(postgres.outcomesPerSecond, sqlite.outcomesPerSecond))")
        report("  events of a day, p50:     SQLite \(StoreBenchmark.millis(sqlite.dayQuery.p50)), PostgreSQL \(StoreBenchmark.millis(postgres.dayQuery.p50)): PostgreSQL/SQLite \(ratio(postgres.dayQuery.p50, sqlite.dayQuery.p50))")
        report("  events of a day, p99:     SQLite \(StoreBenchmark.millis(sqlite.dayQuery.p99)), PostgreSQL \(StoreBenchmark.millis(postgres.dayQuery.p99)): PostgreSQL/SQLite \(ratio(postgres.dayQuery.p99, sqlite.dayQuery.p99)); target p99 under \(StoreBenchmark.millis(StoreBenchmark.targetP99Milliseconds)): \(postgres.dayQuery.p99 < StoreBenchmark.targetP99Milliseconds ? "meets" : "MISSES")")
        report("  day queries' answers:     \(comparison.agree ? "agree" : "DIFFER") (\(StoreBenchmark.grouped(postgres.events)) events, \(StoreBenchmark.grouped(postgres.eventsWithOutcome)) with an outcome, in \(postgres.dayQuery.count) queries)")
    }

    /// Refuses figures that would mean nothing: outcomes missing, or answers that differ from SQLite's.
    private func check(_ comparison: Comparison, expected: Int) throws {
        let postgres = comparison.postgres
        if postgres.outcomesInserted != nil, postgres.outcomesStored != expected {
            throw BenchmarkCheckFailed(description: "postgres: \(postgres.outcomesStored) outcomes stored of \(expected) inserted")
        }
        if !comparison.agree {
            throw BenchmarkCheckFailed(description: "postgres: the day queries found \(postgres.events) events (\(postgres.eventsWithOutcome) with an outcome), SQLite \(comparison.sqlite.events) (\(comparison.sqlite.eventsWithOutcome))")
        }
    }
}

extension PostgresStoreBenchmark.Comparison {
    /// Whether both stores gave each day query of the mix as many events, and as many with an outcome.
    public var agree: Bool {
        sqlite.eventsPerQuery == postgres.eventsPerQuery && sqlite.eventsWithOutcome == postgres.eventsWithOutcome
    }
}
