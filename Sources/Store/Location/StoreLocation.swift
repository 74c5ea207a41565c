/// What names a store: a SQLite file, or a PostgreSQL database by `postgres://` URL.
///
/// One name serves everywhere a store is named: `--store`, `store:` in the sync configuration, and
/// `CAREGATE_STORE` in the environment when neither is given (``resolve(argument:environment:defaultPath:)``).
/// Its `description` never shows a password (``PostgresLocation/redacted``).
///
/// ```swift
/// let location = try StoreLocation.parse("postgres://caregate@db.example.org/caregate?sslmode=verify-full")
/// print(location)   // postgres://caregate@db.example.org:5432/caregate?sslmode=verify-full
/// ```
///
/// ## Topics
/// - ``parse(_:defaultUser:)``, ``resolve(argument:environment:defaultPath:)``
/// - ``sqlitePath()``: the file, or the typed refusal of a PostgreSQL store this build cannot open yet
public enum StoreLocation: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A SQLite store file (created where a command creates stores).
    case sqlite(path: String)
    /// A PostgreSQL database.
    case postgres(PostgresLocation)

    /// The environment variable naming the store when `--store` (or `store:`) does not.
    public static let environmentVariable = "CAREGATE_STORE"
    /// The store of a command given no other.
    public static let defaultPath = "caregate.sqlite"

    /// `text` as a store name: a `postgres://` or `postgresql://` URL (``PostgresLocation/parse(_:defaultUser:)``),
    /// any other `scheme://` refused, anything else a SQLite path.
    public static func parse(_ text: String, defaultUser: String = PostgresLocation.currentUser) throws -> StoreLocation {
        guard !text.isEmpty else { throw StoreLocationError.empty(source: "the store name") }
        if let scheme = urlScheme(of: text) {
            guard ["postgres", "postgresql"].contains(scheme.lowercased()) else {
                throw StoreLocationError.unsupportedScheme(PostgresLocation.printable(Substring(scheme)))
            }
            return .postgres(try PostgresLocation.parse(text, defaultUser: defaultUser))
        }
        return .sqlite(path: text)
    }

    /// The store a command opens: `argument` (`--store`, or `store:`) when given, else `CAREGATE_STORE`
    /// when set, else `defaultPath`. An empty argument or variable is an error, not the default.
    public static func resolve(argument: String?, environment: [String: String], defaultPath: String = StoreLocation.defaultPath) throws -> StoreLocation {
        if let argument {
            guard !argument.isEmpty else { throw StoreLocationError.empty(source: "--store") }
            return try parse(argument)
        }
        if let named = environment[environmentVariable] {
            guard !named.isEmpty else { throw StoreLocationError.empty(source: environmentVariable) }
            return try parse(named)
        }
        return .sqlite(path: defaultPath)
    }

    /// The SQLite file, or ``StoreLocationError/postgresNotAvailable(url:)``: this build names PostgreSQL
    /// stores but cannot open them yet (Docs/postgresql.md), so every place that opens a store asks here.
    public func sqlitePath() throws -> String {
        switch self {
        case .sqlite(let path): return path
        case .postgres(let location): throw StoreLocationError.postgresNotAvailable(url: location.redacted)
        }
    }

    /// The path, or the redacted URL.
    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let location): location.redacted
        }
    }

    public var debugDescription: String {
        switch self {
        case .sqlite(let path): "StoreLocation.sqlite(\(path))"
        case .postgres(let location): "StoreLocation.postgres(\(location.redacted))"
        }
    }

    /// The scheme of `text` when it starts as a URL does (`letters://`, RFC 3986's scheme characters).
    private static func urlScheme(of text: String) -> Substring? {
        guard let end = text.range(of: "://") else { return nil }
        let scheme = text[..<end.lowerBound]
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic,
              scheme.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)) })
        else { return nil }
        return scheme
    }
}
