import ArgumentParser
import CommandSupport
import FileSafety
import Foundation
import Pipeline
import Insights
import Logging
import Mapping
import Observability
import AppServer
import Store
import Sync

/// `caregate sync --config FILE`: pull from the provider's FHIR server, push the outbox back.
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Pull changes from a FHIR server into the store, and push recorded outcomes (and care-team reports) back.",
        discussion: """
            Each run pulls what changed (searches or Bulk Data), imports it through the mappings, and pushes \
            the outbox (and care-team reports); a killed run resumes and sends nothing twice. Without --once it \
            runs every `interval` until SIGINT or SIGTERM (the run under way finishes); SIGHUP rereads the \
            configuration before the next run. Give --store as an absolute path (the default is in \
            the working directory). Exit status: 0 all done, 1 anything failed or waits for a later run, 2 the \
            configuration cannot be used (nothing is touched).

            Examples:
              caregate sync --config sync.yaml --store /srv/caregate/caregate.sqlite --once
              caregate sync --config Fixtures/sync.yaml --once --dry-run

            More: Docs/sync-job.md (every sync.yaml setting, auth, cron), Docs/deploying.md (systemd).
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .long, help: ArgumentHelp("The sync configuration (YAML).", valueName: "file"))
    var config: String

    @OptionGroup var mappings: MappingsOption

    @Option(name: .long, help: ArgumentHelp("Also write the job report as JSON to this file.", valueName: "file"))
    var report: String?

    @Flag(name: .long, help: "Pull and map, and report what would change; write nothing, move no cursor, push nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Run once and exit (for cron and systemd timers); without it the job repeats every `interval`.")
    var once = false

    @Option(name: .long, help: ArgumentHelp(
        "auto: a background job while `caregate serve` serves the store, else normal; normal; background: a CPU only when nothing else wants one (Linux's idle policy, as `chrt --idle 0`).",
        valueName: "auto|normal|background"))
    var priority: SyncPriority = .auto

    @Flag(name: .long, help: "The same as --priority background.")
    var background = false

    @OptionGroup var logging: LogOptions

    @Option(name: .long, help: ArgumentHelp(
        "A repeating job serves GET /metrics (Prometheus) on 127.0.0.1 at this port (Docs/operations.md).", valueName: "port"))
    var metricsPort: Int?

    func validate() throws {
        if background, priority == .normal { throw ValidationError("--background and --priority normal disagree: give one") }
        try CommandInputs.requireInputs([config])
        if let metricsPort {
            guard MetricsListener.ports.contains(metricsPort) else { throw ValidationError("--metrics-port must be 1...65535") }
            guard !once, !dryRun else { throw ValidationError("--metrics-port is for a repeating job: it cannot go with --once or --dry-run") }
        }
    }

    func run() throws {
        logging.bootstrap()
        var logger = Logger(label: "caregate.sync")
        // --store, else the configuration's `store:`, else CAREGATE_STORE: read before any thread starts.
        let storeLocation = try storeOptions.location(configured: try readConfiguration().store)
        let servedSQLite: Bool
        if case .sqlite(let path) = storeLocation { servedSQLite = ServingMarker.isServed(storePath: path) } else { servedSQLite = false }
        // Before anything starts a thread: threads take their creator's policy.
        switch background ? .background : priority {
        case .background:
            try BackgroundPriority.enter()
        case .auto where servedSQLite:
            do {
                try BackgroundPriority.enter()
                logger.notice("caregate serve serves this store: the job runs as a background job (--priority normal runs it as any other)")
            } catch {
                logger.warning("caregate serve serves this store, but the job cannot run as a background job: \(error)")
            }
        case .auto, .normal:
            break
        }
        let mappingSet = try mappings.load()
        var prepared = try prepare()
        let store = dryRun ? try storeOptions.openForDryRun(configured: storeLocation) : try storeOptions.open(creating: true, configured: storeLocation)
        let gateway = try Gateway(store: store, mappings: mappingSet)
        // Recorded only where they are served: no job pays for metrics nobody scrapes.
        let metrics = metricsPort.map { _ in CareGateMetrics() }
        var job = try makeJob(prepared, gateway: gateway, metrics: metrics)
        let repeating = !once && !dryRun
        if let metricsPort, let metrics {
            do {
                try MetricsListener.startInBackground(port: metricsPort, metrics: metrics, store: store)
            } catch {
                throw CommandFailure("--metrics-port \(metricsPort): cannot listen on 127.0.0.1:\(metricsPort): \(error)", status: 2)
            }
        }
        let watchdog = SystemdWatchdog()
        if repeating {
            StopSignals.install()
            SystemdNotifier.ready(status: "running every \(Int(prepared.configuration.interval)) s")
        }
        while true {
            if repeating, StopSignals.takeReload() {
                // The configuration file as it is now, for this run and the next; a broken one keeps the last.
                SystemdNotifier.reloading()
                do {
                    let reloaded = try prepare()
                    job = try makeJob(reloaded, gateway: gateway, metrics: metrics)
                    prepared = reloaded
                    logger.notice("reloaded \(config)")
                } catch {
                    logger.error("reload: \(config) was not taken, the job goes on with the configuration it had: \(error)")
                }
                SystemdNotifier.ready(status: "running every \(Int(prepared.configuration.interval)) s")
            }
            // Every line of one run carries its id, so that a run's lines can be told apart in the journal.
            let runID = String(UUID().uuidString.prefix(8).lowercased())
            logger[metadataKey: "run"] = "\(runID)"
            job.runID = runID
            let runLogger = logger
            job.progress = { message in
                watchdog.alive()
                runLogger.info("\(message)")
            }
            let started = Date()
            let result: SyncReport
            do {
                result = try job.run()
            } catch {
                if !dryRun {
                    let server = FHIRClient.withoutCredentials(prepared.configuration.server)
                    SyncRunRecording.record(.failed(runID: runID, server: server, started: started, error: error), in: store, logger: runLogger)
                }
                throw error
            }
            if !dryRun { SyncRunRecording.record(result.syncRun(runID: runID, started: started), in: store, logger: runLogger) }
            if let metrics { SyncMetrics.record(result, into: metrics) }
            print(result.text)
            if let report {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try PrivateFiles.write(try encoder.encode(result), to: report)
            }
            guard repeating, StopSignals.wait(prepared.configuration.interval, whileWaiting: { watchdog.alive() }) else {
                if repeating { SystemdNotifier.stopping() }
                if result.exitStatus != 0 { throw ExitCode(result.exitStatus) }
                return
            }
        }
    }

    /// What a run needs from the configuration file, checked before anything is written: the
    /// configuration, a client the server answered and whose credentials it took, the reports' printer.
    private struct PreparedConfiguration {
        var configuration: SyncConfiguration
        var client: FHIRClient
        var printer: ChromiumPrinter?
    }

    /// Reads and checks the configuration file and asks the server whether it answers and takes the
    /// credentials: at the start, and again at a reload (SIGHUP).
    private func prepare() throws -> PreparedConfiguration {
        let configuration = try readConfiguration()
        let client: FHIRClient
        do {
            client = FHIRClient(
                base: configuration.server, timeout: TimeInterval(configuration.requestTimeout),
                retry: RetryPolicy(maxRetriesPerJob: configuration.maxRetries),
                authorization: try configuration.auth.provider(base: configuration.server),
                maxResponseBytes: Int64(configuration.maxResponseMiB) << 20, runTimeout: TimeInterval(configuration.runTimeout))
        } catch let error as SyncConfigurationError {
            throw CommandFailure(error.description, status: 2)
        } catch let error as AuthorizationError {
            throw CommandFailure(error.description, status: 2)
        }
        // Reports need their rules and Chromium: without them, say so before the server is asked anything.
        var printer: ChromiumPrinter?
        if let reports = configuration.reports {
            if let file = reports.rulesFile {
                do {
                    _ = try InsightsRules.load(path: file)
                } catch let problems as MappingProblems {
                    throw CommandFailure("\(config): the rules of `reports:` cannot be used:\n\(problems.description)", status: 2)
                }
            }
            guard let found = ChromiumPrinter.find() else {
                throw CommandFailure("\(config): `reports:` needs headless Chromium to print the reports' PDF: \(ChromiumPrinter.PrintError.notInstalled)", status: 2)
            }
            printer = found
        }
        // The server must answer as a FHIR server, and take the credentials, before anything is written.
        if !configuration.serverIsFolder {
            do {
                _ = try client.capabilities()
            } catch {
                throw CommandFailure("\(FHIRClient.withoutCredentials(configuration.server)) does not answer as a FHIR server: \(error)", status: 2)
            }
            try checkCredentials(client, configuration)
        }
        return PreparedConfiguration(configuration: configuration, client: client, printer: printer)
    }

    /// The configuration file, parsed; its problems are configuration errors (exit status 2).
    private func readConfiguration() throws -> SyncConfiguration {
        guard let text = FileManager.default.contents(atPath: config).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw CommandFailure("cannot read the configuration \(config)", status: 2)
        }
        do {
            return try SyncConfiguration.parse(text, file: config)
        } catch let error as SyncConfigurationError {
            throw CommandFailure(error.description, status: 2)
        }
    }

    private func makeJob(_ prepared: PreparedConfiguration, gateway: Gateway, metrics: CareGateMetrics?) throws -> SyncJob {
        if let metrics { SyncMetrics.observe(prepared.client, into: metrics) }
        let job = try gateway.syncJob(configuration: prepared.configuration, client: prepared.client)
        job.generator = "CareGate \(CareGate.configuration.version)"
        if let printer = prepared.printer {
            job.printPDF = { report in try printer.pdf(html: ReportHTML.render(report)) }
        }
        job.dryRun = dryRun
        return job
    }
}

/// `metadata` is often open to anyone: one search of the first configured type (a single entry asked
/// for) tells whether the server takes the credentials. Refused (401, 403) is a configuration error;
/// any other failure is left for the job, which retries and reports it.
private func checkCredentials(_ client: FHIRClient, _ configuration: SyncConfiguration) throws {
    guard let type = configuration.resources.first else { return }
    do {
        try client.search(type, [("_count", "1")]) { _ in false }
    } catch FHIRClientError.status(_, let code, _, let detail) where code == 401 || code == 403 {
        let advice = configuration.auth.isEmpty ? "the server asks for credentials: add `auth:` to the configuration" : "the server refuses the configured credentials"
        throw CommandFailure("\(FHIRClient.withoutCredentials(configuration.server)): \(advice) (\(code)\(detail.map { ": \($0)" } ?? ""))", status: 2)
    } catch let error as AuthorizationError {
        throw CommandFailure(error.description, status: 2)
    } catch {
        return
    }
}

/// SIGINT and SIGTERM while the sync job repeats: they end it after the run under way. SIGHUP asks for
/// the configuration to be read again before the next run.
enum StopSignals {
    nonisolated(unsafe) private static var requested: sig_atomic_t = 0
    nonisolated(unsafe) private static var reload: sig_atomic_t = 0

    static func install() {
        for number in [SIGINT, SIGTERM] {
            signal(number) { _ in StopSignals.requested = 1 }
        }
        signal(SIGHUP) { _ in StopSignals.reload = 1 }
    }

    /// Whether a reload was asked for since the last call.
    static func takeReload() -> Bool {
        guard reload != 0 else { return false }
        reload = 0
        return true
    }

    /// Waits `seconds` unless a stop is asked for, calling `whileWaiting` every fraction of a second;
    /// whether to go on.
    static func wait(_ seconds: TimeInterval, whileWaiting: () -> Void = {}) -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while requested == 0, Date() < end {
            whileWaiting()
            Thread.sleep(forTimeInterval: 0.2)
        }
        return requested == 0
    }
}

/// How `caregate sync` shares the CPU (`--priority`).
enum SyncPriority: String, ExpressibleByArgument, CaseIterable {
    /// A background job while `caregate serve` serves the store, else a normal one.
    case auto
    case normal
    /// Linux's idle policy: a CPU only when nothing else wants one.
    case background
}
