import ArgumentParser
import Benchmarks
import Foundation
import Store

/// `caregate-bench postgres-outbox`: outbox entries claimed and acknowledged per second by several
/// PostgreSQL workers, beside the SQLite store's outbox in the same run.
struct BenchPostgresOutbox: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres-outbox",
        abstract: "Benchmark the PostgreSQL outbox with several workers against the SQLite outbox (use a release build).",
        discussion: """
            Queues --entries outbox entries and has 1, 2, 4 and 8 workers (threads, each with its own \
            connection pool) claim, mark sent and acknowledge them in claims of --batch, beside the SQLite \
            store doing the same as the sync job, in the same run; --runs times, then the medians. The \
            database must be a scratch one: entries are added to its outbox and left there. \
            Scripts/bench-postgres-outbox.sh starts a private server for it.
            """
    )

    @Option(help: ArgumentHelp("The PostgreSQL database to use (a scratch one).", valueName: "url"))
    var postgres: String

    @Option(help: "Outbox entries per measurement.")
    var entries = 20_000

    @Option(help: "Entries per claim (and per SQLite batch).")
    var batch = 100

    @Option(help: "Worker counts to measure, comma-separated.")
    var workers = "1,2,4,8"

    @Option(help: "Runs (the medians are printed).")
    var runs = 3

    func validate() throws {
        guard (1...1_000_000).contains(entries) else { throw ValidationError("--entries must be 1 to 1000000 (got \(entries))") }
        guard (1...10_000).contains(batch) else { throw ValidationError("--batch must be 1 to 10000 (got \(batch))") }
        guard (1...20).contains(runs) else { throw ValidationError("--runs must be 1 to 20 (got \(runs))") }
        guard let counts = workerCounts, !counts.isEmpty else { throw ValidationError("--workers must be numbers from 1 to 64, comma-separated") }
        guard case .postgres = try StoreLocation.parse(postgres) else { throw ValidationError("--postgres must be a postgres:// URL") }
    }

    var workerCounts: [Int]? {
        let counts = workers.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard counts.allSatisfy({ $0.map { (1...64).contains($0) } ?? false }) else { return nil }
        return counts.compactMap { $0 }
    }

    func run() throws {
        Bench.warnIfDebugBuild("postgres-outbox")
        guard case .postgres(let location) = try StoreLocation.parse(postgres) else { throw ValidationError("--postgres must be a postgres:// URL") }
        var configuration = PostgresOutboxBenchmark.Configuration()
        configuration.entries = entries
        configuration.batch = batch
        configuration.workers = workerCounts ?? [1]
        configuration.runs = runs
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        try PostgresOutboxBenchmark(configuration: configuration, location: location, scratch: scratch) { print($0) }.run()
    }
}
