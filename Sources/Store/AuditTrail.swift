import Foundation

/// Requests refused without a valid token, counted rather than written one entry each: how many of one
/// route (its pattern, `GET /carekit/v1/tasks`), status and reason arrived within one minute (UTC).
///
/// The audit trail keeps one row per (minute, route, status, reason), whatever the number of requests: a
/// flood of requests without a token grows it by a handful of rows a minute, not a row per request
/// (issue 41, item 8). Writing the same key again adds to its count.
public struct AuditRefusalCount: Sendable, Equatable, Codable, Hashable {
    /// The start of the minute (UTC), a whole number of minutes since 1970.
    public var minute: Date
    /// The method and the route's pattern (never the raw path a client sent).
    public var action: String
    public var status: Int
    /// Why: the token refusal (`the token has expired`...), or the answer's code.
    public var reason: String
    public var count: Int

    public init(minute: Date, action: String, status: Int, reason: String, count: Int) {
        self.minute = minute
        self.action = action
        self.status = status
        self.reason = reason
        self.count = count
    }

    /// The start of the minute `date` falls in.
    public static func minute(of date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 60).rounded(.down) * 60)
    }
}

/// The size of the audit trail, as `caregate audit --stats` shows it.
public struct AuditTrailStatistics: Sendable, Equatable, Codable {
    /// The trail's file (`<store>-audit.sqlite`).
    public var path: String
    /// Entries of answered (or unanswered) requests in the trail's file.
    public var entries: Int
    /// Of those, entries of writes the server never answered (``AuditEntry/unanswered``): it stopped
    /// between the entry and the answer.
    public var unanswered: Int
    public var oldest: Date?
    public var newest: Date?
    /// Rows of counted refusals, and the requests they count.
    public var refusalRows: Int
    public var refusedRequests: Int
    public var oldestRefusal: Date?
    public var newestRefusal: Date?
    /// Bytes on disk: the file, its write-ahead log and shared-memory file.
    public var bytes: Int64
    /// Entries an older CareGate kept in the store's own `audit` table (never pruned: see Docs/security.md).
    public var entriesInStore: Int

    public init(
        path: String, entries: Int = 0, unanswered: Int = 0, oldest: Date? = nil, newest: Date? = nil, refusalRows: Int = 0,
        refusedRequests: Int = 0, oldestRefusal: Date? = nil, newestRefusal: Date? = nil, bytes: Int64 = 0, entriesInStore: Int = 0
    ) {
        self.path = path
        self.entries = entries
        self.unanswered = unanswered
        self.oldest = oldest
        self.newest = newest
        self.refusalRows = refusalRows
        self.refusedRequests = refusedRequests
        self.oldestRefusal = oldestRefusal
        self.newestRefusal = newestRefusal
        self.bytes = bytes
        self.entriesInStore = entriesInStore
    }
}

/// How long the audit trail keeps entries and refusal counts.
public enum AuditRetention {
    /// The default, in days (`caregate serve --audit-retention-days`).
    public static let defaultDays = 400
    /// The longest retention an option may give, in days (100 years).
    public static let maximumDays = 36_500
}

extension AuditEntry {
    /// The status of an entry written before a write request is carried out (``AuditEntry/unanswered``):
    /// it stays when the server stops before the answer, so no stored write is without its entry.
    public static let unansweredStatus = 0
    /// The detail of such an entry.
    public static let unansweredDetail = "unanswered: the server stopped before its answer; what was sent may have been stored"

    /// An entry of a write begun and not (yet) answered.
    public var isUnanswered: Bool { status == Self.unansweredStatus && !isCommandLine }

    /// What starts the action of the command line's entries (`caregate patients events`): their status is
    /// the command's exit status (0: done), not an HTTP status.
    public static let commandPrefix = "caregate "

    /// Whether this is an entry of the command line (``commandPrefix``).
    public var isCommandLine: Bool { action.hasPrefix(Self.commandPrefix) }

    /// The subject of the command line's entries (and the sync job's): `cli:` and the name of the user
    /// running it.
    public static var commandLineSubject: String { "cli:" + commandLineUser }

    /// The effective user's login name (the password database's), else `$USER`, else `uid<n>`.
    public static var commandLineUser: String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "uid\(geteuid())"
    }
}
