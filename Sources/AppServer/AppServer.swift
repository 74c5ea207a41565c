import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore
import Insights
import Logging
import Mapping
import Observability
import ServiceLifecycle
import Pipeline
import Store

/// The app server: CareKit's remote sync and read-only views over HTTP for patient apps, each request
/// bound by its token to one patient of the store.
///
/// ```swift
/// let server = AppServer(store: try SQLiteStore(path: "caregate.sqlite"), key: try ServerKey.loadOrCreate(path: "server.key"))
/// try await server.application(host: "127.0.0.1", port: 8080).runService()
/// ```
///
/// ## Topics
///
/// - `GET /health/live`, `GET /health/ready`, `GET /health` (``HealthRoutes``), `GET /openapi.json`: open to all.
/// - `GET /carekit/v1/revisions`, `POST /carekit/v1/revisions`: pull and push (``SyncRoutes``).
/// - `GET /carekit/v1/patient`, `careplans`, `tasks`, `contacts`, `events?date=`: read-only views.
/// - `GET /carekit/v1/insights?from=&to=`: the Insights series an app draws (``InsightsRoutes``).
/// - `POST /carekit/v1/observations`: readings the phone took, as FHIR Observations (``ObservationRoutes``).
/// - `GET /carekit/v1/questionnaires?url=&version=`: a Questionnaire the patient's survey task asks (``QuestionnaireRoutes``).
/// - `POST /carekit/v1/shares`: a report or PDF shared with the care team, as a Communication (``ShareRoutes``, ``sharing``).
/// - `GET /carekit/v1/consent-terms`, `GET`/`POST /carekit/v1/consents`: consent (``ConsentRoutes``); with
///   terms that say `required: true`, every other route waits for it (``ConsentGateMiddleware``).
/// - `GET /operator`, `GET /operator/login`, `POST /operator/...`: the operator page, for an operator's token only (``OperatorRoutes``).
/// - ``limits``: the connections, bodies and push threads it accepts at once (``ServerLimits``).
public struct AppServer: Sendable {
    public let store: any AppSyncStore
    /// The store as the routes call it: every call suspends the request's task instead of blocking its
    /// thread (``PooledAppStore`` for a synchronous store, with ``ServerLimits/pushWorkers`` write threads;
    /// the store itself when it is an ``AsyncAppStore``).
    let front: any AsyncAppStore
    /// Checks CareGate's own tokens.
    public let verifier: TokenVerifier
    /// Checks operator tokens (the operator page).
    let operatorVerifier: OperatorTokenVerifier
    /// Checks a SMART/OpenID issuer's access tokens, when `serve --issuer` names one.
    public let issuer: IssuerTokenVerifier?
    /// The measurements and rules the Insights series reads (Mappings/insights.yaml by default).
    public let insightsRules: InsightsRules
    /// Idle and request timeouts, caps on connections and uploads, push threads.
    public let limits: ServerLimits
    /// The LOINC <-> HealthKit rows readings are read by (`POST /carekit/v1/observations`): the shipped
    /// Mappings/healthkit.yaml unless the caller gives others.
    public let readingKinds: ReadingKinds
    /// The server's metrics (`caregate serve --metrics-port` serves them apart from the API).
    public var metrics = CareGateMetrics()
    /// What the readiness check found of the mappings and the key as the server was made.
    let startup: HealthRoutes.StartupChecks
    /// How a shared report is made and printed (`POST /carekit/v1/shares`).
    public var sharing = ShareSettings()
    /// The consent terms the server publishes (`serve --consent-terms`), if any.
    public var consentTerms: ConsentTerms?
    /// The mappings `serve` loaded: the operator page replays dead letters with them (none: no replay).
    public var operatorMappings: MappingSet?

