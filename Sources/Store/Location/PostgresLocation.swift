/// A PostgreSQL store named by a `postgres://` or `postgresql://` URL, in libpq's URL form
/// (`postgresql://[user[:password]@][host][:port][/database][?parameter=value&...]`), parsed by
/// ``parse(_:defaultUser:)`` (PostgresLocation+Parsing.swift).
///
/// Its `description` and `debugDescription` are ``redacted``: the password, whether it came from the URL,
/// `PGPASSWORD` or a password file (``PasswordFile``), is never printed, logged or put in an error.
///
/// ## Topics
/// - ``parse(_:defaultUser:)``, ``knownParameters``
/// - ``withPassword(environment:warn:)``: the password from `PGPASSWORD` or a password file
/// - ``redacted``
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Where the server listens.
    public enum Host: Sendable, Equatable {
        /// A host name or an IP address (an IPv6 address without its brackets).
        case tcp(String)
        /// The folder of the server's Unix socket (`?host=/path`, or a host that starts with `/`); the
        /// socket is `<folder>/.s.PGSQL.<port>`.
        case socket(folder: String)
    }

    /// libpq's `sslmode`: whether and how the connection is encrypted and the server checked.
    public enum SSLMode: String, Sendable, Equatable, CaseIterable {
        /// No TLS.
        case disable
        /// libpq: without TLS first, with TLS if the server insists.
        case allow
        /// libpq's default: TLS when the server offers it, without checking the certificate.
        case prefer
        /// TLS or nothing; the certificate is not checked.
        case require
        /// TLS, and the certificate is signed by a trusted authority (`sslrootcert`).
        case verifyCA = "verify-ca"
        /// TLS, a trusted certificate, and the host name in it.
        case verifyFull = "verify-full"
    }

    /// The parameters a URL may carry (any other is refused, named in the error).
    public static let knownParameters: Set<String> = [
        "host", "port", "user", "password", "dbname", "sslmode", "sslrootcert", "connect_timeout", "application_name",
    ]
    /// libpq's default socket folder on Debian, used when the URL names no host.
    public static let defaultSocketFolder = "/var/run/postgresql"
    public static let defaultPort = 5432
    /// Seconds to wait for a connection when the URL says nothing (libpq would wait for ever).
    public static let defaultConnectTimeout = 10
    /// The largest `connect_timeout` accepted, in seconds.
    public static let maximumConnectTimeout = 3600

    public var user: String
    /// The password; nil until given by the URL or found by ``withPassword(environment:warn:)``.
    public var password: String?
    /// Whether the password was written in the URL (the redacted form then shows `:***`).
    public var passwordInURL: Bool
    public var host: Host
    public var port: Int
    public var database: String
    public var sslMode: SSLMode
    /// The trusted authorities' certificates (PEM) for `verify-ca` and `verify-full`; nil: the system's.
    public var sslRootCertificate: String?
    /// Seconds to wait for a connection, 1 ... ``maximumConnectTimeout``.
    public var connectTimeout: Int
    public var applicationName: String?

    public init(
        user: String, password: String? = nil, passwordInURL: Bool = false, host: Host, port: Int = PostgresLocation.defaultPort,
        database: String, sslMode: SSLMode = .prefer, sslRootCertificate: String? = nil,
        connectTimeout: Int = PostgresLocation.defaultConnectTimeout, applicationName: String? = nil
    ) {
        self.user = user
        self.password = password
        self.passwordInURL = passwordInURL
        self.host = host
        self.port = port
        self.database = database
        self.sslMode = sslMode
        self.sslRootCertificate = sslRootCertificate
        self.connectTimeout = connectTimeout
        self.applicationName = applicationName
    }

    /// The URL with the password shown as `***` (only when the URL had one):
    /// `postgres://user:***@host:5432/db?sslmode=require`. Every part but the password is shown, in one
    /// canonical form, percent-encoded where needed.
    public var redacted: String {
        var text = "postgres://" + Self.encoded(user) + (passwordInURL ? ":***" : "") + "@"
        var query: [String] = []
        switch host {
        case .tcp(let name):
            text += name.contains(":") ? "[\(name)]" : Self.encoded(name)
        case .socket(let folder):
            query.append("host=" + Self.encoded(folder, keepingSlashes: true))
        }
        text += ":\(port)/" + Self.encoded(database)
        query.append("sslmode=\(sslMode.rawValue)")
        if let sslRootCertificate { query.append("sslrootcert=" + Self.encoded(sslRootCertificate, keepingSlashes: true)) }
        if connectTimeout != Self.defaultConnectTimeout { query.append("connect_timeout=\(connectTimeout)") }
        if let applicationName { query.append("application_name=" + Self.encoded(applicationName)) }
        return text + "?" + query.joined(separator: "&")
    }

    public var description: String { redacted }
    public var debugDescription: String { "PostgresLocation(\(redacted))" }

    /// Percent-encodes all but RFC 3986's unreserved characters (and `/`, in a query value, when asked).
    static func encoded(_ text: String, keepingSlashes: Bool = false) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "/") where keepingSlashes:
                result += "/"
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
