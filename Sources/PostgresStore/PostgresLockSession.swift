import Foundation
import Logging
import PostgresNIO
import Store
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One PostgreSQL session of its own that holds session-level advisory locks (the writer lease, the
/// append gate: ``PostgresWriterLease``): never a connection of the pool, which would hand a held lock
/// back to whoever leases it next.
///
/// A lock held by a session is released by the server when the session ends, so how soon a dead holder's
/// lock is freed is how soon its session ends:
/// - the holder's process ends or is killed: its kernel closes the socket, the server reads the end at
///   once (the session is idle, waiting for its next command) and releases the locks;
/// - the holder's machine vanishes (power, network): nothing closes the socket, and the server notices
///   only through TCP keepalives. The session sets the server's keepalives for its own socket
///   (`tcp_keepalives_idle` 10 s, `tcp_keepalives_interval` 5 s, `tcp_keepalives_count` 3,
///   `tcp_user_timeout` 25 s): the locks are freed within about 10 + 5 × 3 = 25 s;
/// - the session's own socket also keeps alive on the client's side (`SO_KEEPALIVE`, `TCP_KEEPIDLE` 10 s,
///   `TCP_KEEPINTVL` 5 s, `TCP_KEEPCNT` 3, `TCP_USER_TIMEOUT` 25 s), so that a holder whose server
///   vanished learns it within the same bound rather than the system's two hours;
/// - `idle_session_timeout`, `statement_timeout` and `idle_in_transaction_session_timeout` are 0 for the
///   session (a server-wide setting would otherwise end an idle holder's session and free its lease while
///   it writes); `client_connection_check_interval` is 1 s, so that a holder killed while its session
///   waits for a lock has its session ended within a second rather than at the end of the wait.
///
/// Over a Unix socket there are no keepalives (the server is on the same machine: a process that dies
/// closes its socket). Settings the server does not know (an older PostgreSQL) are skipped.
///
/// Opened at first use, and again after it closed or failed; ``close()`` ends it and so frees its locks.
actor PostgresLockSession {
    /// How long an idle connection goes before keepalive probes start, in seconds (server and client side).
    static let keepaliveIdle = 10
    /// Seconds between two unanswered probes.
    static let keepaliveInterval = 5
    /// Unanswered probes before the connection is dropped.
    static let keepaliveCount = 3
    /// The longest a vanished peer keeps a session: idle + interval × count.
    static var longestSilence: Int { keepaliveIdle + keepaliveInterval * keepaliveCount }

    private let location: PostgresLocation
    private let logger: Logger
    private var connection: PostgresConnection?
    /// How many connections the session has made: a lock is held by one of them, and lost with it.
    private(set) var generation = 0
    private var opening: Task<PostgresConnection, any Error>?
    private static let ids = Mutex(0)

    /// A session to `location`, whose password has been found already (``PostgresLocation/withPassword(environment:warn:)``).
    init(location: PostgresLocation) {
        self.location = location
        var logger = Logger(label: "caregate.postgres.locks")
        logger.logLevel = .warning
        self.logger = logger
    }

    /// The open session, opened now if it is not.
    func open() async throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        if let opening { return try await opening.value }
        let location = location
        let logger = logger
        let task = Task { try await Self.connect(location, logger: logger) }
        opening = task
        defer { opening = nil }
        let made = try await task.value
        connection = made
        generation += 1
        return made
    }

    /// The open session when `expected` is nil; else only the connection of generation `expected`, whose
    /// locks the caller holds: a lost one is an error (``Lost``), never replaced by one that holds nothing.
    func open(keeping expected: Int?) async throws -> PostgresConnection {
        guard let expected else { return try await open() }
        guard let connection, !connection.isClosed, generation == expected else { throw Lost() }
        return connection
    }

    /// The connection that held a lock is gone, and the lock with it.
    struct Lost: Error, CustomStringConvertible {
        var description: String {
            "the connection that held the store's writer lease was lost, and the lease with it (another worker may have taken it): the job stops"
        }
    }

    /// Ends the session, and with it every lock it holds.
    func close() async {
        let closing = connection
        connection = nil
        try? await closing?.close()
    }

    /// A new connection with keepalives on both sides and the session's timeouts switched off.
    private static func connect(_ location: PostgresLocation, logger: Logger) async throws -> PostgresConnection {
        let tls = try location.dedicatedSessionTLS()
        let eventLoop = PostgresConnection.defaultEventLoopGroup.any()
        let channel: any Channel
        var bootstrap = ClientBootstrap(group: eventLoop).connectTimeout(.seconds(Int64(location.connectTimeout)))
        switch location.host {
        case .socket(let folder):
            channel = try await bootstrap.connect(unixDomainSocketPath: folder + "/.s.PGSQL.\(location.port)").get()
        case .tcp(let name):
            bootstrap = bootstrap
                .channelOption(ChannelOptions.socketOption(.so_keepalive), value: 1)
                .channelOption(ChannelOptions.tcpOption(.init(rawValue: CInt(TCP_KEEPIDLE))), value: SocketOptionValue(keepaliveIdle))
                .channelOption(ChannelOptions.tcpOption(.init(rawValue: CInt(TCP_KEEPINTVL))), value: SocketOptionValue(keepaliveInterval))
                .channelOption(ChannelOptions.tcpOption(.init(rawValue: CInt(TCP_KEEPCNT))), value: SocketOptionValue(keepaliveCount))
                .channelOption(ChannelOptions.tcpOption(.init(rawValue: CInt(TCP_USER_TIMEOUT))), value: SocketOptionValue(longestSilence * 1000))
            channel = try await bootstrap.connect(host: name, port: location.port).get()
        }
        var configuration = PostgresConnection.Configuration(
            establishedChannel: channel, tls: tls, username: location.user, password: location.password,
            database: location.database)
        configuration.options.connectTimeout = .seconds(Int64(location.connectTimeout))
        if case .tcp(let name) = location.host, case .verifyFull = location.sslMode { configuration.options.tlsServerName = name }
        configuration.options.additionalStartupParameters = [("application_name", location.applicationName ?? "caregate locks")]
        let id = ids.withLock { next in
            next += 1
            return next
        }
        let connection = try await PostgresConnection.connect(on: channel.eventLoop, configuration: configuration, id: id, logger: logger)
        do {
            try await connection.finish(
                PostgresQuery(unsafeSQL: """
                SELECT set_config(name, CASE name
                    WHEN 'tcp_keepalives_idle' THEN '\(keepaliveIdle)'
                    WHEN 'tcp_keepalives_interval' THEN '\(keepaliveInterval)'
                    WHEN 'tcp_keepalives_count' THEN '\(keepaliveCount)'
                    WHEN 'tcp_user_timeout' THEN '\(longestSilence * 1000)'
                    WHEN 'client_connection_check_interval' THEN '1000'
                    ELSE '0' END, false)
                FROM pg_settings
                WHERE name IN ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'tcp_user_timeout',
                               'client_connection_check_interval', 'idle_session_timeout', 'statement_timeout',
                               'idle_in_transaction_session_timeout')
                """), logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        return connection
    }
}

extension PostgresLocation {
    /// The TLS of a session opened outside the pool (``PostgresLockSession``): ``tlsChoice()`` for an
    /// SSL context of its own.
    func dedicatedSessionTLS() throws -> PostgresConnection.Configuration.TLS {
        guard let choice = try tlsChoice() else { return .disable }
        let context = try NIOSSLContext(configuration: choice.configuration)
        return choice.required ? .require(context) : .prefer(context)
    }

    /// The TLS `sslmode` asks for (libpq's meaning), nil for none: `allow`, `prefer` when offered,
    /// unverified; `require` unverified unless `sslrootcert` is given; `verify-ca` the chain; `verify-full`
    /// the chain and the name. The pool's configuration (``clientConfiguration()``) uses it too.
    func tlsChoice() throws -> (configuration: TLSConfiguration, required: Bool)? {
        if case .socket = host { return nil }
        if case .disable = sslMode { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        if let sslRootCertificate {
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(sslRootCertificate))
            } catch {
                throw PostgresStoreError.unreadableRootCertificates(url: redacted, path: sslRootCertificate)
            }
        }
        switch sslMode {
        case .disable, .allow, .prefer: tls.certificateVerification = .none
        case .require: tls.certificateVerification = sslRootCertificate == nil ? .none : .noHostnameVerification
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        return (tls, required: sslMode != .allow && sslMode != .prefer)
    }
}
