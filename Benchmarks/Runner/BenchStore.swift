import ArgumentParser
import CommandSupport
import Benchmarks
import Foundation
import Store

/// `caregate-bench store`: insert throughput and events-for-a-day latency, indexed vs a table scan.
struct BenchStore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Benchmark the staging store: insert throughput, and events-for-a-day latency against a table scan.",
        discussion: """
            Generates PATIENTS patients with TASKS daily tasks each and one outcome per task per day for DAYS \
            days (the defaults make 7.3 million outcomes; try --patients 50 for a quick run), inserting them \
            in batches, then times "events of one patient for one day" through the indexes and as a plain \
            table scan on the same file. Build with -c release for meaningful figures. With --postgres, the \
            same insert and the same day queries then run on that PostgreSQL database (a scratch one; its \
            password from the URL or PGPASSWORD, never printed), and the two stores are printed side by \
            side; Scripts/bench-postgres-store.sh starts a private server for it.
            """)

    @OptionGroup var size: SyntheticSizeOptions

    @Option(name: .long, help: "Indexed queries to time.")
    var queries = 1_000

    @Option(name: .long, help: "Table-scan queries to time (each reads whole tables).")
    var scanQueries = 5

    @Option(name: .long, help: "WAL pages before a checkpoint (SQLite's default is 1000).")
    var walCheckpointPages = 100_000

    @Option(name: .long, help: ArgumentHelp("Keep the store in this file (reused, without inserting, when it already holds data); default: a temporary file, removed afterwards.", valueName: "path"))
    var store: String?

    @Option(help: ArgumentHelp("Also run the insert and the day queries on this PostgreSQL database (a scratch one), after SQLite, and compare.", valueName: "url"))
    var postgres: String?

    static let defaultSize = SyntheticSizeOptions.Resolved(patients: 1_000, tasks: 20, days: 365, daysPerBatch: 7, cacheMib: 512)

    func validate() throws {
        try size.check(minimumTasks: 1)
        guard (size.days ?? 1) >= 1 else { throw ValidationError("--days must be at least 1") }
        guard queries >= 1, scanQueries >= 0, walCheckpointPages >= 1 else {
            throw ValidationError("--queries and --wal-checkpoint-pages must be at least 1, --scan-queries at least 0")
        }
        _ = try postgresLocation()
    }

    /// The database `--postgres` names; nil without it. A name that is not a postgres:// URL is a usage error.
    func postgresLocation() throws -> PostgresLocation? {
        guard let postgres else { return nil }
        guard case .postgres(let location) = try? StoreLocation.parse(postgres) else {
            throw ValidationError("--postgres must be a postgres:// URL")
        }
        return location
    }

    func run() throws {
        Bench.warnIfDebugBuild("store")
        var configuration = StoreBenchmark.Configuration()
        let size = size.resolved(defaults: Self.defaultSize)
        configuration.patients = size.patients
        configuration.tasksPerPatient = size.tasks
        configuration.days = size.days
        configuration.daysPerBatch = size.daysPerBatch
        configuration.queries = queries
        configuration.scanQueries = scanQueries
        configuration.cacheMiB = size.cacheMib
        configuration.walCheckpointPages = walCheckpointPages
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-bench-\(UUID().uuidString)")
        let path = store ?? folder.appendingPathComponent("bench.sqlite").path
        if store == nil { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        defer { if store == nil { try? FileManager.default.removeItem(at: folder) } }
        let report: (String) -> Void = { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        let sqlite = try StoreBenchmark(configuration: configuration, path: path, report: report).run()
        if let location = try postgresLocation() {
            try PostgresStoreBenchmark(configuration: configuration, location: location, report: report).run(beside: sqlite)
        }
    }
}
