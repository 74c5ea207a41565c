import ArgumentParser
import Benchmarks
import Foundation
import Store

/// `caregate bench store`: insert throughput and events-for-a-day latency, indexed vs a table scan.
struct BenchStore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Benchmark the staging store: insert throughput, and events-for-a-day latency against a table scan.",
        discussion: """
            Generates PATIENTS patients with TASKS daily tasks each and one outcome per task per day for DAYS \
            days (the defaults make 7.3 million outcomes; try --patients 50 for a quick run), inserting them \
            in batches, then times "events of one patient for one day" through the indexes and as a plain \
            table scan on the same file. Build with -c release for meaningful figures.
            """)

    @Option(name: .long, help: "How many patients.")
    var patients = 1_000

    @Option(name: .long, help: "Daily tasks per patient.")
    var tasks = 20

    @Option(name: .long, help: "Days of outcomes.")
    var days = 365

    @Option(name: .long, help: "Days of outcomes per batch (one transaction each): a week of 1,000 patients is 140,000 outcomes.")
    var daysPerBatch = 7

    @Option(name: .long, help: "Indexed queries to time.")
    var queries = 1_000

    @Option(name: .long, help: "Table-scan queries to time (each reads whole tables).")
    var scanQueries = 5

    @Option(name: .long, help: "SQLite page cache in MiB.")
    var cacheMib = 512

    @Option(name: .long, help: "WAL pages before a checkpoint (SQLite's default is 1000).")
    var walCheckpointPages = 100_000

    @Option(name: .long, help: ArgumentHelp("Keep the store in this file (reused, without inserting, when it already holds data); default: a temporary file, removed afterwards.", valueName: "path"))
    var store: String?

    func validate() throws {
        guard patients >= 1, tasks >= 1, days >= 1 else { throw ValidationError("--patients, --tasks and --days must be at least 1") }
        guard daysPerBatch >= 1, queries >= 1, scanQueries >= 0, cacheMib >= 1, walCheckpointPages >= 1 else {
            throw ValidationError("--days-per-batch, --queries and --cache-mib must be at least 1, --scan-queries at least 0")
        }
    }

    func run() throws {
        #if DEBUG
        print("warning: this is a debug build; build with -c release for meaningful figures")
        #endif
        var configuration = StoreBenchmark.Configuration()
        configuration.patients = patients
        configuration.tasksPerPatient = tasks
        configuration.days = days
        configuration.daysPerBatch = daysPerBatch
        configuration.queries = queries
        configuration.scanQueries = scanQueries
        configuration.cacheMiB = cacheMib
        configuration.walCheckpointPages = walCheckpointPages
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("caregate-bench-\(UUID().uuidString)")
        let path = store ?? folder.appendingPathComponent("bench.sqlite").path
        if store == nil { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        defer { if store == nil { try? FileManager.default.removeItem(at: folder) } }
        do {
            try StoreBenchmark(configuration: configuration, path: path) { line in
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
            }.run()
        } catch {
            throw StoreOptions.fail(error)
        }
    }
}
