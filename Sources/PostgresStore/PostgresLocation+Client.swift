import Foundation
import PostgresNIO
import Store

/// Why a PostgreSQL store cannot be connected to or prepared. Messages name the store redacted
/// (``PostgresLocation/redacted``) and never carry a password.
public enum PostgresStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `sslrootcert` cannot be read as PEM certificates.
    case unreadableRootCertificates(url: String, path: String)
    /// The server refused, failed or could not be reached; `problem` is the server's message.
    case server(url: String, problem: String)
    /// The database holds migrations this build does not know: a newer CareGate prepared it.
    case newerSchema(url: String, unknown: [String])
    /// A synchronous call from a thread that must never wait (an event loop's).
    case calledOnEventLoop
    /// A part of the store protocol that PostgreSQL stores do not have in this build (issue 47).
    case unavailable(feature: String)

    public var description: String {
        switch self {
        case .unreadableRootCertificates(let url, let path): "\(url): sslrootcert \(path) cannot be read as PEM certificates"
        case .server(let url, let problem): "\(url): \(problem)"
        case .newerSchema(let url, let unknown):
            "\(url) was prepared by a newer CareGate (migrations \(unknown.joined(separator: ", ")) are unknown to this one): upgrade CareGate"
        case .calledOnEventLoop: "a PostgreSQL store was called synchronously on an event loop thread"
        case .unavailable(let feature): "\(feature) is not available on PostgreSQL stores in this build (Docs/postgresql.md says what is)"
        }
    }
}

extension PostgresLocation {
    /// postgres-nio's configuration for this location: the socket or the host and port, TLS per `sslmode`
    /// (libpq's meaning), the connect timeout and the application name. The password must have been
    /// found already (``withPassword(environment:warn:)``).
    ///
    /// `sslmode`: `disable` no TLS; `allow` and `prefer` TLS when the server offers it, unverified (postgres-nio
    /// has no "plain first, TLS on refusal": `allow` is served as `prefer`); `require` TLS, unverified unless
    /// `sslrootcert` is given (then the chain is checked, as libpq does); `verify-ca` TLS with the chain
    /// checked; `verify-full` the chain and the host name. A Unix socket is never encrypted (as libpq).
    public func clientConfiguration() throws -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        switch host {
        case .socket(let folder):
            configuration = .init(unixSocketPath: folder + "/.s.PGSQL.\(port)", username: user, password: password, database: database)
        case .tcp(let name):
            configuration = .init(host: name, port: port, username: user, password: password, database: database, tls: try tls())
            if case .verifyFull = sslMode { configuration.options.tlsServerName = name }
        }
        configuration.options.connectTimeout = .seconds(connectTimeout)
        if let applicationName { configuration.options.additionalStartupParameters = [("application_name", applicationName)] }
        return configuration
    }

    /// The pool's TLS: ``tlsChoice()``, the one reading of `sslmode` both the pool and the lock sessions use.
    private func tls() throws -> PostgresClient.Configuration.TLS {
        guard let choice = try tlsChoice() else { return .disable }
        return choice.required ? .require(choice.configuration) : .prefer(choice.configuration)
    }
}
