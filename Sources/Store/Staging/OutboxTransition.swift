import Foundation

/// A step of an outbox entry through its states (see ``OutboxState``).
public enum OutboxTransition: Equatable, Sendable {
    /// The entry was sent: `attempts` goes up by one.
    case sent(at: Date)
    /// The server confirmed it: final.
    case acknowledged(at: Date)
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
