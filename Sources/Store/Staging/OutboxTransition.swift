import Foundation

/// A step of an outbox entry through its states (see ``OutboxState``).
public enum OutboxTransition: Equatable, Sendable {
    /// The entry was sent: `attempts` goes up by one.
    case sent(at: Date)
    /// The server confirmed it: final. `server` is the id and version the server gave the resource,
    /// when it said (a file export has none).
    case acknowledged(at: Date, server: ServerVersion? = nil)
    /// The attempt failed with `error`; it may be sent again from `retryAt`, or never when `nil`.
    case failed(error: String, retryAt: Date?, at: Date)

    /// The state the entry is in after this step.
    public var targetState: OutboxState {
        switch self {
        case .sent: return .sent
        case .acknowledged: return .acknowledged
        case .failed: return .failed
        }
    }
}

/// Where a server keeps what it acknowledged: the resource's id and version there, read from a
/// response's `location` (`Observation/123/_history/2`, relative or absolute).
public struct ServerVersion: Equatable, Sendable {
    public var id: String
    public var version: String?

    public init(id: String, version: String?) {
        self.id = id
        self.version = version
    }

    /// `[base/]Type/id[/_history/version]`; nil when `location` names no resource.
    public init?(location: String) {
        var parts = location.split(separator: "?", maxSplits: 1).first.map { $0.split(separator: "/").map(String.init) } ?? []
        var version: String?
        if parts.count >= 2, parts[parts.count - 2] == "_history" {
            version = parts[parts.count - 1]
            parts.removeLast(2)
        }
        guard parts.count >= 2, let id = parts.last, !id.isEmpty, parts[parts.count - 2].first?.isUppercase == true else { return nil }
        self.init(id: id, version: version)
    }
}