    public init(
        store: any AppSyncStore, key: ServerKey, audience: String = PatientToken.defaultAudience, issuer: IssuerTokenVerifier? = nil,
        insightsRules: InsightsRules = (try? InsightsRules.defaults()) ?? InsightsRules(file: "", measurements: [], chart: nil, rules: []),
        limits: ServerLimits = ServerLimits(), readingKinds: ReadingKinds = ReadingKinds(table: (try? HealthKitTable.defaults()) ?? .empty)
    ) {
        self.store = store
        front = (store as? any AsyncAppStore) ?? PooledAppStore(store, writeThreads: limits.pushWorkers)
        self.readingKinds = readingKinds
        self.limits = limits
        verifier = TokenVerifier(key: key.publicKey, audience: audience)
        operatorVerifier = OperatorTokenVerifier(key: key.publicKey)
        self.issuer = issuer
        self.insightsRules = insightsRules
        startup = HealthRoutes.StartupChecks(key: key, readingKinds: readingKinds, insightsRules: insightsRules)
    }

    /// The routes, with their middleware: what the application serves, and what in-memory tests call.
    public func router() -> Router<AppRequestContext> {
        router(trail: AuditTrailWriter(store: store))
    }

    /// The routes, writing the audit trail through `trail` (one writer for the app API and the operator page:
    /// their entries share commits).
    func router(trail: AuditTrailWriter) -> Router<AppRequestContext> {
        let router = Router(context: AppRequestContext.self)
        // Outermost: it sees every answer as the client gets it, errors made into responses included.
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        router.add(middleware: ErrorMiddleware())
        HealthRoutes(store: front, storeFilePath: store.storeFilePath, startup: startup).register(on: router)
        router.get("openapi.json") { _, _ in
            JSONResponse.make(Data(OpenAPIDocument.json.utf8))
        }
        OperatorRoutes(store: front, access: OperatorAccess(verifier: operatorVerifier), mappings: operatorMappings, trail: trail).register(on: router)
        let access = PatientAccessMiddleware(
            verifier: CompositeTokenVerifier(own: verifier, issuer: issuer), store: front, tokens: VerifiedTokenCache(),
            trail: trail, routesCheckPatient: !ConsentGate(terms: consentTerms).isActive)
        // After the token check: only a client with a valid token takes an upload place.
        let api = router.group("carekit/v1").add(middleware: access).add(middleware: UploadLimitMiddleware(slots: UploadSlots(limit: limits.maxUploads)))
            .add(middleware: ConsentGateMiddleware(gate: ConsentGate(terms: consentTerms), store: front))
        ViewRoutes(store: front).register(on: api)
        SyncRoutes(store: front).register(on: api)
        InsightsRoutes(store: front, rules: insightsRules).register(on: api)
        ObservationRoutes(store: front, kinds: readingKinds).register(on: api)
        QuestionnaireRoutes(store: front).register(on: api)
        ShareRoutes(store: front, rules: insightsRules, settings: sharing).register(on: api)
        ConsentRoutes(store: front, terms: consentTerms).register(on: api)
        return router
    }

    /// The application listening on `host:port`, holding what ``limits`` allow: connections idle or slow
    /// past their timeouts are closed, past the connection cap new ones wait in the listen backlog, and
    /// pushes run on ``ServerLimits/pushWorkers`` threads (``PooledAppStore``).
    /// `onRunning` is called once the server listens.
    public func application(
        host: String, port: Int, logLevel: Logger.Level = .info, onRunning: @escaping @Sendable () -> Void = {}
    ) -> some ApplicationProtocol {
        application(host: host, port: port, logLevel: logLevel, trail: AuditTrailWriter(store: store), onRunning: onRunning)
    }

