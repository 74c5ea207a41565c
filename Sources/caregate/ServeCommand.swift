import AppServer
import ArgumentParser
import CommandSupport
import Foundation
import Logging
import Insights
import Mapping
import Pipeline
import Store

/// `caregate serve`: the app server (CareKit remote sync and read-only views) on one store.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the store to CareKit patient apps (remote sync, read-only views) over HTTP.",
        discussion: """
            Every /carekit/v1 request needs a token of `caregate patients token` (signed by --key, made mode 0600 \
            when missing) or, with --issuer, of that SMART/OpenID issuer; the token binds it to one patient. \
            GET /health/live, /health/ready, /health and /openapi.json are open. Runs beside `caregate sync` on \
            the same store (the sync then makes way); stops on SIGINT or SIGTERM once requests under way are \
            answered (systemd: Docs/deploying.md).

            Examples:
              caregate serve --store caregate.sqlite --key server.key --port 8080
              caregate serve --store caregate.sqlite --key server.key \\
                --issuer https://login.example.org --audience https://caregate.example.org

            More: Docs/app-api.md, Docs/app-auth.md, Docs/operations.md, Docs/security.md (the limits below: connections, \
            uploads, timeouts, push workers).
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    /// The LOINC <-> HealthKit table readings are read by: a user's healthkit.yaml in this folder replaces the default.
    @OptionGroup var mappings: MappingsOption

    @Option(name: .long, help: ArgumentHelp("The server's ES256 key (PEM); made when missing.", valueName: "file"))
    var key: String

    @Option(name: .long, help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(name: .long, help: "The port to listen on.")
    var port: Int = 8080

    @Option(name: .long, help: ArgumentHelp(
        "Also serve GET /metrics (Prometheus) on 127.0.0.1 at this port, apart from the API (Docs/operations.md).", valueName: "port"))
    var metricsPort: Int?

    @Option(name: .long, help: ArgumentHelp(
        "The audience tokens must name (default \(PatientToken.defaultAudience)); with --issuer, CareGate's base URL as apps name it to the issuer.",
        valueName: "aud"))
    var audience: String?

    @Option(name: .long, help: ArgumentHelp("A SMART/OpenID issuer whose access tokens are accepted too (https; http only on the loopback).", valueName: "url"))
    var issuer: String?

    @OptionGroup var logging: LogOptions

    @Option(name: .long, help: ArgumentHelp("Days the audit trail keeps entries and refusal counts; older ones are pruned at start and hourly.", valueName: "days"))
    var auditRetentionDays: Int = AuditRetention.defaultDays

    @Option(name: .long, help: ArgumentHelp(
        "Seconds a connection may stay open with no request under way, or take to send a request's head (default \(Int(ServerLimits.defaultIdleTimeout))).",
        valueName: "seconds"))
    var idleTimeout: Double = ServerLimits.defaultIdleTimeout

    @Option(name: .long, help: ArgumentHelp(
        "Seconds from a request's head to the end of its body; a slower body closes the connection (default \(Int(ServerLimits.defaultRequestTimeout))).",
        valueName: "seconds"))
    var requestTimeout: Double = ServerLimits.defaultRequestTimeout

    @Option(name: .long, help: ArgumentHelp(
        "Connections open at once (default \(ServerLimits.defaultMaxConnections)); past it new ones wait in the listen backlog and idle ones are closed.",
        valueName: "count"))
    var maxConnections: Int = ServerLimits.defaultMaxConnections

    @Option(name: .long, help: ArgumentHelp(
        "Pushes (request bodies) read and stored at once (default \(ServerLimits.defaultMaxUploads)); past it a push is answered 503 with Retry-After.",
        valueName: "count"))
    var maxUploads: Int = ServerLimits.defaultMaxUploads

    @Option(name: .long, help: ArgumentHelp(
        "Threads that store pushes, each possibly waiting for the store's writer (default \(ServerLimits.defaultPushWorkers)); more pushes queue.",
        valueName: "count"))
    var pushWorkers: Int = ServerLimits.defaultPushWorkers

    @Option(name: .long, help: ArgumentHelp(
        "The consent terms apps show and patients agree to (YAML; Docs/consent.md); with required: true, no data flows without consent.",
        valueName: "file"))
    var consentTerms: String?

    /// What the server accepts at once, from the options.
    var limits: ServerLimits {
        ServerLimits(
            idleTimeout: idleTimeout, requestTimeout: requestTimeout, maxConnections: maxConnections, maxUploads: maxUploads, pushWorkers: pushWorkers)
    }

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard (1...AuditRetention.maximumDays).contains(auditRetentionDays) else { throw ValidationError("--audit-retention-days must be 1...\(AuditRetention.maximumDays)") }
        let seconds = ServerLimits.timeoutRange
        guard seconds.contains(idleTimeout) else { throw ValidationError("--idle-timeout must be \(seconds.lowerBound)...\(Int(seconds.upperBound)) seconds") }
        guard seconds.contains(requestTimeout) else {
            throw ValidationError("--request-timeout must be \(seconds.lowerBound)...\(Int(seconds.upperBound)) seconds")
        }
        let connections = ServerLimits.connectionsRange, uploads = ServerLimits.uploadsRange, workers = ServerLimits.pushWorkersRange
        guard connections.contains(maxConnections) else {
            throw ValidationError("--max-connections must be \(connections.lowerBound)...\(connections.upperBound)")
        }
        if let metricsPort {
            guard MetricsListener.ports.contains(metricsPort), metricsPort != port else {
                throw ValidationError("--metrics-port must be 1...65535 and not --port")
            }
        }
        guard uploads.contains(maxUploads) else { throw ValidationError("--max-uploads must be \(uploads.lowerBound)...\(uploads.upperBound)") }
        guard workers.contains(pushWorkers) else { throw ValidationError("--push-workers must be \(workers.lowerBound)...\(workers.upperBound)") }
        if let issuer {
            // The default audience names no server: an issuer's tokens must be bound to this one.
            guard let audience else { throw ValidationError("--issuer needs --audience: CareGate's base URL, as apps name it to the issuer") }
            do { _ = try IssuerConfiguration(issuer: issuer, audience: audience) } catch { throw ValidationError("--issuer: \(error)") }
        }
    }

    /// Serves until SIGINT or SIGTERM stops the server.
    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "caregate.serve")
        // A broken terms file is refused with its line and column before anything is opened or served.
        let terms: ConsentTerms?
        do { terms = try consentTerms.map(ConsentTermsFile.load(path:)) } catch let error as ConsentTermsError { throw CommandFailure("consent terms: \(error)") }
        let key = try ServerKey.loadOrCreate(path: self.key)
        // Opened and prepared off the concurrency threads: a PostgreSQL store's calls block on the server.
        let (storeOptions, pushWorkers, auditRetentionDays) = (storeOptions, pushWorkers, auditRetentionDays)
        let store = try await BlockingCall.run { () throws -> any AppSyncStore in
            // A reader connection for each thread that may read at once: the reads' and the pushes' (PooledAppStore).
            guard let store = try storeOptions.open(creating: true, readers: ServerLimits.storeReaders(pushWorkers: pushWorkers)) as? any AppSyncStore else {
                throw CommandFailure("the store \(storeOptions.store) cannot serve apps")
            }
            // The audit trail (a file beside a SQLite store; tables in PostgreSQL's): a server that could not
            // write it could answer nothing.
            try store.prepareAuditTrail(retentionDays: auditRetentionDays)
            return store
        }
        // While it serves, `caregate sync` on this SQLite store runs as a background job (its --priority
        // auto): a lock file beside the store, which one machine sees. A PostgreSQL store's workers run on
        // machines of their own, and have no marker.
        let serving = try storeOptions.location().sqliteFile.map { try ServingMarker(storePath: $0) }
        defer { withExtendedLifetime(serving) {} }
        let audience = audience ?? PatientToken.defaultAudience
        let issuerVerifier = try issuer.map { IssuerTokenVerifier(try IssuerConfiguration(issuer: $0, audience: audience)) }
        let loadedMappings = try mappings.load()
        let readingKinds = ReadingKinds(table: loadedMappings.healthKit)
        var server = AppServer(store: store, key: key, audience: audience, issuer: issuerVerifier, limits: limits, readingKinds: readingKinds)
        server.operatorMappings = loadedMappings
        server.sharing = Self.sharing()
        server.consentTerms = terms
        if let issuerVerifier {
            // Its keys now, so the first token does not wait; an issuer down now is tried again on use.
            do { _ = try await issuerVerifier.refreshKeys() } catch {
                logger.warning("\(error); its tokens are refused until its keys can be read")
            }
        }
        let status = "serving on \(host):\(port)"
        try await server.run(
            host: host, port: port, logLevel: logging.logLevel, metricsPort: metricsPort,
            onRunning: { SystemdNotifier.ready(status: status) }, onStopping: { SystemdNotifier.stopping() })
    }

    /// Shared reports are printed with headless Chromium when it is found (CAREGATE_CHROMIUM or PATH),
    /// else shared as HTML (Docs/sharing.md).
    static func sharing() -> ShareSettings {
        var settings = ShareSettings(generator: "CareGate \(CareGate.configuration.version)")
        if let printer = ChromiumPrinter.find() {
            settings.printPDF = { report in try printer.pdf(html: ReportHTML.render(report)) }
        } else {
            Logger(label: "caregate.serve").notice("headless Chromium not found: shared reports are sent as HTML, not PDF")
        }
        return settings
    }
}
