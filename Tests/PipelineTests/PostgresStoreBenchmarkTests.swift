import Benchmarks
import Foundation
import Store
import TestSupport
import XCTest

/// `caregate-bench store --postgres` at a tiny size against a real PostgreSQL the test starts: the
/// SQLite run, then the same insert and the same seeded day queries on PostgreSQL, every outcome stored
/// on both sides and every query answered alike. Counts only: the times are the benchmark's, not a test's.
final class PostgresStoreBenchmarkTests: XCTestCase {
    func testThePostgreSQLSideStoresEveryOutcomeAndAnswersTheDayQueriesAsSQLite() throws {
        let server = try PostgresServerProcess.start()
        defer { server.stop() }
        guard case .postgres(let location) = try StoreLocation.parse(server.url) else { return XCTFail("not a PostgreSQL URL") }
        var configuration = StoreBenchmark.Configuration()
        configuration.patients = 4
        configuration.tasksPerPatient = 3
        configuration.days = 10
        configuration.daysPerBatch = 3
        configuration.queries = 12
        configuration.scanQueries = 2
        configuration.cacheMiB = 8
        let expected = 4 * 3 * 10
        let folder = try makeScratchFolder("store-benchmark")
        var lines: [String] = []
        let sqlite = try StoreBenchmark(configuration: configuration, path: folder.appendingPathComponent("bench.sqlite").path) {
            lines.append($0)
        }.run()
        let comparison = try PostgresStoreBenchmark(configuration: configuration, location: location) { lines.append($0) }.run(beside: sqlite)

        for figures in [comparison.sqlite, comparison.postgres] {
            XCTAssertEqual(figures.outcomesInserted, expected, figures.store)
            XCTAssertEqual(figures.outcomesStored, expected, figures.store)
            XCTAssertEqual(figures.dayQuery.count, 12, figures.store)
            // One event per task each day, each with the outcome of that day.
            XCTAssertEqual(figures.eventsPerQuery, Array(repeating: 3, count: 12), figures.store)
            XCTAssertEqual(figures.eventsWithOutcome, 12 * 3, figures.store)
        }
        XCTAssertTrue(comparison.agree)
        XCTAssertFalse(comparison.postgres.store.contains(server.password), "the password is never named")
        XCTAssertFalse(lines.joined(separator: "\n").contains(server.password), "nor printed")
        XCTAssertTrue(lines.contains { $0.contains("SQLite beside PostgreSQL") }, lines.joined(separator: "\n"))

        // Run again on the same database: it already holds the data, so only the queries run, alike.
        let again = try PostgresStoreBenchmark(configuration: configuration, location: location) { _ in }.run(beside: sqlite)
        XCTAssertNil(again.postgres.outcomesInserted)
        XCTAssertEqual(again.postgres.outcomesStored, expected)
        XCTAssertTrue(again.agree)
    }
}
