import Diagnostics

/// Why a store's name (`--store`, `store:`, `CAREGATE_STORE`) cannot be used. Every message names the
/// store with its password redacted (``PostgresLocation/redacted``): a password never reaches a report,
/// a log line or an error.
public enum StoreLocationError: Error, Equatable, Sendable {
    /// The name is empty.
    case empty(source: String)
    /// A URL whose scheme is neither `postgres` nor `postgresql`.
    case unsupportedScheme(String)
    /// A PostgreSQL URL that does not parse; `url` is redacted, `problem` says what is wrong.
    case invalidURL(url: String, problem: String)
    /// Query parameters CareGate does not know (named, sorted).
    case unknownParameters(url: String, names: [String])
    /// A PostgreSQL store where this build opens only SQLite stores.
    case postgresNotAvailable(url: String)
}

extension StoreLocationError: UserFacingError {
    public var errorMessage: String {
        switch self {
        case .empty(let source):
            return "\(source) is empty: name a SQLite file or a postgres:// URL"
        case .unsupportedScheme(let scheme):
            return "'\(scheme)://' is not a store CareGate can open: name a SQLite file or a postgres:// (postgresql://) URL"
        case .invalidURL(let url, let problem):
            return "the store URL \(url) cannot be used: \(problem)"
        case .unknownParameters(let url, let names):
            let list = names.map { "'\($0)'" }.joined(separator: ", ")
            return "the store URL \(url) has parameters CareGate does not know: \(list) "
                + "(known: \(PostgresLocation.knownParameters.sorted().joined(separator: ", ")))"
        case .postgresNotAvailable(let url):
            return "PostgreSQL stores are not available in this build yet: \(url) (Docs/postgresql.md says what exists today); name a SQLite file instead"
        }
    }

    /// 2: a store that cannot be named or opened at all is a configuration problem.
    public var exitStatus: Int32 { 2 }
}