    func application(
        host: String, port: Int, logLevel: Logger.Level, trail: AuditTrailWriter, onRunning: @escaping @Sendable () -> Void
    ) -> some ApplicationProtocol {
        var logger = Logger(label: "caregate.serve")
        logger.logLevel = logLevel
        let registry = ConnectionRegistry(maximum: limits.maxConnections, graceAtCapacity: Self.amount(ServerLimits.idleGraceAtCapacity))
        let requestTimeout = Self.amount(limits.requestTimeout)
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionGuard(registry: registry, requestTimeout: requestTimeout)],
            idleTimeout: Self.amount(limits.idleTimeout))
        return Application(
            router: router(trail: trail), server: .http1(configuration: http1),
            configuration: .init(address: .hostname(host, port: port), serverName: "CareGate", availableConnectionsDelegate: ConnectionCap(registry: registry)),
            onServerRunning: { _ in onRunning() },
            logger: logger)
    }

    /// Serves on `host:port` until SIGINT or SIGTERM. `logLevel` is a swift-log level name (`info`...).
    /// The connection cap is lowered, with a warning, when the open-file limit cannot hold it.
    /// `onRunning` is called once it listens, `onStopping` when SIGINT or SIGTERM starts the graceful
    /// stop (requests under way are answered, then it returns): systemd's READY and STOPPING.
    /// With `metricsPort`, `GET /metrics` is served on 127.0.0.1 at that port (``MetricsListener``).
    public func run(
        host: String, port: Int, logLevel: String, metricsPort: Int? = nil,
        onRunning: @escaping @Sendable () -> Void = {}, onStopping: @escaping @Sendable () -> Void = {}
    ) async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let (fitted, warning) = DescriptorLimit.fitted(limits)
        var server = AppServer(
            store: store, front: front, verifier: verifier, issuer: issuer, insightsRules: insightsRules, limits: fitted, readingKinds: readingKinds,
            startup: startup)
        server.metrics = metrics
        server.sharing = sharing
        server.consentTerms = consentTerms
        server.operatorMappings = operatorMappings
        if let warning {
            var logger = Logger(label: "caregate.serve")
            logger.logLevel = level
            logger.warning("\(warning)")
        }
        var logger = Logger(label: "caregate.serve")
        logger.logLevel = level
        let trail = AuditTrailWriter(store: store)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: server.application(host: host, port: port, logLevel: level, trail: trail, onRunning: onRunning)),
            .init(service: StopNotice(onStopping: onStopping), successTerminationBehavior: .ignore),
        ]
        if let metricsPort {
            let (metrics, front) = (metrics, front)
            services.append(.init(service: MetricsListener.application(
                port: metricsPort, metrics: metrics, front: front, logLevel: level,
                beforeScrape: { metrics.set("caregate_api_store_writes_in_flight", to: Double(front.writesUnderway)) })))
        }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        defer {
            // Stopped answering: the refusal counts of the last second go into the trail before the store closes.
            do { try trail.finish() } catch { logger.warning("the audit trail refused the last refusal counts: \(error)") }
        }
        try await group.run()
    }

    /// Calls `onStopping` when the service group starts its graceful stop.
    private struct StopNotice: Service {
        let onStopping: @Sendable () -> Void

        func run() async throws {
            // Cancelled rather than shut down gracefully: nothing to say.
            guard (try? await gracefulShutdown()) != nil else { return }
            onStopping()
        }
    }

    private init(
        store: any AppSyncStore, front: any AsyncAppStore, verifier: TokenVerifier, issuer: IssuerTokenVerifier?, insightsRules: InsightsRules, limits: ServerLimits,
        readingKinds: ReadingKinds, startup: HealthRoutes.StartupChecks
    ) {
        self.store = store
        self.front = front
        self.readingKinds = readingKinds
        self.startup = startup
        self.verifier = verifier
        operatorVerifier = OperatorTokenVerifier(key: verifier.key)
        self.issuer = issuer
        self.insightsRules = insightsRules
        self.limits = limits
    }

    /// Seconds as NIO's time amount, within ``ServerLimits/timeoutRange`` (a value from a library caller
    /// outside it, or not a number, never traps).
    private static func amount(_ seconds: Double) -> TimeAmount {
        let range = ServerLimits.timeoutRange
        let bounded = seconds.isNaN ? range.upperBound : min(max(seconds, range.lowerBound), range.upperBound)
        return .nanoseconds(Int64((bounded * 1_000_000_000).rounded()))
    }

    /// Whether `name` is a log level ``run(host:port:logLevel:)`` knows.
    public static func isLogLevel(_ name: String) -> Bool { Logger.Level(rawValue: name) != nil }
}
