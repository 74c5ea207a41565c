import Diagnostics

/// A command or option that only a SQLite store file has, asked of a PostgreSQL store: named, with why,
/// before anything is opened (``StoreOptions/requireSQLite(_:because:configured:)``).
///
/// Exit status 2, as the other usage errors: nothing was tried. The store is named without its password.
struct SQLiteOnlyRefusal: UserFacingError, Equatable {
    /// The command and option refused, as typed (`store stats --check`).
    let command: String
    /// Why it has no meaning on PostgreSQL, and what to use instead.
    let reason: String
    /// The store's URL, redacted.
    let store: String

    var errorMessage: String {
        "\(command) works on a SQLite store file only, not on the PostgreSQL store \(store): \(reason)"
    }

    var exitStatus: Int32 { 2 }
}
